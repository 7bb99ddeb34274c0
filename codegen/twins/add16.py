"""Numpy twins of the int8 adds with 16-bit multipliers (runtime_c/kernels/elementwise/mcu_add_m16_s8*.c,
mcu_add_h16_s8*.c), and the params builders that decide when their error bound holds.

- Both compute out = r1 * a + r2 * b + c on the raw int8 values a, b (r1 = s_a / s_out, r2 = +-s_b / s_out, c
  folding the zero points), derived from mcu_add_broadcast_s8's params (the TFLite encoding: the reals they
  stand for, to 2^-30 relative).
- m16 (any core; SMLAD + SSAT on the DSP): y = (a*M1 + b*M2 + K) >> s in int32, K = round(c 2^s) + 2^(s-1),
  |M| <= 32767, s <= 16 (more bits buy under 0.004 LSB).
- h16 (Helium, int16 lanes): t = ((a*M1 + 64) >> 7) + ((b*M2 + 64) >> 7) + K in int16 (VQRDMULH / VQRDMLAH of
  a << 8, VQADD; never saturating: the builder checks every partial sum), y = (t + 2^(n-1)) >> n (VQRSHL).
- Both then clamp to [act_min, act_max]. The builder returns None unless the worst-case distance of the
  pre-rounding value from the exact real result is <= BOUND (1/4 LSB): then the result is within 1 LSB of
  torchao's (dequantize, float add, quantize), and the caller keeps the TFLite kernels otherwise.
"""
from __future__ import annotations

import numpy as np

from .elementwise import _broadcast_inputs

BOUND = 0.25        # LSB of the output: the largest error bound a builder accepts
M_MAX = 32767


def add_reals(p: dict) -> tuple[float, float, float]:
    """(r1, r2, c) of mcu_add_broadcast_s8 (or mcu_add_s8) params: out = r1 * a + r2 * b + c before rounding."""
    out = p["output_multiplier"] * 2.0 ** (p["output_shift"] - 31 + p["left_shift"])
    r1 = p["input1_multiplier"] * 2.0 ** (p["input1_shift"] - 31) * out
    r2 = p["input2_multiplier"] * 2.0 ** (p["input2_shift"] - 31) * out * (-1 if p.get("subtract") else 1)
    return r1, r2, r1 * p["input1_offset"] + r2 * p["input2_offset"] + p["output_offset"]


def _dims(p: dict) -> dict:
    if "output" in p:
        return {k: list(p[k]) for k in ("input1", "input2", "output")}
    flat = [1, 1, 1, int(p["size"])]
    return {"input1": flat, "input2": list(flat), "output": list(flat)}


def m16_params(p: dict) -> dict | None:
    """mcu_add_m16_params_t for add params `p`, or None when the error bound exceeds BOUND."""
    r1, r2, c = add_reals(p)
    rmax = max(abs(r1), abs(r2), 1e-30)
    s = 16
    while s > 0 and round(rmax * 2 ** s) > M_MAX:
        s -= 1
    m1, m2 = round(r1 * 2 ** s), round(r2 * 2 ** s)
    k = round(c * 2 ** s)
    if s < 1 or abs(k) + 2 ** s > 2 ** 30:  # the C's bias range; then |a*m1 + b*m2 + bias| < 2^30 + 2^23
        return None
    err = (128 * (abs(m1 - r1 * 2 ** s) + abs(m2 - r2 * 2 ** s)) + abs(k - c * 2 ** s)) / 2 ** s
    if err > BOUND:
        return None
    return {**_dims(p), "multiplier1": m1, "multiplier2": m2, "bias": k + (1 << (s - 1)), "shift": s,
            "act_min": p["act_min"], "act_max": p["act_max"]}


def _h16_terms(m: int) -> int:
    """max |(v*m + 64) >> 7| over int8 v."""
    return max(abs((-128 * m + 64) >> 7), abs((127 * m + 64) >> 7))


def h16_params(p: dict) -> dict | None:
    """mcu_add_m16_params_t of the Helium arithmetic for add params `p`, or None when no shift n in [1, 15] keeps
    every int16 partial sum in range with the error bound <= BOUND."""
    r1, r2, c = add_reals(p)
    for n in range(15, 0, -1):
        m1, m2, k = round(r1 * 2 ** (n + 7)), round(r2 * 2 ** (n + 7)), round(c * 2 ** n)
        if max(abs(m1), abs(m2)) > M_MAX or _h16_terms(m1) + _h16_terms(m2) + abs(k) > 32767:
            continue
        scale = 2 ** (n + 7)
        err = (128 * (abs(m1 - r1 * scale) + abs(m2 - r2 * scale)) / 128 + 1 + abs(k - c * 2 ** n)) / 2 ** n
        if err > BOUND:
            return None
        return {**_dims(p), "multiplier1": m1, "multiplier2": m2, "bias": k, "shift": n,
                "act_min": p["act_min"], "act_max": p["act_max"]}
    return None


def _check(p: dict, smax: int) -> None:
    if max(abs(p["multiplier1"]), abs(p["multiplier2"])) > M_MAX or not 1 <= p["shift"] <= smax:
        raise ValueError(f"multipliers must be within +-{M_MAX} and shift in [1, {smax}]")
    if abs(p["bias"]) > (2 ** 30 if smax > 15 else 32767):
        raise ValueError(f"bias {p['bias']} out of range")
    if not -128 <= p["act_min"] <= p["act_max"] <= 127:
        raise ValueError(f"bad activation range [{p['act_min']}, {p['act_max']}]")


def add_m16_s8(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_add_m16_s8; returns int8 of shape params["output"]."""
    p = params
    _check(p, 24)
    a, b = _broadcast_inputs(p, input1, input2)
    y = (a * p["multiplier1"] + b * p["multiplier2"] + p["bias"]) >> p["shift"]
    return np.clip(y, p["act_min"], p["act_max"]).astype(np.int8)


def add_h16_s8(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_add_h16_s8 (saturating int16 steps, as Helium's: the builder keeps them from saturating)."""
    p = params
    _check(p, 15)
    a, b = _broadcast_inputs(p, input1, input2)
    n = p["shift"]
    t = np.clip((a * p["multiplier1"] + 64) >> 7, -32768, 32767)
    t = np.clip(t + ((b * p["multiplier2"] + 64) >> 7), -32768, 32767)
    t = np.clip(t + p["bias"], -32768, 32767)
    y = (t + (1 << (n - 1))) >> n
    return np.clip(y, p["act_min"], p["act_max"]).astype(np.int8)
