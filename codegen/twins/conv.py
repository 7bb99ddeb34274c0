"""Numpy twins of runtime_c/kernels/conv: mcu_conv2d_s8, mcu_dwconv2d_s8 and mcu_conv2d_grouped_s8, with the same
integer arithmetic, and of the in-place variants mcu_dwconv2d_s8_inplace and mcu_conv2d_1x1_s8_inplace (the same
results; their geometry limits and scratch sizes, which the code generator and the memory planner use). The
optimized variants (_dsp, _fast, int4) compute the portable results; of them only their scratch sizes are twinned
here (`*_scratch_bytes`, as mcu_kernels.h defines them), for select_kernels to plan the scratch.

- Windows are strided views of the input (+ input_offset) zero-padded on every side, so padded taps add 0,
  exactly as the C skips them; accumulation is int64 and must fit int32 (the C accumulates in int32).
- Invalid arguments raise ValueError where the C returns MCU_ERR_ARG / MCU_ERR_SHAPE.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .quant import INT32_MAX, INT32_MIN, requantize, saturate


def output_stage(acc: np.ndarray, bias, multiplier, shift, output_offset: int, act_min: int, act_max: int):
    """bias + acc, requantized per channel (last axis), offset and clamped to int8 (shared with fc)."""
    acc = np.asarray(acc, dtype=np.int64)
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int64)
    if acc.size and (acc.min() < INT32_MIN or acc.max() > INT32_MAX):
        raise OverflowError("accumulator exceeds int32; the C kernel would overflow")
    out = requantize(acc, np.asarray(multiplier, np.int64), np.asarray(shift, np.int64)) + output_offset
    return saturate(out, act_min, act_max)


def check_quant(multiplier, shift, channels: int) -> None:
    """The per-channel quant checks every kernel with mcu_per_channel_quant_t makes (MCU_ERR_ARG)."""
    m, s = np.asarray(multiplier), np.asarray(shift)
    if m.shape != (channels,) or s.shape != (channels,):
        raise ValueError(f"multiplier/shift must have shape ({channels},), got {m.shape} / {s.shape}")
    if (m < 0).any() or (s < -31).any() or (s > 30).any():
        raise ValueError("multiplier must be >= 0 and shift in [-31, 30]")


def _check_params(p: dict) -> None:
    if any(d < 1 for key in ("input", "filter", "output") for d in p[key]):
        raise ValueError(f"dims must be positive: {p['input']} {p['filter']} {p['output']}")
    if min(p["stride_h"], p["stride_w"], p["dilation_h"], p["dilation_w"]) < 1 or min(p["pad_top"], p["pad_left"]) < 0:
        raise ValueError("strides and dilations must be >= 1, pads >= 0")
    if not (-127 <= p["input_offset"] <= 128 and -128 <= p["output_offset"] <= 127):
        raise ValueError(f"offsets out of range: {p['input_offset']}, {p['output_offset']}")
    if not -128 <= p["act_min"] <= p["act_max"] <= 127:
        raise ValueError(f"bad activation range [{p['act_min']}, {p['act_max']}]")


def _windows(p: dict, input: np.ndarray) -> np.ndarray:
    """int64 view (N, H_out, W_out, KH, KW, C_in) of input + input_offset; taps outside the input read 0."""
    n, h, w, c = p["input"]
    _, oh, ow, _ = p["output"]
    _, kh, kw, _ = p["filter"]
    sh, sw, dh, dw = p["stride_h"], p["stride_w"], p["dilation_h"], p["dilation_w"]
    pt, pl = p["pad_top"], p["pad_left"]
    rows = max((oh - 1) * sh + (kh - 1) * dh + 1, pt + h)
    cols = max((ow - 1) * sw + (kw - 1) * dw + 1, pl + w)
    padded = np.zeros((n, rows, cols, c), dtype=np.int64)
    padded[:, pt:pt + h, pl:pl + w, :] = np.asarray(input, dtype=np.int64).reshape(n, h, w, c) + p["input_offset"]
    s = padded.strides
    return as_strided(padded, (n, oh, ow, kh, kw, c), (s[0], s[1] * sh, s[2] * sw, s[1] * dh, s[2] * dw, s[3]),
                      writeable=False)


def conv2d_s8(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray, filter: np.ndarray,
              bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_conv2d_s8: NHWC input, OHWI filter; returns int8 of shape params["output"]."""
    p = params
    _check_params(p)
    if p["output"][0] != p["input"][0] or p["filter"][3] != p["input"][3] or p["output"][3] != p["filter"][0]:
        raise ValueError(f"conv dims disagree: input {p['input']} filter {p['filter']} output {p['output']}")
    check_quant(multiplier, shift, p["output"][3])
    w = np.asarray(filter, dtype=np.int64).reshape(p["filter"])
    acc = np.tensordot(_windows(p, input), w, axes=([3, 4, 5], [1, 2, 3]))
    return output_stage(acc, bias, multiplier, shift, p["output_offset"], p["act_min"], p["act_max"])


def dwconv2d_s8(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray, filter: np.ndarray,
                bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_dwconv2d_s8: filter [1, KH, KW, C_out], output channel co reads input channel co // ch_mult."""
    p = params
    _check_params(p)
    c_in, c_out = p["input"][3], p["output"][3]
    if p["output"][0] != p["input"][0] or p["filter"][0] != 1 or p["filter"][3] != c_out or c_out % c_in:
        raise ValueError(f"depthwise dims disagree: input {p['input']} filter {p['filter']} output {p['output']}")
    check_quant(multiplier, shift, c_out)
    _, kh, kw, _ = p["filter"]
    w = np.asarray(filter, dtype=np.int64).reshape(kh, kw, c_in, c_out // c_in)  # co = ci * ch_mult + m
    acc = np.einsum("nyxabc,abcm->nyxcm", _windows(p, input), w).reshape(p["output"])
    return output_stage(acc, bias, multiplier, shift, p["output_offset"], p["act_min"], p["act_max"])


def conv2d_grouped_s8(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray,
                      filter: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_conv2d_grouped_s8: groups = C_in / filter C; group g's output channels read its input channels."""
    p = params
    _check_params(p)
    c_in, c_group, c_out = p["input"][3], p["filter"][3], p["output"][3]
    if p["output"][0] != p["input"][0] or p["output"][3] != p["filter"][0] or c_in % c_group \
            or c_out % (c_in // c_group):
        raise ValueError(f"grouped conv dims disagree: input {p['input']} filter {p['filter']} output {p['output']}")
    check_quant(multiplier, shift, c_out)
    groups = c_in // c_group
    per = c_out // groups
    win = _windows(p, input)
    w = np.asarray(filter, dtype=np.int64).reshape(p["filter"])
    acc = np.concatenate([np.tensordot(win[..., g * c_group:(g + 1) * c_group], w[g * per:(g + 1) * per],
                                       axes=([3, 4, 5], [1, 2, 3])) for g in range(groups)], axis=-1)
    return output_stage(acc, bias, multiplier, shift, p["output_offset"], p["act_min"], p["act_max"])


# ---- In-place variants (mcu_kernels.h): same results, their own geometry limits and scratch ----------------------

def dwconv2d_s8_inplace_fits(p: dict) -> bool:
    """mcu_dwconv2d_s8_inplace runs this geometry: channel multiplier 1, stride 1, output dims == input dims."""
    return (tuple(p["output"]) == tuple(p["input"]) and p["filter"][0] == 1 and p["filter"][3] == p["output"][3]
            and p["stride_h"] == 1 and p["stride_w"] == 1)


def dwconv2d_s8_inplace_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dwconv2d_s8_inplace_scratch_bytes: a ring of max(1, pad_top * W + pad_left) output pixels."""
    return max(1, p["pad_top"] * p["input"][2] + p["pad_left"]) * p["input"][3]


def conv2d_1x1_s8_inplace_fits(p: dict) -> bool:
    """mcu_conv2d_1x1_s8_inplace runs this geometry: 1x1 filter, no padding, C_out <= C_in, every output pixel
    on an input pixel."""
    _, ih, iw, c_in = p["input"]
    _, oh, ow, c_out = p["output"]
    return (p["filter"][1] == 1 and p["filter"][2] == 1 and p["pad_top"] == 0 and p["pad_left"] == 0
            and c_out <= c_in and (oh - 1) * p["stride_h"] < ih and (ow - 1) * p["stride_w"] < iw)


def conv2d_1x1_s8_inplace_scratch_bytes(p: dict) -> int:
    """Twin of mcu_conv2d_1x1_s8_inplace_scratch_bytes: one input pixel."""
    return p["input"][3]


def _check_scratch(scratch, size: int) -> None:
    if scratch is None or np.asarray(scratch).size < size:
        raise ValueError(f"scratch must hold {size} bytes")


def dwconv2d_s8_inplace(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray,
                        filter: np.ndarray, bias: np.ndarray | None, scratch: np.ndarray) -> np.ndarray:
    """Twin of mcu_dwconv2d_s8_inplace: mcu_dwconv2d_s8's result where the in-place kernel runs the geometry."""
    _check_params(params)
    if not dwconv2d_s8_inplace_fits(params):
        raise ValueError(f"mcu_dwconv2d_s8_inplace cannot run {params['input']} -> {params['output']} with stride "
                         f"{params['stride_h']}x{params['stride_w']} in place")
    _check_scratch(scratch, dwconv2d_s8_inplace_scratch_bytes(params))
    return dwconv2d_s8(params, multiplier, shift, input, filter, bias)


def conv2d_1x1_s8_inplace(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray,
                          filter: np.ndarray, bias: np.ndarray | None, scratch: np.ndarray) -> np.ndarray:
    """Twin of mcu_conv2d_1x1_s8_inplace: mcu_conv2d_s8's result where the in-place kernel runs the geometry."""
    _check_params(params)
    if not conv2d_1x1_s8_inplace_fits(params):
        raise ValueError(f"mcu_conv2d_1x1_s8_inplace cannot run filter {params['filter']} {params['input']} -> "
                         f"{params['output']} in place")
    _check_scratch(scratch, conv2d_1x1_s8_inplace_scratch_bytes(params))
    return conv2d_s8(params, multiplier, shift, input, filter, bias)


# ---- Conv fused with the residual add that reads it (codegen/passes/fuse_add.py) ---------------------------------

CONV_FIELDS = ("input", "filter", "output", "stride_h", "stride_w", "pad_top", "pad_left", "dilation_h", "dilation_w",
               "input_offset", "output_offset", "act_min", "act_max")
ADD_FIELDS = ("left_shift", "input1_offset", "input1_multiplier", "input1_shift", "input2_offset",
              "input2_multiplier", "input2_shift", "output_offset", "output_multiplier", "output_shift",
              "act_min", "act_max")


def conv2d_add_params(conv: dict, add: dict) -> dict:
    """mcu_conv2d_add_params_t of a conv and the mcu_add_s8 whose input1 is the conv's output."""
    return {**{k: conv[k] for k in CONV_FIELDS}, **{f"add_{k}": add[k] for k in ADD_FIELDS}}


def conv2d_add_split(p: dict) -> tuple[dict, dict]:
    """(conv params, add params) of an mcu_conv2d_add_params_t."""
    return ({k: p[k] for k in CONV_FIELDS},
            {"size": int(np.prod(p["output"])), **{k: p[f"add_{k}"] for k in ADD_FIELDS}})


def conv2d_add_s8(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray, filter: np.ndarray,
                  bias: np.ndarray | None, residual: np.ndarray) -> np.ndarray:
    """Twin of mcu_conv2d_add_s8: conv2d_s8, then add_s8 with the residual as input2."""
    from .elementwise import add_s8
    conv, add = conv2d_add_split(params)
    y = conv2d_s8(conv, multiplier, shift, input, filter, bias)
    return add_s8(add, y, np.asarray(residual).reshape(y.shape))


# ---- Scratch of the optimized variants (mcu_kernels.h, "Scratch of the variants") ---------------------------------

DSP_COMPACT_K = 128   # MCU_DSP_COMPACT_K
DSP_ROW_PIECE = 128   # MCU_DSP_ROW_PIECE


def _round4(n: int) -> int:
    return -(-n // 4) * 4


def dsp_conv_compact(p: dict) -> bool:
    """Twin of mcu_dsp_conv_compact: the _dsp conv widens this window whole, its rows not being whole 4-tap steps
    and its taps at most DSP_COMPACT_K."""
    kh, kw, c_in = p["filter"][1], p["filter"][2], p["filter"][3]
    return (kw * c_in) % 4 != 0 and kh * kw * c_in <= DSP_COMPACT_K


def conv2d_1x1_s8_dsp_scratch_bytes(p: dict) -> int:
    """Twin of mcu_conv2d_1x1_s8_dsp_scratch_bytes: a pixel pair widened to int16, a word before and after it."""
    return 16 * (-(-p["input"][3] // 4)) + 8


def conv2d_s8_dsp_scratch_bytes(p: dict) -> int:
    """Twin of mcu_conv2d_s8_dsp_scratch_bytes: a pixel pair's windows widened to int16 (K4 taps, rows rounded up to
    4 or a compact window whole) with a word before and after, then two gather buffers (a compact window, or a
    piece of a row of at most DSP_ROW_PIECE bytes, rounded up to 4)."""
    kh, seg = p["filter"][1], p["filter"][2] * p["input"][3]
    compact = dsp_conv_compact(p)
    k4 = _round4(kh * seg) if compact else kh * _round4(seg)
    gather = kh * seg if compact else min(seg, DSP_ROW_PIECE)
    return 4 * (k4 + 2) + 2 * _round4(gather)


def conv2d_1x1_s8_fast_scratch_bytes(p: dict) -> int:
    """Twin of mcu_conv2d_1x1_s8_fast_scratch_bytes: one input pixel, C_in bytes (copied there when its outputs
    would overwrite input still to be read)."""
    return p["input"][3]


def conv2d_s8_fast_scratch_bytes(p: dict) -> int:
    """Twin of mcu_conv2d_s8_fast_scratch_bytes: one pixel's window, KH * KW * C_in bytes."""
    return p["filter"][1] * p["filter"][2] * p["input"][3]


def conv2d_s4_scratch_bytes(p: dict) -> int:
    """Twin of mcu_conv2d_s4_scratch_bytes: one pixel's window, none for a 1x1 filter without padding."""
    one_by_one = p["filter"][1] == 1 and p["filter"][2] == 1 and p["pad_top"] == 0 and p["pad_left"] == 0
    return 0 if one_by_one else conv2d_s8_fast_scratch_bytes(p)


def dw3x3_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dw3x3_scratch_bytes, the 3x3 depthwise variants' (fast, dsp, mve) scratch: C bytes of padding
    (the zero point), then, on the in-place geometry (dwconv2d_s8_inplace_fits), a ring of pad_top + 1 output
    rows (they run in place)."""
    c = p["input"][3]
    return c + ((p["pad_top"] + 1) * p["output"][2] * c if dwconv2d_s8_inplace_fits(p) else 0)


def dwconv2d_3x3_s8_dsp_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dwconv2d_3x3_s8_dsp_scratch_bytes (dw3x3_scratch_bytes)."""
    return dw3x3_scratch_bytes(p)


def dwconv2d_3x3_s8_dsp_wide_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dwconv2d_3x3_s8_dsp_wide_scratch_bytes: its int8-weight twin's."""
    return dw3x3_scratch_bytes(p)


def dwconv2d_s8_dsp_ring_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dwconv2d_s8_dsp_ring_scratch_bytes: two rings (a channel pair's) of k int16 lines of the
    output's longer axis plus k (rounded up to 2), and 3 bytes to align them."""
    k, n = p["filter"][2], max(p["output"][1], p["output"][2])
    return 4 * k * ((n + k + 1) & ~1) + 3


def dwconv2d_s8_dsp_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dwconv2d_s8_dsp_scratch_bytes: the pair rows of one output row and one group of 4 channels, KH
    rows of cols = (out_w - 1) * stride_w + 2 * (ceil(KW / 2) - 1) * dilation_w + 1 columns rounded up to a
    multiple of 2 * dilation_w (the residue order), 16 bytes each."""
    cols = (p["output"][2] - 1) * p["stride_w"] + 2 * (-(-p["filter"][2] // 2) - 1) * p["dilation_w"] + 1
    r = 2 * p["dilation_w"]
    return 16 * p["filter"][1] * r * -(-cols // r)


def dwconv2d_3x3_s8_fast_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dwconv2d_3x3_s8_fast_scratch_bytes (dw3x3_scratch_bytes)."""
    return dw3x3_scratch_bytes(p)


def conv_transpose2d_s8(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray,
                        filter: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_conv_transpose2d_s8 (scatter form, the same integer sums): each input pixel adds its product with
    every tap to the full result [N, (H - 1) sh + KH, (W - 1) sw + KW, C_out], of which the output is the window
    from (pad_top, pad_left) (positions past the full result, from output_padding, hold the bias alone)."""
    p = params
    _check_params(p)
    if p["dilation_h"] != 1 or p["dilation_w"] != 1:
        raise ValueError("a transposed conv takes dilation 1")
    (n, h, w, c_in), (c_out, kh, kw, c_w), out = p["input"], p["filter"], p["output"]
    if out[0] != n or c_w != c_in or out[3] != c_out:
        raise ValueError(f"transposed conv dims disagree: input {p['input']} filter {p['filter']} output {out}")
    check_quant(multiplier, shift, c_out)
    sh, sw, pt, pl = p["stride_h"], p["stride_w"], p["pad_top"], p["pad_left"]
    rows, cols = max((h - 1) * sh + kh, pt + out[1]), max((w - 1) * sw + kw, pl + out[2])
    full = np.zeros((n, rows, cols, c_out), np.int64)
    x = np.asarray(input, np.int64).reshape(n, h, w, c_in) + p["input_offset"]
    wt = np.asarray(filter, np.int64).reshape(c_out, kh, kw, c_in)
    for ky in range(kh):
        for kx in range(kw):
            full[:, ky:ky + (h - 1) * sh + 1:sh, kx:kx + (w - 1) * sw + 1:sw] += x @ wt[:, ky, kx].T
    acc = full[:, pt:pt + out[1], pl:pl + out[2]]
    return output_stage(acc, bias, multiplier, shift, p["output_offset"], p["act_min"], p["act_max"])
