"""Numpy twin of the int8 multiply in Helium's int16 lanes (runtime_c/kernels/elementwise/mcu_mul_h16_s8*.c), and
the params builder that decides when its error bound holds.

- mcu_mul_s8 computes out = r * (a + o1) * (b + o2) + zo (r = s1 s2 / s_out) with a 32-bit product and a 64-bit
  requantization. h16 keeps every step in int16 lanes, 8 products a vector:
    a' = (a + o1) * 2^ja, b' = (b + o2) * 2^jb               (VMLAS; |a'|, |b'| <= 32767)
    p  = (2 a' b' + 2^15) >> 16                               (VQRDMULH: the product's top half, rounded)
    t  = (2 p m + 2^15) >> 16                                 (VQRDMULH by the multiplier m <= 32767)
    y  = (t + 2^(n-1)) >> n  (n = 0: y = t)                   (VRSHL by -n)
    out = clamp(sat16(y + zo), act_min, act_max)              (VQADD, VQMOVNB or VMAX/VMIN)
  Nothing saturates but the last add (|p| <= 32640 as |a' b'| < 2^30; |t| <= |p|), and there only far outside int8,
  where the clamp gives the same extreme.
- The builder picks ja + jb = e and n for the smallest bound on the distance of the pre-rounding value (t / 2^n, or
  p m / 2^15 when n = 0) from the exact r (a + o1)(b + o2), and returns None unless it is <= BOUND (1/4 LSB): then
  the result is within 1 LSB of torchao's, and the caller keeps the TFLite arithmetic otherwise. The bound is about
  r (p's rounding, scaled by m): products of small reals (a gate by a sigmoid: r ~ 1/256) pass, r > ~0.2 does not.
"""
from __future__ import annotations

import numpy as np

from .add16 import BOUND, M_MAX
from .elementwise import _broadcast_inputs


def offset_reach(offset: int) -> int:
    """max |v + offset| over int8 v."""
    return max(abs(-128 + offset), abs(127 + offset))


def _real(p: dict) -> float:
    return p["output_multiplier"] * 2.0 ** (p["output_shift"] - 31)


def h16_bound(r: float, pmax: int, e: int, n: int, m: int) -> float:
    """The worst distance, in output LSB, of the pre-rounding value from r * P over |P| <= pmax."""
    ulp = 2.0 ** (e - 30 - n)  # what one unit of m is worth per unit of P
    return pmax * abs(m * ulp - r) + 0.5 * m / 2 ** (15 + n) + (0.5 / 2 ** n if n else 0.0)


def mul_h16_params(p: dict) -> dict | None:
    """mcu_mul_h16_params_t for mcu_mul_s8 params `p`, or None when no (ja, jb, n) keeps the bound <= BOUND."""
    r = _real(p)
    ra, rb = offset_reach(p["input1_offset"]), offset_reach(p["input2_offset"])
    ja_max, jb_max = (max(j for j in range(16) if reach << j <= M_MAX) for reach in (ra, rb))
    best = None
    for e in range(min(ja_max + jb_max, 14), -1, -1):
        for n in range(16):
            m = round(r * 2 ** (30 - e + n))
            if m > M_MAX:
                break
            err = h16_bound(r, ra * rb, e, n, m)
            if best is None or err < best[0]:
                best = (err, e, n, m)
    if best is None or best[0] > BOUND or best[3] < 1:
        return None
    _, e, n, m = best
    ja = min(ja_max, e)
    return {**{k: list(p[k]) for k in ("input1", "input2", "output")},
            "input1_offset": p["input1_offset"], "input2_offset": p["input2_offset"],
            "shift1": ja, "shift2": e - ja, "multiplier": m, "shift": n, "output_offset": p["output_offset"],
            "act_min": p["act_min"], "act_max": p["act_max"]}


def _vqrdmulh(x: np.ndarray, y) -> np.ndarray:
    return np.clip((2 * x * y + (1 << 15)) >> 16, -32768, 32767)


def mul_h16_s8(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_mul_h16_s8; returns int8 of shape params["output"]."""
    p = params
    if not (0 <= p["shift1"] <= 15 and 0 <= p["shift2"] <= 15 and 1 <= p["multiplier"] <= M_MAX
            and 0 <= p["shift"] <= 15):
        raise ValueError("shift1, shift2, shift must be in [0, 15] and multiplier in [1, 32767]")
    if (offset_reach(p["input1_offset"]) << p["shift1"] > M_MAX
            or offset_reach(p["input2_offset"]) << p["shift2"] > M_MAX or not -128 <= p["output_offset"] <= 127):
        raise ValueError("a shifted input must fit int16 and the output offset int8")
    if not -128 <= p["act_min"] <= p["act_max"] <= 127:
        raise ValueError(f"bad activation range [{p['act_min']}, {p['act_max']}]")
    a, b = _broadcast_inputs(p, input1, input2)
    a = (a + p["input1_offset"]) << p["shift1"]
    b = (b + p["input2_offset"]) << p["shift2"]
    t = _vqrdmulh(_vqrdmulh(a, b), p["multiplier"])
    n = p["shift"]
    y = (t + (1 << n >> 1)) >> n
    y = np.clip(y + p["output_offset"], -32768, 32767)
    return np.clip(y, p["act_min"], p["act_max"]).astype(np.int8)
