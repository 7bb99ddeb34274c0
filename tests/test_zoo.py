"""The MLPerf Tiny zoo: shapes as published, fidelity against torchao and float, exact on every board."""
import numpy as np
import pytest
import torch

import mcu
from mcu.codegen.kernels import KERNELS
from mcu.tools.fidelity import op_agreement
from mcu.metrics import lsb_error, sqnr_db
from mcu.zoo import MODELS, calibration_set, macs
from calls import kernel_of

# (params, MACs) of the MLPerf Tiny reference models
PUBLISHED = {"kws": (22_600, 2_660_000), "vww": (211_000, 7_500_000), "ic": (78_000, 12_500_000),
             "ad": (266_000, 260_000)}

# Fidelity on 10 inputs drawn like the calibration data: the numpy reference within 1 LSB of torchao's
# converted model on at least 99 % of output elements, and pooled SQNR vs the float model of at least 30 dB
# (the goals). Requantization rounds once, as torchao's float reference does; op by op the two agree
# on all but a few elements in a million (test_zoo_agrees_with_torchao_op_by_op), the ones torchao's float32
# sums put on the other side of a rounding boundary, which deep layers can spread (VWW: 80 % of outputs equal,
# 100 % within 1 LSB; see mcu.tools.fidelity).
FIDELITY = {  # model: (min share within 1 LSB, min pooled SQNR dB)
    "kws": (0.99, 30.0),
    "vww": (0.99, 30.0),
    "ic": (0.99, 30.0),
    "ad": (0.99, 30.0),
}
BOARDS = ["mps2-an386", "mps2-an385", "mps3-an547"]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Each zoo model compiled once (for mps2-an386) per test module."""
    cache = {}

    def get(name, board="mps2-an386"):
        if (name, board) not in cache:
            model, example = MODELS[name]()
            out = tmp_path_factory.mktemp(f"{name}-{board}")
            cache[name, board] = (model, mcu.compile(model, example, board=board,
                                                     calibration=calibration_set(name), out_dir=out))
        return cache[name, board]
    return get


@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_model_matches_published_size(name):
    model, example = MODELS[name]()
    params = sum(p.numel() for p in model.parameters())
    want_params, want_macs = PUBLISHED[name]
    assert abs(params - want_params) / want_params < 0.05, params
    assert abs(macs(model, example) - want_macs) / want_macs < 0.05


@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_batchnorms_are_folded(name, compiled):
    _, pkg = compiled(name)
    kernels = [op["kernel"] for op in pkg.manifest["ops"]]
    assert not any("batch" in k for k in kernels)
    n_bn = sum(1 for m in MODELS[name]()[0].modules() if "BatchNorm" in type(m).__name__)
    assert n_bn > 0 and len(kernels) < n_bn * 2 + 8  # no op was spent on a BatchNorm


@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_fidelity(name, compiled):
    model, pkg = compiled(name)
    spec = pkg.manifest["outputs"][0]
    xs = [calibration_set(name, 1, seed=50 + s)[0] for s in range(10)]
    refs = [pkg.reference(x)[0] for x in xs]
    errs = np.concatenate([lsb_error(r, pkg.torchao_reference(x)[0], spec["scale"], spec["zero_point"]).ravel()
                           for r, x in zip(refs, xs)])
    within, min_sqnr = FIDELITY[name]
    assert (errs <= 1).mean() >= within, f"{name}: {(errs <= 1).mean():.1%} within 1 LSB of torchao"
    sqnr = sqnr_db([model(*x).detach().numpy() for x in xs], [pkg.dequantize_outputs([r])[0] for r in refs])
    assert sqnr >= min_sqnr, f"{name}: SQNR {sqnr:.1f} dB vs float"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_agrees_with_torchao_op_by_op(name, compiled):
    """Each op fed torchao's int8 inputs gives torchao's int8 output, bar float32 rounding noise."""
    _, pkg = compiled(name)
    rows = [r for s in range(3) for r in op_agreement(pkg, calibration_set(name, 1, seed=50 + s)[0])]
    calls = sum(1 for n in pkg.graph.nodes if n.op == "call")
    assert len(rows) >= 3 * (calls - 1)  # every op but a shape-only one (the avg pool before flatten) compared
    assert max(r.max_lsb for r in rows) <= 1
    # the adds with 16-bit multipliers (codegen/twins/add16.py) land up to ~2^-7 LSB off the exact sum before
    # rounding (|a| * the multipliers' 2^-16 relative step): a few per mille of their elements round the other way
    fast = [r for r in rows if KERNELS[r.kernel].arithmetic]
    assert sum(r.differ for r in fast) <= 5e-3 * sum(r.elements for r in fast)
    rows = [r for r in rows if not KERNELS[r.kernel].arithmetic]
    assert sum(r.differ for r in rows) <= 1e-4 * sum(r.elements for r in rows)


@pytest.mark.qemu
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_exact_on_board(name, board, compiled):
    _, pkg = compiled(name, board)
    x = calibration_set(name, 1, seed=77)[0]
    res = mcu.run(pkg, x, timeout=300)
    ref = pkg.reference(x)[0]
    bad = np.argwhere(res.raw_outputs[0] != ref)
    assert not len(bad), f"{name} on {board}: first mismatch at {tuple(bad[0])}: " \
                         f"{res.raw_outputs[0][tuple(bad[0])]} vs {ref[tuple(bad[0])]}"


# optimize="memory": the portable raster kernels write over inputs that die, and depthwise / 1x1 convs whose
# input dies run in place with planned scratch (issue goals: KWS 8.5 KB, VWW 40 KB, IC 33 KB, AD 0.8 KB). KWS is
# its 8,000 B chain plus one 384 B depthwise ring, at its lower bound.
ARENA_MEMORY = {"kws": 8_384, "vww": 36_888, "ic": 32_768, "ad": 256}


@pytest.mark.qemu
@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_arena_when_optimizing_memory(name, tmp_path):
    model, example = MODELS[name]()
    pkg = mcu.compile(model, example, board="mps2-an386", calibration=calibration_set(name, 2),
                      out_dir=tmp_path / "pkg", optimize="memory")
    assert pkg.arena_bytes <= ARENA_MEMORY[name]
    assert pkg.memory.overlaps or name == "ad"
    if name in ("kws", "vww"):  # their depthwise convs and same-width 1x1 convs run in place
        assert 0 in pkg.memory.overlaps.values()
    assert pkg.arena_bytes == pkg.memory.lower_bound  # VWW: its chain bound (memory_planner/planner.py)
    if name == "ic":  # its three residual adds run inside their convs (codegen/passes/fuse_add.py)
        assert [kernel_of(n) for n in pkg.graph.nodes].count("mcu_conv2d_add_s8") == 3
    x = calibration_set(name, 1, seed=77)[0]
    assert np.array_equal(mcu.run(pkg, x, timeout=300).raw_outputs[0], pkg.reference(x)[0])


def _builders():
    from mcu.zoo import BLOCKS, DEEP, MODELS, example_cnn
    return {"example_cnn": example_cnn, **MODELS, **BLOCKS, **DEEP}


@pytest.mark.parametrize("name", sorted(_builders()))
def test_every_zoo_model_is_the_same_model_each_time(name):
    """Seeded weights: building a zoo model twice gives the same parameters, buffers and example inputs (a
    parameter left to torch's own initialisation draws from the global RNG and differs, run to run)."""
    build = _builders()[name]
    (m1, x1), (m2, x2) = build(), build()
    s1, s2 = m1.state_dict(), m2.state_dict()
    assert s1.keys() == s2.keys()
    for k in s1:
        assert torch.equal(s1[k], s2[k]), f"{name}: {k} differs between two builds"
    assert all(torch.equal(a, b) for a, b in zip(x1, x2))
