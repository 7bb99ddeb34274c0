"""Package inputs and outputs follow forward's signature: input k is forward's k-th tensor argument and output k
its k-th returned tensor, in float32 and int8, whichever op reads an input first (host reference, no QEMU)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mcu
import mcu.zoo
from mcu.metrics import relative_error, sqnr_db


class GruStep(nn.Module):
    """One GRU step with its state threaded by hand: the int8 flow reads h (quantized) before x (float)."""

    def __init__(self, swap: bool = False):
        super().__init__()
        self.gru = nn.GRU(10, 16, batch_first=True)
        self.swap = swap

    def forward(self, x, h):
        y, hn = self.gru(x, h)
        return (hn, y) if self.swap else (y, hn)


def _gru_case(steps: int, swap: bool):
    torch.manual_seed(0)
    model = GruStep(swap).eval()
    g = torch.Generator().manual_seed(1)
    return model, (torch.randn(1, steps, 10, generator=g), torch.randn(1, 1, 16, generator=g))


def _calibration(xs, n=8):
    g = torch.Generator().manual_seed(2)
    return [tuple(torch.randn(x.shape, generator=g) for x in xs) for _ in range(n)]


def _check_order(pkg, xs, want):
    """Manifest input k is forward's argument k, output k its k-th result: by name, shape and value."""
    ins, outs = pkg.manifest["inputs"], pkg.manifest["outputs"]
    assert [s["name"] for s in ins] == [f"input{k}" for k in range(len(xs))]
    assert [s["shape"] for s in ins] == [list(x.shape) for x in xs]
    assert [s["name"] for s in outs] == [f"output{k}" for k in range(len(want))]
    assert [s["shape"] for s in outs] == [list(w.shape) for w in want]


def _outputs(model, xs):
    with torch.no_grad():
        out = model(*xs)
    return [o.numpy() for o in (out if isinstance(out, (tuple, list)) else (out,))]


@pytest.mark.parametrize("steps,swap", [(1, False), (3, True)])
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_gru_inputs_follow_forward(quantize, steps, swap, tmp_path):
    model, xs = _gru_case(steps, swap)
    want = _outputs(model, xs)
    calib = None if quantize == "none" else _calibration(xs)
    pkg = mcu.compile(model, xs, quantize=quantize, calibration=calib, out_dir=tmp_path, force=True)
    _check_order(pkg, xs, want)
    if quantize == "none":
        got = pkg.reference(xs)
        for g_, w in zip(got, want):
            assert relative_error(np.asarray(g_).reshape(w.shape), w) <= 1e-5
    else:
        got = pkg.dequantize_outputs(pkg.reference(xs))
        for g_, w in zip(got, want):  # each output on its own: a swap of same-shaped outputs would fall to ~0 dB
            assert sqnr_db(w, np.asarray(g_, np.float32).reshape(w.shape)) >= 20


def _multi_io_zoo():
    """Every zoo model (MODELS, BLOCKS, DEEP) with more than one input or output."""
    found = []
    for table in (mcu.zoo.MODELS, mcu.zoo.BLOCKS, mcu.zoo.DEEP):
        for name, make in table.items():
            model, xs = make()
            if len(xs) > 1 or len(_outputs(model.eval(), xs)) > 1:
                found.append(name)
    return found


def _zoo_model(name):
    for table in (mcu.zoo.MODELS, mcu.zoo.BLOCKS, mcu.zoo.DEEP):
        if name in table:
            return table[name]()
    raise KeyError(name)


def test_zoo_inputs_follow_forward(tmp_path):
    """Every multi-input or multi-output zoo model, in float32 and int8 (one test: building the zoo once takes
    ~35 s, mostly mnasnet_se). Today there is none; the issue 25 streaming models (state in, state out) will be."""
    for name in _multi_io_zoo():
        model, xs = _zoo_model(name)
        want = _outputs(model.eval(), xs)
        for quantize in ("none", "int8"):
            calib = None if quantize == "none" else _calibration(xs, 4)
            pkg = mcu.compile(model, xs, quantize=quantize, calibration=calib, out_dir=tmp_path / f"{name}_{quantize}",
                              force=True)
            _check_order(pkg, xs, want)
