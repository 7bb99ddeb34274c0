"""The float32 math of runtime_c's mcu_fmath.h and of mcu_softmax_f32's exp, operation by operation.

- Every operation is float32 and in the C's order, so host numpy and a Cortex-M (FPU or soft float) round
  identically; nothing is fused into a multiply-add.
- exp_f32 is the softmax kernel's exp (Cody-Waite reduction, Cephes' polynomial), step by step; the others are
  mcu_logf, mcu_sqrtf, ... as mcu_unary_f32 calls them (codegen/twins/float32.py).
"""
from __future__ import annotations

import numpy as np

F32 = np.float32

LOG2E, LN2_HI, LN2_LO = F32(1.44269504), F32(0.693359375), F32(-2.12194440e-4)
EXP_POLY = tuple(F32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                                  1.6666665459e-1, 5.0000001201e-1))


def _pow2(k: np.ndarray) -> np.ndarray:
    return ((k.astype(np.int64) + 127) << 23).astype(np.uint32).view(F32)


def exp_f32(x: np.ndarray) -> np.ndarray:
    """The exp of mcu_softmax_f32, operation by operation."""
    x = np.asarray(x, F32)
    with np.errstate(invalid="ignore", over="ignore"):
        inside = (x >= F32(-103.972084)) & (x <= F32(88.7228394))
        xs = np.where(inside, x, F32(0))
        t = xs * LOG2E + F32(0.5)
        k = np.trunc(t).astype(np.int32)
        k = np.where(k.astype(F32) > t, k - 1, k)
        kf = k.astype(F32)
        r = xs - kf * LN2_HI
        r = r - kf * LN2_LO
        z = r * r
        y = np.full_like(r, EXP_POLY[0])
        for c in EXP_POLY[1:]:
            y = y * r + c
        y = y * z + r + F32(1)
        k1 = np.trunc(k / 2).astype(np.int32)  # C division truncates toward zero
        y = y * _pow2(k1) * _pow2(k - k1)
        y = np.where(inside, y, np.where(x > 0, F32(np.inf), F32(0)))
        return np.where(np.isnan(x), x, y).astype(F32)


_NAN, _FMAX, _TWO23 = F32(np.nan), F32(3.40282347e38), F32(8388608.0)
LOG_POLY = tuple(F32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                                  1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                                  3.3333331174e-1))
SIN_POLY = tuple(F32(c) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1))
COS_POLY = tuple(F32(c) for c in (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2))
ERF_POLY = tuple(F32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def log_f32(x: np.ndarray) -> np.ndarray:
    """mcu_logf."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        sub = (x > 0) & (x < F32(1.17549435e-38))
        xs = np.where(sub, x * F32(33554432.0), x)
        bits = xs.view(np.uint32)
        e = np.where(sub, -25, 0).astype(np.int32) + ((bits >> 23) & 0xFF).astype(np.int32) - 126
        m = ((bits & np.uint32(0x007FFFFF)) | np.uint32(0x3F000000)).view(F32)
        small = m < F32(0.707106781)
        e = np.where(small, e - 1, e)
        m = np.where(small, m + m - F32(1), m - F32(1))
        z = m * m
        y = np.full_like(m, LOG_POLY[0])
        for c in LOG_POLY[1:]:
            y = y * m + c
        y = y * m * z
        ef = e.astype(F32)
        y = y + ef * LN2_LO
        y = y + F32(-0.5) * z
        y = m + y + ef * LN2_HI
        y = np.where(x > _FMAX, x, y)
        y = np.where(x == 0, F32(-np.inf), y)
        return np.where(np.isnan(x) | (x < 0), _NAN, y).astype(F32)


def sqrt_f32(x: np.ndarray) -> np.ndarray:
    """mcu_sqrtf."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        ok = (x > 0) & (x <= _FMAX)
        xs = np.where(ok, x, F32(1))
        y = ((xs.view(np.uint32) >> 1) + np.uint32(0x1FC00000)).view(F32)
        for _ in range(4):
            y = F32(0.5) * (y + xs / y)
        y = np.where(ok, y, x)
        return np.where(np.isnan(x) | (x < 0), _NAN, y).astype(F32)


def rint_f32(x: np.ndarray) -> np.ndarray:
    """mcu_rintf: nearest, ties to even."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        r = np.where(x >= 0, (x + _TWO23) - _TWO23, -((-x + _TWO23) - _TWO23))
        return np.where((x < _TWO23) & (x > -_TWO23), r, x).astype(F32)


def floor_f32(x):
    r = rint_f32(x)
    return np.where(r > x, r - F32(1), r).astype(F32)


def ceil_f32(x):
    r = rint_f32(x)
    return np.where(r < x, r + F32(1), r).astype(F32)


def trunc_f32(x):
    x = np.asarray(x, F32)
    return np.where(x < 0, ceil_f32(x), floor_f32(x)).astype(F32)


def sincos_f32(x: np.ndarray, cosine: bool) -> np.ndarray:
    """mcu_sincosf."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        neg = x < 0
        xa = np.where(neg, -x, x)
        sign = np.where(neg, F32(1 if cosine else -1), F32(1))
        valid = ~np.isnan(x) & (xa <= _TWO23)
        xa = np.where(valid, xa, F32(0))
        j = floor_f32(xa * F32(1.27323954473516)).astype(np.int32)
        yj = j.astype(F32)
        odd = (j & 1) == 1
        j = np.where(odd, j + 1, j)
        yj = np.where(odd, yj + F32(1), yj)
        j = j & 7
        if cosine:
            j = (j + 2) & 7
        flip = j > 3
        sign = np.where(flip, -sign, sign)
        j = np.where(flip, j - 4, j)
        r = ((xa - yj * F32(0.78515625)) - yj * F32(2.4187564849853515625e-4)) - yj * F32(3.77489497744594108e-8)
        z = r * r
        c = np.full_like(z, COS_POLY[0])
        for k in COS_POLY[1:]:
            c = c * z + k
        c = c * z * z
        c = c - F32(0.5) * z + F32(1)
        s = np.full_like(z, SIN_POLY[0])
        for k in SIN_POLY[1:]:
            s = s * z + k
        s = s * z * r + r
        y = sign * np.where((j == 1) | (j == 2), c, s)
        return np.where(valid, y, _NAN).astype(F32)


def tanh_f32(x: np.ndarray) -> np.ndarray:
    """mcu_tanhf."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        a = np.where(x < 0, -x, x)
        e = exp_f32(F32(-2) * a)
        t = (F32(1) - e) / (F32(1) + e)
        return np.where(np.isnan(x), x, np.where(x < 0, -t, t)).astype(F32)


def erf_f32(x: np.ndarray) -> np.ndarray:
    """mcu_erff."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        a = np.where(x < 0, -x, x)
        t = F32(1) / (F32(1) + F32(0.3275911) * a)
        y = np.full_like(t, ERF_POLY[0])
        for c in ERF_POLY[1:]:
            y = y * t + c
        y = F32(1) - y * t * exp_f32(-(a * a))
        return np.where(np.isnan(x), x, np.where(x < 0, -y, y)).astype(F32)


def atan_f32(x: np.ndarray) -> np.ndarray:
    """mcu_atanf."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        a = np.where(x < 0, -x, x)
        big, mid = a > F32(2.414213562), a > F32(0.4142135624)
        y0 = np.where(big, F32(1.570796327), np.where(mid, F32(0.7853981634), F32(0))).astype(F32)
        t = np.where(big, F32(-1) / a, np.where(mid, (a - F32(1)) / (a + F32(1)), a)).astype(F32)
        z = t * t
        p = np.full_like(z, F32(8.05374449538e-2))
        for c in (F32(-1.38776856032e-1), F32(1.99777106478e-1), F32(-3.33329491539e-1)):
            p = p * z + c
        y = y0 + (p * z * t + t)
        return np.where(np.isnan(x), x, np.where(x < 0, -y, y)).astype(F32)


def asin_f32(x: np.ndarray) -> np.ndarray:
    """mcu_asinf."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        return atan_f32(x / sqrt_f32((F32(1) - x) * (F32(1) + x)))


def acos_f32(x: np.ndarray) -> np.ndarray:
    """mcu_acosf."""
    return (F32(1.570796327) - asin_f32(x)).astype(F32)
