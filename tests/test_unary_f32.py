"""Elementwise functions: float32 through mcu_unary_f32 (mcu_fmath.h, no libm), int8 through a table.

- C == twin bit for bit for every function, on edge values (0, -0, +-inf, NaN, subnormals, ties, huge) and
  random ones; the twin is within a stated tolerance of torch;
- a model of many functions compiles in float32 and int8 and runs exact on QEMU (M4 here; tests/test_float32.py
  covers the soft-float cores for the float kernels).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hostc
import mcu
from mcu.codegen.twins.float32 import UNARY_OPS, unary_f32
from mcu.metrics import relative_error, sqnr_db

EDGE = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1.17549435e-38, 0.5, -0.5, 1.5, 2.5, -2.5,
                 8388607.5, 8388609.0, -8388609.0, 3.0e38, -3.0e38, 88.7, -104.0, 1e-8, 7.0, 1e4, -1e4],
                np.float32)
SCALARS = {"leaky_relu": (0.01, 0, 0), "elu": (1.0, 1.0, 1.0), "softplus": (1.0, 20.0, 0), "hardshrink": (0.5, 0, 0),
           "softshrink": (0.5, 0, 0), "threshold": (0.1, 2.0, 0), "affine": (3.0, 1.0, 0), "div": (3.0, 0, 0),
           "pow": (1.7, 0, 0)}


@pytest.fixture(scope="module")
def lib():
    return hostc.build([hostc.KERNELS / "float" / "mcu_unary_f32.c"])


@pytest.mark.host_c
@pytest.mark.parametrize("name", UNARY_OPS)
def test_c_equals_twin_bit_for_bit(lib, name):
    rng = np.random.default_rng(UNARY_OPS.index(name))
    x = np.concatenate([EDGE, rng.normal(0, 4, 500).astype(np.float32),
                        rng.uniform(-200, 200, 200).astype(np.float32)])
    a, b, c = SCALARS.get(name, (0.0, 0.0, 0.0))
    p = {"size": x.size, "op": UNARY_OPS.index(name), "a": a, "b": b, "c": c}
    out = np.zeros_like(x)
    assert hostc.call(lib, "mcu_unary_f32", p, x, out=out) == hostc.MCU_OK
    want = unary_f32(p, x)
    same = (out.view(np.uint32) == want.view(np.uint32)) | (np.isnan(out) & np.isnan(want))
    i = int(np.argmin(same))
    assert same.all(), f"{name}: first mismatch at x={x[i]!r}: C {out[i]!r}, twin {want[i]!r}"


@pytest.mark.host_c
def test_bad_op_is_refused(lib):
    x = np.zeros(4, np.float32)
    for op in (-1, len(UNARY_OPS)):
        p = {"size": 4, "op": op, "a": 0.0, "b": 0.0, "c": 0.0}
        assert hostc.call(lib, "mcu_unary_f32", p, x, out=np.zeros_like(x)) == hostc.MCU_ERR_ARG
    with pytest.raises(ValueError):
        unary_f32({"size": 4, "op": len(UNARY_OPS), "a": 0, "b": 0, "c": 0}, x)


FUNCTIONS = {
    "abs": torch.abs, "neg": torch.neg, "exp": torch.exp, "log": lambda x: torch.log(x.abs() + 0.1),
    "sqrt": lambda x: torch.sqrt(x.abs()), "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.1), "sin": torch.sin,
    "cos": torch.cos, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "floor": torch.floor, "ceil": torch.ceil,
    "round": torch.round, "trunc": torch.trunc, "sign": torch.sign, "erf": torch.erf, "leaky_relu": F.leaky_relu,
    "elu": F.elu, "selu": F.selu, "celu": F.celu, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid,
    "silu": F.silu, "mish": F.mish, "softplus": F.softplus, "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "hardshrink": F.hardshrink, "softshrink": F.softshrink,
    "threshold": lambda x: F.threshold(x, 0.1, 2.0), "logsigmoid": F.logsigmoid, "affine": lambda x: x * 3 + 1,
    "rsub": lambda x: 2 - x, "div": lambda x: x / 3, "pow2": lambda x: x ** 2, "pow": lambda x: x.abs() ** 1.7,
    "reciprocal": torch.reciprocal, "log1p": lambda x: torch.log1p(x.abs()), "expm1": torch.expm1,
    "relu_of_sin": lambda x: F.relu(torch.sin(x)), "tanhshrink": F.tanhshrink,
    "atan": lambda x: torch.atan(x * 4), "asin": lambda x: torch.asin(torch.tanh(x)),
    "acos": lambda x: torch.acos(torch.tanh(x)),
}


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float32_reference_is_within_1e_5_of_torch(name, tmp_path):
    x = torch.linspace(-6, 6, 120).reshape(1, 120)
    pkg = mcu.compile(Fn(FUNCTIONS[name]), (x,), quantize="none", out_dir=tmp_path / "p")
    assert {"mcu_unary_f32"} <= {op["kernel"] for op in pkg.manifest["ops"]} or name == "neg"
    want = FUNCTIONS[name](x).numpy()
    assert relative_error(pkg.reference((x,))[0].reshape(want.shape), want) <= 1e-5


class Chain(nn.Module):
    def forward(self, x):
        y = F.mish(x) + torch.sin(x) * 0.5 - F.gelu(x)
        y = y + torch.atan(x) + torch.asin(torch.tanh(x)) * 0.5 - torch.acos(torch.tanh(x * 0.5))
        return torch.sqrt(y.abs() + 1) + torch.log1p(torch.exp(-x.abs())) + F.hardswish(torch.round(x * 2) / 2)


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_chain_runs_exact_on_the_device(quantize, tmp_path):
    torch.manual_seed(4)
    x = torch.randn(1, 64) * 3
    calib = None if quantize == "none" else [(torch.randn(1, 64) * 3,) for _ in range(8)]
    pkg = mcu.compile(Chain(), (x,), quantize=quantize, calibration=calib, out_dir=tmp_path / "p")
    res = mcu.run(pkg, (x,))
    assert np.array_equal(res.raw_outputs[0], pkg.reference((x,))[0])
    want = Chain()(x).numpy()
    if quantize == "none":
        assert relative_error(res.outputs[0].reshape(want.shape), want) <= 1e-5
    else:
        assert sqnr_db(want, res.outputs[0].reshape(want.shape)) >= 25


# ---- two tensors: mcu_binary_f32, and float islands in integer models ----------------------------------------------

@pytest.mark.host_c
@pytest.mark.parametrize("op", ["div", "minimum", "maximum", "pow"])
def test_binary_c_equals_twin_with_broadcasting(op):
    from mcu.codegen.twins.float32 import BINARY_OPS, binary_f32
    lib = hostc.build([hostc.KERNELS / "float" / "mcu_binary_f32.c"])
    rng = np.random.default_rng(BINARY_OPS.index(op))
    a = np.concatenate([EDGE[:16], rng.normal(0, 3, 8).astype(np.float32)]).reshape(1, 2, 3, 4)
    b = rng.normal(0, 3, 4).astype(np.float32).reshape(1, 1, 1, 4)
    b[0, 0, 0, 0] = np.nan
    p = {"input1": (1, 2, 3, 4), "input2": (1, 1, 1, 4), "output": (1, 2, 3, 4), "op": BINARY_OPS.index(op),
         "act_min": -3.4e38, "act_max": 3.4e38}
    out = np.zeros(24, np.float32)
    assert hostc.call(lib, "mcu_binary_f32", p, a, b, out=out) == hostc.MCU_OK
    want = binary_f32(p, a, b).reshape(-1)
    same = (out.view(np.uint32) == want.view(np.uint32)) | (np.isnan(out) & np.isnan(want))
    assert same.all(), (out[~same], want[~same])
    assert hostc.call(lib, "mcu_binary_f32", {**p, "op": len(BINARY_OPS)}, a, b, out=out) == hostc.MCU_ERR_ARG


class Islands(nn.Module):
    """Division, minimum, maximum and power of two tensors: no integer kernel, so float islands in int8/a16w8."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        a, b = self.c1(x), self.c2(x)
        y = a / (b.abs() + 1) + torch.minimum(a, b) - torch.maximum(a, b.mean((2, 3), keepdim=True))
        return y, F.softsign(a) + torch.pow(b.abs() + 0.5, torch.sigmoid(a))


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", ["none", "int8", "a16w8"])
def test_float_islands_run_exact_on_the_device(quantize, tmp_path):
    torch.manual_seed(6)
    model, x = Islands().eval(), torch.randn(1, 3, 8, 8)
    calib = None if quantize == "none" else [(torch.randn(1, 3, 8, 8),) for _ in range(8)]
    pkg = mcu.compile(model, (x,), quantize=quantize, calibration=calib, out_dir=tmp_path / "p")
    kernels = {op["kernel"] for op in pkg.manifest["ops"]}
    assert "mcu_binary_f32" in kernels
    if quantize != "none":  # the islands: entered and left through converts, the convs stay integer
        assert {"mcu_dequantize_s8_f32", "mcu_quantize_f32_s8"} <= kernels or \
            {"mcu_dequantize_s16_f32", "mcu_quantize_f32_s16"} <= kernels
        assert not any(k.startswith("mcu_conv2d") and k.endswith("f32") for k in kernels), kernels
    res = mcu.run(pkg, (x,))
    with torch.no_grad():
        want = [w.numpy() for w in model(x)]
    for got, ref, w in zip(res.raw_outputs, pkg.reference((x,)), want):
        assert np.array_equal(got, ref)
    for got, w in zip(res.outputs, want):
        got = got.reshape(w.shape)
        assert relative_error(got, w) <= 1e-5 if quantize == "none" else sqnr_db(w, got) >= 25


class Atan2(nn.Module):
    def forward(self, y, x):
        return torch.atan2(y, x)


@pytest.mark.qemu
def test_atan2_every_quadrant_the_axes_and_the_origin_on_the_device(tmp_path):
    """atan2 (a composite of atan and where): the four quadrants, both axes (x = 0: y / x is +-inf; y = 0 with x < 0:
    +pi) and the origin (0, as torch), within 1e-5 of torch; the device equals the reference bit for bit."""
    grid = torch.tensor([-3.0, -1.0, -0.25, 0.0, 0.5, 2.0])
    y, x = torch.meshgrid(grid, grid, indexing="ij")
    y, x = y.reshape(1, 36), x.reshape(1, 36)
    pkg = mcu.compile(Atan2(), (y, x), quantize="none", out_dir=tmp_path / "p")
    want = torch.atan2(y, x).numpy()
    got = pkg.reference((y, x))[0].reshape(want.shape)
    assert np.abs(got - want).max() <= 1e-5 * np.pi and got[0, 3 * 6 + 3] == 0.0
    assert np.array_equal(mcu.run(pkg, (y, x)).raw_outputs[0], pkg.reference((y, x))[0])
