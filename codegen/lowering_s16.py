"""Lowering overrides for int16 activations (quantize="a16w8") and the converts between precisions (mixed=).

- INT16 is lowering_s8.INT8's builders that serve every integer type (conv, depthwise, linear, pools, add and sub
  with broadcasting, mul, matmul of two activations, transpose, concat, layer and RMS norm: they name their kernel
  and clamp by the element type), plus softmax and the
  table functions, whose int16 kernels take other constants.
- int16 activations are symmetric (zero point 0): every offset is 0 and act_min/act_max clamp to int16.
- Weights stay int8 per channel; the bias, left float by the quantizer, is stored as int64 at s_in * s_w[c]
  (lowering.Ctx.bias): the kernels accumulate in int64.
- CONVERTS: `convert` (int8 <-> int16 requantization), `dequantize` (int8/int16 -> float32) and `quantize`
  (float32 -> int8/int16) at the boundaries of layers kept in another precision (mcu.quantization.quantizer `mixed`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from mcu.codegen.errors import LoweringError
from mcu.codegen.ir import Node
from mcu.codegen.lowering import Ctx, act_range, call_node, dequantize_call, quantize_call
from mcu.codegen.lowering_s8 import INT8, INTEGER
from mcu.codegen.twins.activation import unary_function
from mcu.codegen.twins.quant import quantize_multiplier

_call = call_node


def _softmax(ctx: Ctx, node: Node) -> Node:
    from mcu.codegen.twins.s16 import softmax_s16_params
    x = ctx.tensors[node.inputs[0]]
    if node.attrs["dim"] != len(x.shape) - 1:
        raise LoweringError(f"softmax over dim {node.attrs['dim']} at {node.source}: only the last dim "
                            f"is supported")
    params = softmax_s16_params(int(np.prod(x.shape[:-1])), int(x.shape[-1]), x.qparams.s)
    return _call(node, "mcu_softmax_s16", params, (x.name,))


def _lut(ctx: Ctx, node: Node) -> Node:
    """An elementwise function of one int16 activation: 513 table entries, interpolated (mcu_lut_s16)."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    if node.op == "clamp":
        bounds = [None if abs(v) == float("inf") else v for v in node.attrs["act"]]
        torch_fn = unary_function(("clamp.default", (..., *bounds), ()))
    else:
        torch_fn = unary_function(node.attrs["fn"])
    import torch
    from mcu.codegen.twins.s16 import lut_s16_table

    def fn(v: np.ndarray) -> np.ndarray:  # the torch op in float64 on the table's grid
        with torch.no_grad():
            return torch_fn(torch.from_numpy(np.asarray(v, np.float64))).numpy()
    lo, hi = act_range(out.qparams, node.attrs.get("act"), "int16")
    table = np.clip(np.asarray(lut_s16_table(fn, x.qparams.s, out.qparams.s)), lo, hi).astype(np.int16)
    return _call(node, "mcu_lut_s16", {"size": int(np.prod(x.shape))}, (ctx.const(f"{node.name}_table", table,
                                                                                   "int16"), x.name))


def _convert(ctx: Ctx, node: Node) -> Node:
    """int8 <-> int16, int16 -> int16: out = round((in - zp_in) * s_in / s_out) + zp_out, clamped."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    if out.dtype == "float32":  # into a float island: a dequantize
        return _dequantize(ctx, node)
    kinds = (x.dtype, out.dtype)
    kernel = {("int8", "int16"): "mcu_convert_s8_s16", ("int16", "int8"): "mcu_convert_s16_s8",
              ("int16", "int16"): "mcu_convert_s16_s16"}.get(kinds)
    if kernel is None:
        raise LoweringError(f"a requantization from {x.dtype} to {out.dtype} at {node.source} has no kernel; "
                            f"give both sides one precision (mixed=)")
    mult, shift = quantize_multiplier(x.qparams.s / out.qparams.s)
    params = {"size": int(np.prod(x.shape)), "input_offset": -x.qparams.zp, "output_offset": out.qparams.zp,
              "multiplier": mult, "shift": shift}
    return _call(node, kernel, params, (x.name,))


def _dequantize(ctx: Ctx, node: Node) -> Node:
    return dequantize_call(node, ctx.tensors[node.inputs[0]])


def _quantize(ctx: Ctx, node: Node) -> Node:
    return quantize_call(node, node.inputs[0], ctx.tensors[node.outputs[0]])


INT16: dict[str, Callable[[Ctx, Node], Node | list[Node]]] = {
    **{op: INT8[op] for op in INTEGER}, "softmax": _softmax, "lut": _lut, "clamp": _lut,
}
CONVERTS: dict[str, Callable[[Ctx, Node], Node]] = {
    "convert": _convert, "dequantize": _dequantize, "quantize": _quantize,
}
UNSUPPORTED = ("(a16w8 runs conv, depthwise, linear, add, sub, mul, matmul, pools, softmax, elementwise functions, "
               "concat, layer and RMS norm and transposes); keep it int8 with mixed={'<module>': 'int8'}")
