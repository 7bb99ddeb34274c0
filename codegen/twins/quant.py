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
    # |acc| < 2^31: |acc * m| + 2^(right - 1) < 2^63, exact in int64; larger ones split as the C does.
    small = (acc > -(1 << 31)) & (acc < (1 << 31))
    out = (np.where(small, acc, 0) * multiplier + (np.int64(1) << (right - 1))) >> right
    if not small.all():
        out = np.where(small, out, _requantize_wide(acc, multiplier, right))
    return np.clip(out, INT32_MIN, INT32_MAX)


def _requantize_wide(acc: np.ndarray, m: np.ndarray, right: np.ndarray) -> np.ndarray:
    """floor((acc * m + 2^(right - 1)) / 2^right) for any int64 acc, in int64 steps (mcu_requantize64's): acc * m =
    H 2^32 + L with H = hi m + floor(lo m / 2^32), L = lo m mod 2^32 (hi, lo: acc's signed high and unsigned low
    words); right > 32 drops L (it cannot carry past 2^right), else H (clamped where the result saturates anyway)
    shifts up and L rounds down. Saturation is the caller's."""
    lo_prod = (acc & 0xFFFFFFFF) * m                        # < 2^63
    h = (acc >> 32) * m + (lo_prod >> 32)
    s = np.maximum(right - 32, 1)
    above = (h + (np.int64(1) << (s - 1))) >> s
    r = np.minimum(right, 32)
    low = ((lo_prod & 0xFFFFFFFF) + (np.int64(1) << (r - 1))) >> r
    below = np.clip(h, -(1 << 31) - 1, 1 << 31) * (np.int64(1) << (32 - r)) + low
    return np.where(right > 32, above, below)
