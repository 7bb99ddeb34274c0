"""Numpy twins of runtime_c/kernels/fc: mcu_fully_connected_s8 and mcu_matmul_s8, with the same integer
arithmetic."""
from __future__ import annotations

import numpy as np

from .conv import check_quant, output_stage
from .quant import requantize, saturate


def fully_connected_s8(params: dict, multiplier: np.ndarray, shift: np.ndarray, input: np.ndarray,
                       weights: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_fully_connected_s8: input [batches, in_features], weights [out, in]; returns int8 [batches, out]."""
    p = params
    b, k, n = p["batches"], p["in_features"], p["out_features"]
    if min(b, k, n) < 1:
        raise ValueError(f"batches/in_features/out_features must be positive: {b}, {k}, {n}")
    if not (-127 <= p["input_offset"] <= 128 and -128 <= p["output_offset"] <= 127):
        raise ValueError(f"offsets out of range: {p['input_offset']}, {p['output_offset']}")
    if not -128 <= p["act_min"] <= p["act_max"] <= 127:
        raise ValueError(f"bad activation range [{p['act_min']}, {p['act_max']}]")
    check_quant(multiplier, shift, n)
    x = np.asarray(input, dtype=np.int64).reshape(b, k) + p["input_offset"]
    acc = x @ np.asarray(weights, dtype=np.int64).reshape(n, k).T
    return output_stage(acc, bias, multiplier, shift, p["output_offset"], p["act_min"], p["act_max"])


def matmul_s8(params: dict, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Twin of mcu_matmul_s8: lhs [lhs_batches, M, K] x rhs [rhs_batches, K, N]; returns int8 [batches, M, N]."""
    p = params
    b, m, k, n = p["batches"], p["m"], p["k"], p["n"]
    if min(b, m, k, n) < 1 or k > 32767:
        raise ValueError(f"batches, m, n must be positive and k in [1, 32767]: {b}, {m}, {k}, {n}")
    if not (-127 <= p["lhs_offset"] <= 128 and -127 <= p["rhs_offset"] <= 128 and -128 <= p["output_offset"] <= 127):
        raise ValueError("offsets out of range")
    if p["output_multiplier"] < 0 or not -31 <= p["output_shift"] <= 30:
        raise ValueError("output multiplier must be >= 0 and shift in [-31, 30]")
    if not -128 <= p["act_min"] <= p["act_max"] <= 127:
        raise ValueError(f"bad activation range [{p['act_min']}, {p['act_max']}]")
    if p["lhs_batches"] not in (b, 1) or p["rhs_batches"] not in (b, 1):
        raise ValueError(f"operand batches must be {b} or 1: {p['lhs_batches']}, {p['rhs_batches']}")
    a = np.asarray(lhs, dtype=np.int64).reshape(p["lhs_batches"], m, k) + p["lhs_offset"]
    c = np.asarray(rhs, dtype=np.int64).reshape(p["rhs_batches"], k, n) + p["rhs_offset"]
    acc = np.matmul(a, c)
    out = requantize(np.broadcast_to(acc, (b, m, n)), p["output_multiplier"], p["output_shift"]) + p["output_offset"]
    return saturate(out, p["act_min"], p["act_max"])

