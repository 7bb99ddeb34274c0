"""Numpy twins of runtime_c/kernels/activation: mcu_softmax_s8 and the exp table it reads; mcu_lut_s8 and
the compile-time table behind it.

- softmax_exp_table(s)[d] = round(65536 * exp(-s * d)), clipped to 65535: d = 0 would give 65536, which does
  not fit uint16, so the largest entry is 65535 (the header's "round(2^16 * exp(...))" is off by one there).
- Per row: e_i = table[max - in_i]; s = sum e_i (uint32, cannot overflow for cols <= 65535);
  out_i = clamp(((e_i << 8) + s // 2) // s - 128, -128, 127), all unsigned integer arithmetic as in the C.
- lut_table(fn, ...) evaluates fn on all 256 dequantized int8 values with torch's own quantize /
  dequantize ops, so the table holds exactly what torchao's Q/DQ reference computes per value.
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


def unary_function(spec):
    """The float function of an IR `lut` node: spec = (aten overload name, args with ... for the tensor, kwargs)."""
    import torch
    name, args, kwargs = spec
    packet, overload = name.rsplit(".", 1)
    op = getattr(getattr(torch.ops.aten, packet), overload)
    return lambda x: op(*[x if a is ... else a for a in args], **dict(kwargs))


def lut_table(fn, input_scale: float, input_zero_point: int, output_scale: float,
              output_zero_point: int) -> np.ndarray:
    """int8[256] with entry q + 128 = clamp(round(fn((q - zp_in) * s_in) / s_out) + zp_out), computed with
    torch's quantize/dequantize ops exactly as torchao's Q/DQ reference does. An input step the rounding put
    outside fn's domain (asin or atanh of -1.004 when the inputs reach -0.999) takes the entry of the nearest
    step inside it, as if the input were clamped to the domain."""
    import torch
    from torchao.quantization.pt2e import quantize_pt2e  # noqa: F401  (registers quantized_decomposed ops)

    qd = torch.ops.quantized_decomposed
    q = torch.arange(-128, 128, dtype=torch.int8)
    with torch.no_grad():
        x = qd.dequantize_per_tensor(q, float(input_scale), int(input_zero_point), -128, 127, torch.int8)
        y = fn(x).to(torch.float32)
        bad = torch.isnan(y)
        if bad.any() and not bad.all():
            good = (~bad).nonzero().reshape(-1)
            nearest = good[(torch.arange(256)[:, None] - good[None, :]).abs().argmin(1)]
            y = y[nearest]
        out = qd.quantize_per_tensor(y, float(output_scale), int(output_zero_point), -128, 127, torch.int8)
    return out.numpy().astype(np.int8)


def lut_s8(params: dict, table: np.ndarray, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_lut_s8: out[i] = table[in[i] + 128]; returns int8 shaped like input."""
    t = np.asarray(table)
    if params["size"] < 1:
        raise ValueError(f"size must be >= 1, got {params['size']}")
    if t.dtype != np.int8 or t.shape != (256,):
        raise ValueError("table must be int8[256]")
    x = np.asarray(input)
    if x.size != params["size"]:
        raise ValueError(f"input must hold {params['size']} values, got {x.size}")
    return t[x.astype(np.int64) + 128]
