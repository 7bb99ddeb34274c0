"""Numpy twin of runtime_c/kernels/activation: mcu_softmax_s8 and the exp table it reads.

- softmax_exp_table(s)[d] = round(65536 * exp(-s * d)), clipped to 65535: d = 0 would give 65536, which does
  not fit uint16, so the largest entry is 65535 (the header's "round(2^16 * exp(...))" is off by one there).
- Per row: e_i = table[max - in_i]; s = sum e_i (uint32, cannot overflow for cols <= 65535);
  out_i = clamp(((e_i << 8) + s // 2) // s - 128, -128, 127), all unsigned integer arithmetic as in the C.
"""
from __future__ import annotations

import numpy as np

from .quant import saturate


def softmax_exp_table(input_scale: float) -> np.ndarray:
    """uint16[256] with round(2^16 * exp(-input_scale * d)) for d = 0..255, clipped to 65535 (so entry 0 is 65535)."""
    if not input_scale > 0:
        raise ValueError(f"input_scale must be > 0, got {input_scale}")
    d = np.arange(256, dtype=np.float64)
    return np.clip(np.round(65536.0 * np.exp(-float(input_scale) * d)), 0, 65535).astype(np.uint16)


def softmax_s8(params: dict, exp_table: np.ndarray, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_softmax_s8; input holds rows * cols int8 values; returns int8 shaped like input."""
    rows, cols = params["rows"], params["cols"]
    table = np.asarray(exp_table)
    if rows < 1 or not 1 <= cols <= 65535:
        raise ValueError(f"rows must be >= 1 and cols in [1, 65535], got {rows}, {cols}")
    if table.dtype != np.uint16 or table.shape != (256,) or table[0] == 0:
        raise ValueError("exp_table must be uint16[256] with exp_table[0] > 0")
    x = np.asarray(input)
    if x.size != rows * cols:
        raise ValueError(f"input must hold {rows} x {cols} values, got {x.size}")
    v = x.astype(np.int64).reshape(rows, cols)
    e = table.astype(np.uint64)[v.max(axis=1, keepdims=True) - v]
    s = e.sum(axis=1, keepdims=True)
    q = ((e << np.uint64(8)) + s // np.uint64(2)) // s
    return saturate(q.astype(np.int64) - 128, -128, 127).reshape(x.shape)
