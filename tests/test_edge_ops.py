"""Edge-model ops beyond the zoo, end to end: each model compiles in float32 and int8, runs on QEMU equal to the
numpy reference bit for bit, and stays within the stated tolerance of torch (float32: 1e-5 relative; int8: SQNR)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.metrics import relative_error, sqnr_db


class Attention(nn.Module):
    """Single-head attention with the matmul forms users write: @, mm, addmm, t()."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)
        self.register_buffer("w", torch.randn(8, 6))
        self.register_buffer("bias", torch.randn(6))

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        y = torch.softmax(q @ k.transpose(1, 2) / 8 ** 0.5, dim=-1) @ v
        return y, torch.addmm(self.bias, y[0], self.w), torch.mm(y[0], y[0].t())


CASES = {"attention": (Attention, (1, 5, 8), 25.0)}


def check(name: str, quantize: str, tmp_path) -> mcu.Package:
    cls, shape, min_sqnr = CASES[name]
    torch.manual_seed(0)
    model, x = cls().eval(), torch.randn(shape)
    calib = None if quantize == "none" else [(x,)] + [(torch.randn(shape),) for _ in range(15)]
    pkg = mcu.compile(model, (x,), quantize=quantize, calibration=calib, out_dir=tmp_path / "p")
    res = mcu.run(pkg, (x,))
    with torch.no_grad():
        out = model(x)
    want = [w.numpy() for w in (out if isinstance(out, tuple) else (out,))]
    for got, ref in zip(res.raw_outputs, pkg.reference((x,))):
        assert np.array_equal(got, ref)
    for got, w in zip(res.outputs, want):
        got = got.reshape(w.shape)
        if quantize == "none":
            assert relative_error(got, w) <= 1e-5
        else:
            assert sqnr_db(w, got) >= min_sqnr
    return pkg


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_attention_matmul_forms(quantize, tmp_path):
    pkg = check("attention", quantize, tmp_path)
    kernels = {op["kernel"] for op in pkg.manifest["ops"]}
    assert ("mcu_matmul_f32" if quantize == "none" else "mcu_matmul_s8") in kernels
