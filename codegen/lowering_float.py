"""Lowering of float32 ops (quantize="none"): each op whose tensors are float32 becomes a call of a float kernel.

The same data-driven table as codegen/lowering.py, with the same node attrs (kernel, path, params_type, params,
quant = None, inplace). It runs as its own pass before `lower`, which leaves calls and aliases alone, so an int8
graph passes through it unchanged. Fused activations become float clamp bounds; no bound is +-FLT_MAX.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from mcu.codegen.ir import Graph, Node
from mcu.codegen.lowering import Kernel, _dims4, call_node, conv_geometry, pool_geometry, transpose_params
from mcu.codegen.errors import LoweringError

FLT_MAX = float(np.finfo(np.float32).max)

FLOAT_KERNELS = {k.name: k for k in [
    Kernel("mcu_conv2d_f32", "float/mcu_conv2d_f32", "mcu_conv2d_f32_params_t"),
    Kernel("mcu_dwconv2d_f32", "float/mcu_dwconv2d_f32", "mcu_conv2d_f32_params_t"),
    Kernel("mcu_fully_connected_f32", "float/mcu_fully_connected_f32", "mcu_fc_f32_params_t"),
    Kernel("mcu_maxpool2d_f32", "float/mcu_maxpool2d_f32", "mcu_pool2d_f32_params_t"),
    Kernel("mcu_avgpool2d_f32", "float/mcu_avgpool2d_f32", "mcu_pool2d_f32_params_t"),
    Kernel("mcu_add_f32", "float/mcu_add_f32", "mcu_binary_f32_params_t", inplace="elementwise"),
    Kernel("mcu_mul_f32", "float/mcu_mul_f32", "mcu_binary_f32_params_t", inplace="elementwise"),
    Kernel("mcu_softmax_f32", "float/mcu_softmax_f32", "mcu_softmax_params_t", inplace="elementwise"),
    Kernel("mcu_clamp_f32", "float/mcu_clamp_f32", "mcu_clamp_f32_params_t", inplace="elementwise"),
    Kernel("mcu_transpose_f32", "float/mcu_transpose_f32", "mcu_transpose_params_t"),
    Kernel("mcu_reduce_f32", "float/mcu_reduce_f32", "mcu_reduce_f32_params_t"),
]}


def _act(node: Node) -> dict:
    lo, hi = node.attrs.get("act") or (float("-inf"), float("inf"))
    return {"act_min": max(float(lo), -FLT_MAX), "act_max": min(float(hi), FLT_MAX)}


def _call(node: Node, kernel: str, params: dict, inputs) -> Node:
    return call_node(FLOAT_KERNELS[kernel], node, params, inputs)


def _conv(g: Graph, node: Node) -> Node:
    x, w, out = (g.tensors[t] for t in (node.inputs[0], node.inputs[1], node.outputs[0]))
    params = {**conv_geometry(x, w, out, node.attrs), **_act(node)}
    kernel = "mcu_dwconv2d_f32" if node.op == "depthwise_conv2d" else "mcu_conv2d_f32"
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    return _call(node, kernel, params, (x.name, w.name, bias))


def _linear(g: Graph, node: Node) -> Node:
    x, w = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]]
    params = {"batches": int(np.prod(x.shape[:-1])), "in_features": int(x.shape[-1]),
              "out_features": int(w.shape[0]), **_act(node)}
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    return _call(node, "mcu_fully_connected_f32", params, (x.name, w.name, bias))


def _pool(g: Graph, node: Node) -> Node:
    x, out = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    params = {**pool_geometry(x, out, node), **_act(node)}
    kernel = "mcu_maxpool2d_f32" if node.op == "max_pool2d" else "mcu_avgpool2d_f32"
    return _call(node, kernel, params, (x.name,))


def _binary(g: Graph, node: Node) -> Node:
    a, b, out = (g.tensors[t] for t in (*node.inputs[:2], node.outputs[0]))
    params = {"input1": _dims4(a.shape, node.source), "input2": _dims4(b.shape, node.source),
              "output": _dims4(out.shape, node.source), "subtract": int(node.op == "sub"), **_act(node)}
    return _call(node, "mcu_mul_f32" if node.op == "mul" else "mcu_add_f32", params, (a.name, b.name))


def _softmax(g: Graph, node: Node) -> Node:
    x = g.tensors[node.inputs[0]]
    if node.attrs["dim"] != len(x.shape) - 1:
        raise LoweringError(f"softmax over dim {node.attrs['dim']} at {node.source}: only the last dim "
                            f"is supported")
    params = {"rows": int(np.prod(x.shape[:-1])), "cols": int(x.shape[-1])}
    return _call(node, "mcu_softmax_f32", params, (x.name,))


def _clamp(g: Graph, node: Node) -> Node:
    x = g.tensors[node.inputs[0]]
    return _call(node, "mcu_clamp_f32", {"size": int(np.prod(x.shape)), **_act(node)}, (x.name,))


def _transpose(g: Graph, node: Node) -> Node:
    x = g.tensors[node.inputs[0]]
    return _call(node, "mcu_transpose_f32", transpose_params(x.shape, node.attrs["perm"]), (x.name,))


def _reduce(g: Graph, node: Node) -> Node:
    x = g.tensors[node.inputs[0]]
    dims_in = _dims4(x.shape, node.source)
    pad = 4 - len(x.shape)
    axes = {d + pad for d in node.attrs["dims"]}
    dims_out = tuple(1 if i in axes else d for i, d in enumerate(dims_in))
    count = int(np.prod([dims_in[i] for i in axes], dtype=np.int64))
    divisor = float(count) if node.op == "mean" else 1.0
    return _call(node, "mcu_reduce_f32", {"input": dims_in, "output": dims_out, "divisor": divisor}, (x.name,))


FLOAT_LOWERINGS: dict[str, Callable[[Graph, Node], Node]] = {
    "conv2d": _conv, "depthwise_conv2d": _conv, "linear": _linear, "max_pool2d": _pool, "avg_pool2d": _pool,
    "add": _binary, "sub": _binary, "mul": _binary, "softmax": _softmax, "clamp": _clamp,
    "transpose": _transpose, "mean": _reduce, "sum": _reduce,
}


def _is_float(g: Graph, node: Node) -> bool:
    return all(g.tensors[t].dtype == "float32" for t in (*node.inputs, *node.outputs) if t is not None)


def lower_float(graph: Graph) -> Graph:
    """Replace every float32 op by its float kernel call, reshapes by aliases (pass: Graph -> Graph)."""
    nodes = []
    for n in graph.nodes:
        if n.op in ("call", "alias") or not _is_float(graph, n):
            nodes.append(n)
        elif n.op == "reshape":
            nodes.append(n.replace(op="alias"))
        elif n.op in FLOAT_LOWERINGS:
            nodes.append(FLOAT_LOWERINGS[n.op](graph, n))
        else:
            raise LoweringError(f"op '{n.op}' at {n.source} has no float32 kernel")
    return graph.replace(nodes=tuple(nodes))
