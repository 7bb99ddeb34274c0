"""Numpy twin of runtime_c/kernels/fc: mcu_fully_connected_s8, with the same integer arithmetic."""
from __future__ import annotations

import numpy as np

from .conv import check_quant, output_stage


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
