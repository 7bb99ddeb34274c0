"""The token draw of a decoder step's <name>_generate_sampled (templates/model.c.j2), operation by operation.

- xorshift32 is Marsaglia's (shifts 13, 17, 5) on a nonzero uint32 state; rng_seed (murmur3's fmix32) turns a seed
  into a well-mixed state, since the first draws from a small state are small.
- x_i = the last `vocab` logits as float32 (dequantized: (q - zero_point) * scale); x_max the first largest.
- kept: the top_k largest by value down, then index up (top_k <= 0 or >= vocab: all).
- w_i = exp_f32((x_i - x_max) / temperature), summed in index order in float32 (np.cumsum accumulates one by one);
  u = float32(r >> 8) * 2^-24 * sum; the token is the first kept index whose running sum exceeds u, else the last kept.
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.twins.fmath import exp_f32

F32 = np.float32
MASK32 = 0xFFFFFFFF


def xorshift32(x: int) -> int:
    """The next state (and value) of xorshift32."""
    x ^= (x << 13) & MASK32
    x ^= x >> 17
    x ^= (x << 5) & MASK32
    return x


def rng_seed(seed: int) -> int:
    """<name>_rng_seed: murmur3's fmix32 (a bijection of uint32; 0 only from 0)."""
    h = seed & MASK32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK32
    return h ^ (h >> 16)


def logits_f32(raw: np.ndarray, scale: float | None, zero_point: int | None) -> np.ndarray:
    """The logits as <name>_logit reads them: float32, dequantized when they are integers."""
    if scale is None:
        return np.asarray(raw, F32)
    return ((np.asarray(raw).astype(F32) - F32(zero_point)) * F32(scale)).astype(F32)


def sample_token(x: np.ndarray, temperature: float, top_k: int, rng: int) -> tuple[int, int]:
    """One token drawn from the float32 logits x with temperature > 0, and the rng's next state."""
    x = np.asarray(x, F32).reshape(-1)
    x_max = x[int(x.argmax())]
    keep = np.ones(x.size, bool)
    if 0 < top_k < x.size:
        keep[:] = False
        keep[np.argsort(-x, kind="stable")[:top_k]] = True
    kept = np.flatnonzero(keep)
    with np.errstate(all="ignore"):
        running = np.cumsum(exp_f32((x[kept] - x_max) / F32(temperature)), dtype=F32)
    rng = xorshift32(rng)
    u = F32(rng >> 8) * F32(2.0 ** -24) * running[-1]
    hit = np.flatnonzero(running > u)
    return int(kept[hit[0]] if hit.size else kept[-1]), rng
