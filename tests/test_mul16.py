"""The int8 multiply in Helium's int16 lanes (codegen/twins/mul16.py): its twin stays within 1 LSB of the exact
real-valued product (torch's dequantize, mul, quantize) over random scales wherever the builder accepts them, the
pre-rounding value within the stated bound; where the bound fails the builder declines and the M55 keeps
mcu_mul_s8_mve. The portable C equals the twin bit for bit on the host; the Helium kernel on QEMU:
tests/test_ew_variants_qemu.py."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import hostc
from calls import call
from mcu.boards import load_board
from mcu.codegen.ir import Graph, QParams, Tensor, verify
from mcu.codegen.passes.select_kernels import select_kernels
from mcu.codegen.reference import run_reference
from mcu.codegen.target import Target
from mcu.codegen.twins.add16 import BOUND
from mcu.codegen.twins.mul16 import mul_h16_params, mul_h16_s8
from mcu.codegen.twins.quant import quantize_multiplier
from test_ew_variants_qemu import SHAPES
from test_kernel_variants_qemu import assert_equal_int


def mul_params(sa, za, sb, zb, so, zo, act=(-128, 127), s1=(1, 1, 1, 8), s2=(1, 1, 1, 8)) -> dict:
    """mcu_mul_s8's params as codegen/lowering_s8.py builds them."""
    m, sh = quantize_multiplier(sa * sb / so)
    return {"input1": s1, "input2": s2, "output": tuple(max(a, b) for a, b in zip(s1, s2)), "input1_offset": -za,
            "input2_offset": -zb, "output_offset": zo, "output_multiplier": m, "output_shift": sh,
            "act_min": act[0], "act_max": act[1]}


def random_scales(rng, gate: bool) -> tuple:
    """A gate: x times a sigmoid (scale 1/256, zero point -128) into x's range; else two activations whose product's
    range is 1/16 to 4 times what their ranges allow."""
    sa = float(10 ** rng.uniform(-3, 0))
    if gate:
        return sa, int(rng.integers(-128, 128)), 1 / 256, -128, sa * float(rng.uniform(0.5, 1.2)), \
            int(rng.integers(-128, 128))
    sb = float(10 ** rng.uniform(-3, 0))
    so = sa * sb * 128 * float(10 ** rng.uniform(-1.2, 0.6))
    return sa, int(rng.integers(-128, 128)), sb, int(rng.integers(-128, 128)), so, int(rng.integers(-128, 128))


def torch_mul(sa, za, sb, zb, so, zo, a, b, act) -> np.ndarray:
    """torchao's converted mul: dequantize both, multiply in float, quantize (round half to even), clamp."""
    fa = (torch.from_numpy(a.astype(np.float32)) - za) * sa
    fb = (torch.from_numpy(b.astype(np.float32)) - zb) * sb
    return np.clip(torch.quantize_per_tensor(fa * fb, so, zo, torch.qint8).int_repr().numpy(), *act)


def test_twin_within_one_lsb_of_torch_where_accepted():
    rng = np.random.default_rng(7)
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128))
    a, b = a.ravel().astype(np.int8), b.ravel().astype(np.int8)
    accepted = {True: 0, False: 0}
    for i in range(200):
        gate = i % 2 == 0
        scales = random_scales(rng, gate)
        act = (-128, 127) if i % 4 else (scales[5], 127)
        p = mul_h16_params(mul_params(*scales, act=act, s1=(1, 1, 1, a.size), s2=(1, 1, 1, b.size)))
        if p is None:
            continue
        accepted[gate] += 1
        diff = np.abs(mul_h16_s8(p, a, b).astype(np.int32) - torch_mul(*scales, a, b, act))
        assert diff.max() <= 1, f"{scales}: {int(diff.max())} LSB at {int(diff.argmax())}"
        # p's rounding costs ~r LSB before the final rounding: ~0.5 % of elements off by 1 for a gate, 3.3 % at
        # r = 0.1 (the TFLite arithmetic: none)
        assert (diff > 0).mean() < (0.015 if gate else 0.04), f"{scales}: {(diff > 0).mean():.1%} off by 1 LSB"
    assert accepted[True] == 100 and accepted[False] >= 70, accepted  # every gate; most products


def test_builder_bounds_the_error_and_declines_beyond_it():
    """The pre-rounding value (t / 2^n, or p m / 2^15 for n = 0) stays within BOUND of the exact r (a + o1)(b + o2)
    over every int8 pair; a product whose output scale is finer than a tenth of the inputs' (r > ~0.1) is declined."""
    rng = np.random.default_rng(3)
    a, b = (v.ravel().astype(np.int64) for v in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128)))
    checked = 0
    for i in range(60):
        p0 = mul_params(*random_scales(rng, i % 2 == 0))
        p = mul_h16_params(p0)
        if p is None:
            continue
        x, y = (a + p["input1_offset"]) << p["shift1"], (b + p["input2_offset"]) << p["shift2"]
        prod = (2 * x * y + (1 << 15)) >> 16
        n = p["shift"]
        approx = prod * p["multiplier"] / 2 ** 15 if n == 0 else ((2 * prod * p["multiplier"] + (1 << 15)) >> 16) / 2 ** n
        exact = p0["output_multiplier"] * 2.0 ** (p0["output_shift"] - 31) * (a + p0["input1_offset"]) * (
            b + p0["input2_offset"])
        assert np.abs(approx - exact).max() <= BOUND, p
        checked += 1
    assert checked >= 40
    assert mul_h16_params(mul_params(0.02, 0, 0.02, 0, 0.0004 / 0.3, 0)) is None      # r = 0.3
    assert mul_h16_params(mul_params(0.02, 0, 1 / 256, -128, 0.02, 0)) is not None  # a gate, r = 1/256


def _graph(params: dict) -> Graph:
    tensors = {n: Tensor(n, tuple(params[k]), "int8", QParams.tensor(0.05, 0), layout="NHWC")
               for n, k in (("a", "input1"), ("b", "input2"), ("y", "output"))}
    return verify(Graph(tensors, (call("n0", "mcu_mul_s8", ("a", "b"), "y", params),), ("a", "b"), ("y",)))


@pytest.mark.parametrize("board", ["mps3-an547", "mps2-an386"])
def test_only_the_m55_picks_it_and_only_where_its_bound_holds(board):
    target = Target.of_board(load_board(board))
    rng = np.random.default_rng(1)
    old = {"mps3-an547": "mcu_mul_s8_mve", "mps2-an386": "mcu_mul_s8_dsp"}[board]
    for scales, kernel in (((0.05, 3, 1 / 256, -128, 0.04, -4), "mcu_mul_h16_s8_mve"),
                           ((0.02, 0, 0.02, 0, 0.0004 / 0.3, 0), old)):
        g = select_kernels(_graph(mul_params(*scales, s1=(1, 2, 3, 8), s2=(1, 1, 1, 8))), target)
        assert g.nodes[0].call.kernel == (kernel if board == "mps3-an547" else old)
        x = [rng.integers(-128, 128, g.tensors[t].shape).astype(np.int8) for t in g.inputs]
        expected = torch_mul(*scales, x[0], np.broadcast_to(x[1], (1, 2, 3, 8)), (-128, 127))
        assert np.abs(run_reference(g, x)[0].astype(np.int32) - expected).max() <= 1


@pytest.mark.host_c
def test_portable_c_equals_the_twin_on_host():
    """Every broadcast shape, the int8 extremes, narrow clamps, offsets at their ends."""
    lib = hostc.bind(hostc.build([hostc.KERNELS / "elementwise/mcu_mul_h16_s8.c"]))
    rng = np.random.default_rng(5)
    count = 0
    for i, (s1, s2) in enumerate(SHAPES * 3):
        scales = list(random_scales(rng, i % 2 == 0))
        if i % 5 == 4:
            scales[1], scales[3] = 127, -128
        act = (max(-128, scales[5] - 20), min(127, scales[5] + 30)) if i % 3 == 1 else (-128, 127)
        p = mul_h16_params(mul_params(*scales, act=act, s1=s1, s2=s2))
        if p is None:
            continue
        x1, x2 = (rng.integers(-128, 128, s).astype(np.int8) for s in (s1, s2))
        x1.ravel()[:2], x2.ravel()[-2:] = (-128, 127)[:x1.size], (127, -128)[:x2.size]
        out = np.zeros(p["output"], np.int8)
        assert hostc.call(lib, "mcu_mul_h16_s8", p, x1, x2, out=out) == 0
        assert_equal_int(out, mul_h16_s8(p, x1, x2), f"{p}")
        count += 1
    assert count >= 25, count
    bad = {**p, "shift1": 9}  # (|in + offset| << 9) > 32767
    assert hostc.call(lib, "mcu_mul_h16_s8", bad, x1, x2, out=out) == 1
