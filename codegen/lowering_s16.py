"""Lowering of int16-activation ops (quantize="a16w8") and of the converts between precisions (mixed=).

The same data-driven table as codegen/lowering.py and the same node attrs (kernel, path, params_type, params,
quant, inplace). It runs as its own pass after `lower_float` and before `lower`, which leaves calls and aliases
alone: a node is lowered here when one of its tensors is int16, or when it converts between types.
- int16 activations are symmetric (zero point 0): every offset is 0 and act_min/act_max clamp to int16.
- Weights stay int8 per channel; the bias, left float by the quantizer, is stored as int64 at s_in * s_w[c]
  (round half to even, as torch rounds): the kernels accumulate in int64.
- Converts: `convert` (int8 <-> int16 requantization), `dequantize` (int8/int16 -> float32) and `quantize`
  (float32 -> int8/int16) at the boundaries of layers kept in another precision (mcu.quantize `mixed`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from mcu.codegen.ir import Graph, Node, QParams
from mcu.codegen.lowering import (Ctx, Kernel, act_range, call_node, concat_params, conv_geometry,
                                  dequantize_call, layer_norm, pool_geometry, quantize_call, transpose_params)
from mcu.codegen.errors import LoweringError
from mcu.codegen.twins.activation import unary_function
from mcu.codegen.twins.quant import quantize_multiplier

INT16_MIN, INT16_MAX = -32768, 32767
ADD_LEFT_SHIFT = 15  # int16 inputs << 15 keep 16 bits of headroom below int32 (TFLite's 16x8 add)

S16_KERNELS = {k.name: k for k in [
    Kernel("mcu_conv2d_s16", "s16/mcu_conv2d_s16", "mcu_conv2d_params_t"),
    Kernel("mcu_dwconv2d_s16", "s16/mcu_dwconv2d_s16", "mcu_conv2d_params_t"),
    Kernel("mcu_fully_connected_s16", "s16/mcu_fully_connected_s16", "mcu_fc_params_t"),
    Kernel("mcu_maxpool2d_s16", "s16/mcu_maxpool2d_s16", "mcu_pool2d_params_t"),
    Kernel("mcu_avgpool2d_s16", "s16/mcu_avgpool2d_s16", "mcu_pool2d_params_t"),
    Kernel("mcu_add_s16", "s16/mcu_add_s16", "mcu_add_params_t", inplace="elementwise"),
    Kernel("mcu_softmax_s16", "s16/mcu_softmax_s16", "mcu_softmax_s16_params_t"),
    Kernel("mcu_lut_s16", "s16/mcu_lut_s16", "mcu_lut_params_t", inplace="elementwise"),
    Kernel("mcu_transpose_s16", "s16/mcu_transpose_s16", "mcu_transpose_params_t"),
    Kernel("mcu_concat_s16", "s16/mcu_concat_s16", "mcu_concat_params_t"),
    Kernel("mcu_convert_s8_s16", "s16/mcu_convert_s8_s16", "mcu_convert_params_t"),
    Kernel("mcu_convert_s16_s8", "s16/mcu_convert_s16_s8", "mcu_convert_params_t"),
    Kernel("mcu_convert_s16_s16", "s16/mcu_convert_s16_s16", "mcu_convert_params_t"),
]}


def act_range16(qp: QParams, act: tuple[float, float] | None) -> tuple[int, int]:
    """The int16 clamp [act_min, act_max] of a fused real-valued activation range (zero point 0)."""
    return act_range(qp, act, INT16_MIN, INT16_MAX)


class _Ctx(Ctx):
    """lowering.Ctx, and the int64 biases of a16w8."""

    def bias64(self, node: Node, bias: str | None, s_in: float, s_w) -> str | None:
        """The float bias as int64 at s_in * s_w[c]."""
        if bias is None:
            return None
        b = self.tensors[bias]
        if b.dtype != "float32":
            raise LoweringError(f"an int16 {node.op} at {node.source} has a {b.dtype} bias; a16w8 keeps biases float")
        scale = s_in * np.asarray(s_w, np.float64)
        q = np.round(b.data.astype(np.float64) / scale)
        if np.abs(q).max(initial=0) >= 2.0**62:
            raise LoweringError(f"the bias of {node.op} at {node.source} does not fit int64 at scale s_in * s_w")
        return self.const(f"{node.name}_bias64", q.astype(np.int64), "int64")


def _call(node: Node, kernel: str, params: dict, inputs, quant=None) -> Node:
    return call_node(S16_KERNELS[kernel], node, params, inputs, quant)


def _conv(ctx: _Ctx, node: Node) -> Node:
    t = ctx.tensors
    x, w, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    lo, hi = act_range16(out.qparams, node.attrs.get("act"))
    reals = x.qparams.s * np.asarray(w.qparams.scale, dtype=np.float64) / out.qparams.s
    params = {**conv_geometry(x, w, out, node.attrs), "input_offset": 0, "output_offset": 0,
              "act_min": lo, "act_max": hi}
    kernel = "mcu_conv2d_s16" if node.op == "conv2d" else "mcu_dwconv2d_s16"
    bias = ctx.bias64(node, node.inputs[2] if len(node.inputs) > 2 else None, x.qparams.s, w.qparams.scale)
    return _call(node, kernel, params, (x.name, w.name, bias), ctx.per_channel(node, reals))


def _linear(ctx: _Ctx, node: Node) -> Node:
    t = ctx.tensors
    x, w, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    lo, hi = act_range16(out.qparams, node.attrs.get("act"))
    reals = x.qparams.s * np.asarray(w.qparams.scale, dtype=np.float64) / out.qparams.s
    params = {"batches": int(np.prod(x.shape[:-1])), "in_features": int(x.shape[-1]),
              "out_features": int(w.shape[0]), "input_offset": 0, "output_offset": 0, "act_min": lo, "act_max": hi}
    bias = ctx.bias64(node, node.inputs[2] if len(node.inputs) > 2 else None, x.qparams.s, w.qparams.scale)
    return _call(node, "mcu_fully_connected_s16", params, (x.name, w.name, bias), ctx.per_channel(node, reals))


def _pool(ctx: _Ctx, node: Node) -> Node:
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    lo, hi = act_range16(out.qparams, node.attrs.get("act"))
    params = {**pool_geometry(x, out, node), "zero_point": 0, "act_min": lo, "act_max": hi}
    kernel = "mcu_maxpool2d_s16" if node.op == "max_pool2d" else "mcu_avgpool2d_s16"
    return _call(node, kernel, params, (x.name,))


def _add(ctx: _Ctx, node: Node) -> Node:
    t = ctx.tensors
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    if a.shape != b.shape:
        raise LoweringError(f"an int16 add of {list(a.shape)} and {list(b.shape)} at {node.source}: a16w8 adds "
                            f"tensors of one shape (no broadcasting yet); keep this op int8 with mixed=")
    twice_max = 2 * max(a.qparams.s, b.qparams.s)
    m1, s1 = quantize_multiplier(a.qparams.s / twice_max)
    m2, s2 = quantize_multiplier(b.qparams.s / twice_max)
    mo, so = quantize_multiplier(twice_max / ((1 << ADD_LEFT_SHIFT) * out.qparams.s))
    lo, hi = act_range16(out.qparams, node.attrs.get("act"))
    params = {"size": int(np.prod(a.shape)), "left_shift": ADD_LEFT_SHIFT,
              "input1_offset": 0, "input1_multiplier": m1, "input1_shift": s1,
              "input2_offset": 0, "input2_multiplier": m2, "input2_shift": s2,
              "output_offset": 0, "output_multiplier": mo, "output_shift": so, "act_min": lo, "act_max": hi}
    return _call(node, "mcu_add_s16", params, (a.name, b.name))


def _softmax(ctx: _Ctx, node: Node) -> Node:
    from mcu.codegen.twins.s16 import softmax_s16_params
    x = ctx.tensors[node.inputs[0]]
    if node.attrs["dim"] != len(x.shape) - 1:
        raise LoweringError(f"softmax over dim {node.attrs['dim']} at {node.source}: only the last dim "
                            f"is supported")
    params = softmax_s16_params(int(np.prod(x.shape[:-1])), int(x.shape[-1]), x.qparams.s)
    return _call(node, "mcu_softmax_s16", params, (x.name,))


def _lut(ctx: _Ctx, node: Node) -> Node:
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
    lo, hi = act_range16(out.qparams, node.attrs.get("act"))
    table = np.clip(np.asarray(lut_s16_table(fn, x.qparams.s, out.qparams.s)), lo, hi).astype(np.int16)
    return _call(node, "mcu_lut_s16", {"size": int(np.prod(x.shape))}, (ctx.const(f"{node.name}_table", table,
                                                                                   "int16"), x.name))


def _transpose(ctx: _Ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    return _call(node, "mcu_transpose_s16", transpose_params(x.shape, node.attrs["perm"]), (x.name,))


def _concat(ctx: _Ctx, node: Node) -> Node:
    call = _call(node, "mcu_concat_s16", concat_params(ctx.tensors, node), node.inputs)
    return call.replace(attrs={**call.attrs, "input_array": True})


def _convert(ctx: _Ctx, node: Node) -> Node:
    """int8 <-> int16, int16 -> int16: out = round((in - zp_in) * s_in / s_out) + zp_out, clamped."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
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


def _dequantize(ctx: _Ctx, node: Node) -> Node:
    return dequantize_call(node, ctx.tensors[node.inputs[0]])


def _quantize(ctx: _Ctx, node: Node) -> Node:
    return quantize_call(node, node.inputs[0], ctx.tensors[node.outputs[0]])


S16_LOWERINGS: dict[str, Callable[[_Ctx, Node], Node]] = {
    "conv2d": _conv, "depthwise_conv2d": _conv, "linear": _linear, "max_pool2d": _pool, "avg_pool2d": _pool,
    "add": _add, "softmax": _softmax, "lut": _lut, "clamp": _lut, "transpose": _transpose, "concat": _concat,
    "layer_norm": layer_norm,
}
CONVERTS: dict[str, Callable[[_Ctx, Node], Node]] = {
    "convert": _convert, "dequantize": _dequantize, "quantize": _quantize,
}


def _is_s16(g: Graph, node: Node) -> bool:
    return any(g.tensors[t].dtype == "int16" and not g.tensors[t].is_const
               for t in (*node.inputs, *node.outputs) if t is not None)


def lower_s16(graph: Graph) -> Graph:
    """Replace every int16 op by its kernel call and every convert by its kernel (pass: Graph -> Graph)."""
    ctx, nodes = _Ctx(graph), []
    for n in graph.nodes:
        if n.op in ("call", "alias"):
            nodes.append(n)
        elif n.op in CONVERTS:
            nodes.append(CONVERTS[n.op](ctx, n))
        elif not _is_s16(graph, n):
            nodes.append(n)
        elif n.op == "reshape":
            nodes.append(n.replace(op="alias"))
        elif n.op in S16_LOWERINGS:
            lowered = S16_LOWERINGS[n.op](ctx, n)
            nodes.extend(lowered if isinstance(lowered, list) else [lowered])
        else:
            raise LoweringError(f"op '{n.op}' at {n.source} has no int16 kernel (a16w8 runs conv, depthwise, "
                                f"linear, add, pools, softmax, elementwise functions, concat, layer norm and "
                                f"transposes); keep it int8 with mixed={{'<module>': 'int8'}}")
    return graph.replace(nodes=tuple(nodes), tensors=ctx.tensors)
