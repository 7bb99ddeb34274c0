"""Numpy twins of runtime_c/kernels/norm (integer layer norm and RMS norm, int8 and int16), and the compile-time
constants they read (norm_constants: eps in integer units, the weights and biases that fold gamma, beta and the
output quantization).

- Per row, Python ints for the statistics and 2^54 / sqrt(W) (math.isqrt, as the C's bit-by-bit root), then the
  elements in int64 numpy: every intermediate fits (bounds in mcu_kernels.h, mcu_norm_params_t).
- Rounding: one per stage, ties up (y in Q22, then the output), arithmetic shifts as the C's.
"""
from __future__ import annotations

import math

import numpy as np

MAX_COLS = {np.int8: 65536, np.int16: 16384}
MAX_D2 = {np.int8: 1 << 16, np.int16: 1 << 30}  # bounds of (x - zp)^2
Q = 22          # the normalized value's fraction bits
WEIGHT_BITS = 23  # the largest |weight| is about 2^23


def _check(p: dict, weight, bias, dtype) -> None:
    if not (p["rows"] >= 1 and 1 <= p["cols"] <= MAX_COLS[dtype] and 32 <= p["shift"] <= 62
            and 1 <= p["eps"] <= 1 << 62 and p["act_min"] <= p["act_max"] and 0 <= p["var_shift"] <= 60
            and p["var_shift"] % 2 == 0 and (p["cols"] ** 2 * MAX_D2[dtype]) >> (62 - p["var_shift"]) == 0):
        raise ValueError(f"bad norm params {p}")
    if weight is None or bias is None:
        raise ValueError("weight and bias are required")


def r54(w_total: int, var_shift: int) -> int:
    """~2^54 / sqrt(W / 2^var_shift) for 1 <= W < 2^63, as mcu_norm_r54."""
    bits = w_total.bit_length()
    if bits == 63:
        h, w = -1, w_total >> 2
    else:
        h = (62 - bits) >> 1
        w = w_total << (2 * h)
    r = (1 << 62) // math.isqrt(w)
    e = h + var_shift // 2 - 8
    return r << e if e >= 0 else r >> -e


def _norm(params: dict, input, weight, bias, dtype, center: bool) -> np.ndarray:
    p = params
    _check(p, weight, bias, dtype)
    rows, cols = p["rows"], p["cols"]
    d = np.asarray(input, dtype=np.int64).reshape(rows, cols) + p["input_offset"]
    w = np.asarray(weight, dtype=np.int64).reshape(cols)
    b = np.asarray(bias, dtype=np.int64).reshape(cols)
    out = np.empty((rows, cols), dtype=np.int64)
    for r in range(rows):
        s = int(d[r].sum()) if center else 0
        sq = int((d[r] * d[r]).sum())
        var = cols * sq - s * s
        c = cols * d[r] - s
        inv = 0 if var == 0 else r54((var << p["var_shift"]) + p["eps"], p["var_shift"])  # var 0: every c is 0
        y = (c * np.int64(inv) + (np.int64(1) << 31)) >> 32
        out[r] = (y * w + b) >> p["shift"]
    return np.clip(out, p["act_min"], p["act_max"]).astype(dtype).reshape(np.shape(input))


def layer_norm_s8(params: dict, input, weight, bias) -> np.ndarray:
    """Twin of mcu_layer_norm_s8."""
    return _norm(params, input, weight, bias, np.int8, True)


def rms_norm_s8(params: dict, input, weight, bias) -> np.ndarray:
    """Twin of mcu_rms_norm_s8."""
    return _norm(params, input, weight, bias, np.int8, False)


def layer_norm_s16(params: dict, input, weight, bias) -> np.ndarray:
    """Twin of mcu_layer_norm_s16."""
    return _norm(params, input, weight, bias, np.int16, True)


def rms_norm_s16(params: dict, input, weight, bias) -> np.ndarray:
    """Twin of mcu_rms_norm_s16."""
    return _norm(params, input, weight, bias, np.int16, False)


def norm_constants(rows: int, cols: int, eps: float, s_in: float, zp_in: int, s_out: float, zp_out: int,
                   gamma, beta, act_min: int, act_max: int, dtype=np.int8) -> tuple[dict, np.ndarray, np.ndarray]:
    """(params, weight int32[cols], bias int64[cols]) of a norm with float gamma / beta (None: 1 / 0) from input
    scale s_in to output scale s_out: weight = round(gamma / s_out * 2^(shift - 22)), bias = round(beta / s_out *
    2^shift) + zp_out * 2^shift + 2^(shift - 1), the largest |weight| about 2^23 (shift in 32 .. 62; saturated to
    int32 where |gamma / s_out| >= 2^21)."""
    g = np.ones(cols) if gamma is None else np.asarray(gamma, np.float64).reshape(cols)
    be = np.zeros(cols) if beta is None else np.asarray(beta, np.float64).reshape(cols)
    gmax = float(np.abs(g).max()) / s_out
    gs = 40 if gmax == 0 else min(max(math.floor(WEIGHT_BITS - math.log2(gmax)), 10), 40)
    shift = Q + gs
    # |gamma / s_out| >= 2^21 (an output range far below the normalized values'): the weights saturate to int32
    weight = np.clip(np.round(g / s_out * 2.0**gs), -(2**31 - 1), 2**31 - 1)
    limit = 1 << 61
    bias = [min(max(int(round(float(v) / s_out * 2.0**shift)) + (zp_out << shift) + (1 << (shift - 1)), -limit),
                limit) for v in be]
    var_shift = max(62 - (cols * cols * MAX_D2[dtype]).bit_length(), 0) & ~1
    eps_int = min(max(int(round(cols * cols * eps / (s_in * s_in) * 2.0**var_shift)), 1), 1 << 62)
    params = {"rows": rows, "cols": cols, "input_offset": -zp_in, "shift": shift, "var_shift": var_shift, "eps": eps_int,
              "act_min": act_min, "act_max": act_max}
    return params, weight.astype(np.int32), np.asarray(bias, dtype=np.int64)
