"""The int8 adds with 16-bit multipliers (codegen/twins/add16.py): m16 (portable C and _dsp) and h16 (portable C and
_mve) equal their twins bit for bit on the host, on random data with int8 extremes, narrow clamps and every
broadcast form; the twins stay within 1 LSB of the exact real-valued add (torch's dequantize, add, quantize) over
many random scales wherever the builders accept them; where the error bound fails, the builders decline and the
boards keep the TFLite-arithmetic variants. On QEMU: tests/test_ew_variants_qemu.py."""
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
from mcu.codegen.twins.add16 import BOUND, add_h16_s8, add_m16_s8, add_reals, h16_params, m16_params
from mcu.codegen.twins.quant import quantize_multiplier
from test_ew_variants_qemu import SHAPES
from test_kernel_variants_qemu import assert_equal_int

BUILDERS = {"m16": (m16_params, add_m16_s8, ("mcu_add_m16_s8", "mcu_add_m16_s8_dsp", "mcu_add_m16_flat_s8_dsp",
                                            "mcu_add_m16_s8_fast")),
            "h16": (h16_params, add_h16_s8, ("mcu_add_h16_s8", "mcu_add_h16_s8_mve", "mcu_add_h16_flat_s8_mve"))}


def tflite_params(sa, za, sb, zb, so, zo, subtract=0, act=(-128, 127), s1=(1, 1, 1, 8), s2=(1, 1, 1, 8)) -> dict:
    """mcu_add_broadcast_s8's params as codegen/lowering_s8.py builds them."""
    twice_max = 2 * max(sa, sb)
    m1, sh1 = quantize_multiplier(sa / twice_max)
    m2, sh2 = quantize_multiplier(sb / twice_max)
    mo, sho = quantize_multiplier(twice_max / ((1 << 20) * so))
    out = tuple(max(a, b) for a, b in zip(s1, s2))
    return {"input1": s1, "input2": s2, "output": out, "subtract": subtract, "left_shift": 20,
            "input1_offset": -za, "input1_multiplier": m1, "input1_shift": sh1, "input2_offset": -zb,
            "input2_multiplier": m2, "input2_shift": sh2, "output_offset": zo, "output_multiplier": mo,
            "output_shift": sho, "act_min": act[0], "act_max": act[1]}


def random_scales(rng) -> tuple:
    sa, sb = (float(10 ** rng.uniform(-3, 0)) for _ in range(2))
    so = float((sa + sb) * 10 ** rng.uniform(-0.6, 0.3))  # output ranges from a quarter to twice the sum's
    return sa, int(rng.integers(-128, 128)), sb, int(rng.integers(-128, 128)), so, int(rng.integers(-128, 128))


def torch_add(sa, za, sb, zb, so, zo, a, b, subtract, act) -> np.ndarray:
    """torchao's converted add: dequantize both, add in float, quantize (round half to even), clamp."""
    fa = (torch.from_numpy(a.astype(np.float32)) - za) * sa
    fb = (torch.from_numpy(b.astype(np.float32)) - zb) * sb
    q = torch.quantize_per_tensor(fa - fb if subtract else fa + fb, so, zo, torch.qint8).int_repr().numpy()
    return np.clip(q, *act)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_twins_within_one_lsb_of_torch_over_random_scales(kind):
    build, twin, _ = BUILDERS[kind]
    rng = np.random.default_rng(7)
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128))
    a, b = a.ravel().astype(np.int8), b.ravel().astype(np.int8)
    accepted = 0
    for i in range(300):
        scales, sub = random_scales(rng), i % 3 == 0
        act = (-128, 127) if i % 4 else (scales[5], 127)  # a ReLU every fourth
        p = build(tflite_params(*scales, subtract=int(sub), act=act, s1=(1, 1, 1, a.size), s2=(1, 1, 1, b.size)))
        if p is None:
            continue
        accepted += 1
        got = twin(p, a, b).astype(np.int32)
        diff = np.abs(got - torch_add(*scales, a, b, sub, act))
        assert diff.max() <= 1, f"{kind} {scales} sub={sub}: {int(diff.max())} LSB at {int(diff.argmax())}"
        assert (diff > 0).mean() < 0.02, f"{kind} {scales}: {(diff > 0).mean():.1%} of elements off by 1 LSB"
    assert accepted >= 250, accepted  # the bound holds for typical scales


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_builders_bound_the_error_and_decline_beyond_it(kind):
    """The pre-rounding value stays within BOUND of the exact real result; an output scale far finer than the
    inputs' (ratios ~135: 16-bit multipliers leave too few fraction bits) is declined."""
    build, twin, _ = BUILDERS[kind]
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-128, 128, 4096).astype(np.int64) for _ in range(2))
    for _ in range(100):
        p0 = tflite_params(*random_scales(rng))
        p = build(p0)
        if p is None:
            continue
        r1, r2, c = add_reals(p0)
        exact = r1 * a + r2 * b + c
        if kind == "m16":
            approx = (a * p["multiplier1"] + b * p["multiplier2"] + p["bias"] - (1 << (p["shift"] - 1))) / 2.0 ** p[
                "shift"]
        else:
            t = ((a * p["multiplier1"] + 64) >> 7) + ((b * p["multiplier2"] + 64) >> 7) + p["bias"]
            approx = t / 2.0 ** p["shift"]
        assert np.abs(approx - exact).max() <= BOUND
    assert build(tflite_params(0.5, 0, 0.41, 3, 0.0037, 0)) is None
    assert build(tflite_params(0.5, 0, 0.4, 3, 0.5, 0)) is not None


def _graph(params: dict) -> Graph:
    tensors = {n: Tensor(n, tuple(params[k]), "int8", QParams.tensor(0.05, 0), layout="NHWC")
               for n, k in (("a", "input1"), ("b", "input2"), ("y", "output"))}
    return verify(Graph(tensors, (call("n0", "mcu_add_broadcast_s8", ("a", "b"), "y", params),), ("a", "b"), ("y",)))


@pytest.mark.parametrize("board,fast,old", [("mps2-an386", "mcu_add_m16_s8_dsp", "mcu_add_broadcast_s8_dsp"),
                                            ("mps3-an547", "mcu_add_h16_s8_mve", "mcu_add_broadcast_s8_mve"),
                                            ("mps2-an385", "mcu_add_m16_s8_fast", "mcu_add_broadcast_s8")])
def test_boards_pick_the_new_arithmetic_only_where_its_bound_holds(board, fast, old):
    target = Target.of_board(load_board(board))
    rng = np.random.default_rng(1)
    for so, kernel in ((0.5, fast), (0.0037, old)):
        g = select_kernels(_graph(tflite_params(0.5, 0, 0.41, 3, so, -4, s1=(1, 2, 3, 8))), target)
        node = g.nodes[0]
        assert node.call.kernel == kernel
        x = [rng.integers(-128, 128, g.tensors[t].shape).astype(np.int8) for t in g.inputs]
        expected = torch_add(0.5, 0, 0.41, 3, so, -4, np.broadcast_to(x[0], (1, 2, 3, 8)), x[1], 0, (-128, 127))
        assert np.abs(run_reference(g, x)[0].astype(np.int32) - expected).max() <= 1


def host_cases(rng):
    """(params, input1, input2) for both builders: every broadcast shape, add and subtract, narrow clamps, the
    int8 extremes in every input, offsets at their ends (outputs saturating)."""
    for i, (s1, s2) in enumerate(SHAPES * 3):
        scales = list(random_scales(rng))
        if i % 5 == 4:
            scales[1], scales[3] = 127, -128
        zo = scales[5]
        act = (max(-128, zo - 20), min(127, zo + 30)) if i % 3 == 1 else (-128, 127)
        p = tflite_params(*scales, subtract=i % 2, act=act, s1=s1, s2=s2)
        x1, x2 = (rng.integers(-128, 128, s).astype(np.int8) for s in (s1, s2))
        x1.ravel()[:2], x2.ravel()[-2:] = (-128, 127)[:x1.size], (127, -128)[:x2.size]
        yield p, x1, x2


@pytest.mark.host_c
def test_c_equals_twins_on_host():
    """Portable C and the variants' C (the DSP's stand-ins, Helium's fallback loop) equal the twins bit for bit; the
    same-shape (_flat) variants in place too."""
    kernels = [k for _, _, ks in BUILDERS.values() for k in ks]
    lib = hostc.bind(hostc.build([hostc.KERNELS / f"elementwise/{k}.c" for k in kernels]))
    rng = np.random.default_rng(5)
    count = 0
    for p0, x1, x2 in host_cases(rng):
        for build, twin, names in BUILDERS.values():
            p = build(p0)
            if p is None:
                continue
            expected = twin(p, x1, x2)
            same = list(p["input1"]) == list(p["input2"]) == list(p["output"])
            for kernel in names if same else names[:2] + names[3:]:  # _flat: two same-shaped inputs
                out = np.zeros(p["output"], np.int8)
                assert hostc.call(lib, kernel, p, x1, x2, out=out) == 0
                assert_equal_int(out, expected, f"{kernel} {p}")
                count += 1
            if same:
                for kernel in names[2:3]:
                    y = x1.copy()
                    assert hostc.call(lib, kernel, p, y, x2, out=y) == 0
                    assert_equal_int(y, expected, f"{kernel} in place {p}")
    assert count >= 100, count
    bad = {**m16_params(tflite_params(0.5, 0, 0.4, 3, 0.5, 0)), "shift": 25}
    out = np.zeros(bad["output"], np.int8)
    assert hostc.call(lib, "mcu_add_m16_s8_dsp", bad, np.zeros(8, np.int8), np.zeros(8, np.int8), out=out) == 1
