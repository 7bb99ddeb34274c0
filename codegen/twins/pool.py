"""Numpy twins of runtime_c/kernels/pool: mcu_maxpool2d_s8 and mcu_avgpool2d_s8, with the same integer arithmetic.

- Windows are strided views of the input padded on every side; padded taps are excluded (max: padded with a
  value below int8; avg: padded with zero_point so they add 0, and counted out of the valid-tap count).
- Every window must hold at least one valid tap (else ValueError, where the C returns MCU_ERR_SHAPE).
- Average rounds half away from zero: sign(acc) * ((|acc| + d // 2) // d).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .quant import saturate


def _check(p: dict) -> None:
    if any(d < 1 for key in ("input", "output") for d in p[key]):
        raise ValueError(f"dims must be positive: {p['input']} {p['output']}")
    if min(p["kernel_h"], p["kernel_w"], p["stride_h"], p["stride_w"]) < 1 or min(p["pad_top"], p["pad_left"]) < 0:
        raise ValueError("kernel and stride must be >= 1, pads >= 0")
    if not -128 <= p["act_min"] <= p["act_max"] <= 127:
        raise ValueError(f"bad activation range [{p['act_min']}, {p['act_max']}]")
    (n, h, w, c), (on, oh, ow, oc) = p["input"], p["output"]
    if on != n or oc != c:
        raise ValueError(f"pool dims disagree: input {p['input']} output {p['output']}")
    if (p["pad_top"] >= p["kernel_h"] or p["pad_left"] >= p["kernel_w"]
            or (oh - 1) * p["stride_h"] - p["pad_top"] >= h or (ow - 1) * p["stride_w"] - p["pad_left"] >= w):
        raise ValueError("a pooling window lies entirely in the padding")


def _windows(p: dict, x: np.ndarray, fill: int) -> np.ndarray:
    """int64 view (N, H_out, W_out, KH, KW, C) of x, with `fill` outside the input."""
    n, h, w, c = p["input"]
    _, oh, ow, _ = p["output"]
    kh, kw, sh, sw = p["kernel_h"], p["kernel_w"], p["stride_h"], p["stride_w"]
    pt, pl = p["pad_top"], p["pad_left"]
    padded = np.full((n, max((oh - 1) * sh + kh, pt + h), max((ow - 1) * sw + kw, pl + w), c), fill, np.int64)
    padded[:, pt:pt + h, pl:pl + w, :] = np.asarray(x, dtype=np.int64).reshape(n, h, w, c)
    s = padded.strides
    return as_strided(padded, (n, oh, ow, kh, kw, c), (s[0], s[1] * sh, s[2] * sw, s[1], s[2], s[3]),
                      writeable=False)


def maxpool2d_s8(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_maxpool2d_s8; returns int8 of shape params["output"]."""
    _check(params)
    best = _windows(params, input, fill=-(1 << 31)).max(axis=(3, 4))
    return saturate(best, params["act_min"], params["act_max"])


def avgpool2d_s8(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_avgpool2d_s8; returns int8 of shape params["output"]."""
    _check(params)
    zp, divisor = params["zero_point"], params["divisor"]
    if divisor < 0 or not -128 <= zp <= 127:
        raise ValueError(f"divisor must be >= 0 and zero_point int8, got {divisor}, {zp}")
    acc = _windows(params, input, fill=zp).sum(axis=(3, 4)) - zp * params["kernel_h"] * params["kernel_w"]
    if divisor > 0:
        d = np.int64(divisor)
    else:  # valid taps per window: pool a one-channel tensor of ones padded with zeros
        _, h, w, _ = params["input"]
        ones = {**params, "input": (1, h, w, 1), "output": (1, *params["output"][1:3], 1)}
        d = _windows(ones, np.ones((1, h, w, 1), np.int64), fill=0).sum(axis=(3, 4))
    q = np.sign(acc) * ((np.abs(acc) + d // 2) // d)
    return saturate(zp + q, params["act_min"], params["act_max"])
