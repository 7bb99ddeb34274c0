"""Numpy twins of runtime_c/kernels/elementwise: mcu_add_s8 (TFLite int8 add), mcu_add_broadcast_s8 (add /
subtract with broadcasting) and mcu_mul_s8, with the same integer arithmetic.

The int32 sum of the two rescaled inputs saturates, as the C does (the header's a1 + a2 leaves overflow open).
Broadcasting is numpy's over 4-d dims: each input dim equals the output's or is 1.
"""
from __future__ import annotations

import numpy as np

from .quant import INT32_MAX, INT32_MIN, requantize, requantize_round, saturate


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


def _broadcast_inputs(p: dict, input1, input2) -> tuple[np.ndarray, np.ndarray]:
    out = tuple(p["output"])
    if min(out) < 1:
        raise ValueError(f"output dims must be positive: {out}")
    arrays = []
    for key, x in (("input1", input1), ("input2", input2)):
        dims = tuple(p[key])
        if len(dims) != 4 or min(dims) < 1 or any(d not in (o, 1) for d, o in zip(dims, out)):
            raise ValueError(f"{key} dims {dims} do not broadcast to {out}")
        x = np.asarray(x, dtype=np.int64)
        if x.size != int(np.prod(dims)):
            raise ValueError(f"{key} must hold {int(np.prod(dims))} values, got {x.size}")
        arrays.append(np.broadcast_to(x.reshape(dims), out))
    return arrays[0], arrays[1]


def add_broadcast_s8(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_add_broadcast_s8; returns int8 of shape params["output"]."""
    p = params
    _check({**p, "size": 1})
    if p["subtract"] not in (0, 1):
        raise ValueError(f"subtract must be 0 or 1, got {p['subtract']}")
    x1, x2 = _broadcast_inputs(p, input1, input2)
    a1 = requantize((x1 + p["input1_offset"]) << p["left_shift"], p["input1_multiplier"], p["input1_shift"])
    a2 = requantize((x2 + p["input2_offset"]) << p["left_shift"], p["input2_multiplier"], p["input2_shift"])
    total = np.clip(a1 - a2 if p["subtract"] else a1 + a2, INT32_MIN, INT32_MAX)
    out = requantize(total, p["output_multiplier"], p["output_shift"]) + p["output_offset"]
    return saturate(out, p["act_min"], p["act_max"])


def mul_s8(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_mul_s8; returns int8 of shape params["output"]."""
    p = params
    if not (-127 <= p["input1_offset"] <= 128 and -127 <= p["input2_offset"] <= 128
            and -128 <= p["output_offset"] <= 127):
        raise ValueError("offsets out of range")
    if p["output_multiplier"] < 0 or not -31 <= p["output_shift"] <= 30:
        raise ValueError("output multiplier must be >= 0 and shift in [-31, 30]")
    if not -128 <= p["act_min"] <= p["act_max"] <= 127:
        raise ValueError(f"bad activation range [{p['act_min']}, {p['act_max']}]")
    x1, x2 = _broadcast_inputs(p, input1, input2)
    prod = (x1 + p["input1_offset"]) * (x2 + p["input2_offset"])
    out = requantize_round(prod, p["output_multiplier"], p["output_shift"]) + p["output_offset"]
    return saturate(out, p["act_min"], p["act_max"])
