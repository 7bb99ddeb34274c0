"""PyTorch's own op tests on the edge op set (scripts/opinfo_coverage.py: the first float32 OpInfo sample of each
op in op_db as a one-op model).

- Every op of the edge set passes in float32 (within 1e-4 relative of torch) and int8 (>= 20 dB SQNR), on the
  numpy reference, unless EXCLUSIONS names it with the reason; an excluded op that starts passing fails the
  test, so the list stays true.
- A fixed spread of ops also runs on QEMU (M4, M3 soft float, M55 Helium): device == reference bit for bit.
  `python scripts/opinfo_coverage.py --board B` runs every op on a board.
"""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

pytest.importorskip("expecttest", reason="op_db imports only with expecttest (the test extras)")

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "opinfo_coverage.py"
_spec = importlib.util.spec_from_file_location("opinfo_coverage", SCRIPT)
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)

INDICES = ("the sample returns a max pool's indices into the flattened input (return_indices=True); argmax, argmin "
           "and max/min over a dim do compile (int32 indices)")
EXCLUSIONS = {
    "nn.functional.rrelu": "the sample is in training mode (a random slope per element): refused, naming model.eval()",
    "nn.functional.batch_norm": "the sample is in training mode (batch statistics): refused, naming model.eval()",
    "nn.functional.max_pool1d": INDICES, "nn.functional.max_pool2d": INDICES,
    "nn.functional.adaptive_max_pool1d": INDICES, "nn.functional.adaptive_max_pool2d": INDICES,
    "nn.functional.one_hot": "the sample fails in torch itself (one_hot of a float tensor)",
}
DEVICE_OPS = ["argmax", "max", "exp", "div", "where", "nn.functional.mish", "nn.functional.group_norm", "nn.functional.conv_transpose2d",
              "logsumexp", "nn.functional.pad", "nn.functional.pixel_shuffle", "nn.functional.interpolate",
              "nn.functional.scaled_dot_product_attention", "cumsum", "roll", "stack"]


@pytest.fixture(scope="module")
def op_db():
    from torch.testing._internal.common_methods_invocations import op_db
    first = {}
    for info in op_db:  # the first variant of a name (div: no rounding mode; softmax: without dtype), as the script
        first.setdefault(info.name, info)
    return first


@pytest.mark.parametrize("mode", ["float32", "int8"])
def test_edge_set_passes_but_named_exclusions(op_db, mode, tmp_path):
    failures, unexpected_passes = {}, []
    for name in coverage.EDGE_OPS:
        ok, why = coverage.check(op_db[name], mode, None, str(tmp_path / name)) if name in op_db else \
            (False, "no OpInfo of this name")
        if not ok and name not in EXCLUSIONS:
            failures[name] = why
        if ok and name in EXCLUSIONS:
            unexpected_passes.append(name)
    assert not failures, failures
    assert not unexpected_passes, f"remove from EXCLUSIONS: {unexpected_passes}"
    passed = len(coverage.EDGE_OPS) - len(EXCLUSIONS)
    assert passed / len(coverage.EDGE_OPS) >= 0.9


@pytest.mark.qemu
@pytest.mark.parametrize("mode, board", [  # float32 on the M55's FPU (soft float: tests/test_float32.py on the M3);
    ("float32", "mps3-an547"), ("int8", "mps2-an386"), ("int8", "mps3-an547")])  # int8 on DSP and Helium
def test_spread_of_ops_on_device(op_db, board, mode, tmp_path):
    bad = {}
    for name in DEVICE_OPS:
        ok, why = coverage.check(op_db[name], mode, board, str(tmp_path / name))
        if not ok:
            bad[name] = why
    assert not bad, bad


def test_core_list_is_torch_core_tag_and_each_op_is_run_excluded_or_named_missing(tmp_path):
    """--core walks torch.Tag.core itself: every core op is tested, excluded with a reason, or listed without an
    OpInfo; a few run here (the whole walk, ~8 minutes, is the script's: `--core --json out.json`)."""
    from torch.testing._internal.common_methods_invocations import op_db as db
    core = coverage.core_ops()
    assert len(core) >= 150 and "add" in core and "_softmax" in core
    infos, excluded, missing = coverage._core_infos(db, None)
    assert set(infos) | set(excluded) | set(missing) == set(core)
    assert set(coverage.CORE_EXCLUDED) <= set(core), set(coverage.CORE_EXCLUDED) - set(core)
    assert infos["_softmax"].name == "softmax" and infos["mm"].name == "mm" and infos["maximum"].name == "maximum"
    picked, _, _ = coverage._core_infos(db, ["gather", "fmod", "isnan"])
    for mode in ("float32", "int8"):
        for name, info in picked.items():
            assert coverage.check(info, mode, None, str(tmp_path / f"{name}_{mode}")) == (True, ""), (name, mode)
