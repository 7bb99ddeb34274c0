"""The int16-activation ("a16w8") C kernels built with the host gcc equal their numpy twins (codegen/twins/s16.py) bit for
bit; hand-computed cases pin the twins, rational arithmetic pins mcu_requantize64, float references bound softmax
and the LUT, and a hypothesis fuzz runs every kernel under ASan + UBSan (tests/test_fuzz_kernels.py's driver)."""
from __future__ import annotations

import ctypes
import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostc
from mcu.codegen.twins import quant, s16
from test_fuzz_kernels import FUZZ, MULT, Case, act_range, check, driver, ints  # noqa: F401  (driver: a fixture)
from test_kernels_host import Q30, assert_equal_int, conv_params, fc_params, pool_params

pytestmark = pytest.mark.host_c

TWINS = {
    "mcu_conv2d_s16": s16.conv2d_s16,
    "mcu_dwconv2d_s16": s16.dwconv2d_s16,
    "mcu_fully_connected_s16": s16.fully_connected_s16,
    "mcu_add_s16": s16.add_s16,
    "mcu_mul_s16": s16.mul_s16,
    "mcu_add_broadcast_s16": s16.add_broadcast_s16,
    "mcu_matmul_s16": s16.matmul_s16,
    "mcu_maxpool2d_s16": s16.maxpool2d_s16,
    "mcu_avgpool2d_s16": s16.avgpool2d_s16,
    "mcu_softmax_s16": s16.softmax_s16,
    "mcu_lut_s16": s16.lut_s16,
    "mcu_convert_s8_s16": s16.convert_s8_s16,
    "mcu_convert_s16_s8": s16.convert_s16_s8,
    "mcu_convert_s16_s16": s16.convert_s16_s16,
    "mcu_dequantize_s16_f32": s16.dequantize_s16_f32,
    "mcu_quantize_f32_s16": s16.quantize_f32_s16,
    "mcu_transpose_s16": s16.transpose_s16,
}
# variants run on the host with the DSP instructions' C stand-ins, against their portable kernel's twin
VARIANTS = {"mcu_matmul_s16_dsp": "mcu_matmul_s16", "mcu_add_broadcast_s16_dsp": "mcu_add_broadcast_s16"}
I32_MIN, I32_MAX = quant.INT32_MIN, quant.INT32_MAX
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
I16 = (-32768, 32767)
ARG, SHAPE = hostc.MCU_ERR_ARG, hostc.MCU_ERR_SHAPE


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


def run_c(lib, kernel, *args):
    """The C kernel on the twin's arguments, into a garbage-filled buffer shaped like the twin's result."""
    expected = TWINS[VARIANTS.get(kernel, kernel)](*args)
    rng = np.random.default_rng(0)
    out = rng.integers(-128, 128, size=expected.shape).astype(expected.dtype)
    status = hostc.call(lib, kernel, *args, out=out)
    assert status == hostc.MCU_OK, f"{kernel} returned {status}"
    return out, expected


def i16(values, shape=None):
    a = np.array(values, dtype=np.int16)
    return a if shape is None else a.reshape(shape)


def q(mults, shifts):
    return np.array(mults, np.int32), np.array(shifts, np.int32)


def conv16(inp, filt, out, act=I16, **kw):
    return conv_params(inp, filt, out, act=act, **kw)


def pool16(inp, out, kernel, act=I16, **kw):
    return pool_params(inp, out, kernel, act=act, **kw)


def add16(size, in1=(Q30, 1), in2=(Q30, 1), out=(Q30, -14), left_shift=15, act=I16):
    """(multiplier, shift) per input and output; the defaults make the add exact: out = in1 + in2."""
    p = {"size": size, "left_shift": left_shift, "act_min": act[0], "act_max": act[1]}
    for name, (mult, sh) in (("input1", in1), ("input2", in2), ("output", out)):
        p.update({f"{name}_offset": 0, f"{name}_multiplier": mult, f"{name}_shift": sh})
    return p


def mul16(in1, in2, out, mult=Q30, shift=-1, act=I16):
    return {"input1": in1, "input2": in2, "output": out, "input1_offset": 0, "input2_offset": 0, "output_offset": 0,
            "output_multiplier": mult, "output_shift": shift, "act_min": act[0], "act_max": act[1]}


def addb16(dims1, dims2, dims_out, subtract=0, **kw):
    """add16's fields (kw: its multipliers) with broadcast dims: exact (out = in1 +- in2) by default."""
    p = add16(1, **kw)
    del p["size"]
    return {**p, "input1": dims1, "input2": dims2, "output": dims_out, "subtract": subtract}


def mm16(b, m, k, n, lhs_b=None, rhs_b=None, mult=Q30, shift=1, act=I16, group=1, transposed=0):
    return {"batches": b, "lhs_batches": b if lhs_b is None else lhs_b, "rhs_batches": b if rhs_b is None else rhs_b,
            "m": m, "k": k, "n": n, "lhs_offset": 0, "rhs_offset": 0, "output_offset": 0, "output_multiplier": mult,
            "output_shift": shift, "act_min": act[0], "act_max": act[1], "rhs_group": group,
            "rhs_transposed": transposed}


def convert(size, mult, shift, in_off=0, out_off=0):
    return {"size": size, "input_offset": in_off, "output_offset": out_off, "multiplier": mult, "shift": shift}


# ---- mcu_requantize64 (mcu_quant.h) == quant.requantize64 == the rational definition ---------------------------

REQ64_WRAPPER = """
#include <stdint.h>
#include "mcu/mcu_quant.h"
void t_requantize64(const int64_t *acc, const int32_t *m, const int32_t *s, int32_t *out, int32_t n)
{ for (int32_t i = 0; i < n; ++i) out[i] = mcu_requantize64(acc[i], m[i], s[i]); }
"""


@pytest.fixture(scope="module")
def req64():
    lib = hostc.build_source(REQ64_WRAPPER, "requantize64")
    lib.t_requantize64.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int32]
    lib.t_requantize64.restype = None

    def run(acc, m, s):
        acc, m, s = np.broadcast_arrays(np.asarray(acc, np.int64), np.asarray(m, np.int64), np.asarray(s, np.int64))
        acc = np.ascontiguousarray(acc, np.int64)
        m, s = np.ascontiguousarray(m, np.int32), np.ascontiguousarray(s, np.int32)
        out = np.empty(acc.shape, np.int32)
        lib.t_requantize64(acc.ctypes.data, m.ctypes.data, s.ctypes.data, out.ctypes.data, out.size)
        return out
    return run


def exact64(acc: int, m: int, shift: int) -> int:
    """The definition: floor(acc * m * 2^(shift - 31) + 1/2), saturated to int32."""
    v = math.floor(Fraction(acc * m) * Fraction(2) ** (shift - 31) + Fraction(1, 2))
    return min(max(v, I32_MIN), I32_MAX)


REQ64_EDGES = [  # (acc, multiplier, shift, expected): ties up (-2.5 -> -2), large |acc|, saturation
    (5, Q30, 0, 3), (-5, Q30, 0, -2), (-6, Q30, -1, -1), (-10, Q30, -1, -2), (-3, Q30, -1, -1), (3, Q30, -1, 1),
    (-1, Q30, 0, 0), (1, Q30, 0, 1), (-1, Q30, -31, 0), (12345, 0, 5, 0), (1, Q30, 30, 1 << 29),
    (1 << 62, Q30, -31, 1 << 30), (-(1 << 62), Q30, -31, -(1 << 30)), (I64_MIN, Q30, -31, I32_MIN),
    (I64_MAX, I32_MAX, -31, I32_MAX), (I64_MAX, I32_MAX, 30, I32_MAX), (I64_MIN, I32_MAX, 30, I32_MIN),
    (I64_MIN, 1, -31, -2),
    ((2**30 + 1) << 31, Q30, -31, 2**29 + 1), (-((2**30 + 1) << 31), Q30, -31, -(2**29)),  # ties at r = 62
    (3 << 40, Q30, -31, 768), (-(3 << 40) - 1, Q30, -31, -768),
    ((1 << 32) + (1 << 31), Q30, 0, I32_MAX), (-(1 << 33), Q30, -1, -(1 << 31)), (-(1 << 33) - 1, Q30, -1, I32_MIN),
    (I32_MAX, I32_MAX, 1, I32_MAX), (I32_MIN, I32_MAX, 1, I32_MIN),  # no pre-saturation (mcu_requantize has one)
    (-(1 << 31) - 1, Q30, 1, I32_MIN),
    ((1 << 31) + 1, Q30, -1, 1 << 29), (-(1 << 35) - (1 << 2), Q30, -3, -(1 << 31)),
]


def test_requantize64_edges_by_definition():
    for acc, m, s, want in REQ64_EDGES:
        assert exact64(acc, m, s) == want, (acc, m, s)


def test_requantize64_c_and_twin_edges(req64):
    acc, m, s, want = (np.array(c, dtype=np.int64) for c in zip(*REQ64_EDGES))
    assert_equal_int(req64(acc, m, s), want)
    assert_equal_int(quant.requantize64(acc, m, s), want)


def test_requantize64_every_shift_against_rationals(req64):
    rng = np.random.default_rng(64)
    full = rng.integers(I64_MIN, I64_MAX, size=200, endpoint=True)
    mid = rng.integers(-(1 << 40), 1 << 40, size=200)
    small = rng.integers(-3000, 3000, size=100)
    ties = ((2 * rng.integers(-1 << 20, 1 << 20, size=200) + 1) << rng.integers(0, 42, size=200)).astype(np.int64)
    accs = np.concatenate([full, mid, small, ties, [I64_MIN, I64_MIN + 1, I32_MIN, -1, 0, 1, I32_MAX, I64_MAX]])
    mults = np.concatenate([rng.integers(Q30, 1 << 31, size=accs.size - 4), [0, 1, Q30, I32_MAX]])
    rng.shuffle(mults)
    for shift in range(-31, 31):
        got = req64(accs, mults, shift)
        assert_equal_int(got, quant.requantize64(accs, mults, shift))
        want = [exact64(int(a), int(m), shift) for a, m in zip(accs, mults)]
        assert_equal_int(got, np.array(want, np.int64))


def test_requantize64_equals_requantize_on_int32_without_presaturation(req64):
    """For shift <= 0 both round acc * m * 2^(shift - 31) once, ties up: the same integers on int32 accumulators."""
    rng = np.random.default_rng(5)
    accs = rng.integers(I32_MIN, I32_MAX, size=500, endpoint=True)
    mults = rng.integers(0, 1 << 31, size=500)
    for shift in range(-31, 1):
        assert_equal_int(req64(accs, mults, shift), quant.requantize(accs, mults, shift))


def test_requantize64_twin_rejects_bad_arguments():
    for m, s in ((-1, 0), (Q30, 31), (Q30, -32)):
        with pytest.raises(ValueError):
            quant.requantize64(1, m, s)


# ---- Hand-computed cases: they pin the twins (and, through the C test, the C) ------------------------------------

def _hand_cases():
    one, half = q([Q30], [1]), q([Q30], [0])
    ramp = i16(np.arange(25) * 500, (1, 5, 5, 1))
    yield ("conv 1x1 halves acc, ties up (7.5 -> 8, -7.5 -> -7)", "mcu_conv2d_s16",
           (conv16((1, 1, 4, 1), (1, 1, 1, 1), (1, 1, 4, 1)), *half, i16([15, -15, 3, -1], (1, 1, 4, 1)),
            np.ones((1, 1, 1, 1), np.int8), None), [8, -7, 2, 0])
    yield ("conv int64 bias past int32: (3 * 2^40 + 9 * 32767 * 127) / 2^30 -> 3072", "mcu_conv2d_s16",
           (conv16((1, 3, 3, 1), (1, 3, 3, 1), (1, 1, 1, 1)), *q([Q30], [-29]), i16(np.full((1, 3, 3, 1), 32767)),
            np.full((1, 3, 3, 1), 127, np.int8), np.array([3 << 40], np.int64)), [3072])
    yield ("conv 2x2 dilation 2 stride 2 + bias, halved", "mcu_conv2d_s16",
           (conv16((1, 5, 5, 1), (1, 2, 2, 1), (1, 2, 2, 1), stride=(2, 2), dilation=(2, 2)), *half, ramp,
            np.ones((1, 2, 2, 1), np.int8), np.array([1], np.int64)), [[6001, 8001], [16001, 18001]])
    yield ("conv 3x3 pad 1 sums valid taps only; saturates to the clamp", "mcu_conv2d_s16",
           (conv16((1, 2, 2, 1), (1, 3, 3, 1), (1, 2, 2, 1), pad=(1, 1), act=(-32768, 100000 // 4)), *one,
            i16([[10000, -2000], [3000, 30000]], (1, 2, 2, 1)), np.ones((1, 3, 3, 1), np.int8), None),
           [[25000, 25000], [25000, 25000]])
    yield ("grouped conv, 2 groups", "mcu_conv2d_s16",
           (conv16((1, 1, 1, 4), (2, 1, 1, 2), (1, 1, 1, 2)), *q([Q30, Q30], [1, 1]), i16([1, 2, 3, 4], (1, 1, 1, 4)),
            np.array([1, 1, 1, -1], np.int8).reshape(2, 1, 1, 2), None), [3, -1])
    yield ("conv relu clamp", "mcu_conv2d_s16",
           (conv16((1, 1, 3, 1), (1, 1, 1, 1), (1, 1, 3, 1), act=(0, 20000)), *one,
            i16([-7, 300, 30000], (1, 1, 3, 1)), np.ones((1, 1, 1, 1), np.int8), None), [0, 300, 20000])
    yield ("dwconv ch_mult 2", "mcu_dwconv2d_s16",
           (conv16((1, 1, 1, 2), (1, 1, 1, 4), (1, 1, 1, 4)), *q([Q30] * 4, [1] * 4), i16([300, -400], (1, 1, 1, 2)),
            np.array([1, 2, 3, -1], np.int8).reshape(1, 1, 1, 4), None), [300, 600, -1200, 400])
    yield ("dwconv 3x3 pad 1 with bias, per-channel shift", "mcu_dwconv2d_s16",
           (conv16((1, 2, 2, 1), (1, 3, 3, 1), (1, 2, 2, 1), pad=(1, 1)), *q([Q30], [-1]),
            i16(np.full((1, 2, 2, 1), 1000)), np.ones((1, 3, 3, 1), np.int8), np.array([2], np.int64)), [[1001] * 2] * 2)
    yield ("fc with bias and batch 2; -128 weights at the int16 extremes", "mcu_fully_connected_s16",
           (fc_params(2, 3, 2, act=I16), *q([Q30, Q30], [1, -7]), i16([[1, 2, 3], [-32768, 32767, 0]]),
            np.array([[1, 0, -1], [-128, -128, -128]], np.int8), np.array([10, -20], np.int64)),
           [[8, -3], [-32758, 0]])
    yield ("maxpool: padding never wins over negatives", "mcu_maxpool2d_s16",
           (pool16((1, 2, 2, 1), (1, 3, 3, 1), (2, 2), pad=(1, 1)), i16([[-30000, -20000], [-10000, -32768]], (1, 2, 2, 1))),
           [[-30000, -20000, -20000], [-10000, -10000, -20000], [-10000, -10000, -32768]])
    yield ("avgpool rounds half away from zero", "mcu_avgpool2d_s16",
           (pool16((2, 1, 2, 1), (2, 1, 1, 1), (1, 2)), i16([1, 2, -1, -2], (2, 1, 2, 1))), [2, -2])
    yield ("avgpool of the extremes", "mcu_avgpool2d_s16",
           (pool16((1, 1, 4, 1), (1, 1, 2, 1), (1, 2), stride=(1, 2)), i16([32767, 32767, -32768, -32767], (1, 1, 4, 1))),
           [32767, -32768])
    yield ("avgpool divisor 9 counts padding", "mcu_avgpool2d_s16",
           (pool16((1, 3, 3, 1), (1, 3, 3, 1), (3, 3), pad=(1, 1), divisor=9), i16(np.full((1, 3, 3, 1), 9000))),
           [[4000, 6000, 4000], [6000, 9000, 6000], [4000, 6000, 4000]])
    yield ("add is exact with unit multipliers, saturates", "mcu_add_s16",
           (add16(3), i16([1, 2, 32767]), i16([3, -4, 1])), [4, -2, 32767])
    yield ("add halves the sum, ties up: 1.5 -> 2, -1.5 -> -1", "mcu_add_s16",
           (add16(4, out=(Q30, -15)), i16([1, -1, 30000, -32768]), i16([2, -2, 30000, -32768])), [2, -1, 30000, -32768])
    yield ("add with add_s16_params(s, s, s): exact", "mcu_add_s16",
           ({**s16.add_s16_params(0.01, 0.01, 0.01), "size": 3}, i16([100, -32768, 32767]), i16([-7, -1, -32768])),
           [93, -32768, -1])
    yield ("add with add_s16_params(s, 2s, 2s): in1 / 2 + in2", "mcu_add_s16",
           ({**s16.add_s16_params(0.01, 0.02, 0.02, (-100, 100)), "size": 3}, i16([3, 100, -1000]), i16([1, 2, -50])),
           [3, 52, -100])
    yield ("mul: one product, quartered, ties up", "mcu_mul_s16",
           (mul16((1, 1, 1, 4), (1, 1, 1, 1), (1, 1, 1, 4), shift=-1), i16([100, -200, 2, -2], (1, 1, 1, 4)),
            i16([3], (1, 1, 1, 1))), [75, -150, 2, -1])
    yield ("mul broadcasts both ways; int16 extremes saturate", "mcu_mul_s16",
           (mul16((1, 2, 1, 1), (1, 1, 2, 1), (1, 2, 2, 1), shift=1), i16([-32768, 3], (1, 2, 1, 1)),
            i16([-32768, 5], (1, 1, 2, 1))), [[32767, -32768], [-32768, 15]])
    yield ("add broadcast: a row added to each of two rows, then subtracted", "mcu_add_broadcast_s16",
           (addb16((1, 1, 2, 2), (1, 1, 1, 2), (1, 1, 2, 2)), i16([1, 2, 32767, -5], (1, 1, 2, 2)),
            i16([10, -30], (1, 1, 1, 2))), [[11, -28], [32767, -35]])
    yield ("sub broadcast: in1 - in2, saturating low", "mcu_add_broadcast_s16",
           (addb16((1, 1, 1, 1), (1, 1, 1, 3), (1, 1, 1, 3), subtract=1), i16([-32768], (1, 1, 1, 1)),
            i16([1, -1, 0], (1, 1, 1, 3))), [-32768, -32767, -32768])
    yield ("matmul: 2x2 products halved (shift 0), ties up; int16 extremes need int64", "mcu_matmul_s16",
           (mm16(1, 2, 2, 2, shift=0), i16([[3, 0], [-32768, -32768]]), i16([[1, 2], [-3, 32767]])),
           [[2, 3], [32767, -32768]])
    yield ("matmul: q @ k^T reading k's rows (transposed), two query heads per key head", "mcu_matmul_s16",
           (mm16(2, 1, 2, 2, rhs_b=1, group=2, transposed=1), i16([[[1, 2]], [[-1, 0]]]), i16([[[5, 6], [7, 8]]])),
           [[[17, 23]], [[-5, -7]]])
    yield ("softmax: equal pair -> 1/2; a single column -> 1.0 saturated", "mcu_softmax_s16",
           (s16.softmax_s16_params(2, 2, 0.001), i16([[7, 7], [-32768, -32768]])), [[16384, 16384], [16384, 16384]])
    yield ("softmax: one column is 32767", "mcu_softmax_s16",
           (s16.softmax_s16_params(3, 1, 0.001), i16([5, -32768, 32767])), [32767, 32767, 32767])
    yield ("softmax: gap ln 2 -> 2/3, 1/3; far below -> 0", "mcu_softmax_s16",
           ({"rows": 1, "cols": 3, "input_multiplier": 1 << 32 >> 10}, i16([1024, 0, -32768])), [21845, 10923, 0])
    identity = s16.lut_s16_table(lambda x: x, 1.0, 1.0)
    yield ("lut identity table: exact except the clamped top interval", "mcu_lut_s16",
           ({"size": 6}, identity, i16([-32768, -1, 0, 12345, 32639, 32767])), [-32768, -1, 0, 12345, 32639, 32766])
    yield ("lut interpolation rounds (d * f + 64) >> 7, ties up also below 0", "mcu_lut_s16",
           ({"size": 4}, np.concatenate([i16([0, 1, -1]), np.zeros(510, np.int16)]),
            i16(np.array([64, 63, 128 + 32, 128 + 33]) - 32768)), [1, 0, 1, 0])
    yield ("convert s8 -> s16 by 256 with the int8 zero point", "mcu_convert_s8_s16",
           (convert(4, Q30, 9, in_off=3), np.array([-128, 127, -3, 0], np.int8)), [-32000, 32767, 0, 768])
    yield ("convert s16 -> s8: ties to even (1.5 -> 2, 2.5 -> 2), zero point, clamp", "mcu_convert_s16_s8",
           (convert(6, Q30, -7, out_off=-5), i16([384, 640, -384, -640, 32767, -32768])), [-3, -3, -7, -7, 123, -128])
    yield ("convert s16 -> s16 halves, ties to even (16383.5 -> 16384)", "mcu_convert_s16_s16",
           (convert(4, Q30, 0), i16([3, -3, 32767, -32768])), [2, -2, 16384, -16384])
    yield ("convert s16 -> s16 doubles and saturates", "mcu_convert_s16_s16",
           (convert(3, Q30, 2), i16([16384, -16385, 5])), [32767, -32768, 10])
    yield ("dequantize s16", "mcu_dequantize_s16_f32",
           ({"size": 3, "scale": 0.5, "zero_point": 0}, i16([-32768, 3, 32767])), [-16384.0, 1.5, 16383.5])
    yield ("quantize f32 -> s16: ties to even, NaN -> 0, clamps", "mcu_quantize_f32_s16",
           ({"size": 6, "inv_scale": 2.0, "zero_point": 0},
            np.array([1.25, 0.75, np.nan, 1e30, -np.inf, -16383.75], np.float32)), [2, 2, 0, 32767, -32768, -32768])
    yield ("transpose NHWC -> NCHW", "mcu_transpose_s16",
           ({"in_dims": (1, 2, 2, 3), "perm": (0, 3, 1, 2)}, i16(np.arange(12) * 1000 - 6000, (1, 2, 2, 3))),
           (np.arange(12) * 1000 - 6000).reshape(1, 2, 2, 3).transpose(0, 3, 1, 2))


HAND_CASES = list(_hand_cases())


@pytest.mark.parametrize("case", HAND_CASES, ids=[c[0] for c in HAND_CASES])
def test_twin_hand_computed(case):
    _, kernel, args, want = case
    got = TWINS[kernel](*args)
    want = np.asarray(want)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(got.reshape(want.shape), want.astype(np.float32))
    else:
        assert_equal_int(got.reshape(want.shape), want)


@pytest.mark.parametrize("case", HAND_CASES, ids=[c[0] for c in HAND_CASES])
def test_c_hand_computed(lib, case):
    _, kernel, args, _ = case
    got, expected = run_c(lib, kernel, *args)
    if got.dtype.kind == "f":
        assert got.tobytes() == expected.tobytes()
    else:
        assert_equal_int(got, expected)


VARIANT_CASES = [(v, c) for v, k in VARIANTS.items() for c in HAND_CASES if c[1] == k]


@pytest.mark.parametrize("variant, case", VARIANT_CASES, ids=[f"{v}: {c[0]}" for v, c in VARIANT_CASES])
def test_variant_hand_computed(lib, variant, case):
    _, _, args, _ = case
    assert_equal_int(*run_c(lib, variant, *args))


def test_every_kernel_has_a_hand_case():
    assert {c[1] for c in HAND_CASES} == set(TWINS)


# ---- Random cases: C == twin ---------------------------------------------------------------------------------

def _rand16(rng, shape, spread=32768):
    return np.clip(rng.integers(-spread, spread, size=shape), -32768, 32767).astype(np.int16)


def _rand_quant(rng, channels, acc_std):
    base = int(np.clip(round(math.log2(8000.0 / max(acc_std, 1.0))), -31, 30))
    mult = rng.integers(Q30, 1 << 31, size=channels).astype(np.int32)
    shift = np.clip(base + rng.integers(-2, 3, size=channels), -31, 30).astype(np.int32)
    return mult, shift


def _rand_act(rng):
    return tuple(sorted(rng.integers(-32768, 32768, size=2))) if rng.random() < 0.3 else I16


def _rand_bias(rng, channels, acc_std):
    kind = rng.integers(0, 4)
    if kind == 0:
        return None
    scale = [acc_std, acc_std, float(1 << 40)][kind - 1]
    return rng.integers(-int(scale), int(scale) + 1, size=channels).astype(np.int64)


def _conv_case(seed, kind):
    rng = np.random.default_rng(seed)
    n, h, w = rng.integers(1, 3), rng.integers(1, 9), rng.integers(1, 9)
    kh, kw = rng.integers(1, 5, size=2)
    sh, sw, dh, dw = rng.integers(1, 4, size=4)
    pt, pl = rng.integers(0, (kh - 1) * dh + 1), rng.integers(0, (kw - 1) * dw + 1)
    oh = max((h + 2 * pt - (kh - 1) * dh - 1) // sh + 1, 1)
    ow = max((w + 2 * pl - (kw - 1) * dw - 1) // sw + 1, 1)
    if kind == "conv":
        groups = rng.choice([1, 1, 2, 3])
        c_group, per = rng.integers(1, 5), rng.integers(1, 4)
        c_in, c_out = groups * c_group, groups * per
        filt, taps = (c_out, kh, kw, c_group), kh * kw * c_group
    else:
        c_in = rng.integers(1, 7)
        c_out = c_in * rng.choice([1, 2, 3])
        filt, taps = (1, kh, kw, c_out), kh * kw
    params = conv16((n, h, w, c_in), filt, (n, oh, ow, c_out), stride=(sh, sw), pad=(pt, pl), dilation=(dh, dw),
                    act=_rand_act(rng))
    std = math.sqrt(taps) * 18900 * 73
    return (params, *_rand_quant(rng, c_out, std), _rand16(rng, (n, h, w, c_in)),
            rng.integers(-128, 128, size=filt).astype(np.int8), _rand_bias(rng, c_out, std))


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("kind", ["conv", "dwconv"])
def test_conv_random(lib, seed, kind):
    args = _conv_case(seed, kind)
    got, expected = run_c(lib, "mcu_conv2d_s16" if kind == "conv" else "mcu_dwconv2d_s16", *args)
    assert_equal_int(got, expected)


def test_conv_random_cases_cover_groups_padding_dilation():
    cases = [_conv_case(s, "conv")[0] for s in range(30)] + [_conv_case(s, "dwconv")[0] for s in range(30)]
    assert any(p["input"][3] // p["filter"][3] > 1 for p in cases[:30])
    assert any(p["output"][3] > p["input"][3] for p in cases[30:])
    assert any(p["pad_top"] > 0 for p in cases) and any(p["dilation_h"] > 1 for p in cases)
    assert any(p["stride_w"] > 1 for p in cases)


@pytest.mark.parametrize("seed", range(20))
def test_fc_random(lib, seed):
    rng = np.random.default_rng(seed)
    b, k, n = rng.integers(1, 4), rng.choice([rng.integers(1, 80), 1500]), rng.integers(1, 17)
    std = math.sqrt(k) * 18900 * 73
    args = (fc_params(b, k, n, act=_rand_act(rng)), *_rand_quant(rng, n, std), _rand16(rng, (b, k)),
            rng.integers(-128, 128, size=(n, k)).astype(np.int8), _rand_bias(rng, n, std))
    got, expected = run_c(lib, "mcu_fully_connected_s16", *args)
    assert_equal_int(got, expected)


def _pool_case(seed, avg):
    rng = np.random.default_rng(seed)
    n, h, w, c = rng.integers(1, 3), rng.integers(1, 9), rng.integers(1, 9), rng.integers(1, 5)
    kh, kw, sh, sw = rng.integers(1, 5, size=4)
    pt, pl = rng.integers(0, kh), rng.integers(0, kw)
    oh, ow = max((h + 2 * pt - kh) // sh + 1, 1), max((w + 2 * pl - kw) // sw + 1, 1)
    divisor = int(rng.choice([0, 0, kh * kw, rng.integers(1, 40)])) if avg else 0
    return pool16((n, h, w, c), (n, oh, ow, c), (kh, kw), stride=(sh, sw), pad=(pt, pl), divisor=divisor,
                  act=_rand_act(rng)), _rand16(rng, (n, h, w, c))


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("kernel", ["mcu_maxpool2d_s16", "mcu_avgpool2d_s16"])
def test_pool_random(lib, seed, kernel):
    args = _pool_case(seed, kernel == "mcu_avgpool2d_s16")
    got, expected = run_c(lib, kernel, *args)
    assert_equal_int(got, expected)


@pytest.mark.parametrize("seed", range(20))
def test_add_random(lib, seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 300))
    if seed % 2:
        s1, s2, so = (math.exp(rng.uniform(-12, -2)) for _ in range(3))
        params = {**s16.add_s16_params(s1, s2, so, _rand_act(rng)), "size": size}
    else:
        pair = lambda: (int(rng.integers(0, 1 << 31)), int(rng.integers(-31, 31)))  # noqa: E731
        params = add16(size, pair(), pair(), pair(), left_shift=int(rng.integers(0, 16)), act=_rand_act(rng))
    got, expected = run_c(lib, "mcu_add_s16", params, _rand16(rng, size), _rand16(rng, size))
    assert_equal_int(got, expected)


@pytest.mark.parametrize("seed", range(20))
def test_mul_random(lib, seed):
    rng = np.random.default_rng(seed)
    out = tuple(int(d) for d in rng.integers(1, 5, size=4))
    in1 = tuple(d if rng.random() < 0.5 else 1 for d in out)
    in2 = tuple(d if rng.random() < 0.5 else 1 for d in out)
    params = mul16(in1, in2, out, mult=int(rng.integers(Q30, 1 << 31)), shift=int(rng.integers(-20, 3)),
                   act=_rand_act(rng))
    got, expected = run_c(lib, "mcu_mul_s16", params, _rand16(rng, in1), _rand16(rng, in2))
    assert_equal_int(got, expected)


@pytest.mark.parametrize("kernel", ["mcu_add_broadcast_s16", "mcu_add_broadcast_s16_dsp"])
@pytest.mark.parametrize("seed", range(10))
def test_add_broadcast_random(lib, seed, kernel):
    rng = np.random.default_rng(seed)
    out = tuple(int(d) for d in rng.integers(1, 5, size=4))
    in1 = tuple(d if rng.random() < 0.5 else 1 for d in out)
    in2 = tuple(d if rng.random() < 0.5 else 1 for d in out)
    s1, s2, so = (math.exp(rng.uniform(-12, -2)) for _ in range(3))
    params = {**s16.add_s16_params(s1, s2, so, _rand_act(rng)), "input1": in1, "input2": in2, "output": out,
              "subtract": int(rng.integers(0, 2))}
    got, expected = run_c(lib, kernel, params, _rand16(rng, in1), _rand16(rng, in2))
    assert_equal_int(got, expected)


@pytest.mark.parametrize("seed", range(30))
def test_add_broadcast_dsp_every_requantization_form(lib, seed):
    """mcu_add_broadcast_s16_dsp's paths: rows longer than its 64-element chunk, either input held (fewer rows) or
    streamed with a last dim of 1, sums and both differences, each shift from -4 to 2 (SMMLA, SMMULR and
    mcu_requantize forms), any left shift, narrow and int16 clamps."""
    rng = np.random.default_rng(100 + seed)
    out = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 3)),
           int(rng.choice([1, 2, 63, 64, 65, 130, 256])))
    in1 = tuple(d if rng.random() < 0.6 else 1 for d in out)
    in2 = tuple(d if rng.random() < 0.6 else 1 for d in out)
    mult = [int(rng.integers(1 << 30, 1 << 31)) if rng.random() < 0.8 else 1 << 30 for _ in range(3)]
    shift = [int(rng.integers(-4, 3)) if rng.random() < 0.7 else int(rng.integers(-31, -4)) for _ in range(3)]
    params = {"left_shift": int(rng.choice([15, 15, int(rng.integers(0, 16))])), "input1_offset": 0,
              "input1_multiplier": mult[0], "input1_shift": shift[0], "input2_offset": 0,
              "input2_multiplier": mult[1], "input2_shift": shift[1], "output_offset": 0,
              "output_multiplier": mult[2], "output_shift": shift[2],
              "act_min": -32768 if seed % 3 else -20000, "act_max": 32767 if seed % 3 else 15000,
              "input1": in1, "input2": in2, "output": out, "subtract": seed % 2}
    x1, x2 = _rand16(rng, in1), _rand16(rng, in2)
    x1.flat[0], x2.flat[-1] = -32768, 32767
    assert_equal_int(*run_c(lib, "mcu_add_broadcast_s16_dsp", params, x1, x2))


@pytest.mark.parametrize("seed", range(24))
def test_matmul_dsp_requantization_edges(lib, seed):
    """mcu_matmul_s16_dsp's own requantization (shift <= -2): exact ties (multiplier 2^30, small values), results
    past int32 (saturating, either sign) and past int16, each shift from -2 down, both layouts, odd k and n."""
    rng = np.random.default_rng(200 + seed)
    transposed, k, n = seed % 2, int(rng.choice([1, 7, 8, 9, 256])), int(rng.choice([1, 3, 8, 256]))
    kind = seed // 2 % 3
    if kind == 0:  # ties
        mult, shift, spread = 1 << 30, int(rng.integers(-6, -1)), 9
    elif kind == 1:  # far past int32 and int16
        mult, shift, spread = int(rng.integers((1 << 31) - 1000, 1 << 31)), int(rng.integers(-4, -1)), 32768
    else:
        mult, shift, spread = int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(-31, -1)), 32768
    params = mm16(2, 2, k, n, mult=mult, shift=shift, act=(-32768, 32767) if seed % 4 < 2 else (-1000, 3000),
                  transposed=transposed)
    lhs = _rand16(rng, (2, 2, k), spread)
    rhs = _rand16(rng, (2, n, k) if transposed else (2, k, n), spread)
    if kind == 1:
        lhs[0], rhs[0] = -32768, -32768  # the largest positive sums in batch 0, negative ones below
        lhs[1] = 32767
    assert_equal_int(*run_c(lib, "mcu_matmul_s16_dsp", params, lhs, rhs))


@pytest.mark.parametrize("kernel", ["mcu_matmul_s16", "mcu_matmul_s16_dsp"])
@pytest.mark.parametrize("seed", range(10))
def test_matmul_random(lib, seed, kernel):
    rng = np.random.default_rng(seed)
    group, transposed = int(rng.choice([1, 2])), int(rng.integers(0, 2))
    rb = int(rng.integers(1, 3))
    b = rb * group
    lb = int(rng.choice([1, b]))
    m, k, n = int(rng.integers(1, 5)), int(rng.choice([rng.integers(1, 20), 256])), int(rng.integers(1, 9))
    acc_std = 20000.0 * 20000.0 * math.sqrt(k)
    mult, shift = _rand_quant(rng, 1, acc_std)
    params = mm16(b, m, k, n, lhs_b=lb, rhs_b=rb, mult=int(mult[0]), shift=int(shift[0]), act=_rand_act(rng),
                  group=group, transposed=transposed)
    rhs = _rand16(rng, (rb, n, k) if transposed else (rb, k, n))
    got, expected = run_c(lib, kernel, params, _rand16(rng, (lb, m, k)), rhs)
    assert_equal_int(got, expected)


@pytest.mark.parametrize("seed", range(20))
def test_softmax_random(lib, seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 5)), int(rng.choice([rng.integers(1, 70), 1000, 65535]))
    rows = 1 if cols == 65535 else rows
    scale = math.exp(rng.uniform(math.log(1e-5), math.log(0.5)))
    x = _rand16(rng, (rows, cols), spread=int(rng.choice([30, 3000, 32768])))
    got, expected = run_c(lib, "mcu_softmax_s16", s16.softmax_s16_params(rows, cols, scale), x)
    assert_equal_int(got, expected)


@pytest.mark.parametrize("seed", range(10))
def test_lut_random(lib, seed):
    rng = np.random.default_rng(seed)
    table = _rand16(rng, 513)
    x = np.concatenate([_rand16(rng, 300), i16([-32768, 32767, -32768 + 127, 0])])
    got, expected = run_c(lib, "mcu_lut_s16", {"size": x.size}, table, x)
    assert_equal_int(got, expected)


@pytest.mark.parametrize("seed", range(10))
def test_convert_random(lib, seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 300) if seed % 2 else rng.integers(512, 3000))  # odd: the s8 -> s16 table path
    s8, s16_scale = math.exp(rng.uniform(-6, 0)), math.exp(rng.uniform(-14, -6))
    zp = int(rng.integers(-128, 128))
    up = s16.convert_params(size, s8, zp, s16_scale, 0)
    down = s16.convert_params(size, s16_scale, 0, s8, zp)
    x8 = rng.integers(-128, 128, size=size).astype(np.int8)
    assert_equal_int(*run_c(lib, "mcu_convert_s8_s16", up, x8))
    assert_equal_int(*run_c(lib, "mcu_convert_s16_s8", down, _rand16(rng, size)))
    between = s16.convert_params(size, s16_scale, 0, math.exp(rng.uniform(-14, -6)), 0)
    assert_equal_int(*run_c(lib, "mcu_convert_s16_s16", between, _rand16(rng, size)))


def test_convert_round_trip_is_exact_when_int16_is_finer():
    """s8 -> s16 -> s8 with s16 scale s8 / 128 (room for the int8 range around any zero point) is the identity."""
    x = np.arange(-128, 128, dtype=np.int8)
    up = s16.convert_s8_s16(s16.convert_params(256, 0.05, 7, 0.05 / 128, 0), x)
    assert_equal_int(up, (x.astype(np.int64) - 7) * 128)
    back = s16.convert_s16_s8(s16.convert_params(256, 0.05 / 128, 0, 0.05, 7), up)
    assert_equal_int(back, x)


@pytest.mark.parametrize("seed", range(5))
def test_float_boundaries_random(lib, seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 300))
    scale = np.float32(math.exp(rng.uniform(-12, 0)))
    x = _rand16(rng, size)
    deq = {"size": size, "scale": float(scale), "zero_point": 0}
    got, expected = run_c(lib, "mcu_dequantize_s16_f32", deq, x)
    assert got.tobytes() == expected.tobytes()
    y = (rng.standard_normal(size) * 40000 * float(scale)).astype(np.float32)
    quant_p = {"size": size, "inv_scale": float(np.float32(1.0 / float(scale))), "zero_point": 0}
    assert_equal_int(*run_c(lib, "mcu_quantize_f32_s16", quant_p, y))


@pytest.mark.parametrize("seed", range(5))
def test_transpose_random(lib, seed):
    rng = np.random.default_rng(seed)
    dims = tuple(int(d) for d in rng.integers(1, 6, size=4))
    args = ({"in_dims": dims, "perm": tuple(int(a) for a in rng.permutation(4))}, _rand16(rng, dims))
    assert_equal_int(*run_c(lib, "mcu_transpose_s16", *args))


# ---- In place: output aliasing an input exactly ---------------------------------------------------------------

def _in_place(lib, kernel, args, index):
    """Run the kernel with its output in the buffer of twin argument `index`; return (buffer, twin result)."""
    expected = TWINS[kernel](*args)
    buf = np.ascontiguousarray(args[index]).copy()
    call_args = list(args)
    call_args[index] = buf
    status = hostc.call(lib, kernel, *call_args, out=buf)
    assert status == hostc.MCU_OK
    return buf, expected


def test_in_place_kernels(lib):
    rng = np.random.default_rng(9)
    x, y = _rand16(rng, 200), _rand16(rng, 200)
    for index in (1, 2):
        assert_equal_int(*_in_place(lib, "mcu_add_s16", ({**s16.add_s16_params(0.01, 0.03, 0.02), "size": 200}, x, y),
                                    index))
    assert_equal_int(*_in_place(lib, "mcu_lut_s16", ({"size": 200}, _rand16(rng, 513), x), 2))
    rows = _rand16(rng, (4, 50), spread=2000)
    assert_equal_int(*_in_place(lib, "mcu_softmax_s16", (s16.softmax_s16_params(4, 50, 0.003), rows), 1))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kernel", ["mcu_conv2d_s16", "mcu_dwconv2d_s16", "mcu_maxpool2d_s16", "mcu_avgpool2d_s16"])
def test_raster_kernels_overlap_like_int8(lib, seed, kernel):
    """Output starting raster_gap(params) elements below the input (codegen/sharing.py, in elements here) overlaps it
    safely, as for the int8 raster kernels: each output pixel is written after every window that reads its bytes."""
    from mcu.codegen.sharing import raster_gap
    if "pool" in kernel:
        args = _pool_case(seed, "avg" in kernel)
    else:
        args = _conv_case(seed, "conv" if kernel == "mcu_conv2d_s16" else "dwconv")
    params, x = args[0], args[-3] if "conv" in kernel else args[1]
    expected = TWINS[kernel](*args)
    gap = raster_gap(params)
    buf = np.full(gap + max(x.size, expected.size), 0x5A5A, np.int16)
    buf[gap:gap + x.size] = x.ravel()
    inp, out = buf[gap:gap + x.size].reshape(x.shape), buf[:expected.size]
    call_args = [*args[:-3], inp, *args[-2:]] if "conv" in kernel else [params, inp]
    assert hostc.call(lib, kernel, *call_args, out=out) == hostc.MCU_OK
    assert_equal_int(out.reshape(expected.shape), expected)


# ---- Errors: checked first, output untouched ------------------------------------------------------------------

def with_params(args, **changes):
    return ({**args[0], **changes}, *args[1:])


def with_arg(args, i, value):
    return (*args[:i], value, *args[i + 1:])


def _bad_cases():
    conv_base = (conv16((1, 3, 3, 4), (4, 3, 3, 2), (1, 3, 3, 4), pad=(1, 1)), *q([Q30] * 4, [0] * 4),
                 np.zeros((1, 3, 3, 4), np.int16), np.zeros((4, 3, 3, 2), np.int8), None)  # 2 groups
    dw_base = (conv16((1, 3, 3, 2), (1, 3, 3, 4), (1, 3, 3, 4), pad=(1, 1)), *q([Q30] * 4, [0] * 4),
               np.zeros((1, 3, 3, 2), np.int16), np.zeros((1, 3, 3, 4), np.int8), None)  # ch_mult 2
    for kernel, base in (("mcu_conv2d_s16", conv_base), ("mcu_dwconv2d_s16", dw_base)):
        p = base[0]
        for i, name in ((0, "params"), (1, "multiplier"), (3, "input"), (4, "filter")):
            yield f"{kernel} NULL {name}", kernel, with_arg(base, i, None), ARG
        for field, value in (("input_offset", 1), ("output_offset", -1), ("act_min", -32769), ("act_max", 32768),
                             ("stride_h", 0), ("dilation_w", 0), ("pad_left", -1), ("input", (1, 0, 2, 2))):
            yield f"{kernel} {field}={value}", kernel, with_params(base, **{field: value}), ARG
        yield f"{kernel} act_min > act_max", kernel, with_params(base, act_min=5, act_max=4), ARG
        yield f"{kernel} shift 31", kernel, with_arg(base, 2, np.full_like(base[2], 31)), ARG
        yield f"{kernel} negative multiplier", kernel, with_arg(base, 1, np.full_like(base[1], -1)), ARG
        batch = (p["output"][0] + 1, *p["output"][1:])
        yield f"{kernel} batch mismatch", kernel, with_params(base, output=batch), SHAPE
    p = conv_base[0]
    yield ("conv output.c != filter.n", "mcu_conv2d_s16",
           with_params(conv_base, filter=(p["filter"][0] + 1, *p["filter"][1:])), SHAPE)
    yield ("conv input.c % filter.c", "mcu_conv2d_s16",
           with_params(conv_base, input=(*p["input"][:3], p["input"][3] + 1)), SHAPE)
    g = conv16((1, 2, 2, 4), (3, 1, 1, 2), (1, 2, 2, 3))  # 2 groups, 3 output channels
    yield "conv C_out % groups", "mcu_conv2d_s16", (g, *q([Q30] * 3, [0] * 3), np.zeros((1, 2, 2, 4), np.int16),
                                                    np.zeros((3, 1, 1, 2), np.int8), None), SHAPE
    p = dw_base[0]
    yield "dwconv filter.n != 1", "mcu_dwconv2d_s16", with_params(dw_base, filter=(2, *p["filter"][1:])), SHAPE

    fc_base = (fc_params(2, 3, 2, act=I16), *q([Q30] * 2, [0] * 2), np.zeros((2, 3), np.int16),
               np.zeros((2, 3), np.int8), None)
    for i, name in ((0, "params"), (2, "shift"), (3, "input"), (4, "weights")):
        yield f"fc NULL {name}", "mcu_fully_connected_s16", with_arg(fc_base, i, None), ARG
    for field, value in (("batches", 0), ("in_features", 0), ("input_offset", 3), ("output_offset", 1),
                         ("act_max", 40000)):
        yield f"fc {field}={value}", "mcu_fully_connected_s16", with_params(fc_base, **{field: value}), ARG

    pool_base = _pool_case(3, True)
    p = pool_base[0]
    n, h, w, c = p["input"]
    for kernel in ("mcu_maxpool2d_s16", "mcu_avgpool2d_s16"):
        yield f"{kernel} NULL params", kernel, (None, pool_base[1]), ARG
        yield f"{kernel} NULL input", kernel, (p, None), ARG
        for field, value in (("kernel_h", 0), ("stride_w", 0), ("zero_point", 1), ("act_min", -32769)):
            yield f"{kernel} {field}={value}", kernel, with_params(pool_base, **{field: value}), ARG
        yield f"{kernel} channel mismatch", kernel, with_params(pool_base, output=(*p["output"][:3], c + 1)), SHAPE
        yield f"{kernel} window in top padding", kernel, with_params(pool_base, pad_top=p["kernel_h"]), SHAPE
    yield "avgpool divisor -1", "mcu_avgpool2d_s16", with_params(pool_base, divisor=-1), ARG
    yield "avgpool 65537 taps", "mcu_avgpool2d_s16", with_params(pool_base, kernel_h=65537, kernel_w=1), ARG
    yield "avgpool 256 x 257 taps", "mcu_avgpool2d_s16", with_params(pool_base, kernel_h=256, kernel_w=257), ARG

    add_base = (add16(4), np.zeros(4, np.int16), np.zeros(4, np.int16))
    for i, name in ((0, "params"), (1, "input1"), (2, "input2")):
        yield f"add NULL {name}", "mcu_add_s16", with_arg(add_base, i, None), ARG
    for field, value in (("size", 0), ("left_shift", 16), ("left_shift", -1), ("input1_offset", 1),
                         ("input2_offset", -1), ("output_offset", 1), ("input2_shift", 31), ("output_multiplier", -1),
                         ("act_max", 32768)):
        yield f"add {field}={value}", "mcu_add_s16", with_params(add_base, **{field: value}), ARG

    mul_base = (mul16((1, 1, 1, 2), (1, 1, 1, 1), (1, 1, 1, 2)), np.zeros(2, np.int16), np.zeros(1, np.int16))
    for i, name in ((0, "params"), (1, "input1"), (2, "input2")):
        yield f"mul NULL {name}", "mcu_mul_s16", with_arg(mul_base, i, None), ARG
    for field, value in (("input1_offset", 1), ("output_offset", 2), ("output_shift", 31), ("act_min", -40000),
                         ("output", (1, 1, 0, 2))):
        yield f"mul {field}={value}", "mcu_mul_s16", with_params(mul_base, **{field: value}), ARG
    yield "mul input1 does not broadcast", "mcu_mul_s16", with_params(mul_base, input1=(1, 1, 1, 3)), SHAPE

    addb_base = (addb16((1, 1, 1, 2), (1, 1, 1, 1), (1, 1, 1, 2)), np.zeros(2, np.int16), np.zeros(1, np.int16))
    for i, name in ((0, "params"), (1, "input1"), (2, "input2")):
        yield f"add broadcast NULL {name}", "mcu_add_broadcast_s16", with_arg(addb_base, i, None), ARG
    for field, value in (("subtract", 2), ("left_shift", 16), ("input1_offset", 1), ("output_offset", 1),
                         ("output_shift", 31), ("act_max", 32768), ("output", (1, 1, 0, 2))):
        yield f"add broadcast {field}={value}", "mcu_add_broadcast_s16", with_params(addb_base, **{field: value}), ARG
    yield "add broadcast input1 does not broadcast", "mcu_add_broadcast_s16", \
        with_params(addb_base, input1=(1, 1, 1, 3)), SHAPE

    mm_base = (mm16(2, 1, 2, 2), np.zeros(4, np.int16), np.zeros(8, np.int16))
    for i, name in ((0, "params"), (1, "lhs"), (2, "rhs")):
        yield f"matmul NULL {name}", "mcu_matmul_s16", with_arg(mm_base, i, None), ARG
    for field, value in (("k", 0), ("k", 32768), ("lhs_offset", 1), ("rhs_offset", -1), ("output_offset", 1),
                         ("output_shift", 31), ("act_min", -32769)):
        yield f"matmul {field}={value}", "mcu_matmul_s16", with_params(mm_base, **{field: value}), ARG
    for field, value in (("lhs_batches", 3), ("rhs_group", 3), ("rhs_transposed", 2)):
        yield f"matmul {field}={value}", "mcu_matmul_s16", with_params(mm_base, **{field: value}), SHAPE

    sm_base = (s16.softmax_s16_params(1, 2, 0.01), np.zeros(2, np.int16))
    for i, name in ((0, "params"), (1, "input")):
        yield f"softmax NULL {name}", "mcu_softmax_s16", with_arg(sm_base, i, None), ARG
    for field, value in (("rows", 0), ("cols", 0), ("cols", 65536)):
        yield f"softmax {field}={value}", "mcu_softmax_s16", with_params(sm_base, **{field: value}), ARG

    lut_base = ({"size": 2}, np.zeros(513, np.int16), np.zeros(2, np.int16))
    for i, name in ((0, "params"), (1, "table"), (2, "input")):
        yield f"lut NULL {name}", "mcu_lut_s16", with_arg(lut_base, i, None), ARG
    yield "lut size 0", "mcu_lut_s16", with_params(lut_base, size=0), ARG

    up = (convert(2, Q30, 1), np.zeros(2, np.int8))
    down = (convert(2, Q30, 1), np.zeros(2, np.int16))
    for kernel, base in (("mcu_convert_s8_s16", up), ("mcu_convert_s16_s8", down), ("mcu_convert_s16_s16", down)):
        yield f"{kernel} NULL params", kernel, (None, base[1]), ARG
        yield f"{kernel} NULL input", kernel, (base[0], None), ARG
        for field, value in (("size", 0), ("multiplier", -1), ("shift", 31), ("shift", -32)):
            yield f"{kernel} {field}={value}", kernel, with_params(base, **{field: value}), ARG
    for field, value in (("input_offset", 129), ("input_offset", -128), ("output_offset", 1)):
        yield f"s8->s16 {field}={value}", "mcu_convert_s8_s16", with_params(up, **{field: value}), ARG
    for field, value in (("input_offset", 1), ("output_offset", 128), ("output_offset", -129)):
        yield f"s16->s8 {field}={value}", "mcu_convert_s16_s8", with_params(down, **{field: value}), ARG
    for field, value in (("input_offset", 1), ("output_offset", 1), ("output_offset", -1)):
        yield f"s16->s16 {field}={value}", "mcu_convert_s16_s16", with_params(down, **{field: value}), ARG

    deq = ({"size": 2, "scale": 0.5, "zero_point": 0}, np.zeros(2, np.int16))
    qnt = ({"size": 2, "inv_scale": 2.0, "zero_point": 0}, np.zeros(2, np.float32))
    for kernel, base, scale_field in (("mcu_dequantize_s16_f32", deq, "scale"), ("mcu_quantize_f32_s16", qnt, "inv_scale")):
        yield f"{kernel} NULL input", kernel, (base[0], None), ARG
        for field, value in (("size", 0), ("zero_point", 1), (scale_field, 0.0), (scale_field, float("nan"))):
            yield f"{kernel} {field}={value}", kernel, with_params(base, **{field: value}), ARG

    tr_base = ({"in_dims": (1, 2, 3, 4), "perm": (0, 1, 2, 3)}, np.zeros(24, np.int16))
    for perm in ((0, 1, 2, 2), (0, 1, 2, 4)):
        yield f"transpose perm {perm}", "mcu_transpose_s16", with_params(tr_base, perm=perm), ARG
    yield "transpose NULL input", "mcu_transpose_s16", (tr_base[0], None), ARG


BAD_CASES = list(_bad_cases())


@pytest.mark.parametrize("case", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_c_rejects_bad_arguments_before_writing(lib, case):
    _, kernel, args, status = case
    out_type = hostc._DTYPES[hostc.PROTOTYPES[kernel][-1][0]]
    out = np.frombuffer(bytes([0x5A]) * (1 << 14), out_type).copy()
    assert hostc.call(lib, kernel, *args, out=out) == status
    assert (out.view(np.uint8) == 0x5A).all(), "a kernel wrote its output before rejecting its arguments"


@pytest.mark.parametrize("case", [c for c in BAD_CASES if all(a is not None for a in c[2])], ids=lambda c: c[0])
def test_twin_rejects_bad_arguments(case):
    _, kernel, args, _ = case
    with pytest.raises(ValueError):
        TWINS[kernel](*args)


@pytest.mark.parametrize("kernel", sorted(TWINS))
def test_c_rejects_null_output(lib, kernel):
    case = next(c for c in HAND_CASES if c[1] == kernel)
    assert hostc.call(lib, kernel, *case[2], out=None) == hostc.MCU_ERR_ARG


# ---- Softmax: the C's table, and the accuracy bound against float softmax --------------------------------------

def test_softmax_c_table_is_the_twins():
    src = (hostc.KERNELS / "s16" / "mcu_softmax_s16.c").read_text()
    body = re.search(r"exp2_table\[257\] = \{(.*?)\};", src, flags=re.S).group(1)
    values = np.array([int(v) for v in re.findall(r"(\d+)u", body)], dtype=np.int64)
    assert_equal_int(values, s16.softmax_s16_exp2_table())


def _float_softmax(x: np.ndarray, scale: float) -> np.ndarray:
    z = x.astype(np.float64) * scale
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


SOFTMAX_BOUND = 1  # LSB of 1/32768, against round(32768 * softmax(s_in * x)) clamped to 32767
SOFTMAX_REAL_BOUND = 0.51  # against 32768 * softmax(s_in * x) itself (clamped to 32767), before any rounding


@pytest.mark.parametrize("cols_range, scales, trials", [((1, 65), (1e-4, 1e-2), 400), ((65, 3000), (1e-6, 0.6), 40)],
                         ids=["short rows, typical scales", "long rows, extreme scales"])
def test_softmax_accuracy_against_float(lib, cols_range, scales, trials):
    rng = np.random.default_rng(2024)
    worst, worst_real, count = 0, 0.0, 0
    for _ in range(trials):
        cols = int(rng.integers(*cols_range))
        scale = math.exp(rng.uniform(math.log(scales[0]), math.log(scales[1])))
        spread = int(rng.choice([50, 500, 5000, 32768]))
        x = _rand16(rng, (3, cols), spread=spread)
        if rng.random() < 0.2:  # ties and near-ties with the maximum
            x[:, : cols // 2] = x[:, :1]
        params = s16.softmax_s16_params(3, cols, scale)
        got, expected = run_c(lib, "mcu_softmax_s16", params, x)
        assert_equal_int(got, expected)
        exact = np.minimum(32768 * _float_softmax(x, scale), 32767)
        err = int(np.abs(got.astype(np.int64) - np.rint(exact)).max())
        err_real = float(np.abs(got - exact).max())
        worst, worst_real, count = max(worst, err), max(worst_real, err_real), count + x.size
        assert err <= SOFTMAX_BOUND and err_real <= SOFTMAX_REAL_BOUND, (cols, scale, err, err_real)
    print(f"softmax_s16: max |C - round(32768 softmax)| = {worst} LSB, max |C - 32768 softmax| = {worst_real:.4f} "
          f"LSB over {count} outputs")


# ---- LUT: accuracy of the interpolated table ---------------------------------------------------------------------

def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


LUT_FUNCTIONS = {  # name: (fn, s_in, s_out, bound in LSB of s_out over all 65536 inputs)
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), 8.0 / 32768, 1.0 / 32768, 1),
    "tanh": (np.tanh, 4.0 / 32768, 1.0 / 32768, 2),
    "gelu": (_gelu, 8.0 / 32768, 8.0 / 32768, 1),
    "hardswish": (lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0, 8.0 / 32768, 8.0 / 32768, 1),
    "silu": (lambda x: x / (1.0 + np.exp(-x)), 8.0 / 32768, 8.0 / 32768, 1),
}


@pytest.mark.parametrize("name", sorted(LUT_FUNCTIONS))
def test_lut_accuracy_against_float(lib, name):
    fn, s_in, s_out, bound = LUT_FUNCTIONS[name]
    table = s16.lut_s16_table(fn, s_in, s_out)
    x = np.arange(-32768, 32768, dtype=np.int16)
    got, expected = run_c(lib, "mcu_lut_s16", {"size": x.size}, table, x)
    assert_equal_int(got, expected)
    want = np.clip(np.rint(fn(x.astype(np.float64) * s_in) / s_out), -32768, 32767)
    err = np.abs(got.astype(np.int64) - want)
    print(f"lut_s16 {name}: s_in {s_in:.3g} s_out {s_out:.3g}: max error {int(err.max())} LSB, "
          f"{np.count_nonzero(err)} of 65536 inputs off")
    assert err.max() <= bound


# ---- Hypothesis fuzz under ASan + UBSan (test_fuzz_kernels.py's driver and properties) -------------------------

I16_MULT = MULT


@st.composite
def shift16(draw, acc_std: float):
    base = int(np.clip(round(math.log2(8000.0 / max(acc_std, 1.0))), -31, 30))
    return draw(st.one_of(st.integers(max(base - 2, -31), min(base + 2, 30)), st.sampled_from([-31, 30, 0]),
                          st.integers(-31, 30)))


@st.composite
def act16(draw):
    kind = draw(st.sampled_from(["full", "full", "relu", "any"]))
    if kind == "full":
        return I16
    if kind == "relu":
        return 0, 32767
    lo, hi = sorted((draw(st.integers(-32768, 32767)), draw(st.integers(-32768, 32767))))
    return lo, hi


@st.composite
def bias64(draw, channels: int, acc_std: float):
    kind = draw(st.sampled_from(["none", "typical", "large", "limit"]))
    if kind == "none":
        return None
    scale = {"typical": max(int(acc_std), 1), "large": 1 << 40, "limit": 1 << 62}[kind]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    bias = rng.integers(-scale, scale, size=channels, endpoint=True)
    if kind == "limit":
        bias = np.where(rng.random(channels) < 0.5, np.sign(bias) * scale, bias)
    return bias.astype(np.int64)


@st.composite
def conv16_case(draw, depthwise: bool):
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sh, sw, dh, dw = (draw(st.integers(1, 3)) for _ in range(4))
    pt, pl = draw(st.integers(0, (kh - 1) * dh)), draw(st.integers(0, (kw - 1) * dw))
    oh, ow = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    if depthwise:
        c_in = draw(st.integers(1, 6))
        c_out = c_in * draw(st.sampled_from([1, 2, 3]))
        filt, taps = (1, kh, kw, c_out), kh * kw
    else:
        groups, c_group = draw(st.integers(1, 3)), draw(st.integers(1, 4))
        c_in, c_out = groups * c_group, groups * draw(st.integers(1, 3))
        filt, taps = (c_out, kh, kw, c_group), kh * kw * c_group
    params = conv16((n, h, w, c_in), filt, (n, oh, ow, c_out), stride=(sh, sw), pad=(pt, pl), dilation=(dh, dw),
                    act=draw(act16()))
    std = math.sqrt(taps) * 18900 * 73
    mult = np.array([draw(I16_MULT) for _ in range(c_out)], np.int32)
    shift = np.array([draw(shift16(std)) for _ in range(c_out)], np.int32)
    return Case((params, mult, shift, draw(ints((n, h, w, c_in), np.int16)), draw(ints(filt)),
                 draw(bias64(c_out, std))), n * oh * ow * c_out)


@st.composite
def fc16_case(draw):
    b, k, n = draw(st.integers(1, 3)), draw(st.one_of(st.integers(1, 60), st.integers(1000, 1100))), draw(st.integers(1, 9))
    std = math.sqrt(k) * 18900 * 73
    mult = np.array([draw(I16_MULT) for _ in range(n)], np.int32)
    shift = np.array([draw(shift16(std)) for _ in range(n)], np.int32)
    return Case((fc_params(b, k, n, act=draw(act16())), mult, shift, draw(ints((b, k), np.int16)),
                 draw(ints((n, k))), draw(bias64(n, std))), b * n)


@st.composite
def pool16_case(draw, avg: bool):
    n, h, w, c = draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7)), draw(st.integers(1, 4))
    kh, kw, sh, sw = (draw(st.integers(1, 4)) for _ in range(4))
    pt, pl = draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1))
    oh, ow = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    divisor = draw(st.sampled_from([0, 0, kh * kw, 1, 7])) if avg else 0
    params = pool16((n, h, w, c), (n, oh, ow, c), (kh, kw), stride=(sh, sw), pad=(pt, pl), divisor=divisor,
                    act=draw(act16()))
    return Case((params, draw(ints((n, h, w, c), np.int16))), n * oh * ow * c)


@st.composite
def add16_case(draw):
    size = draw(st.integers(1, 200))
    if draw(st.booleans()):
        s1, s2, so = (math.exp(draw(st.floats(-12, -2))) for _ in range(3))
        params = {**s16.add_s16_params(s1, s2, so, draw(act16())), "size": size}
    else:
        pair = st.tuples(I16_MULT, st.integers(-31, 30))
        params = add16(size, draw(pair), draw(pair), draw(pair), left_shift=draw(st.integers(0, 15)), act=draw(act16()))
    return Case((params, draw(ints(size, np.int16)), draw(ints(size, np.int16))), size,
                alias=draw(st.sampled_from([None, 1, 2])))


@st.composite
def mul16_case(draw):
    out = tuple(draw(st.integers(1, 4)) for _ in range(4))
    in1 = tuple(d if draw(st.booleans()) else 1 for d in out)
    in2 = tuple(d if draw(st.booleans()) else 1 for d in out)
    params = mul16(in1, in2, out, mult=draw(I16_MULT), shift=draw(shift16(2**28)), act=draw(act16()))
    return Case((params, draw(ints(in1, np.int16)), draw(ints(in2, np.int16))), int(np.prod(out)))


@st.composite
def add_broadcast16_case(draw):
    out = tuple(draw(st.integers(1, 4)) for _ in range(4))
    in1 = tuple(d if draw(st.booleans()) else 1 for d in out)
    in2 = tuple(d if draw(st.booleans()) else 1 for d in out)
    pair = st.tuples(I16_MULT, st.integers(-31, 30))
    params = {**addb16(in1, in2, out, subtract=draw(st.integers(0, 1)), in1=draw(pair), in2=draw(pair),
                       out=draw(pair), left_shift=draw(st.integers(0, 15)), act=draw(act16()))}
    return Case((params, draw(ints(in1, np.int16)), draw(ints(in2, np.int16))), int(np.prod(out)))


@st.composite
def matmul16_case(draw):
    rb, group, transposed = draw(st.integers(1, 2)), draw(st.sampled_from([1, 1, 2, 3])), draw(st.integers(0, 1))
    b = rb * group
    lb = draw(st.sampled_from([1, b]))
    m, k, n = draw(st.integers(1, 6)), draw(st.one_of(st.integers(1, 40), st.just(300))), draw(st.integers(1, 9))
    params = mm16(b, m, k, n, lhs_b=lb, rhs_b=rb, mult=draw(I16_MULT), shift=draw(shift16(4e8 * math.sqrt(k))),
                  act=draw(act16()), group=group, transposed=transposed)
    rhs = draw(ints((rb, n, k) if transposed else (rb, k, n), np.int16))
    return Case((params, draw(ints((lb, m, k), np.int16)), rhs), b * m * n)


@st.composite
def softmax16_case(draw):
    rows, cols = draw(st.integers(1, 3)), draw(st.one_of(st.integers(1, 100), st.sampled_from([1, 65535])))
    rows = 1 if cols == 65535 else rows
    mult = draw(st.one_of(st.integers(0, (1 << 32) - 1), st.sampled_from([0, 1, (1 << 32) - 1]),
                          st.floats(1e-5, 0.5).map(lambda s: s16.softmax_s16_params(1, 1, s)["input_multiplier"])))
    return Case(({"rows": rows, "cols": cols, "input_multiplier": mult}, draw(ints((rows, cols), np.int16))),
                rows * cols, alias=draw(st.sampled_from([None, 1])))


@st.composite
def lut16_case(draw):
    size = draw(st.integers(1, 300))
    return Case(({"size": size}, draw(ints(513, np.int16)), draw(ints(size, np.int16))), size,
                alias=draw(st.sampled_from([None, 2])))


@st.composite
def convert16_case(draw, kinds: str):
    size = draw(st.integers(1, 200))
    in_off = draw(st.integers(-127, 128)) if kinds == "s8_s16" else 0
    out_off = draw(st.integers(-128, 127)) if kinds == "s16_s8" else 0
    params = convert(size, draw(I16_MULT), draw(st.integers(-31, 30)), in_off=in_off, out_off=out_off)
    return Case((params, draw(ints(size, np.int8 if kinds == "s8_s16" else np.int16))), size)


STRATEGIES = {
    "mcu_conv2d_s16": conv16_case(False), "mcu_dwconv2d_s16": conv16_case(True), "mcu_fully_connected_s16": fc16_case(),
    "mcu_maxpool2d_s16": pool16_case(False), "mcu_avgpool2d_s16": pool16_case(True), "mcu_add_s16": add16_case(),
    "mcu_mul_s16": mul16_case(), "mcu_softmax_s16": softmax16_case(), "mcu_lut_s16": lut16_case(),
    "mcu_add_broadcast_s16": add_broadcast16_case(), "mcu_matmul_s16": matmul16_case(),
    "mcu_convert_s8_s16": convert16_case("s8_s16"), "mcu_convert_s16_s8": convert16_case("s16_s8"),
    "mcu_convert_s16_s16": convert16_case("s16_s16"),
}


@pytest.mark.parametrize("kernel", sorted(STRATEGIES))
@FUZZ
@given(data=st.data())
def test_fuzz_s16_kernel_matches_twin_under_sanitizers(driver, kernel, data):  # noqa: F811
    check(driver, kernel, TWINS[kernel], lambda c: c.args, data.draw(STRATEGIES[kernel], label="case"))
