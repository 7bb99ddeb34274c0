"""Numpy twins of runtime_c/kernels/conv: mcu_conv2d_s8, mcu_dwconv2d_s8 and mcu_conv2d_grouped_s8, with the same
integer arithmetic, and of the in-place variants mcu_dwconv2d_s8_inplace and mcu_conv2d_1x1_s8_inplace (the same
results; their geometry limits and scratch sizes, which the code generator and the memory planner use).

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
