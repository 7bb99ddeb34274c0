"""Ops that failed as a new user tried them (issue 25): GRUCell, LSTMCell, repeat_interleave (grouped-query attention),
autocast regions, addcmul, addcdiv, true_divide, fmax, fmin, log2, exp2, lerp, adaptive max pools, unfold (im2col)
and x[idx] with a constant index, each through decompositions into ops that run; and core ATen ops found with
scripts/opinfo_coverage.py --core (log10, sinh, cosh, asinh, acosh, fmod, remainder, full_like, gather, scatter,
slice_scatter, select_scatter, logical ops on any floats, logical_xor, any, all, fill, .float(), native_layer_norm).

- Every case, host reference: float32 within 1e-5 relative of torch, int8 >= 25 dB SQNR per output (seeded weights
  and inputs, calibrated on 8 random batches plus the input).
- A few (cells, attention, pools and unfold) on QEMU (mps2-an386): device == reference bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mcu
from mcu.metrics import relative_error, sqnr_db
from tests.opmodels import (AutocastRegion, ConstantGatherScatter, ConstantIndex, CoreElementwise, CoreLogicAndNorms,
                            GroupedQueryAttention, GruCellStep, LstmCellStep, MaxPoolsUnfold, SmallArith)

CASES = {  # name: (model, input shapes, on QEMU)
    "gru_cell": (GruCellStep, [(2, 6), (2, 8)], True),
    "lstm_cell": (LstmCellStep, [(2, 6), (2, 8), (2, 8)], True),
    "gqa_repeat_interleave": (GroupedQueryAttention, [(1, 3, 16)], True),
    "max_pools_unfold": (MaxPoolsUnfold, [(1, 2, 9, 8)], True),
    "autocast_region": (AutocastRegion, [(2, 8)], False),
    "small_arith": (SmallArith, [(4, 8), (4, 8)], False),
    "constant_index": (ConstantIndex, [(5, 8)], False),
    "core_elementwise": (CoreElementwise, [(4, 8), (4, 8)], False),
    "gather_scatter": (ConstantGatherScatter, [(2, 5), (2, 5)], True),
    "logic_and_norms": (CoreLogicAndNorms, [(4, 8), (4, 8)], True),
}


def _outputs(out):
    return [o.numpy() for o in (out if isinstance(out, (tuple, list)) else (out,))]


def _compile(name, mode, tmp_path):
    make, shapes, _ = CASES[name]
    torch.manual_seed(1)
    model = make().eval()
    g = torch.Generator().manual_seed(2)
    xs = tuple(torch.randn(s, generator=g) for s in shapes)
    calib = None if mode == "none" else [tuple(torch.randn(s, generator=g) for s in shapes) for _ in range(8)] + [xs]
    pkg = mcu.compile(model, xs, quantize=mode, calibration=calib, out_dir=tmp_path / "pkg", board="mps2-an386")
    with torch.no_grad():
        want = _outputs(model(*xs))
    ref = pkg.reference(xs)
    got = ref if mode == "none" else pkg.dequantize_outputs(ref)
    return pkg, xs, want, [np.asarray(r, np.float32).reshape(w.shape) for r, w in zip(got, want)], ref


def _check_vs_torch(name, mode, want, got):
    assert len(got) == len(want), f"{name}: {len(got)} outputs, torch {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if mode == "none":
            assert relative_error(g, w) <= 1e-5, f"{name} output {k}: relative error {relative_error(g, w):.2e}"
        else:
            assert sqnr_db(w, g) >= 25, f"{name} output {k}: SQNR {sqnr_db(w, g):.1f} dB"


@pytest.mark.parametrize("mode", ["none", "int8"])
@pytest.mark.parametrize("name", [n for n, c in CASES.items() if not c[2]])
def test_held_out_op_matches_torch_on_the_host(name, mode, tmp_path):
    _, _, want, got, _ = _compile(name, mode, tmp_path)
    _check_vs_torch(name, mode, want, got)


@pytest.mark.qemu
@pytest.mark.parametrize("mode", ["none", "int8"])
@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[2]])
def test_held_out_op_runs_on_the_device(name, mode, tmp_path):
    pkg, xs, want, got, ref = _compile(name, mode, tmp_path)
    _check_vs_torch(name, mode, want, got)
    dev = mcu.run(pkg, xs).outputs
    for k, (d, r) in enumerate(zip(dev, ref if mode == "none" else pkg.dequantize_outputs(ref))):
        d, r = np.asarray(d).reshape(-1), np.asarray(r).reshape(-1)
        bad = np.flatnonzero(d != r)
        assert bad.size == 0, f"{name} output {k}: device {d[bad[0]]} != reference {r[bad[0]]} at {bad[0]}"


def test_indices_of_an_adaptive_max_pool_are_refused_with_the_source_line():
    class WithIndices(torch.nn.Module):
        def forward(self, x):
            y, i = torch.nn.functional.adaptive_max_pool2d(x, 2, return_indices=True)
            return y, i

    with pytest.raises(mcu.errors.UnsupportedOpError, match=r"indices output at .*test_held_out_ops.py:\d+"):
        mcu.compile(WithIndices(), (torch.randn(1, 2, 4, 4),), quantize="none", out_dir=None)
