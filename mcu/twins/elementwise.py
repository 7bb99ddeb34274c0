"""Numpy twin of runtime_c/kernels/elementwise: mcu_add_s8 (TFLite int8 add), with the same integer arithmetic.

The int32 sum of the two rescaled inputs saturates, as the C does (the header's a1 + a2 leaves overflow open).
"""
from __future__ import annotations

import numpy as np

from .quant import INT32_MAX, INT32_MIN, requantize, saturate


def _check(p: dict) -> None:
    if p["size"] < 1 or not 0 <= p["left_shift"] <= 23:
        raise ValueError(f"size must be >= 1 and left_shift in [0, 23], got {p['size']}, {p['left_shift']}")
    if not (-127 <= p["input1_offset"] <= 128 and -127 <= p["input2_offset"] <= 128
            and -128 <= p["output_offset"] <= 127):
        raise ValueError("offsets out of range")
    for name in ("input1", "input2", "output"):
        if p[f"{name}_multiplier"] < 0 or not -31 <= p[f"{name}_shift"] <= 30:
            raise ValueError(f"{name}: multiplier must be >= 0 and shift in [-31, 30]")
    if not -128 <= p["act_min"] <= p["act_max"] <= 127:
        raise ValueError(f"bad activation range [{p['act_min']}, {p['act_max']}]")


def add_s8(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_add_s8; inputs hold params["size"] elements each; returns int8 shaped like input1."""
    p = params
    _check(p)
    x1, x2 = np.asarray(input1, dtype=np.int64), np.asarray(input2, dtype=np.int64)
    if x1.size != p["size"] or x2.size != p["size"]:
        raise ValueError(f"inputs must hold {p['size']} elements, got {x1.size} and {x2.size}")
    a1 = requantize((x1 + p["input1_offset"]) << p["left_shift"], p["input1_multiplier"], p["input1_shift"])
    a2 = requantize((x2.reshape(x1.shape) + p["input2_offset"]) << p["left_shift"], p["input2_multiplier"],
                    p["input2_shift"])
    total = np.clip(a1 + a2, INT32_MIN, INT32_MAX)
    out = requantize(total, p["output_multiplier"], p["output_shift"]) + p["output_offset"]
    return saturate(out, p["act_min"], p["act_max"])
