"""Named models and bundles: KWS, AD and the example CNN compiled as `kws`, `ad` and `cnn`, merged by mcu.bundle into
one drop-in folder and built outside the tree, with its Make fragment and with its CMake target, for the M4 and the
M55, into ONE firmware that runs the three models in turn over one shared arena of MCU_BUNDLE_ARENA_BYTES on QEMU.

- Each model's outputs in the bundle's firmware equal its own `mcu run`, bit for bit (KWS runs again after the others:
  the shared arena leaves nothing behind).
- The ELF holds exactly one copy of each kernel (pyelftools); the generated objects export only <name>_ symbols.
- The bundle's flash is at most the sum of the models' own firmware minus the kernels they share (printed; the
  table per board: scripts/bundle_sizes.py).
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

import mcu
from mcu.boards import load_board
from mcu.bundles import bundle_size, load_bundle
from mcu.cli import main as cli_main
from mcu.codegen.names import model_files
from mcu.package import _manifest_digest, to_stored
from mcu.qemu.runner import run_firmware
from mcu.zoo.example import calibration_set, example_cnn
from mcu.zoo.mlperf_tiny import ad, kws
from tests.bundle_firmware import build_cmake, build_make, sh

M4, M55 = "mps2-an386", "mps3-an547"
HAVE = {t: shutil.which(t) is not None for t in ("make", "cmake", "arm-none-eabi-gcc", "qemu-system-arm")}
NAMES = ("kws", "ad", "cnn")
emulated = pytest.mark.skipif(not (HAVE["arm-none-eabi-gcc"] and HAVE["qemu-system-arm"]),
                              reason="needs arm-none-eabi-gcc and qemu-system-arm (./dev setup)")


def _setup(board: str, root: Path) -> tuple:
    """KWS, AD and the example CNN compiled as kws, ad and cnn for board, each run once with its own mcu run, and
    bundled."""
    rng = np.random.default_rng(0)
    for name, make in (("kws", kws), ("ad", ad), ("cnn", example_cnn)):
        model, example = make()
        calibration = calibration_set(4) if name == "cnn" else None
        pkg = mcu.compile(model, example, board=board, name=name, out_dir=root / name, calibration=calibration)
        x = [rng.standard_normal(e.shape).astype(np.float32) for e in example]
        raw = mcu.run(pkg, x).raw_outputs
        (root / f"{name}.in").write_bytes(b"".join(a.tobytes() for a in pkg.quantize_inputs(x)))
        (root / f"{name}.out").write_bytes(b"".join(to_stored(r, s).tobytes()
                                                   for r, s in zip(raw, pkg.manifest["outputs"])))
    mcu.bundle([root / n for n in NAMES], out_dir=root / "bundle")
    (root / "done").touch()


def _made(root: Path, board: str, wait: bool) -> bool:
    """Make board's models under root unless made; False if another worker is making them and wait is False."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root.with_suffix(".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        if not (root / "done").is_file():
            _setup(board, root)
    return True


def setup_board(board: str, tmp_path_factory) -> tuple:
    """(bundle, {name: (package, stored input bytes, its own mcu run's output bytes)}), made once per test run
    and shared by the xdist workers (a lock in their common temporary folder); a worker that finds the board
    being made makes the other board meanwhile."""
    base = tmp_path_factory.getbasetemp()  # this run's; the xdist workers' common folder is its parent
    base = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "bundle-models"
    root = base / board
    if not _made(root, board, wait=False):
        other = M55 if board == M4 else M4
        _made(base / other, other, wait=False)
        _made(root, board, wait=True)
    models = {n: (mcu.load(root / n), (root / f"{n}.in").read_bytes(), (root / f"{n}.out").read_bytes())
              for n in NAMES}
    return load_bundle(root / "bundle"), models


@pytest.fixture(scope="module")
def m4(tmp_path_factory):
    return setup_board(M4, tmp_path_factory)


@pytest.fixture(scope="module")
def m55(tmp_path_factory):
    return setup_board(M55, tmp_path_factory)


# ---- names ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["9x", "Kws", "mcu_kws", "int", "a-b", "", "x" * 33])
def test_an_invalid_name_is_one_error_stating_the_rule(bad):
    with pytest.raises(mcu.McuError, match="lowercase C identifier"):
        mcu.compile(None, name=bad)


def test_cli_name_error_is_one_line(capsys):
    assert cli_main(["compile", "mcu.zoo:example_cnn", "--name", "Kws", "--no-run", "-o", "/nonexistent/x"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mcu: error: name='Kws'"), err


def test_named_package_prefixes_everything(m4):
    pkg = m4[1]["kws"][0]
    files = {p.name for p in pkg.out_dir.iterdir()}
    assert {"kws.h", "kws.c", "kws_weights.c", "mcu_kws.mk", "CMakeLists.txt"} <= files
    assert not files & {"model.h", "model.c", "weights.c", "mcu_model.mk"}
    header = (pkg.out_dir / "kws.h").read_text()
    macros = [line.split()[1] for line in header.splitlines() if line.startswith("#define")]
    assert macros and all(m.startswith("KWS_") for m in macros), macros
    for fn in ("kws_run(", "kws_run_sized(", "kws_run_v(", "kws_input_bytes[", "kws_output_bytes["):
        assert fn in header, fn
    mk = (pkg.out_dir / "mcu_kws.mk").read_text()
    assigned = [line.split(":=")[0].strip() for line in mk.splitlines() if ":=" in line]
    assert assigned and all(v.startswith("MCU_KWS_") for v in assigned), assigned
    assert "add_library(mcu_kws STATIC" in (pkg.out_dir / "CMakeLists.txt").read_text()


# ---- refusals --------------------------------------------------------------------------------------------------


def test_bundle_refuses_two_boards_a_name_twice_and_two_mcus(m4, m55, tmp_path):
    kws4, ad4 = m4[1]["kws"][0], m4[1]["ad"][0]
    with pytest.raises(mcu.McuError, match=rf"{M4}.*{M55}") as e:
        mcu.bundle([kws4.out_dir, m55[1]["ad"][0].out_dir], out_dir=tmp_path / "b1")
    assert str(kws4.out_dir) in str(e.value)
    twin = tmp_path / "kws-copy"
    shutil.copytree(kws4.out_dir, twin, ignore=shutil.ignore_patterns(".mcu-build"))
    with pytest.raises(mcu.McuError, match="both named 'kws'") as e:
        mcu.bundle([kws4.out_dir, twin], out_dir=tmp_path / "b2")
    assert str(kws4.out_dir) in str(e.value) and str(twin) in str(e.value)
    other = tmp_path / "ad-old"
    shutil.copytree(ad4.out_dir, other, ignore=shutil.ignore_patterns(".mcu-build"))
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["package"]["written_by"] = "mcu 0.0.1"
    manifest["package"]["manifest_sha256"] = _manifest_digest(manifest)
    (other / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    with pytest.raises(mcu.McuError, match="mcu 0.0.1") as e:
        mcu.bundle([kws4.out_dir, other], out_dir=tmp_path / "b3")
    assert str(kws4.out_dir) in str(e.value) and str(other) in str(e.value)
    assert not any((tmp_path / f"b{i}").exists() for i in (1, 2, 3))


def test_bundle_folder(m4):
    b, models = m4
    out = b.out_dir
    assert load_bundle(out).names == list(NAMES)
    union = sorted({k for p, _, _ in models.values() for k in p.manifest["kernels"]})
    copied = sorted(p.relative_to(out / "mcu_runtime" / "kernels").with_suffix("").as_posix()
                    for p in (out / "mcu_runtime" / "kernels").rglob("*.c"))
    assert copied == union
    header = (out / "mcu_bundle.h").read_text()
    arena = max(p.arena_bytes for p, _, _ in models.values())
    assert f"#define MCU_BUNDLE_ARENA_BYTES {arena}u" in header and '#include "kws.h"' in header
    assert "add_library(mcu_bundle STATIC" in (out / "CMakeLists.txt").read_text()


def test_the_models_stay_in_the_m55_itcm(m55):
    """Models that fit the ITCM keep their weights there, alone and bundled: placement moves nothing that fits."""
    b, models = m55
    for name, (pkg, _, _) in models.items():
        weights = pkg.out_dir / model_files(name)[2]
        assert ".mcu_weights_large" not in weights.read_text()
        assert (b.out_dir / name / weights.name).read_bytes() == weights.read_bytes()


# ---- one firmware, three models ------------------------------------------------------------------------------

PUBLIC = re.compile(r"^(?!static)[A-Za-z_][\w \*]*?\b(mcu_\w+)\(", re.MULTILINE)  # a function a .c file exports


def check_firmware(elf: Path, b, models: dict, board: str, how: str) -> None:
    """Runs on QEMU with each model's own outputs; one copy of each kernel; flash within the sum minus sharing."""
    res = run_firmware(elf, board, b"".join(models[n][1] for n in NAMES))
    assert res.status == 0, f"status {res.status}"
    order = [*NAMES, "kws"]
    want = b"".join(models[n][2] for n in order)
    got = res.output_bytes
    assert len(got) == len(want)
    if got != want:
        i = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
        pytest.fail(f"byte {i} of {' | '.join(order)}: {got[i]} != {want[i]} (each model's own mcu run)")
    with open(elf, "rb") as f:
        image = ELFFile(f)
        funcs = Counter(s.name for s in image.get_section_by_name(".symtab").iter_symbols()
                        if s["st_info"]["type"] == "STT_FUNC")
        flash = sum(seg["p_filesz"] for seg in image.iter_segments() if seg["p_type"] == "PT_LOAD")
    union = {k for p, _, _ in models.values() for k in p.manifest["kernels"]}
    public = {m for k in union
              for m in PUBLIC.findall((b.out_dir / "mcu_runtime" / "kernels" / f"{k}.c").read_text())}
    assert {k.split("/")[-1] for k in union if not k.startswith("shared/")} <= public  # and the shared cores' own
    assert {f: funcs[f] for f in public} == dict.fromkeys(public, 1)
    check_flash(flash, models, board, how)


def check_flash(flash: int, models: dict, board: str, how: str) -> None:
    """The bundle's flash is at most the models' own firmware summed, less every extra copy of a shared kernel."""
    sizes = {n: mcu.size(p) for n, (p, _, _) in models.items()}
    copies = Counter(k for s in sizes.values() for k in s.kernels)
    shared = {k: max(s.kernels.get(k, 0) for s in sizes.values()) for k, c in copies.items() if c > 1}
    extra = sum((copies[k] - 1) * n for k, n in shared.items())
    parts = sum(s.flash_total for s in sizes.values())
    alone = ", ".join(f"{n} alone {s.flash_total:,} B" for n, s in sizes.items())
    print(f"\n{board}, {how} build: {alone}, sum {parts:,} B; extra copies of shared kernels {extra:,} B "
          f"({', '.join(k.split('/')[-1] for k in sorted(shared))}); bundle {flash:,} B; saved {parts - flash:,} B")
    assert flash <= parts - extra


@emulated
@pytest.mark.qemu
@pytest.mark.skipif(not HAVE["make"], reason="needs make")
def test_make_bundle_firmware_runs_three_models_m4(m4, tmp_path):
    check_firmware(build_make(m4[0], M4, tmp_path), m4[0], m4[1], M4, "make")


@emulated
@pytest.mark.qemu
@pytest.mark.skipif(not HAVE["make"], reason="needs make")
def test_make_bundle_firmware_runs_three_models_m55(m55, tmp_path):
    check_firmware(build_make(m55[0], M55, tmp_path), m55[0], m55[1], M55, "make")


@emulated
@pytest.mark.qemu
@pytest.mark.skipif(not (HAVE["make"] and HAVE["cmake"]), reason="needs cmake and make")
def test_cmake_bundle_firmware_runs_three_models_m4(m4, tmp_path):
    b, models = m4
    check_firmware(build_cmake(b, M4, tmp_path), b, models, M4, "CMake")


@emulated
@pytest.mark.qemu
@pytest.mark.skipif(not (HAVE["make"] and HAVE["cmake"]), reason="needs cmake and make")
def test_cmake_bundle_firmware_runs_three_models_m55(m55, tmp_path):
    b, models = m55
    check_firmware(build_cmake(b, M55, tmp_path), b, models, M55, "CMake")


@pytest.mark.skipif(not HAVE["arm-none-eabi-gcc"], reason="needs arm-none-eabi-gcc")
def test_model_objects_export_only_their_prefix(m4, tmp_path):
    """Every global a generated file defines starts with its model's name; the runtime's all start with mcu_."""
    b, models = m4
    board = load_board(M4)
    include = [f"-I{b.out_dir}", f"-I{b.out_dir / 'kws'}", f"-I{b.out_dir / 'ad'}",
               f"-I{b.out_dir / 'mcu_runtime' / 'include'}"]
    sources = {n: [b.out_dir / n / f for f in p.c_files] for n, (p, _, _) in models.items()}
    sources["mcu"] = sorted((b.out_dir / "mcu_runtime").rglob("*.c"))
    for prefix, files in sources.items():
        for src in files:
            obj = tmp_path / f"{src.stem}.o"
            sh(["arm-none-eabi-gcc", *board.target_flags(), "-O2", "-std=c99", *include, "-c", str(src), "-o",
                str(obj)], tmp_path)
            with open(obj, "rb") as f:
                names = [s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                         if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"]
            assert names and all(n.startswith(prefix + "_") for n in names), (src.name, names)


@emulated
@pytest.mark.qemu
def test_mcu_run_and_size_on_a_bundle(m4, capsys):
    b, _ = m4
    assert cli_main(["run", str(b.out_dir), "--model", "ad"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ad:") and "device == numpy reference: yes" in out and "kws:" not in out
    assert cli_main(["size", str(b.out_dir)]) == 0
    out = capsys.readouterr().out
    size = bundle_size(b)
    print(out)
    assert f"bundle {size.total:,} B" in out and size.total < size.alone


@emulated
@pytest.mark.qemu
def test_tools_work_on_a_named_package(m4, capsys):
    """mcu profile (a -DMCU_PROFILE firmware through the harness) and the host build find a model named ad."""
    from mcu.build.host import run_host
    pkg, stored, want = m4[1]["ad"]
    assert cli_main(["profile", str(pkg.out_dir)]) == 0
    assert "ad on mps2-an386" in capsys.readouterr().out
    x = np.frombuffer(stored, np.int8).astype(np.float32)  # any input: the host build equals the reference
    host = run_host(pkg, [x.reshape(1, -1)])
    assert all(np.array_equal(h, r) for h, r in zip(host.raw_outputs, pkg.reference([x.reshape(1, -1)])))
