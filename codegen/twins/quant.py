"""Numpy twin of runtime_c/include/mcu/mcu_quant.h, plus the compile-time multiplier encoding."""
from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def quantize_multiplier(real: float) -> tuple[int, int]:
    """Encode a positive real multiplier as (Q31 multiplier, shift) with real = m * 2^(shift - 31)."""
    if real < 0:
        raise ValueError(f"requantization multiplier must be >= 0, got {real}")
    if real == 0.0:
        return 0, 0
    mantissa, shift = math.frexp(real)  # real = mantissa * 2^shift, mantissa in [0.5, 1)
    q = int(round(mantissa * (1 << 31)))
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        raise ValueError(f"requantization multiplier {real} is too large (shift {shift} > 30)")
    return q, shift


def quantize_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    pairs = [quantize_multiplier(float(r)) for r in np.asarray(reals, dtype=np.float64).ravel()]
    mult = np.array([p[0] for p in pairs], dtype=np.int32)
    shift = np.array([p[1] for p in pairs], dtype=np.int32)
    return mult, shift


def requantize(acc, multiplier, shift) -> np.ndarray:
    """acc * multiplier * 2^(shift - 31) rounded once, ties up, as mcu_requantize (broadcasting): for
    shift > 0, acc * 2^shift saturates to int32 first; multiplier >= 0, shift in [-31, 30]."""
    acc = np.asarray(acc, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    x = np.clip(acc << np.maximum(shift, 0), INT32_MIN, INT32_MAX)
    right = 31 - np.minimum(shift, 0)  # 31 .. 62
    return (x * multiplier + (np.int64(1) << (right - 1))) >> right


def saturate(x, lo: int, hi: int, dtype=np.int8) -> np.ndarray:
    return np.clip(np.asarray(x, dtype=np.int64), lo, hi).astype(dtype)


def requantize_round(acc, multiplier, shift) -> np.ndarray:
    """round(acc * multiplier * 2^(shift - 31)) with one rounding, ties to even, saturated to int32
    (mcu_requantize_round; broadcasting)."""
    prod = np.asarray(acc, dtype=np.int64) * np.asarray(multiplier, dtype=np.int64)
    right = 31 - np.asarray(shift, dtype=np.int64)
    half = np.int64(1) << (right - 1)
    mag = np.abs(prod)
    q = (mag + half) >> right
    q = np.where((mag & (2 * half - 1)) == half, q & ~np.int64(1), q)
    return np.clip(np.where(prod < 0, -q, q), INT32_MIN, INT32_MAX)


def requantize64(acc, multiplier, shift) -> np.ndarray:
    """floor(acc * multiplier * 2^(shift - 31) + 1/2) saturated to int32, as mcu_requantize64 (broadcasting): one
    rounding, ties up, exact for any int64 acc. multiplier >= 0, shift in [-31, 30]."""
    acc, multiplier, shift = np.broadcast_arrays(np.asarray(acc, dtype=np.int64),
                                                 np.asarray(multiplier, dtype=np.int64),
                                                 np.asarray(shift, dtype=np.int64))
    if (multiplier < 0).any() or (shift < -31).any() or (shift > 30).any():
        raise ValueError("multiplier must be >= 0 and shift in [-31, 30]")
    right = 31 - shift
    # |acc| < 2^31: |acc * m| + 2^(right - 1) < 2^63, exact in int64; larger ones one by one in Python ints.
    small = (acc > -(1 << 31)) & (acc < (1 << 31))
    out = (np.where(small, acc, 0) * multiplier + (np.int64(1) << (right - 1))) >> right
    out = np.clip(out, INT32_MIN, INT32_MAX).reshape(-1)
    for i in np.flatnonzero(~small):
        a, m, r = int(acc.flat[i]), int(multiplier.flat[i]), int(right.flat[i])
        out[i] = min(max((a * m + (1 << (r - 1))) >> r, INT32_MIN), INT32_MAX)
    return out.reshape(acc.shape)
