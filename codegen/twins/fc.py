"""Numpy twins of runtime_c/kernels/fc: mcu_fully_connected_s8 and mcu_matmul_s8, with the same integer
arithmetic."""
from __future__ import annotations

import numpy as np

from .conv import check_quant, output_stage
from .quant import requantize, requantize64, saturate


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


def fully_connected_gemm_s8_dsp_scratch_bytes(p: dict) -> int:
    """Twin of mcu_fully_connected_gemm_s8_dsp_scratch_bytes: three rows widened to int16, a word before and after."""
    return 24 * (-(-p["in_features"] // 4)) + 8


def _matmul_rhs(p: dict, rhs: np.ndarray, dtype) -> np.ndarray:
    """A matmul's right operand as [batches or 1, K, N] (its rhs_transposed layout read, each batch repeated
    rhs_group times), checking rhs_batches, rhs_group and rhs_transposed."""
    b, k, n, rb, g = p["batches"], p["k"], p["n"], p["rhs_batches"], p.get("rhs_group", 1)
    if p.get("rhs_transposed", 0) not in (0, 1) or not (rb == 1 or (g >= 1 and rb * g == b)):
        raise ValueError(f"rhs batches {rb} x group {g} must be {b}, or rhs batches 1")
    c = np.asarray(rhs, dtype=dtype)
    c = c.reshape(rb, n, k).transpose(0, 2, 1) if p.get("rhs_transposed", 0) else c.reshape(rb, k, n)
    return c if rb == 1 else np.repeat(c, g, axis=0)


def matmul_s8(params: dict, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Twin of mcu_matmul_s8: lhs [lhs_batches, M, K] x rhs (_matmul_rhs); returns int8 [batches, M, N]."""
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
    a = np.asarray(lhs, dtype=np.int64).reshape(p["lhs_batches"], m, k) + p["lhs_offset"]
    c = _matmul_rhs(p, rhs, np.int64) + p["rhs_offset"]
    if p["lhs_batches"] not in (b, 1):
        raise ValueError(f"lhs batches must be {b} or 1: {p['lhs_batches']}")
    acc = np.matmul(a, c)
    out = requantize(np.broadcast_to(acc, (b, m, n)), p["output_multiplier"], p["output_shift"]) + p["output_offset"]
    return saturate(out, p["act_min"], p["act_max"])


def matmul_s16(params: dict, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Twin of mcu_matmul_s16: lhs [lhs_batches, M, K] x rhs (twins.fc._matmul_rhs's layouts), int64 sums;
    returns int16 [batches, M, N]."""
    p = params
    b, m, k, n = p["batches"], p["m"], p["k"], p["n"]
    if min(b, m, k, n) < 1 or k > 32767:
        raise ValueError(f"batches, m, n must be positive and k in [1, 32767]: {b}, {m}, {k}, {n}")
    if p["lhs_offset"] or p["rhs_offset"] or p["output_offset"] or not -32768 <= p["act_min"] <= p["act_max"] <= 32767:
        raise ValueError("int16 activations: offsets 0, the clamp inside int16")
    if p["output_multiplier"] < 0 or not -31 <= p["output_shift"] <= 30:
        raise ValueError("output multiplier must be >= 0 and shift in [-31, 30]")
    if p["lhs_batches"] not in (b, 1):
        raise ValueError(f"lhs batches must be {b} or 1: {p['lhs_batches']}")
    acc = np.matmul(np.asarray(lhs, dtype=np.int64).reshape(p["lhs_batches"], m, k), _matmul_rhs(p, rhs, np.int64))
    out = requantize64(np.broadcast_to(acc, (b, m, n)), p["output_multiplier"], p["output_shift"])
    return saturate(out, p["act_min"], p["act_max"], np.int16)


def matmul_gemm_s8_dsp_channels(p: dict) -> int:
    """Twin of mcu_matmul_gemm_s8_dsp_channels: rhs columns packed at a time (all, or the even count whose pairs of
    the 2x2 core's int16 stream fit 4 KB, 1 KB under 8 rows per rhs batch; at least one pair)."""
    per = p["batches"] if p["rhs_batches"] == 1 else p.get("rhs_group", 1)
    rows = p["m"] if p["lhs_batches"] == 1 else per * p["m"]
    pairs = max(1, (4096 if rows >= 8 else 1024) // _g2_pair_bytes(p["k"]))
    return p["n"] if 2 * pairs >= p["n"] else 2 * pairs


def _g2_pair_bytes(k: int) -> int:
    steps = -(-k // 4)
    return 32 + 16 * steps + 4 * ((steps - 2) // 16 + 1 if steps > 1 else 1)


def matmul_gemm_s8_dsp_scratch_bytes(p: dict) -> int:
    """Twin of mcu_matmul_gemm_s8_dsp_scratch_bytes: two rows widened and 3 words, then the packed rhs stream."""
    return 16 * (-(-p["k"] // 4)) + 12 + (matmul_gemm_s8_dsp_channels(p) + 1) // 2 * _g2_pair_bytes(p["k"])


def matmul_gemm_s8_mve_channels(p: dict) -> int:
    """Twin of mcu_matmul_gemm_s8_mve_channels: rhs columns packed at a time (all, or the multiple of 4 whose
    weights and biases fit 4 KB, at least 4)."""
    c = max(4, (4096 // (16 * -(-p["k"] // 16) + 4)) & ~3)
    return min(c, p["n"])


def matmul_gemm_s8_mve_scratch_bytes(p: dict) -> int:
    """Twin of mcu_matmul_gemm_s8_mve_scratch_bytes: the packed columns' biases and weights."""
    return (matmul_gemm_s8_mve_channels(p) + 3) // 4 * 4 * (16 * -(-p["k"] // 16) + 4)
