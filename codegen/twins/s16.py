"""Numpy twins of runtime_c/kernels/s16, the int16-activation ("a16w8") kernels, with the same integer arithmetic,
and the compile-time constants they read (softmax multiplier and exp table, LUT tables, add multipliers).

- Activations are int16 with zero point 0; the offset / zero point fields of the reused structs must be 0 and the
  clamp must lie in int16 (else ValueError, where the C returns MCU_ERR_ARG / MCU_ERR_SHAPE).
- Convs and fully connected accumulate in int64 (numpy int64 is exact: |in * w| <= 2^22 and |bias| <= 2^62), then
  out = clamp(requantize64(acc, multiplier[c], shift[c])): quant.requantize64 is exact in Python ints.
- Windows come from the int8 twins' strided views (conv: zero padding, taps outside the input add 0; pool: a fill
  that never wins or adds 0), so geometry handling is shared with them.
- Softmax: the C's integer steps, in uint64 numpy (every intermediate fits, see mcu_kernels.h); the exp2 table is
  the one literal in mcu_softmax_s16.c (softmax_s16_exp2_table() regenerates it; a test compares the two).
"""
from __future__ import annotations

import math

import numpy as np

from .conv import _windows as _conv_windows
from .conv import check_quant
from .elementwise import _broadcast_inputs
from .fc import matmul_s16  # noqa: F401  (the twin of mcu_matmul_s16, beside mcu_matmul_s8's)
from .pool import _windows as _pool_windows
from .quant import INT32_MAX, INT32_MIN, quantize_multiplier, requantize, requantize64, requantize_round, saturate

Q15_MIN, Q15_MAX = -32768, 32767
LUT_ENTRIES = 513
EXP2_ENTRIES = 257  # 2^(-j / 256), j = 0..256
BIAS_LIMIT = 1 << 62


def _check_io(p: dict, *zero_fields: str) -> None:
    for key in zero_fields:
        if p[key] != 0:
            raise ValueError(f"{key} must be 0 for int16 activations, got {p[key]}")
    if not Q15_MIN <= p["act_min"] <= p["act_max"] <= Q15_MAX:
        raise ValueError(f"bad activation range [{p['act_min']}, {p['act_max']}]")


def _output_stage(acc, bias, multiplier, shift, act_min: int, act_max: int) -> np.ndarray:
    acc = np.asarray(acc, dtype=np.int64)
    if bias is not None:
        b = np.asarray(bias, dtype=np.int64)
        if b.size and np.abs(b).max() > BIAS_LIMIT:
            raise OverflowError("|bias| must be <= 2^62 (the int64 accumulator must not overflow)")
        acc = acc + b
    out = requantize64(acc, np.asarray(multiplier, np.int64), np.asarray(shift, np.int64))
    return saturate(out, act_min, act_max, np.int16)


def _check_conv(p: dict) -> None:
    if any(d < 1 for key in ("input", "filter", "output") for d in p[key]):
        raise ValueError(f"dims must be positive: {p['input']} {p['filter']} {p['output']}")
    if min(p["stride_h"], p["stride_w"], p["dilation_h"], p["dilation_w"]) < 1 or min(p["pad_top"], p["pad_left"]) < 0:
        raise ValueError("strides and dilations must be >= 1, pads >= 0")
    _check_io(p, "input_offset", "output_offset")


def conv2d_s16(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray, filter: np.ndarray,
               bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_conv2d_s16 (any groups = C_in / filter C); returns int16 of shape params["output"]."""
    p = params
    _check_conv(p)
    c_in, c_group, c_out = p["input"][3], p["filter"][3], p["output"][3]
    if p["output"][0] != p["input"][0] or c_out != p["filter"][0] or c_in % c_group or c_out % (c_in // c_group):
        raise ValueError(f"conv dims disagree: input {p['input']} filter {p['filter']} output {p['output']}")
    check_quant(multiplier, shift, c_out)
    groups = c_in // c_group
    per = c_out // groups
    win = _conv_windows(p, input)
    w = np.asarray(filter, dtype=np.int64).reshape(p["filter"])
    acc = np.concatenate([np.tensordot(win[..., g * c_group:(g + 1) * c_group], w[g * per:(g + 1) * per],
                                       axes=([3, 4, 5], [1, 2, 3])) for g in range(groups)], axis=-1)
    return _output_stage(acc, bias, multiplier, shift, p["act_min"], p["act_max"])


def dwconv2d_s16(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray, filter: np.ndarray,
                 bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_dwconv2d_s16: filter [1, KH, KW, C_out], output channel co reads input channel co // ch_mult."""
    p = params
    _check_conv(p)
    c_in, c_out = p["input"][3], p["output"][3]
    if p["output"][0] != p["input"][0] or p["filter"][0] != 1 or p["filter"][3] != c_out or c_out % c_in:
        raise ValueError(f"depthwise dims disagree: input {p['input']} filter {p['filter']} output {p['output']}")
    check_quant(multiplier, shift, c_out)
    _, kh, kw, _ = p["filter"]
    w = np.asarray(filter, dtype=np.int64).reshape(kh, kw, c_in, c_out // c_in)  # co = ci * ch_mult + m
    acc = np.einsum("nyxabc,abcm->nyxcm", _conv_windows(p, input), w).reshape(p["output"])
    return _output_stage(acc, bias, multiplier, shift, p["act_min"], p["act_max"])


def fully_connected_s16(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray,
                        weights: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_fully_connected_s16: input [batches, in], weights [out, in]; returns int16 [batches, out]."""
    p = params
    b, k, n = p["batches"], p["in_features"], p["out_features"]
    if min(b, k, n) < 1:
        raise ValueError(f"batches/in_features/out_features must be positive: {b}, {k}, {n}")
    _check_io(p, "input_offset", "output_offset")
    check_quant(multiplier, shift, n)
    acc = np.asarray(input, dtype=np.int64).reshape(b, k) @ np.asarray(weights, dtype=np.int64).reshape(n, k).T
    return _output_stage(acc, bias, multiplier, shift, p["act_min"], p["act_max"])


# ---- Elementwise -----------------------------------------------------------------------------------------------

def add_s16_params(s1: float, s2: float, s_out: float, act: tuple[int, int] = (Q15_MIN, Q15_MAX)) -> dict:
    """mcu_add_params_t fields (all but size: add {"size": n}) for out = in1 + in2 as TFLite's int16 add encodes it:
    left_shift 15, input multipliers s_i / (2 max(s1, s2)), output multiplier 2 max(s1, s2) / (2^15 s_out)."""
    twice = 2.0 * max(s1, s2)
    (m1, sh1), (m2, sh2) = quantize_multiplier(s1 / twice), quantize_multiplier(s2 / twice)
    mo, sho = quantize_multiplier(twice / ((1 << 15) * s_out))
    return {"left_shift": 15, "input1_offset": 0, "input1_multiplier": m1, "input1_shift": sh1,
            "input2_offset": 0, "input2_multiplier": m2, "input2_shift": sh2,
            "output_offset": 0, "output_multiplier": mo, "output_shift": sho, "act_min": act[0], "act_max": act[1]}


def add_s16(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_add_s16: add_broadcast_s16 over one row of params["size"] elements each; returns int16 shaped like
    input1."""
    p = params
    x1, x2 = np.asarray(input1), np.asarray(input2)
    if p["size"] < 1 or x1.size != p["size"] or x2.size != p["size"]:
        raise ValueError(f"size must be >= 1 and each input hold it: {p['size']}, {x1.size}, {x2.size}")
    row = (1, 1, 1, p["size"])
    return add_broadcast_s16({**p, "input1": row, "input2": row, "output": row, "subtract": 0}, x1, x2).reshape(x1.shape)


def add_broadcast_s16(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_add_broadcast_s16: add_s16's arithmetic with broadcasting and subtraction; returns int16 of shape
    params["output"]."""
    p = params
    if p["subtract"] not in (0, 1) or not 0 <= p["left_shift"] <= 15:
        raise ValueError(f"subtract must be 0 or 1 and left_shift in [0, 15], got {p['subtract']}, {p['left_shift']}")
    _check_io(p, "input1_offset", "input2_offset", "output_offset")
    for name in ("input1", "input2", "output"):
        if p[f"{name}_multiplier"] < 0 or not -31 <= p[f"{name}_shift"] <= 30:
            raise ValueError(f"{name}: multiplier must be >= 0 and shift in [-31, 30]")
    x1, x2 = _broadcast_inputs(p, input1, input2)
    a1 = requantize(x1 << p["left_shift"], p["input1_multiplier"], p["input1_shift"])
    a2 = requantize(x2 << p["left_shift"], p["input2_multiplier"], p["input2_shift"])
    total = np.clip(a1 - a2 if p["subtract"] else a1 + a2, INT32_MIN, INT32_MAX)
    return saturate(requantize(total, p["output_multiplier"], p["output_shift"]), p["act_min"], p["act_max"], np.int16)


def mul_s16(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_mul_s16 (broadcasting); returns int16 of shape params["output"]."""
    p = params
    _check_io(p, "input1_offset", "input2_offset", "output_offset")
    if p["output_multiplier"] < 0 or not -31 <= p["output_shift"] <= 30:
        raise ValueError("output multiplier must be >= 0 and shift in [-31, 30]")
    x1, x2 = _broadcast_inputs(p, input1, input2)
    out = requantize64(x1 * x2, p["output_multiplier"], p["output_shift"])
    return saturate(out, p["act_min"], p["act_max"], np.int16)


# ---- Pooling ---------------------------------------------------------------------------------------------------

def _check_pool(p: dict) -> None:
    if any(d < 1 for key in ("input", "output") for d in p[key]):
        raise ValueError(f"dims must be positive: {p['input']} {p['output']}")
    if min(p["kernel_h"], p["kernel_w"], p["stride_h"], p["stride_w"]) < 1 or min(p["pad_top"], p["pad_left"]) < 0:
        raise ValueError("kernel and stride must be >= 1, pads >= 0")
    _check_io(p, "zero_point")
    (n, h, w, c), (on, oh, ow, oc) = p["input"], p["output"]
    if on != n or oc != c:
        raise ValueError(f"pool dims disagree: input {p['input']} output {p['output']}")
    if (p["pad_top"] >= p["kernel_h"] or p["pad_left"] >= p["kernel_w"]
            or (oh - 1) * p["stride_h"] - p["pad_top"] >= h or (ow - 1) * p["stride_w"] - p["pad_left"] >= w):
        raise ValueError("a pooling window lies entirely in the padding")


def maxpool2d_s16(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_maxpool2d_s16; returns int16 of shape params["output"]."""
    _check_pool(params)
    best = _pool_windows(params, input, fill=-(1 << 31)).max(axis=(3, 4))
    return saturate(best, params["act_min"], params["act_max"], np.int16)


def avgpool2d_s16(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_avgpool2d_s16: round half away from zero of the valid-tap sum over d; kernel <= 65536 taps."""
    p = params
    if min(p["kernel_h"], p["kernel_w"]) >= 1 and p["kernel_h"] * p["kernel_w"] > 65536:
        raise ValueError(f"at most 65536 taps, got {p['kernel_h']} x {p['kernel_w']}")
    if p["divisor"] < 0:
        raise ValueError(f"divisor must be >= 0, got {p['divisor']}")
    _check_pool(p)
    acc = _pool_windows(p, input, fill=0).sum(axis=(3, 4))
    if p["divisor"] > 0:
        d = np.int64(p["divisor"])
    else:  # valid taps per window: pool a one-channel tensor of ones padded with zeros
        _, h, w, _ = p["input"]
        ones = {**p, "input": (1, h, w, 1), "output": (1, *p["output"][1:3], 1)}
        d = _pool_windows(ones, np.ones((1, h, w, 1), np.int64), fill=0).sum(axis=(3, 4))
    q = np.sign(acc) * ((np.abs(acc) + d // 2) // d)
    return saturate(q, p["act_min"], p["act_max"], np.int16)


# ---- Softmax ---------------------------------------------------------------------------------------------------

def softmax_s16_exp2_table() -> np.ndarray:
    """uint32[257]: round(2^30 * 2^(-j / 256)), the table in mcu_softmax_s16.c."""
    j = np.arange(EXP2_ENTRIES, dtype=np.float64)
    return np.round(2.0**30 * np.exp2(-j / 256.0)).astype(np.uint32)


def softmax_s16_params(rows: int, cols: int, input_scale: float) -> dict:
    """mcu_softmax_s16_params_t: input_multiplier = round(s_in * log2(e) * 2^32), a uint32 (so s_in < ln 2)."""
    mult = round(float(input_scale) / math.log(2.0) * 2.0**32)
    if not input_scale > 0 or mult >= 1 << 32:
        raise ValueError(f"softmax input scale must be in (0, ln 2), got {input_scale}")
    return {"rows": rows, "cols": cols, "input_multiplier": mult}


def _exp_q30(d: np.ndarray, multiplier: int) -> np.ndarray:
    """2^30 * 2^(-d * multiplier / 2^32) as mcu_softmax_s16.c's exp_q30, in uint64."""
    table = softmax_s16_exp2_table().astype(np.uint64)
    y = d.astype(np.uint64) * np.uint64(multiplier)
    k = y >> np.uint64(32)
    f = y & np.uint64(0xFFFFFFFF)
    j, t = f >> np.uint64(24), f & np.uint64(0xFFFFFF)
    v = table[j] - (((table[j] - table[j + np.uint64(1)]) * t + np.uint64(1 << 23)) >> np.uint64(24))
    kk = np.minimum(k, np.uint64(30))
    e = (v + ((np.uint64(1) << kk) >> np.uint64(1))) >> kk
    return np.where(k < np.uint64(31), e, np.uint64(0))


def softmax_s16(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_softmax_s16; input holds rows * cols int16 values; returns int16 (scale 1/32768) like input."""
    rows, cols, mult = params["rows"], params["cols"], params["input_multiplier"]
    if rows < 1 or not 1 <= cols <= 65535:
        raise ValueError(f"rows must be >= 1 and cols in [1, 65535], got {rows}, {cols}")
    if not 0 <= mult < 1 << 32:
        raise ValueError(f"input_multiplier must be a uint32, got {mult}")
    x = np.asarray(input)
    if x.size != rows * cols:
        raise ValueError(f"input must hold {rows} x {cols} values, got {x.size}")
    v = x.astype(np.int64).reshape(rows, cols)
    e = _exp_q30(v.max(axis=1, keepdims=True) - v, mult)
    recip = np.uint64(1 << 61) // e.sum(axis=1, keepdims=True)
    q = (e * recip + np.uint64(1 << 45)) >> np.uint64(46)
    return np.minimum(q, np.uint64(Q15_MAX)).astype(np.int16).reshape(x.shape)


# ---- Look-up table ---------------------------------------------------------------------------------------------

def lut_s16_table(fn, input_scale: float, output_scale: float) -> np.ndarray:
    """int16[513]: table[j] = clamp(round(fn(s_in * (128 j - 32768)) / s_out)) (ties to even), fn a numpy-callable
    float function; j = 512 is one step past the int16 range, the end of the last interpolation interval."""
    x = float(input_scale) * (128.0 * np.arange(LUT_ENTRIES, dtype=np.float64) - 32768.0)
    y = np.asarray(fn(x), dtype=np.float64) / float(output_scale)
    return np.clip(np.rint(y), Q15_MIN, Q15_MAX).astype(np.int16)


def lut_s16(params: dict, table: np.ndarray, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_lut_s16: table[j] + (((table[j + 1] - table[j]) * f + 64) >> 7), j = u >> 7, f = u & 127."""
    t = np.asarray(table)
    if params["size"] < 1:
        raise ValueError(f"size must be >= 1, got {params['size']}")
    if t.dtype != np.int16 or t.shape != (LUT_ENTRIES,):
        raise ValueError(f"table must be int16[{LUT_ENTRIES}]")
    x = np.asarray(input)
    if x.size != params["size"]:
        raise ValueError(f"input must hold {params['size']} values, got {x.size}")
    u = x.astype(np.int64) + 32768
    j, f = u >> 7, u & 127
    t = t.astype(np.int64)
    return (t[j] + (((t[j + 1] - t[j]) * f + 64) >> 7)).astype(np.int16)


# ---- Precision boundaries, float fallback, data movement -----------------------------------------------------

def _check_convert(p: dict, in_offsets: tuple[int, int], out_offsets: tuple[int, int]) -> None:
    if p["size"] < 1 or p["multiplier"] < 0 or not -31 <= p["shift"] <= 30:
        raise ValueError("size must be >= 1, multiplier >= 0 and shift in [-31, 30]")
    (in_lo, in_hi), (out_lo, out_hi) = in_offsets, out_offsets
    if not (in_lo <= p["input_offset"] <= in_hi and out_lo <= p["output_offset"] <= out_hi):
        raise ValueError(f"offsets out of range: {p['input_offset']}, {p['output_offset']}")


def convert_params(size: int, s_in: float, zp_in: int, s_out: float, zp_out: int) -> dict:
    """mcu_convert_params_t for a requantization from (s_in, zp_in) to (s_out, zp_out)."""
    mult, shift = quantize_multiplier(s_in / s_out)
    return {"size": size, "input_offset": -zp_in, "output_offset": zp_out, "multiplier": mult, "shift": shift}


def _convert(p: dict, input, lo: int, hi: int, dtype) -> np.ndarray:
    x = np.asarray(input)
    if x.size != p["size"]:
        raise ValueError(f"input must hold {p['size']} values, got {x.size}")
    r = requantize_round(x.astype(np.int64) + p["input_offset"], p["multiplier"], p["shift"])
    return saturate(r + p["output_offset"], lo, hi, dtype)


def convert_s8_s16(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_convert_s8_s16 (input_offset -zp of the int8 input, output_offset 0)."""
    _check_convert(params, (-127, 128), (0, 0))
    return _convert(params, input, Q15_MIN, Q15_MAX, np.int16)


def convert_s16_s8(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_convert_s16_s8 (input_offset 0, output_offset the int8 output's zero point)."""
    _check_convert(params, (0, 0), (-128, 127))
    return _convert(params, input, -128, 127, np.int8)


def convert_s16_s16(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_convert_s16_s16 (both offsets 0): an int16 tensor onto another int16 scale."""
    _check_convert(params, (0, 0), (0, 0))
    return _convert(params, input, Q15_MIN, Q15_MAX, np.int16)


def dequantize_s16_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_dequantize_s16_f32: float32 q * scale."""
    size, scale = params["size"], np.float32(params["scale"])
    if size < 1 or params["zero_point"] != 0 or not scale > 0:
        raise ValueError(f"size must be >= 1, zero_point 0 and scale > 0: {size}, {params['zero_point']}, {scale}")
    x = np.asarray(input)
    if x.size != size:
        raise ValueError(f"input must hold {size} values, got {x.size}")
    return x.astype(np.float32) * scale


def quantize_f32_s16(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_quantize_f32_s16: clamp(round_half_even(x * inv_scale)) to int16; NaN -> 0."""
    size, inv = params["size"], np.float32(params["inv_scale"])
    if size < 1 or params["zero_point"] != 0 or not inv > 0:
        raise ValueError(f"size must be >= 1, zero_point 0 and inv_scale > 0: {size}, {params['zero_point']}, {inv}")
    x = np.asarray(input, dtype=np.float32)
    if x.size != size:
        raise ValueError(f"input must hold {size} values, got {x.size}")
    v = np.nan_to_num(x * inv, nan=0.0, posinf=65536.0, neginf=-65536.0)
    v = np.clip(v, np.float32(-65536), np.float32(65536))
    return np.clip(np.round(v).astype(np.int64), Q15_MIN, Q15_MAX).astype(np.int16)


def transpose_s16(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_transpose_s16: input holds prod(in_dims) values; returns the int16 [in_dims[perm[i]]] tensor."""
    dims, perm = tuple(params["in_dims"]), tuple(params["perm"])
    if len(dims) != 4 or min(dims) < 1 or sorted(perm) != [0, 1, 2, 3]:
        raise ValueError(f"in_dims must be 4 positive ints and perm a permutation of 0..3, got {dims}, {perm}")
    x = np.asarray(input, dtype=np.int16)
    if x.size != int(np.prod(dims)):
        raise ValueError(f"input must hold {int(np.prod(dims))} values, got {x.size}")
    return np.ascontiguousarray(x.reshape(dims).transpose(perm))


def _round4(n: int) -> int:
    return -(-n // 4) * 4


def conv2d_s16_dsp_scratch_bytes(p: dict) -> int:
    """Twin of mcu_conv2d_s16_dsp_scratch_bytes: a pixel pair's windows, K = KH * KW * C_in rounded up to 4 int16
    taps each."""
    _, kh, kw, c = p["filter"]
    return 4 * _round4(kh * kw * c)


def fully_connected_s16_dsp_scratch_bytes(p: dict) -> int:
    """Twin of mcu_fully_connected_s16_dsp_scratch_bytes: one input row, in_features rounded up to 4 int16."""
    return 2 * _round4(p["in_features"])


def concat_s16(params: dict, *inputs: np.ndarray) -> np.ndarray:
    """Twin of mcu_concat_s16: input i holds outer * sizes[i] values; returns int16 [outer, sum(sizes)]."""
    from mcu.codegen.twins.shape import CONCAT_MAX_INPUTS
    p = params
    k, outer = p["num_inputs"], p["outer"]
    if not 1 <= k <= CONCAT_MAX_INPUTS or outer < 1 or p["output_offset"] != 0 or len(inputs) != k:
        raise ValueError(f"num_inputs in [1, {CONCAT_MAX_INPUTS}] matching the inputs, outer >= 1, output_offset 0")
    parts = []
    for i, x in enumerate(inputs):
        size, off, mult, shift = p["sizes"][i], p["input_offset"][i], p["multiplier"][i], p["shift"][i]
        if size < 1 or off != 0 or mult < 0 or not -31 <= shift <= 30:
            raise ValueError(f"input {i}: bad size, offset or requantization")
        x = np.asarray(x, dtype=np.int64)
        if x.size != outer * size:
            raise ValueError(f"input {i} must hold {outer * size} values, got {x.size}")
        parts.append(saturate(requantize_round(x.reshape(outer, size), mult, shift), Q15_MIN, Q15_MAX, np.int16))
    return np.concatenate(parts, axis=1).astype(np.int16)
