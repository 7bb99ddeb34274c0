"""Generated models built for the host under ASan + UBSan (mcu.build.host): every zoo model, and the single-op models
of the kernels the zoo does not use, run clean with an arena of exactly MODEL_ARENA_BYTES and equal the numpy
reference bit for bit (the reference QEMU equals in tests/test_zoo.py and tests/test_e2e_qemu.py)."""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch

import mcu
from mcu.build.host import SanitizerError, run_host
from mcu.zoo import MODELS, calibration_set
from tests.opmodels import make

pytestmark = pytest.mark.host_c

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("mcu", "codegen", "memory_planner", "templates", "runtime_c", "boards")
SUFFIXES = {".py", ".j2", ".c", ".h", ".toml", ".ld", ".scons"}
CACHE = Path(tempfile.gettempdir()) / f"mcu-zoo-{os.getuid()}"


@functools.cache
def _source_key() -> str:
    """A hash of everything a compile depends on: the package sources and the torch/torchao versions."""
    import torchao
    h = hashlib.sha256(f"{torch.__version__} {torchao.__version__}".encode())
    for folder in SOURCES:
        for p in sorted((ROOT / folder).rglob("*")):
            if p.suffix in SUFFIXES and p.is_file():
                h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@contextmanager
def locked(folder: Path):
    """One process at a time in folder (compiling it, or building its firmware)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def zoo_package(name: str, board: str = "mps2-an386"):
    """The zoo model compiled for board, shared by the test modules and xdist workers of a run: compiled once into
    a cache in /tmp keyed by the sources (so any change to the compiler recompiles); older keys are pruned."""
    folder = CACHE / _source_key() / f"{name}-{board}"
    with locked(folder):
        if not (folder / "manifest.json").is_file():
            model, example = MODELS[name]()
            tmp = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            mcu.compile(model, example, board=board, calibration=calibration_set(name), out_dir=tmp)
            os.replace(tmp, folder)
    for old in CACHE.iterdir():
        if old.name != _source_key() and old.is_dir() and time.time() - old.stat().st_mtime > 3600:
            shutil.rmtree(old, ignore_errors=True)
    return mcu.load(folder)

# Single-op models whose kernels (and in-place / aliasing plans) the zoo does not exercise.
OP_MODELS = ["concat_w_3in", "conv_groups2", "layer_norm_4d", "matmul_qk_4d", "mul_sigmoid_gate", "sub_broadcast_rank1",
             "sum_3d", "upsample_nearest"]


def assert_equal_int(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    bad = np.argwhere(actual != expected)
    if len(bad):
        i = tuple(int(v) for v in bad[0])
        raise AssertionError(f"{what}: {len(bad)} mismatches; first at {i}: host {actual[i]} vs reference {expected[i]}")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_model_is_clean_and_exact_under_sanitizers(name):
    pkg = zoo_package(name)
    for seed in (77, 78):
        x = calibration_set(name, 1, seed=seed)[0]
        res = run_host(pkg, x)
        for i, (got, want) in enumerate(zip(res.raw_outputs, pkg.reference(x))):
            assert_equal_int(got, want, f"{name} output {i}, seed {seed}")


@pytest.mark.parametrize("name", OP_MODELS)
def test_op_model_is_clean_and_exact_under_sanitizers(name, tmp_path):
    model, example, calib = make(name)
    pkg = mcu.compile(model, example, calibration=calib, out_dir=tmp_path / name)
    g = torch.Generator().manual_seed(5)
    x = tuple(torch.randn(e.shape, generator=g) * 1.5 for e in example)  # some inputs saturate
    res = run_host(pkg, x)
    for i, (got, want) in enumerate(zip(res.raw_outputs, pkg.reference(x))):
        assert_equal_int(got, want, f"{name} output {i}")


@pytest.fixture(scope="module")
def small_pkg(tmp_path_factory):
    model, example, calib = make("flatten_linear")
    return mcu.compile(model, example, calibration=calib, out_dir=tmp_path_factory.mktemp("small") / "pkg")


def _patched(pkg, tmp_path, name: str, *edits: tuple[str, str]):
    folder = tmp_path / "pkg"
    shutil.copytree(pkg.out_dir, folder, ignore=shutil.ignore_patterns("build"))
    text = (folder / name).read_text()
    for old, new in edits:
        assert old in text, f"{old!r} not in {name}"
        text = text.replace(old, new, 1)
    (folder / name).write_text(text)
    return mcu.load(folder)


def test_an_arena_one_byte_short_is_caught(small_pkg, tmp_path):
    """The harness allocates exactly MODEL_ARENA_BYTES: a plan that needed one byte more is a heap overflow."""
    n = small_pkg.arena_bytes
    assert n > 0
    pkg = _patched(small_pkg, tmp_path, "model.h", (f"#define MODEL_ARENA_BYTES {n}u", f"#define MODEL_ARENA_BYTES {n - 1}u"))
    with pytest.raises(SanitizerError, match="heap-buffer-overflow"):
        run_host(pkg, torch.zeros(1, 3, 5, 6))


def test_reading_unwritten_arena_is_caught(small_pkg, tmp_path):
    """Outputs that depend on what the arena held before the run (two runs, two fills) are an error."""
    code = (small_pkg.out_dir / "model.c").read_text()
    first_call = next(line for line in code.splitlines() if line.strip().startswith("status = mcu_"))
    assert "input0" in first_call
    pkg = _patched(small_pkg, tmp_path, "model.c", (first_call, first_call.replace("input0", "(const int8_t *)(a + 0)", 1)),
                   ("    mcu_status_t status;\n", "    mcu_status_t status;\n    (void)input0;\n"))
    with pytest.raises(SanitizerError, match="the model reads memory it has not written"):
        run_host(pkg, torch.zeros(1, 3, 5, 6))


def test_the_unsanitized_build_agrees(small_pkg):
    x = torch.randn(1, 3, 5, 6, generator=torch.Generator().manual_seed(3))
    plain = run_host(small_pkg, x, sanitize=False).raw_outputs[0]
    assert_equal_int(plain, run_host(small_pkg, x).raw_outputs[0], "plain vs sanitized")


def _plant_weight_128(lo: int):
    """A `lower` that sets, in every conv and fully connected call, weight [1, tap 0] (the high channel of the
    first pair the _fast GEMM packs into one int32 word) to -128 and weight [0, tap 0] to lo. The quantizer keeps
    weights in [-127, 127]; a QAT or imported model may not."""
    from mcu.codegen.pipeline import lower

    def planted(graph):
        graph = lower(graph)
        tensors = dict(graph.tensors)
        for node in graph.nodes:
            if node.op == "call" and node.call.kernel in ("mcu_conv2d_s8", "mcu_fully_connected_s8"):
                t = tensors[node.inputs[1]]
                w = t.data.copy()
                w[1].flat[0], w[0].flat[0] = -128, lo
                tensors[t.name] = t.replace(data=w)
        return graph.replace(tensors=tensors)
    return planted


@pytest.mark.parametrize("lo, kernels", [(-100, {"mcu_conv2d_s8", "mcu_fully_connected_s8"}),
                                         (100, {"mcu_conv2d_s8_fast", "mcu_fully_connected_s8_fast"})])
def test_a_weight_of_minus_128_is_exact_on_the_scalar_core(lo, kernels, tmp_path, monkeypatch):
    """The _fast GEMM packs the weights of channels 2i and 2i+1 as w_lo + w_hi * 2^24 in an int32, which does not
    hold w_hi = -128 beside a negative w_lo: select_kernels keeps the portable kernel then, and _fast otherwise."""
    from mcu.codegen import pipeline
    monkeypatch.setattr(pipeline, "lower", _plant_weight_128(lo))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Flatten(), torch.nn.Linear(8 * 25, 6))
    calib = [(torch.randn(1, 3, 5, 5, generator=torch.Generator().manual_seed(i)),) for i in range(4)]
    pkg = mcu.compile(model.eval(), calib[0], board="mps2-an385", calibration=calib, out_dir=tmp_path / "pkg")
    gemms = [n for n in pkg.graph.nodes
             if n.op == "call" and n.call.portable in ("mcu_conv2d_s8", "mcu_fully_connected_s8")]
    weights = [pkg.graph.tensors[(n.call.twin_inputs or n.inputs)[1]].data for n in gemms]
    assert len(weights) == 2 and all(w[1].flat[0] == -128 and w[0].flat[0] == lo for w in weights)
    x = torch.randn(1, 3, 5, 5, generator=torch.Generator().manual_seed(9)) * 2
    assert_equal_int(run_host(pkg, x).raw_outputs[0], pkg.reference(x)[0], f"weight -128 beside {lo}")
    assert {n.call.kernel for n in gemms} == kernels
