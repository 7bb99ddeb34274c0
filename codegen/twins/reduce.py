"""Numpy twin of runtime_c/kernels/reduce: mcu_reduce_sum_s8 (sum, or mean through the multiplier)."""
from __future__ import annotations

import numpy as np

from .quant import INT32_MAX, requantize_round, saturate


def reduce_sum_s8(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_reduce_sum_s8: sums over the axes where output is 1 and input is not; returns int8 [output]."""
    p = params
    dims, out = tuple(p["input"]), tuple(p["output"])
    if not (-127 <= p["input_offset"] <= 128 and -128 <= p["output_offset"] <= 127):
        raise ValueError("offsets out of range")
    if p["multiplier"] < 0 or not -31 <= p["shift"] <= 30:
        raise ValueError("multiplier must be >= 0 and shift in [-31, 30]")
    if min(dims) < 1 or min(out) < 1 or any(o not in (d, 1) for d, o in zip(dims, out)):
        raise ValueError(f"output dims {out} must equal the input's {dims} or be 1")
    axes = tuple(i for i, (d, o) in enumerate(zip(dims, out)) if o != d)
    count = int(np.prod([dims[i] for i in axes], dtype=np.int64))
    if count > INT32_MAX // 255:
        raise ValueError("too many elements per sum for an int32 accumulator")
    x = np.asarray(input, dtype=np.int64)
    if x.size != int(np.prod(dims)):
        raise ValueError(f"input must hold {int(np.prod(dims))} values, got {x.size}")
    acc = x.reshape(dims).sum(axis=axes, keepdims=True) + p["input_offset"] * count
    q = requantize_round(acc, p["multiplier"], p["shift"]) + p["output_offset"]
    return saturate(q, -128, 127).reshape(out)
