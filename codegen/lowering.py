"""Lowering is data: each IR op maps to a C kernel, a parameter builder and the twin that mirrors it.

A lowered node has op "call" and attrs:
- kernel: the C function name (also the twin's name without the `mcu_` prefix);
- path: the kernel source under runtime_c/kernels, without `.c` (selective build reads these);
- params_type / params: the C parameter struct and its field values (a dict the twin takes as is);
- quant: (multiplier tensor, shift tensor) for per-channel kernels, else None.
node.inputs are the kernel's array arguments in C order (None for a NULL pointer), then the output.
Reshapes stay as op "alias": no code, the planner gives their output the input's storage.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from mcu.codegen.ir import Graph, Node, QParams, Tensor
from mcu.twins.activation import softmax_exp_table
from mcu.codegen.passes.canonicalize import LoweringError
from mcu.twins.quant import quantize_multiplier, quantize_multipliers


@dataclass(frozen=True)
class Kernel:
    name: str
    path: str
    params_type: str
    inplace: str = ""  # "elementwise": the output may take the bytes of a same-sized input that dies here


KERNELS = {k.name: k for k in [
    Kernel("mcu_conv2d_s8", "conv/mcu_conv2d_s8", "mcu_conv2d_params_t"),
    Kernel("mcu_dwconv2d_s8", "conv/mcu_dwconv2d_s8", "mcu_conv2d_params_t"),
    Kernel("mcu_fully_connected_s8", "fc/mcu_fully_connected_s8", "mcu_fc_params_t"),
    Kernel("mcu_maxpool2d_s8", "pool/mcu_maxpool2d_s8", "mcu_pool2d_params_t"),
    Kernel("mcu_avgpool2d_s8", "pool/mcu_avgpool2d_s8", "mcu_pool2d_params_t"),
    Kernel("mcu_add_s8", "elementwise/mcu_add_s8", "mcu_add_params_t", inplace="elementwise"),
    Kernel("mcu_softmax_s8", "activation/mcu_softmax_s8", "mcu_softmax_params_t"),
    Kernel("mcu_transpose_s8", "shape/mcu_transpose_s8", "mcu_transpose_params_t"),
]}


def act_range(qp: QParams, act: tuple[float, float] | None) -> tuple[int, int]:
    """The int8 clamp [act_min, act_max] of a fused real-valued activation range."""
    lo, hi = -128, 127
    if act is not None:
        if act[0] != float("-inf"):
            lo = max(lo, qp.zp + int(round(act[0] / qp.s)))
        if act[1] != float("inf"):
            hi = min(hi, qp.zp + int(round(act[1] / qp.s)))
    return lo, hi


def _dims(shape) -> tuple[int, int, int, int]:
    """NHWC dims of a 4-d shape; a 2-d [B, K] is (B, 1, 1, K)."""
    if len(shape) == 4:
        return tuple(int(d) for d in shape)
    return (int(np.prod(shape[:-1])), 1, 1, int(shape[-1]))


class _Ctx:
    """Collects the constants a lowering creates (multipliers, shifts, tables)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.tensors = dict(graph.tensors)

    def const(self, name: str, data: np.ndarray, dtype: str) -> str:
        self.tensors[name] = Tensor(name, tuple(data.shape), dtype, data=data)
        return name

    def per_channel(self, node: Node, reals: np.ndarray) -> tuple[str, str]:
        mult, shift = quantize_multipliers(reals)
        return (self.const(f"{node.name}_mult", mult, "int32"), self.const(f"{node.name}_shift", shift, "int32"))


def _call(node: Node, kernel: str, params: dict, inputs, quant=None) -> Node:
    k = KERNELS[kernel]
    return node.replace(op="call", inputs=tuple(inputs), attrs={
        "kernel": k.name, "path": k.path, "params_type": k.params_type, "params": params, "quant": quant,
        "inplace": k.inplace})


def _conv(ctx: _Ctx, node: Node) -> Node:
    t = ctx.tensors
    x, w, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    lo, hi = act_range(out.qparams, node.attrs.get("act"))
    reals = x.qparams.s * np.asarray(w.qparams.scale, dtype=np.float64) / out.qparams.s
    params = {
        "input": _dims(x.shape), "filter": _dims(w.shape), "output": _dims(out.shape),
        "stride_h": node.attrs["stride"][0], "stride_w": node.attrs["stride"][1],
        "pad_top": node.attrs["padding"][0], "pad_left": node.attrs["padding"][1],
        "dilation_h": node.attrs["dilation"][0], "dilation_w": node.attrs["dilation"][1],
        "input_offset": -x.qparams.zp, "output_offset": out.qparams.zp, "act_min": lo, "act_max": hi,
    }
    kernel = "mcu_conv2d_s8" if node.op == "conv2d" else "mcu_dwconv2d_s8"
    return _call(node, kernel, params, (x.name, w.name, bias), ctx.per_channel(node, reals))


def _linear(ctx: _Ctx, node: Node) -> Node:
    t = ctx.tensors
    x, w, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    lo, hi = act_range(out.qparams, node.attrs.get("act"))
    reals = x.qparams.s * np.asarray(w.qparams.scale, dtype=np.float64) / out.qparams.s
    params = {"batches": int(np.prod(x.shape[:-1])), "in_features": int(x.shape[-1]),
              "out_features": int(w.shape[0]), "input_offset": -x.qparams.zp, "output_offset": out.qparams.zp,
              "act_min": lo, "act_max": hi}
    return _call(node, "mcu_fully_connected_s8", params, (x.name, w.name, bias), ctx.per_channel(node, reals))


def _pool(ctx: _Ctx, node: Node) -> Node:
    t = ctx.tensors
    x, out = t[node.inputs[0]], t[node.outputs[0]]
    a = node.attrs
    lo, hi = act_range(out.qparams, a.get("act"))
    divisor = 0
    if node.op == "avg_pool2d":
        divisor = a["divisor_override"] or (a["kernel"][0] * a["kernel"][1] if a["count_include_pad"] else 0)
    params = {"input": _dims(x.shape), "output": _dims(out.shape),
              "kernel_h": a["kernel"][0], "kernel_w": a["kernel"][1],
              "stride_h": a["stride"][0], "stride_w": a["stride"][1],
              "pad_top": a["padding"][0], "pad_left": a["padding"][1],
              "zero_point": x.qparams.zp, "divisor": divisor, "act_min": lo, "act_max": hi}
    kernel = "mcu_maxpool2d_s8" if node.op == "max_pool2d" else "mcu_avgpool2d_s8"
    return _call(node, kernel, params, (x.name,))


def _add(ctx: _Ctx, node: Node) -> Node:
    t = ctx.tensors
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    if a.shape != b.shape:
        raise LoweringError(f"add of shapes {a.shape} and {b.shape} at {node.source}: broadcasting is not "
                            f"supported yet; expand the smaller operand")
    left_shift = 20
    twice_max = 2 * max(a.qparams.s, b.qparams.s)
    m1, s1 = quantize_multiplier(a.qparams.s / twice_max)
    m2, s2 = quantize_multiplier(b.qparams.s / twice_max)
    mo, so = quantize_multiplier(twice_max / ((1 << left_shift) * out.qparams.s))
    lo, hi = act_range(out.qparams, node.attrs.get("act"))
    params = {"size": int(np.prod(a.shape)), "left_shift": left_shift,
              "input1_offset": -a.qparams.zp, "input1_multiplier": m1, "input1_shift": s1,
              "input2_offset": -b.qparams.zp, "input2_multiplier": m2, "input2_shift": s2,
              "output_offset": out.qparams.zp, "output_multiplier": mo, "output_shift": so,
              "act_min": lo, "act_max": hi}
    return _call(node, "mcu_add_s8", params, (a.name, b.name))


def _softmax(ctx: _Ctx, node: Node) -> Node:
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    if node.attrs["dim"] != len(x.shape) - 1:
        raise LoweringError(f"softmax over dim {node.attrs['dim']} at {node.source}: only the last dim "
                            f"is supported")
    table = ctx.const(f"{node.name}_exp", softmax_exp_table(x.qparams.s), "uint16")
    params = {"rows": int(np.prod(x.shape[:-1])), "cols": int(x.shape[-1])}
    return _call(node, "mcu_softmax_s8", params, (table, x.name))


def _transpose(ctx: _Ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    pad = 4 - len(x.shape)
    params = {"in_dims": (1,) * pad + tuple(int(d) for d in x.shape),
              "perm": tuple(range(pad)) + tuple(p + pad for p in node.attrs["perm"])}
    return _call(node, "mcu_transpose_s8", params, (x.name,))


def _alias(ctx: _Ctx, node: Node) -> Node:
    return node.replace(op="alias")


LOWERINGS: dict[str, Callable[[_Ctx, Node], Node]] = {
    "conv2d": _conv, "depthwise_conv2d": _conv, "linear": _linear,
    "max_pool2d": _pool, "avg_pool2d": _pool, "add": _add, "softmax": _softmax,
    "transpose": _transpose, "reshape": _alias,
}


def lower(graph: Graph) -> Graph:
    """Replace every op by its kernel call (pass: Graph -> Graph)."""
    ctx = _Ctx(graph)
    nodes = tuple(LOWERINGS[n.op](ctx, n) for n in graph.nodes)
    return graph.replace(nodes=nodes, tensors=ctx.tensors)


def kernel_paths(graph: Graph) -> list[str]:
    """The selective-build manifest: sorted kernel sources the graph calls."""
    return sorted({n.attrs["path"] for n in graph.nodes if n.op == "call"})
