"""Numpy twins of runtime_c/kernels/norm (integer layer norm and RMS norm, int8 and int16), and the compile-time
constants they read (norm_constants: eps in integer units, the weights and biases that fold gamma, beta and the
output quantization).

- Per row, Python ints for the statistics and the inverse square root (norm_row: the C's table seed and Newton
  steps), then the elements in int64 numpy: every intermediate fits (bounds in mcu_kernels.h, mcu_norm_params_t).
- Rounding: ties up, arithmetic shifts as the C's (c's right shift, y in Q22, then the output).
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


# round(2^30 / sqrt((i + 8.5) / 32)), i = 0..23: the Newton seed (mcu_norm_rsqrt_seed in mcu_norm.h)
RSQRT_SEED = [round(2**30 / math.sqrt((i + 8.5) / 32)) for i in range(24)]


def norm_row(var: int, eps: int, var_shift: int) -> tuple[int, int]:
    """(r31, a) of one row, as mcu_norm_row: r31 ~ 2^61 / sqrt(w) from a seed and three Newton steps in Q30."""
    if var == 0:
        return 0, 0
    w_total = (var << var_shift) + eps
    bits = w_total.bit_length()
    h = -1 if bits == 63 else (62 - bits) >> 1
    m = ((w_total >> 2) if h < 0 else (w_total << (2 * h))) >> 30
    x = RSQRT_SEED[(m >> 27) - 8]
    for _ in range(3):
        x2 = (x * x) >> 30
        ux2 = (m * x2) >> 32
        x = (x * (3 * (1 << 30) - ux2)) >> 31
    return min(x, 2**31 - 1), min(var_shift // 2 + h - 9, 30)


def _norm(params: dict, input, weight, bias, dtype, center: bool) -> np.ndarray:
    p = params
    _check(p, weight, bias, dtype)
    rows, cols, off = p["rows"], p["cols"], p["input_offset"]
    x = np.asarray(input, dtype=np.int64).reshape(rows, cols)
    w = np.asarray(weight, dtype=np.int64).reshape(cols)
    b = np.asarray(bias, dtype=np.int64).reshape(cols)
    out = np.empty((rows, cols), dtype=np.int64)
    for r in range(rows):
        s, sq = int(x[r].sum()), int((x[r] * x[r]).sum())
        if center:  # the offset cancels
            var, k = cols * sq - s * s, -s
        else:
            var, k = cols * (sq + 2 * off * s + cols * off * off), cols * off
        r31, a = norm_row(var, p["eps"], p["var_shift"])
        c = cols * x[r] + k
        c = c << a if a >= 0 else (c + (1 << (-a - 1))) >> -a
        y = (c * r31 + (1 << 29)) >> 30
        out[r] = (b + y * w) >> p["shift"]
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
    gs = 42 if gmax == 0 else min(max(math.floor(WEIGHT_BITS - math.log2(gmax)), 32 - Q), 62 - Q)
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
