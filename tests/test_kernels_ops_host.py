"""The op-breadth kernels (broadcast add/sub, mul, LUT, concat, upsample, reduce, grouped conv, matmul, float
fallback) built with the host gcc equal their numpy twins bit for bit; hand-computed cases pin the twins."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
import torch

import hostc
import mcu.quantization.quantizer  # noqa: F401  (torchao registers torch.ops.quantized_decomposed)
from mcu.codegen.twins import activation, conv, elementwise, fallback, fc, quant, reduce, shape
from mcu.codegen.kernels import KERNELS
from test_kernels_host import (Q30, assert_equal_int, conv_params, rand_act, rand_bias, rand_int8, rand_offsets,
                               rand_quant)

TWINS = {
    "mcu_add_broadcast_s8": elementwise.add_broadcast_s8,
    "mcu_mul_s8": elementwise.mul_s8,
    "mcu_lut_s8": activation.lut_s8,
    "mcu_concat_s8": shape.concat_s8,
    "mcu_upsample_nearest_s8": shape.upsample_nearest_s8,
    "mcu_reduce_sum_s8": reduce.reduce_sum_s8,
    "mcu_conv2d_grouped_s8": conv.conv2d_grouped_s8,
    "mcu_matmul_s8": fc.matmul_s8,
    "mcu_dequantize_s8_f32": fallback.dequantize_s8_f32,
    "mcu_quantize_f32_s8": fallback.quantize_f32_s8,
    "mcu_layer_norm_f32": fallback.layer_norm_f32,
}
SEEDS = range(25)


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


def run_c(lib, kernel, *args):
    """Run the C kernel on the twin's arguments into a garbage-filled buffer shaped like the twin's result."""
    expected = TWINS[kernel](*args)
    rng = np.random.default_rng(0)
    if expected.dtype == np.float32:
        out = rng.standard_normal(expected.shape).astype(np.float32)
    else:
        out = rng.integers(-128, 128, size=expected.shape, dtype=np.int8)
    status = hostc.call(lib, kernel, *args, out=out)
    assert status == hostc.MCU_OK, f"{kernel} returned {status}"
    return out, expected


def assert_same_bits(actual, expected) -> None:
    """float32 equality bit for bit (so -0.0 != 0.0 and NaN == NaN); names the first mismatch."""
    a, e = np.asarray(actual, np.float32), np.asarray(expected, np.float32)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    bad = np.argwhere(a.view(np.uint32) != e.view(np.uint32))
    if len(bad):
        idx = tuple(int(i) for i in bad[0])
        raise AssertionError(f"{len(bad)} of {a.size} values differ; first at {idx}: actual {a[idx]!r}, "
                             f"expected {e[idx]!r}")


# ---- Parameter dicts (keys are the C field names) --------------------------------------------------------------

def bcast_add_params(in1, in2, out, subtract=0, q1=(0, Q30, 1), q2=(0, Q30, 1), qo=(0, Q30, -19), left_shift=20,
                     act=(-128, 127)):
    """qN are (offset, multiplier, shift); the defaults make add exact: out = in1 +- in2."""
    p = {"input1": tuple(in1), "input2": tuple(in2), "output": tuple(out), "subtract": subtract,
         "left_shift": left_shift, "act_min": act[0], "act_max": act[1]}
    for name, (off, mult, sh) in (("input1", q1), ("input2", q2), ("output", qo)):
        p.update({f"{name}_offset": off, f"{name}_multiplier": mult, f"{name}_shift": sh})
    return p


def mul_params(in1, in2, out, offsets=(0, 0, 0), mult=Q30, shift=1, act=(-128, 127)):
    return {"input1": tuple(in1), "input2": tuple(in2), "output": tuple(out), "input1_offset": offsets[0],
            "input2_offset": offsets[1], "output_offset": offsets[2], "output_multiplier": mult,
            "output_shift": shift, "act_min": act[0], "act_max": act[1]}


def concat_params(outer, sizes, offsets=None, mults=None, shifts=None, output_offset=0):
    k = len(sizes)
    return {"num_inputs": k, "outer": outer, "sizes": tuple(sizes),
            "input_offset": tuple(offsets or [0] * k), "multiplier": tuple(mults or [Q30] * k),
            "shift": tuple(shifts or [1] * k), "output_offset": output_offset}


def reduce_params(inp, out, offsets=(0, 0), mult=Q30, shift=1):
    return {"input": tuple(inp), "output": tuple(out), "input_offset": offsets[0], "output_offset": offsets[1],
            "multiplier": mult, "shift": shift}


def matmul_params(b, m, k, n, lhs_b=None, rhs_b=None, offsets=(0, 0, 0), mult=Q30, shift=1, act=(-128, 127),
                  group=1, transposed=0):
    return {"batches": b, "lhs_batches": b if lhs_b is None else lhs_b, "rhs_batches": b if rhs_b is None else rhs_b,
            "m": m, "k": k, "n": n, "lhs_offset": offsets[0], "rhs_offset": offsets[1], "output_offset": offsets[2],
            "output_multiplier": mult, "output_shift": shift, "act_min": act[0], "act_max": act[1],
            "rhs_group": group, "rhs_transposed": transposed}


def i8(values, shape=None):
    a = np.array(values, dtype=np.int8)
    return a if shape is None else a.reshape(shape)


def f32(values):
    return np.array(values, dtype=np.float32)


# ---- Hand-computed cases ---------------------------------------------------------------------------------------

def _hand_cases():
    relu_table = np.maximum(np.arange(-128, 128), 3).astype(np.int8)  # ReLU with zero point 3
    yield ("broadcast add of a row to every row", "mcu_add_broadcast_s8",
           (bcast_add_params((1, 1, 2, 3), (1, 1, 1, 3), (1, 1, 2, 3)), i8([[1, 2, 3], [4, 5, 6]]), i8([10, 20, 30])),
           [[11, 22, 33], [14, 25, 36]])
    yield ("broadcast subtract of a column, both operands broadcast", "mcu_add_broadcast_s8",
           (bcast_add_params((1, 1, 1, 3), (1, 1, 2, 1), (1, 1, 2, 3), subtract=1), i8([1, 2, 3]), i8([1, -100])),
           [[0, 1, 2], [101, 102, 103]])
    yield ("subtract saturates at the int8 range", "mcu_add_broadcast_s8",
           (bcast_add_params((1, 1, 1, 2), (1, 1, 1, 2), (1, 1, 1, 2), subtract=1), i8([-128, 127]), i8([127, -128])),
           [-128, 127])
    yield ("mul: products with offsets, broadcast over channels", "mcu_mul_s8",
           (mul_params((1, 1, 1, 3), (1, 1, 1, 1), (1, 1, 1, 3), offsets=(1, -2, 5)), i8([1, 2, -4]), i8([5])),
           [11, 14, -4])
    yield ("mul halves once, ties to even: 3.5 -> 4, -3.5 -> -4, 2.5 -> 2, -2.5 -> -2", "mcu_mul_s8",
           (mul_params((1, 1, 1, 4), (1, 1, 1, 4), (1, 1, 1, 4), shift=0), i8([7, -7, 5, -5]), i8([1, 1, 1, 1])),
           [4, -4, 2, -2])
    yield ("mul relu clamp", "mcu_mul_s8",
           (mul_params((1, 1, 1, 3), (1, 1, 1, 3), (1, 1, 1, 3), act=(0, 127)), i8([-3, 4, 100]), i8([3, 4, 100])),
           [0, 16, 127])
    yield ("lut reads table[x + 128]", "mcu_lut_s8",
           ({"size": 5}, relu_table, i8([-128, 0, 3, 4, 127])), [3, 3, 3, 4, 127])
    yield ("concat copies equal qparams and requantizes the rest", "mcu_concat_s8",
           (concat_params(2, [1, 2], offsets=[0, 4], mults=[Q30, Q30], shifts=[1, 0]), i8([[7], [-7]]),
            i8([[0, 1], [-128, 127]])), [[7, 2, 2], [-7, -62, 66]])
    yield ("upsample nearest 2x3", "mcu_upsample_nearest_s8",
           ({"input": (1, 1, 2, 2), "scale_h": 2, "scale_w": 3}, i8([[1, 2], [3, 4]], (1, 1, 2, 2))),
           [[[1, 2], [1, 2], [1, 2], [3, 4], [3, 4], [3, 4]]] * 2)
    yield ("reduce sum over h and c with an offset", "mcu_reduce_sum_s8",
           (reduce_params((1, 2, 2, 2), (1, 1, 2, 1), offsets=(1, -3)), i8(range(8), (1, 2, 2, 2))),
           [[[0 + 1 + 4 + 5 + 4 - 3], [2 + 3 + 6 + 7 + 4 - 3]]])
    yield ("reduce mean of 3 values: multiplier 1/3, one rounding", "mcu_reduce_sum_s8",
           (reduce_params((1, 1, 1, 3), (1, 1, 1, 1), mult=round(Q30 * 4 / 3), shift=-1), i8([1, 1, 2])), [1])
    yield ("grouped conv 1x1, 2 groups of 2 channels", "mcu_conv2d_grouped_s8",
           (conv_params((1, 1, 1, 4), (2, 1, 1, 2), (1, 1, 1, 2)), np.full(2, Q30, np.int32), np.ones(2, np.int32),
            i8([1, 2, 3, 4], (1, 1, 1, 4)), i8([[1, 1], [1, -1]], (2, 1, 1, 2)), None), [3, -1])
    yield ("matmul 2x2 with a broadcast rhs", "mcu_matmul_s8",
           (matmul_params(2, 1, 2, 2, rhs_b=1, offsets=(1, 0, 0)), i8([[1, 2], [0, -1]]), i8([[1, 0], [0, 1]])),
           [[[2, 3]], [[1, 0]]])


HAND_CASES = list(_hand_cases())
HAND_IDS = [c[0] for c in HAND_CASES]


@pytest.mark.parametrize("case", HAND_CASES, ids=HAND_IDS)
def test_twin_hand_computed(case):
    _, kernel, args, expected = case
    got = TWINS[kernel](*args)
    assert_equal_int(got, np.asarray(expected).reshape(got.shape))


@pytest.mark.host_c
@pytest.mark.parametrize("case", HAND_CASES, ids=HAND_IDS)
def test_c_hand_computed(lib, case):
    _, kernel, args, expected = case
    out, _ = run_c(lib, kernel, *args)
    assert_equal_int(out, np.asarray(expected).reshape(out.shape))


def test_requantize_round_rounds_once():
    """(2^30, shift -1) is 1/4: ties go to even (6/4 -> 2, 10/4 -> 2, -10/4 -> -2), the rest to nearest."""
    assert quant.requantize_round([6, -6, 10, -10, 5, 7, -7], Q30, -1).tolist() == [2, -2, 2, -2, 1, 2, -2]
    assert int(quant.requantize_round(quant.INT32_MAX, quant.INT32_MAX, 30)) == quant.INT32_MAX


# ---- LUT tables ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", [("sigmoid.default", (...,), ()), ("gelu.default", (...,), (("approximate", "none"),)),
                                  ("leaky_relu.default", (..., 0.1), ()), ("hardswish.default", (...,), ())],
                         ids=lambda s: s[0])
def test_lut_table_is_torchs_q_dq_result(spec):
    """Entry q + 128 is exactly what dequantize -> f -> quantize gives in torch for that q."""
    s_in, zp_in, s_out, zp_out = 0.05, -3, 0.02, -60
    table = activation.lut_table(activation.unary_function(spec), s_in, zp_in, s_out, zp_out)
    fn = {"sigmoid.default": torch.sigmoid, "gelu.default": torch.nn.functional.gelu,
          "leaky_relu.default": lambda x: torch.nn.functional.leaky_relu(x, 0.1),
          "hardswish.default": torch.nn.functional.hardswish}[spec[0]]
    for q in (-128, -1, 0, 77, 127):
        x = torch.tensor([(q - zp_in) * s_in], dtype=torch.float32)
        want = int(torch.clamp(torch.round(fn(x) * (1.0 / s_out)) + zp_out, -128, 127).item())
        assert int(table[q + 128]) == want, q


# ---- Random cases: C == twin ------------------------------------------------------------------------------------

def rand_dims(rng, max_dim=5):
    return tuple(int(d) for d in rng.integers(1, max_dim + 1, size=4))


def rand_broadcast(rng, out):
    return tuple(d if rng.random() < 0.6 else 1 for d in out)


def add_bcast_case(seed):
    rng = np.random.default_rng(seed)
    out = rand_dims(rng)
    in1, in2 = rand_broadcast(rng, out), rand_broadcast(rng, out)
    off1, off2, out_off = rand_offsets(rng)[0], rand_offsets(rng)[0], rand_offsets(rng)[1]
    s1, s2 = np.exp(rng.uniform(-6, 0, size=2))
    so = max(s1, s2) * np.exp(rng.uniform(-1, 2))
    twice_max = 2 * max(s1, s2)
    m1, sh1 = quant.quantize_multiplier(s1 / twice_max)
    m2, sh2 = quant.quantize_multiplier(s2 / twice_max)
    mo, sho = quant.quantize_multiplier(twice_max / ((1 << 20) * so))
    params = bcast_add_params(in1, in2, out, int(seed % 2), (off1, m1, sh1), (off2, m2, sh2), (out_off, mo, sho),
                              20, rand_act(rng, out_off))
    return params, rand_int8(rng, in1), rand_int8(rng, in2)


def mul_case(seed):
    rng = np.random.default_rng(seed)
    out = rand_dims(rng)
    in1, in2 = rand_broadcast(rng, out), rand_broadcast(rng, out)
    off1, off2, out_off = rand_offsets(rng)[0], rand_offsets(rng)[0], rand_offsets(rng)[1]
    mult, shift = quant.quantize_multiplier(float(np.exp(rng.uniform(-12, 0))))
    params = mul_params(in1, in2, out, (off1, off2, out_off), mult, shift, rand_act(rng, out_off))
    return params, rand_int8(rng, in1), rand_int8(rng, in2)


def lut_case(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 400))
    return {"size": size}, rng.integers(-128, 128, size=256, dtype=np.int8), rand_int8(rng, size)


def concat_case(seed):
    rng = np.random.default_rng(seed)
    k, outer = int(rng.integers(1, 9)), int(rng.integers(1, 6))
    sizes = [int(v) for v in rng.integers(1, 20, size=k)]
    out_off = rand_offsets(rng)[1]
    offsets, mults, shifts = [], [], []
    for _ in range(k):
        if rng.random() < 0.3:  # same qparams as the output: the copy path
            offsets.append(-out_off)
            mults.append(Q30)
            shifts.append(1)
        else:
            offsets.append(rand_offsets(rng)[0])
            m, s = quant.quantize_multiplier(float(np.exp(rng.uniform(-3, 3))))
            mults.append(m)
            shifts.append(s)
    params = concat_params(outer, sizes, offsets, mults, shifts, out_off)
    return (params, *[rand_int8(rng, (outer, s)) for s in sizes])


def upsample_case(seed):
    rng = np.random.default_rng(seed)
    dims = rand_dims(rng, 4)
    params = {"input": dims, "scale_h": int(rng.integers(1, 4)), "scale_w": int(rng.integers(1, 4))}
    return params, rand_int8(rng, dims)


def reduce_case(seed):
    rng = np.random.default_rng(seed)
    dims = rand_dims(rng, 6)
    out = tuple(1 if rng.random() < 0.5 else d for d in dims)
    count = int(np.prod(dims) // np.prod(out))
    in_off, out_off = rand_offsets(rng)
    real = float(np.exp(rng.uniform(-1, 1))) / (count if seed % 2 else 1)  # a mean or a sum
    mult, shift = quant.quantize_multiplier(real)
    return reduce_params(dims, out, (in_off, out_off), mult, shift), rand_int8(rng, dims)


def grouped_conv_case(seed):
    rng = np.random.default_rng(seed)
    groups, c_group, per = int(rng.integers(2, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    c_in, c_out = groups * c_group, groups * per
    n, h, w = int(rng.choice([1, 2])), int(rng.integers(3, 8)), int(rng.integers(3, 8))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    pt, pl = int(rng.integers(0, kh)), int(rng.integers(0, kw))
    oh, ow = (h + 2 * pt - kh) // sh + 1, (w + 2 * pl - kw) // sw + 1
    in_off, out_off = rand_offsets(rng)
    params = conv_params((n, h, w, c_in), (c_out, kh, kw, c_group), (n, oh, ow, c_out), (sh, sw), (pt, pl), (1, 1),
                         (in_off, out_off), rand_act(rng, out_off))
    acc_std = math.sqrt(kh * kw * c_group * (in_off**2 + 5500) * 5500)
    return (params, *rand_quant(rng, c_out, acc_std), rand_int8(rng, (n, h, w, c_in)),
            rng.integers(-128, 128, size=(c_out, kh, kw, c_group), dtype=np.int8), rand_bias(rng, c_out, acc_std))


def matmul_case(seed):
    rng = np.random.default_rng(seed)
    b, m, k, n = int(rng.integers(1, 4)), int(rng.integers(1, 7)), int(rng.integers(1, 40)), int(rng.integers(1, 11))
    lhs_b, rhs_b = [(b, b), (1, b), (b, 1)][seed % 3]
    group, transposed = 1, int(rng.integers(0, 2))
    if seed % 4 == 3:  # grouped-query attention: rhs batch r serves output batches r * g .. r * g + g - 1
        group, rhs_b = int(rng.integers(2, 4)), b
        b = lhs_b = b * group
    off_l, off_r, out_off = rand_offsets(rng)[0], rand_offsets(rng)[0], rand_offsets(rng)[1]
    acc_std = math.sqrt(k * (off_l**2 + 5500) * (off_r**2 + 5500))
    mult, shift = quant.quantize_multiplier(float(30.0 / acc_std * np.exp(rng.uniform(-1, 1))))
    params = matmul_params(b, m, k, n, lhs_b, rhs_b, (off_l, off_r, out_off), mult, shift, rand_act(rng, out_off),
                           group, transposed)
    return params, rand_int8(rng, (lhs_b, m, k)), rand_int8(rng, (rhs_b, n, k) if transposed else (rhs_b, k, n))


CASES = {
    "mcu_add_broadcast_s8": add_bcast_case, "mcu_mul_s8": mul_case, "mcu_lut_s8": lut_case,
    "mcu_concat_s8": concat_case, "mcu_upsample_nearest_s8": upsample_case, "mcu_reduce_sum_s8": reduce_case,
    "mcu_conv2d_grouped_s8": grouped_conv_case, "mcu_matmul_s8": matmul_case,
}


@pytest.mark.host_c
@pytest.mark.parametrize("kernel", sorted(CASES))
def test_int8_kernel_matches_twin(lib, kernel):
    for seed in SEEDS:
        out, expected = run_c(lib, kernel, *CASES[kernel](seed))
        try:
            assert_equal_int(out, expected)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from None


@pytest.mark.host_c
@pytest.mark.parametrize("variant", ["mcu_matmul_s8_dsp", "mcu_matmul_gemm_s8_dsp"])
def test_matmul_dsp_variants_match_twin(lib, variant):
    """The DSP matmuls (the row-pair one and the GEMM core's, its scratch exactly sized, garbage-filled) on the
    portable cases: broadcast lhs or rhs, grouped heads, both layouts."""
    spec = KERNELS[variant]
    for seed in SEEDS:
        params, lhs, rhs = matmul_case(seed)
        expected = fc.matmul_s8(params, lhs, rhs)
        rng = np.random.default_rng(seed)
        out = rng.integers(-128, 128, size=expected.shape, dtype=np.int8)
        scratch = () if spec.scratch is None else (rng.integers(-128, 128, max(1, spec.scratch(params)), np.int8),)
        assert hostc.call(lib, variant, params, lhs, rhs, *scratch, out=out) == hostc.MCU_OK, f"seed {seed}"
        try:
            assert_equal_int(out, expected)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from None


@pytest.mark.host_c
def test_matmul_gemm_rejects_null_scratch_before_writing(lib):
    params, lhs, rhs = matmul_case(0)
    out = np.zeros(fc.matmul_s8(params, lhs, rhs).shape, np.int8)
    assert hostc.call(lib, "mcu_matmul_gemm_s8_dsp", params, lhs, rhs, None, out=out) == hostc.MCU_ERR_ARG
    assert not out.any()


def test_grouped_conv_twin_equals_per_group_conv():
    """The grouped twin is the plain conv twin applied to each group's channel slices."""
    params, mult, shift, x, w, bias = grouped_conv_case(3)
    groups = params["input"][3] // params["filter"][3]
    cg, per = params["filter"][3], params["output"][3] // groups
    got = conv.conv2d_grouped_s8(params, mult, shift, x, w, bias)
    for g in range(groups):
        sl = slice(g * per, (g + 1) * per)
        p = {**params, "input": (*params["input"][:3], cg), "filter": (per, *params["filter"][1:]),
             "output": (*params["output"][:3], per)}
        want = conv.conv2d_s8(p, mult[sl], shift[sl], np.ascontiguousarray(x[..., g * cg:(g + 1) * cg]), w[sl],
                              None if bias is None else bias[sl])
        assert_equal_int(got[..., sl], want)


def test_matmul_twin_equals_float_product_when_exact():
    """With zero offsets and a unit multiplier the twin is the integer matrix product."""
    rng = np.random.default_rng(1)
    a, b = rng.integers(-3, 4, size=(2, 3, 4)).astype(np.int8), rng.integers(-3, 4, size=(2, 4, 5)).astype(np.int8)
    got = fc.matmul_s8(matmul_params(2, 3, 4, 5), a, b)
    assert_equal_int(got, np.clip(a.astype(np.int64) @ b, -128, 127))


# ---- Float fallback: C == twin bit for bit ----------------------------------------------------------------------

@pytest.mark.host_c
def test_dequantize_matches_twin_and_torch(lib):
    x = np.arange(-128, 128, dtype=np.int8)
    for scale, zp in ((0.0123, -5), (1.7, 127), (2.0 ** -20, -128)):
        params = {"size": 256, "scale": float(np.float32(scale)), "zero_point": zp}
        out, expected = run_c(lib, "mcu_dequantize_s8_f32", params, x)
        assert_same_bits(out, expected)
        ref = torch.ops.quantized_decomposed.dequantize_per_tensor(torch.from_numpy(x), params["scale"], zp, -128,
                                                                   127, torch.int8)
        assert_same_bits(expected, ref.numpy())


@pytest.mark.host_c
def test_quantize_matches_twin_and_torch(lib):
    """Ties (x.5 exactly) round to even, values far outside the range and NaN/inf are clamped."""
    rng = np.random.default_rng(2)
    for scale, zp in ((0.05, 3), (0.5, -128), (0.003, 127)):
        inv = float(np.float32(1.0 / scale))
        ties = (np.arange(-300, 300) + 0.5).astype(np.float32) / np.float32(inv)
        x = np.concatenate([rng.standard_normal(500).astype(np.float32) * 200 * scale, ties,
                            f32([0.0, -0.0, 1e30, -1e30, np.inf, -np.inf, np.nan])]).astype(np.float32)
        params = {"size": x.size, "inv_scale": inv, "zero_point": zp}
        out, expected = run_c(lib, "mcu_quantize_f32_s8", params, x)
        assert_equal_int(out, expected)
        finite = np.isfinite(x)
        ref = torch.ops.quantized_decomposed.quantize_per_tensor(torch.from_numpy(x[finite]), scale, zp, -128, 127,
                                                                 torch.int8)
        assert_equal_int(expected[finite], ref.numpy())
        assert expected[np.isnan(x)].tolist() == [zp]


def layer_norm_case(seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 70))
    x = (rng.standard_normal((rows, cols)) * np.exp(rng.uniform(-4, 4)) + rng.uniform(-5, 5)).astype(np.float32)
    if seed % 5 == 0:
        x[0] = x[0, 0]  # a constant row: var = 0, the output is the bias
    weight = None if seed % 3 == 0 else rng.standard_normal(cols).astype(np.float32)
    bias = None if seed % 4 == 0 else rng.standard_normal(cols).astype(np.float32)
    eps = float(np.float32([1e-5, 1e-6, 0.1][seed % 3]))
    return {"rows": rows, "cols": cols, "eps": eps, "rms": int(seed % 7 == 1)}, x, weight, bias


@pytest.mark.host_c
def test_layer_norm_matches_twin(lib):
    for seed in range(40):
        out, expected = run_c(lib, "mcu_layer_norm_f32", *layer_norm_case(seed))
        try:
            assert_same_bits(out, expected)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from None


def test_layer_norm_twin_close_to_torch():
    params, x, w, b = layer_norm_case(7)
    ref = torch.nn.functional.layer_norm(torch.from_numpy(x), (params["cols"],), torch.from_numpy(w),
                                         torch.from_numpy(b), params["eps"]).numpy()
    np.testing.assert_allclose(fallback.layer_norm_f32(params, x, w, b), ref, rtol=1e-5, atol=1e-5)
    params, x, w, b = layer_norm_case(22)  # rms: torch's RMSNorm (the float island of a16w8 / float32 units)
    assert params["rms"] == 1
    ref = torch.nn.functional.rms_norm(torch.from_numpy(x), (params["cols"],), torch.from_numpy(w),
                                       params["eps"]).numpy() + b
    np.testing.assert_allclose(fallback.layer_norm_f32(params, x, w, b), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.host_c
def test_layer_norm_in_place(lib):
    params, x, w, b = layer_norm_case(11)
    expected = fallback.layer_norm_f32(params, x, w, b)
    buf = x.copy()
    assert hostc.call(lib, "mcu_layer_norm_f32", params, buf, w, b, out=buf) == hostc.MCU_OK
    assert_same_bits(buf, expected)


@pytest.fixture(scope="module")
def sqrt_c():
    src = hostc.KERNELS / "fallback" / "mcu_layer_norm_f32.c"
    code = (f'#include "{src}"\n'
            "void t_sqrt(const float *x, float *out, int32_t n)\n"
            "{ for (int32_t i = 0; i < n; ++i) out[i] = sqrt_pos(x[i]); }\n")
    fn = hostc.build_source(code, "sqrt_wrapper").t_sqrt
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32]
    fn.restype = None

    def run(x):
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.empty_like(x)
        fn(x.ctypes.data, out.ctypes.data, x.size)
        return out
    return run


@pytest.mark.host_c
def test_integer_sqrt_is_correctly_rounded(sqrt_c):
    """Every exponent, subnormals, the largest float, and mantissas at both ends of the binade."""
    rng = np.random.default_rng(4)
    bits = np.concatenate([rng.integers(1, 0x7F800000, size=200_000, dtype=np.uint32),
                           np.arange(1, 1000, dtype=np.uint32), np.array([0x7F7FFFFF, 0x00800000, 0x3F800000,
                                                                          0x3F7FFFFF, 0x40800000], np.uint32)])
    x = bits.view(np.float32)
    assert_same_bits(sqrt_c(x), np.sqrt(x))


# ---- Argument checking --------------------------------------------------------------------------------------------

def _bad_cases():
    """(name, kernel, twin args, expected C status)."""
    ARG, SHAPE = hostc.MCU_ERR_ARG, hostc.MCU_ERR_SHAPE

    def with_params(base, **changes):
        return ({**base[0], **changes}, *base[1:])

    add_b = add_bcast_case(1)
    o = add_b[0]["output"]
    for field, value in (("subtract", 2), ("left_shift", 24), ("input1_offset", -128), ("input2_shift", 31),
                         ("output_multiplier", -1), ("output", (0, *o[1:]))):
        yield f"add_broadcast {field}={value}", "mcu_add_broadcast_s8", with_params(add_b, **{field: value}), ARG
    yield "add_broadcast input1 does not broadcast", "mcu_add_broadcast_s8", \
        with_params(add_b, input1=(o[0] + 1, *o[1:])), SHAPE
    mul_b = mul_case(1)
    o = mul_b[0]["output"]
    for field, value in (("input2_offset", 129), ("output_offset", 128), ("output_shift", -32), ("act_min", 100)):
        changes = {field: value, **({"act_max": 50} if field == "act_min" else {})}
        yield f"mul {field}={value}", "mcu_mul_s8", with_params(mul_b, **changes), ARG
    yield "mul input2 does not broadcast", "mcu_mul_s8", with_params(mul_b, input2=(*o[:3], o[3] + 1)), SHAPE
    yield "lut size 0", "mcu_lut_s8", with_params(lut_case(1), size=0), ARG
    cat_b = concat_case(4)
    k = cat_b[0]["num_inputs"]
    for field, value in (("num_inputs", 0), ("outer", 0), ("output_offset", -129),
                         ("shift", (31,) * k), ("input_offset", (-128,) * k), ("sizes", (0,) * k)):
        yield f"concat {field}={value}", "mcu_concat_s8", with_params(cat_b, **{field: value}), ARG
    yield "concat 9 inputs", "mcu_concat_s8", ({**concat_params(1, [1] * 8), "num_inputs": 9}, *[i8([1])] * 8), ARG
    up_b = upsample_case(1)
    for field, value in (("scale_h", 0), ("scale_w", -1), ("input", (1, 0, 1, 1))):
        yield f"upsample {field}={value}", "mcu_upsample_nearest_s8", with_params(up_b, **{field: value}), ARG
    red_b = (reduce_params((1, 2, 3, 4), (1, 1, 3, 1)), rand_int8(np.random.default_rng(0), (1, 2, 3, 4)))
    for field, value in (("input_offset", 129), ("multiplier", -1), ("shift", 31), ("output", (1, 1, 3, 0))):
        yield f"reduce {field}={value}", "mcu_reduce_sum_s8", with_params(red_b, **{field: value}), ARG
    yield "reduce output dim neither input's nor 1", "mcu_reduce_sum_s8", with_params(red_b, output=(1, 1, 2, 1)), SHAPE
    gc_b = grouped_conv_case(1)
    p = gc_b[0]
    yield "grouped conv stride 0", "mcu_conv2d_grouped_s8", with_params(gc_b, stride_h=0), ARG
    yield "grouped conv filter.c does not divide input.c", "mcu_conv2d_grouped_s8", \
        with_params(gc_b, input=(*p["input"][:3], p["input"][3] + 1)), SHAPE
    yield "grouped conv output.c != filter.n", "mcu_conv2d_grouped_s8", \
        with_params(gc_b, output=(*p["output"][:3], p["output"][3] + 1)), SHAPE
    mm_b = matmul_case(3)
    for field, value in (("k", 32768), ("m", 0), ("rhs_offset", -128), ("output_shift", 31)):
        yield f"matmul {field}={value}", "mcu_matmul_s8", with_params(mm_b, **{field: value}), ARG
    yield "matmul lhs_batches neither batches nor 1", "mcu_matmul_s8", \
        with_params(mm_b, batches=3, lhs_batches=2, rhs_batches=3), SHAPE
    dq_b = ({"size": 4, "scale": 0.5, "zero_point": 0}, i8([1, 2, 3, 4]))
    for field, value in (("size", 0), ("scale", 0.0), ("scale", -1.0), ("zero_point", 128)):
        yield f"dequantize {field}={value}", "mcu_dequantize_s8_f32", with_params(dq_b, **{field: value}), ARG
    q_b = ({"size": 4, "inv_scale": 2.0, "zero_point": 0}, f32([1, 2, 3, 4]))
    for field, value in (("size", -1), ("inv_scale", 0.0), ("zero_point", -129)):
        yield f"quantize {field}={value}", "mcu_quantize_f32_s8", with_params(q_b, **{field: value}), ARG
    ln_b = layer_norm_case(1)
    for field, value in (("rows", 0), ("cols", 0), ("eps", 0.0)):
        yield f"layer_norm {field}={value}", "mcu_layer_norm_f32", with_params(ln_b, **{field: value}), ARG


BAD_CASES = list(_bad_cases())


@pytest.mark.host_c
@pytest.mark.parametrize("case", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_c_rejects_bad_arguments_before_writing(lib, case):
    _, kernel, args, status = case
    dtype = np.float32 if PROTO_OUT[kernel] == "float" else np.int8
    out = np.full(1 << 12, 0x5A, dtype)
    before = out.copy()
    assert hostc.call(lib, kernel, *args, out=out) == status
    assert (out.view(np.uint8) == before.view(np.uint8)).all(), "a kernel wrote its output before rejecting"


@pytest.mark.parametrize("case", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_twin_rejects_bad_arguments(case):
    _, kernel, args, _ = case
    with pytest.raises(ValueError):
        TWINS[kernel](*args)


PROTO_OUT = {k: hostc.PROTOTYPES[k][-1][0] for k in TWINS}
BASE_ARGS = {
    "mcu_add_broadcast_s8": add_bcast_case(0), "mcu_mul_s8": mul_case(0), "mcu_lut_s8": lut_case(0),
    "mcu_concat_s8": concat_case(0), "mcu_upsample_nearest_s8": upsample_case(0), "mcu_reduce_sum_s8": reduce_case(0),
    "mcu_conv2d_grouped_s8": grouped_conv_case(0), "mcu_matmul_s8": matmul_case(0),
    "mcu_dequantize_s8_f32": ({"size": 4, "scale": 0.5, "zero_point": 0}, i8([1, 2, 3, 4])),
    "mcu_quantize_f32_s8": ({"size": 4, "inv_scale": 2.0, "zero_point": 0}, f32([1, 2, 3, 4])),
    "mcu_layer_norm_f32": layer_norm_case(2),
}
OPTIONAL = {("mcu_conv2d_grouped_s8", 5), ("mcu_layer_norm_f32", 2), ("mcu_layer_norm_f32", 3)}  # bias, weight


def _null_cases():
    for kernel, args in sorted(BASE_ARGS.items()):
        yield kernel, None  # the output
        for i in range(len(args)):
            if (kernel, i) in OPTIONAL or (kernel == "mcu_conv2d_grouped_s8" and i in (1, 2)):
                continue
            if kernel == "mcu_concat_s8" and i > 0:
                yield kernel, i  # one NULL entry of the input array
                break
            yield kernel, i
    yield "mcu_conv2d_grouped_s8", 1  # quant->multiplier NULL


@pytest.mark.host_c
@pytest.mark.parametrize("kernel, index", list(_null_cases()), ids=lambda v: str(v))
def test_c_rejects_null_pointers(lib, kernel, index):
    args = BASE_ARGS[kernel]
    expected = TWINS[kernel](*args)
    out = np.zeros(expected.shape, expected.dtype)
    if index is None:
        assert hostc.call(lib, kernel, *args, out=None) == hostc.MCU_ERR_ARG
        return
    bad = tuple(None if j == index else a for j, a in enumerate(args))
    assert hostc.call(lib, kernel, *bad, out=out) == hostc.MCU_ERR_ARG
    assert not out.any()


@pytest.mark.host_c
def test_concat_rejects_null_input_array(lib):
    params = concat_params(1, [2])
    s = hostc.struct("mcu_concat_params_t", params)
    out = np.zeros(2, np.int8)
    assert lib.mcu_concat_s8(ctypes.byref(s), None, out.ctypes.data) == hostc.MCU_ERR_ARG


@pytest.mark.host_c
def test_lut_in_place(lib):
    params, table, x = lut_case(5)
    expected = activation.lut_s8(params, table, x)
    buf = x.copy()
    assert hostc.call(lib, "mcu_lut_s8", params, table, buf, out=buf) == hostc.MCU_OK
    assert_equal_int(buf, expected)


@pytest.mark.host_c
def test_requantize_round_c_matches_twin_for_every_shift():
    code = ('#include <stdint.h>\n#include "mcu/mcu_quant.h"\n'
            "void t_rr(const int32_t *acc, const int32_t *m, int32_t s, int32_t *out, int32_t n)\n"
            "{ for (int32_t i = 0; i < n; ++i) out[i] = mcu_requantize_round(acc[i], m[i], s); }\n")
    fn = hostc.build_source(code, "requantize_round_wrapper").t_rr
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32]
    fn.restype = None
    rng = np.random.default_rng(5)
    acc = np.concatenate([rng.integers(quant.INT32_MIN, quant.INT32_MAX, 400, endpoint=True),
                          rng.integers(-70000, 70000, 400), [quant.INT32_MIN, -1, 0, 1, quant.INT32_MAX]]).astype(np.int32)
    for shift in range(-31, 31):
        mult = np.where(np.arange(acc.size) % 3 == 0, Q30, rng.integers(0, 1 << 31, acc.size)).astype(np.int32)
        out = np.empty_like(acc)
        fn(acc.ctypes.data, mult.ctypes.data, shift, out.ctypes.data, acc.size)
        assert_equal_int(out, quant.requantize_round(acc, mult, shift))
