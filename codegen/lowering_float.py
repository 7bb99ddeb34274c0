"""Lowering overrides for float32 ops (quantize="none", mixed= float layers): FLOAT32 maps each op to a float
kernel call (the same node attrs as codegen/lowering.py, quant None); transposes, reshapes and the geometry
helpers are int8's. Fused activations become float clamp bounds; no bound is +-FLT_MAX."""
from __future__ import annotations

from typing import Callable

import numpy as np

from mcu.codegen.ir import Node
from mcu.codegen.lowering import INT8, _dims4, call_node, conv_geometry, pool_geometry
from mcu.codegen.errors import LoweringError

FLT_MAX = float(np.finfo(np.float32).max)

def _act(node: Node) -> dict:
    lo, hi = node.attrs.get("act") or (float("-inf"), float("inf"))
    return {"act_min": max(float(lo), -FLT_MAX), "act_max": min(float(hi), FLT_MAX)}


_call = call_node


def _conv(ctx, node: Node) -> Node:
    x, w, out = (ctx.tensors[t] for t in (node.inputs[0], node.inputs[1], node.outputs[0]))
    params = {**conv_geometry(x, w, out, node.attrs), **_act(node)}
    kernel = "mcu_dwconv2d_f32" if node.op == "depthwise_conv2d" else "mcu_conv2d_f32"
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    return _call(node, kernel, params, (x.name, w.name, bias))


def _linear(ctx, node: Node) -> Node:
    x, w = ctx.tensors[node.inputs[0]], ctx.tensors[node.inputs[1]]
    params = {"batches": int(np.prod(x.shape[:-1])), "in_features": int(x.shape[-1]),
              "out_features": int(w.shape[0]), **_act(node)}
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    return _call(node, "mcu_fully_connected_f32", params, (x.name, w.name, bias))


def _pool(ctx, node: Node) -> Node:
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    params = {**pool_geometry(x, out, node), **_act(node)}
    kernel = "mcu_maxpool2d_f32" if node.op == "max_pool2d" else "mcu_avgpool2d_f32"
    return _call(node, kernel, params, (x.name,))


def _binary(ctx, node: Node) -> Node:
    a, b, out = (ctx.tensors[t] for t in (*node.inputs[:2], node.outputs[0]))
    params = {"input1": _dims4(a.shape, node.source), "input2": _dims4(b.shape, node.source),
              "output": _dims4(out.shape, node.source), "subtract": int(node.op == "sub"), **_act(node)}
    return _call(node, "mcu_mul_f32" if node.op == "mul" else "mcu_add_f32", params, (a.name, b.name))


def _softmax(ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    if node.attrs["dim"] != len(x.shape) - 1:
        raise LoweringError(f"softmax over dim {node.attrs['dim']} at {node.source}: only the last dim "
                            f"is supported")
    params = {"rows": int(np.prod(x.shape[:-1])), "cols": int(x.shape[-1])}
    return _call(node, "mcu_softmax_f32", params, (x.name,))


def _clamp(ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    return _call(node, "mcu_clamp_f32", {"size": int(np.prod(x.shape)), **_act(node)}, (x.name,))


def _reduce(ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    dims_in = _dims4(x.shape, node.source)
    pad = 4 - len(x.shape)
    axes = {d + pad for d in node.attrs["dims"]}
    dims_out = tuple(1 if i in axes else d for i, d in enumerate(dims_in))
    count = int(np.prod([dims_in[i] for i in axes], dtype=np.int64))
    divisor = float(count) if node.op == "mean" else 1.0
    return _call(node, "mcu_reduce_f32", {"input": dims_in, "output": dims_out, "divisor": divisor}, (x.name,))


FLOAT32: dict[str, Callable] = {
    "conv2d": _conv, "depthwise_conv2d": _conv, "linear": _linear, "max_pool2d": _pool, "avg_pool2d": _pool,
    "add": _binary, "sub": _binary, "mul": _binary, "softmax": _softmax, "clamp": _clamp,
    "transpose": INT8["transpose"], "reshape": INT8["reshape"], "slice": INT8["slice"], "mean": _reduce, "sum": _reduce,
}
