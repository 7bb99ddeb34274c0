"""Numpy twins of runtime_c/kernels/fallback: the float32 path (dequantize, layer norm, quantize).

Every operation is float32 and in the C's order, so host numpy and a Cortex-M (hardware or soft float)
round identically: sums run sequentially (np.add.accumulate order, never numpy's pairwise sum), sqrt is
correctly rounded on both sides, and nothing is fused into a multiply-add.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32


def dequantize_s8_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_dequantize_s8_f32: float32 (q - zero_point) * scale."""
    size, scale, zp = params["size"], F32(params["scale"]), params["zero_point"]
    if size < 1 or not -128 <= zp <= 127 or not scale > 0:
        raise ValueError(f"size must be >= 1, zero_point int8 and scale > 0: {size}, {zp}, {scale}")
    x = np.asarray(input)
    if x.size != size:
        raise ValueError(f"input must hold {size} values, got {x.size}")
    return (x.astype(np.int32) - zp).astype(F32) * scale


def quantize_f32_s8(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_quantize_f32_s8: clamp(round_half_even(x * inv_scale) + zero_point); NaN -> zero_point."""
    size, inv, zp = params["size"], F32(params["inv_scale"]), params["zero_point"]
    if size < 1 or not -128 <= zp <= 127 or not inv > 0:
        raise ValueError(f"size must be >= 1, zero_point int8 and inv_scale > 0: {size}, {zp}, {inv}")
    x = np.asarray(input, dtype=F32)
    if x.size != size:
        raise ValueError(f"input must hold {size} values, got {x.size}")
    v = np.nan_to_num(x * inv, nan=0.0, posinf=512.0, neginf=-512.0)
    v = np.clip(v, F32(-512), F32(512))
    return np.clip(np.round(v).astype(np.int64) + zp, -128, 127).astype(np.int8)


def _sequential_sum(x: np.ndarray) -> np.ndarray:
    """Row sums (last axis) accumulated left to right in float32, as a C loop does."""
    acc = np.zeros(x.shape[:-1], F32)
    for i in range(x.shape[-1]):
        acc = acc + x[..., i]
    return acc


def layer_norm_f32(params: dict, input: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_layer_norm_f32; returns float32 shaped like input."""
    rows, cols, eps = params["rows"], params["cols"], F32(params["eps"])
    if rows < 1 or cols < 1 or not eps > 0:
        raise ValueError(f"rows, cols must be >= 1 and eps > 0: {rows}, {cols}, {eps}")
    x = np.asarray(input, dtype=F32)
    if x.size != rows * cols:
        raise ValueError(f"input must hold {rows} x {cols} values, got {x.size}")
    x2 = x.reshape(rows, cols)
    n = F32(cols)
    mean = np.zeros((rows, 1), F32) if params.get("rms") else (_sequential_sum(x2) / n)[:, None]
    d = x2 - mean
    var = _sequential_sum(d * d) / n
    rstd = (F32(1) / np.sqrt(var + eps))[:, None]
    y = d * rstd
    if weight is not None:
        y = y * np.asarray(weight, dtype=F32).reshape(1, cols)
    if bias is not None:
        y = y + np.asarray(bias, dtype=F32).reshape(1, cols)
    return y.reshape(x.shape).astype(F32)
