"""Lowering of int8 activations: INT8, the table of (op -> parameter builder), and the builders of the compute ops.

- Builders that serve int8 and int16 alike (INTEGER) name their kernel by the element type (`kernel_name`) and
  clamp to its range; codegen/lowering_s16.py and codegen/lowering_float.py are INT8 plus overrides.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from mcu.codegen.errors import LoweringError
from mcu.codegen.ir import Node, Tensor
from mcu.codegen.lowering import (Ctx, _dims4, act_range, call_node, conv_geometry, kernel_name, matmul_dims,
                                  pool_geometry)
from mcu.codegen.lowering_shape import _alias, _concat, _gather, _pad, _scatter, _slice, _transpose, _upsample
from mcu.codegen.twins.activation import lut_table, softmax_exp_table, unary_function
from mcu.codegen.twins.norm import norm_constants
from mcu.codegen.twins.quant import quantize_multiplier
from mcu.codegen.twins.shape import BILINEAR_BITS, bilinear_taps



def _conv(ctx: Ctx, node: Node) -> Node:
    """int8 and int16: the int16 conv takes any groups; int8 has its own grouped kernel."""
    t, dtype = ctx.tensors, ctx.dtype(node)
    x, w, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    reals = x.qparams.s * np.asarray(w.qparams.scale, dtype=np.float64) / out.qparams.s
    params = {**conv_geometry(x, w, out, node.attrs), "input_offset": -x.qparams.zp,
              "output_offset": out.qparams.zp, "act_min": lo, "act_max": hi}
    op = "dwconv2d" if node.op == "depthwise_conv2d" else "conv2d"
    if op == "conv2d" and node.attrs.get("groups", 1) > 1 and dtype == "int8":
        op = "conv2d_grouped"
    return call_node(node, kernel_name(op, dtype), params, (x.name, w.name, ctx.bias(node, x, w)),
                 ctx.per_channel(node, reals))


def _conv_transpose(ctx: Ctx, node: Node) -> Node:
    """A transposed conv (groups 1, dilation 1; weights OHWI after the layout pass): its own gather-form kernel."""
    t = ctx.tensors
    x, w, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    if node.attrs.get("groups", 1) != 1 or tuple(node.attrs["dilation"]) != (1, 1):
        raise LoweringError(f"a transposed conv with groups {node.attrs.get('groups')} or dilation "
                            f"{node.attrs['dilation']} at {node.source}: the int8 kernel takes groups 1, dilation 1")
    lo, hi = act_range(out.qparams, node.attrs.get("act"))
    reals = x.qparams.s * np.asarray(w.qparams.scale, dtype=np.float64) / out.qparams.s
    params = {**conv_geometry(x, w, out, node.attrs), "input_offset": -x.qparams.zp,
              "output_offset": out.qparams.zp, "act_min": lo, "act_max": hi}
    return call_node(node, "mcu_conv_transpose2d_s8", params, (x.name, w.name, ctx.bias(node, x, w)),
                     ctx.per_channel(node, reals))


def _bilinear(ctx: Ctx, node: Node) -> Node:
    """Bilinear resampling: per-axis (index, index, weight) tables, 4 taps an output element, requantized from
    2^-22 of the input's scale to the output's (one rounding shift when the scales are equal)."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    scales = node.attrs.get("scales") or (None, None)
    taps = [bilinear_taps(x.shape[i], out.shape[i], node.attrs["align_corners"], scales[i - 1]) for i in (1, 2)]
    tables = [ctx.const(f"{node.name}_{axis}_taps", tab.reshape(-1), "int16") for axis, tab in zip("yx", taps)]
    mult, shift = quantize_multiplier(x.qparams.s / out.qparams.s / 2.0 ** (2 * BILINEAR_BITS))
    lo, hi = act_range(out.qparams, node.attrs.get("act"))
    params = {"input": _dims4(x.shape, node.source), "output": _dims4(out.shape, node.source),
              "input_offset": -x.qparams.zp, "output_offset": out.qparams.zp, "multiplier": mult, "shift": shift,
              "act_min": lo, "act_max": hi}
    return call_node(node, "mcu_upsample_bilinear_s8", params, (*tables, x.name))


def _linear(ctx: Ctx, node: Node) -> Node:
    t, dtype = ctx.tensors, ctx.dtype(node)
    x, w, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    reals = x.qparams.s * np.asarray(w.qparams.scale, dtype=np.float64) / out.qparams.s
    params = {"batches": int(np.prod(x.shape[:-1])), "in_features": int(x.shape[-1]),
              "out_features": int(w.shape[0]), "input_offset": -x.qparams.zp, "output_offset": out.qparams.zp,
              "act_min": lo, "act_max": hi}
    return call_node(node, kernel_name("fully_connected", dtype), params, (x.name, w.name, ctx.bias(node, x, w)),
                 ctx.per_channel(node, reals))


def _pool(ctx: Ctx, node: Node) -> Node:
    t, dtype = ctx.tensors, ctx.dtype(node)
    x, out = t[node.inputs[0]], t[node.outputs[0]]
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    params = {**pool_geometry(x, out, node), "zero_point": x.qparams.zp, "act_min": lo, "act_max": hi}
    kernel = kernel_name("maxpool2d" if node.op == "max_pool2d" else "avgpool2d", dtype)
    return call_node(node, kernel, params, (x.name,))


ADD_LEFT_SHIFT = {"int8": 20, "int16": 15}  # int16 inputs << 15 keep 16 bits of headroom (TFLite's 16x8 add)


def _add(ctx: Ctx, node: Node) -> Node:
    """Same shapes: mcu_add (TFLite's add encoding); broadcasts and subtracts through _add_broadcast."""
    t, dtype = ctx.tensors, ctx.dtype(node)
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    if a.shape != b.shape or node.op == "sub":
        return _add_broadcast(ctx, node)
    left_shift = ADD_LEFT_SHIFT[dtype]
    twice_max = 2 * max(a.qparams.s, b.qparams.s)
    m1, s1 = quantize_multiplier(a.qparams.s / twice_max)
    m2, s2 = quantize_multiplier(b.qparams.s / twice_max)
    mo, so = quantize_multiplier(twice_max / ((1 << left_shift) * out.qparams.s))
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    params = {"size": int(np.prod(a.shape)), "left_shift": left_shift,
              "input1_offset": -a.qparams.zp, "input1_multiplier": m1, "input1_shift": s1,
              "input2_offset": -b.qparams.zp, "input2_multiplier": m2, "input2_shift": s2,
              "output_offset": out.qparams.zp, "output_multiplier": mo, "output_shift": so,
              "act_min": lo, "act_max": hi}
    return call_node(node, kernel_name("add", dtype), params, (a.name, b.name))


def _softmax(ctx: Ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    if node.attrs["dim"] != len(x.shape) - 1:
        raise LoweringError(f"softmax over dim {node.attrs['dim']} at {node.source}: only the last dim "
                            f"is supported")
    table = ctx.const(f"{node.name}_exp", softmax_exp_table(x.qparams.s), "uint16")
    params = {"rows": int(np.prod(x.shape[:-1])), "cols": int(x.shape[-1])}
    return call_node(node, "mcu_softmax_s8", params, (table, x.name))


def _add_broadcast(ctx: Ctx, node: Node) -> Node:
    """Broadcasting add or sub, int8 or int16: mcu_add's arithmetic on the broadcast pairs."""
    t, dtype = ctx.tensors, ctx.dtype(node)
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    left_shift = ADD_LEFT_SHIFT[dtype]
    twice_max = 2 * max(a.qparams.s, b.qparams.s)
    m1, s1 = quantize_multiplier(a.qparams.s / twice_max)
    m2, s2 = quantize_multiplier(b.qparams.s / twice_max)
    mo, so = quantize_multiplier(twice_max / ((1 << left_shift) * out.qparams.s))
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    params = {"input1": _dims4(a.shape, node.source), "input2": _dims4(b.shape, node.source),
              "output": _dims4(out.shape, node.source), "subtract": int(node.op == "sub"), "left_shift": left_shift,
              "input1_offset": -a.qparams.zp, "input1_multiplier": m1, "input1_shift": s1,
              "input2_offset": -b.qparams.zp, "input2_multiplier": m2, "input2_shift": s2,
              "output_offset": out.qparams.zp, "output_multiplier": mo, "output_shift": so,
              "act_min": lo, "act_max": hi}
    return call_node(node, kernel_name("add_broadcast", dtype), params, (a.name, b.name))


def _mul(ctx: Ctx, node: Node) -> Node:
    """Broadcasting product, int8 or int16 (a squeeze-excite gate x * gate)."""
    t, dtype = ctx.tensors, ctx.dtype(node)
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    mult, shift = quantize_multiplier(a.qparams.s * b.qparams.s / out.qparams.s)
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    params = {"input1": _dims4(a.shape, node.source), "input2": _dims4(b.shape, node.source),
              "output": _dims4(out.shape, node.source), "input1_offset": -a.qparams.zp,
              "input2_offset": -b.qparams.zp, "output_offset": out.qparams.zp, "output_multiplier": mult,
              "output_shift": shift, "act_min": lo, "act_max": hi}
    return call_node(node, kernel_name("mul", dtype), params, (a.name, b.name))


def _lut(ctx: Ctx, node: Node) -> Node:
    """Any int8 -> int8 elementwise function: the table is torch's Q/DQ result for each of the 256 inputs."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    if node.op == "clamp":
        lo_r, hi_r = node.attrs["act"]
        bounds = [None if abs(v) == float("inf") else v for v in (lo_r, hi_r)]
        fn = unary_function(("clamp.default", (..., *bounds), ()))
    else:
        fn = unary_function(node.attrs["fn"])
    table = lut_table(fn, x.qparams.s, x.qparams.zp, out.qparams.s, out.qparams.zp)
    lo, hi = act_range(out.qparams, node.attrs.get("act"))
    table = ctx.const(f"{node.name}_table", np.clip(table, lo, hi).astype(np.int8), "int8")
    return call_node(node, "mcu_lut_s8", {"size": int(np.prod(x.shape))}, (table, x.name))


def _reduce(ctx: Ctx, node: Node) -> Node:
    """mean / sum over any dims: one sum kernel whose multiplier carries the scales (and 1 / count)."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    dims_in = _dims4(x.shape, node.source)
    pad = 4 - len(x.shape)
    axes = {d + pad for d in node.attrs["dims"]}
    dims_out = tuple(1 if i in axes else d for i, d in enumerate(dims_in))
    count = int(np.prod([dims_in[i] for i in axes], dtype=np.int64))
    real = x.qparams.s / out.qparams.s / (count if node.op == "mean" else 1)
    mult, shift = quantize_multiplier(real)
    params = {"input": dims_in, "output": dims_out, "input_offset": -x.qparams.zp,
              "output_offset": out.qparams.zp, "multiplier": mult, "shift": shift}
    return call_node(node, "mcu_reduce_sum_s8", params, (x.name,))


def _weights_of(ctx: Ctx, node: Node, b: Tensor) -> str | None:
    """A matmul's constant right operand with zero point 0 (a tied embedding's table) as a fully connected layer's
    weights [N, K] (its bytes as they are when it is stored [N, K]: the gather and the product share one table)."""
    if not b.is_const or not b.qparams.per_tensor or b.qparams.zp != 0 or b.dtype != "int8" or len(b.shape) != 2:
        return None
    if node.attrs.get("rhs_transposed"):
        return b.name
    w = np.ascontiguousarray(b.data.T)
    name = ctx.const(f"{node.name}_weights", w, "int8")
    ctx.tensors[name] = ctx.tensors[name].replace(qparams=b.qparams)
    return name


def _matmul(ctx: Ctx, node: Node) -> Node:
    t = ctx.tensors
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    if ctx.dtype(node) == "int8" and (w := _weights_of(ctx, node, b)) is not None:  # activations x weights: a GEMM
        lo, hi = act_range(out.qparams, node.attrs.get("act"))
        reals = np.full(t[w].shape[0], a.qparams.s * b.qparams.s * node.attrs.get("scale", 1.0) / out.qparams.s)
        params = {"batches": int(np.prod(a.shape[:-1])), "in_features": int(a.shape[-1]),
                  "out_features": int(t[w].shape[0]), "input_offset": -a.qparams.zp,
                  "output_offset": out.qparams.zp, "act_min": lo, "act_max": hi}
        return call_node(node, "mcu_fully_connected_s8", params, (a.name, w, None), ctx.per_channel(node, reals))
    dtype = ctx.dtype(node)
    mult, shift = quantize_multiplier(a.qparams.s * b.qparams.s * node.attrs.get("scale", 1.0) / out.qparams.s)
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    params = {**matmul_dims(a, b, node), "lhs_offset": -a.qparams.zp, "rhs_offset": -b.qparams.zp,
              "output_offset": out.qparams.zp, "output_multiplier": mult, "output_shift": shift,
              "act_min": lo, "act_max": hi}
    return call_node(node, kernel_name("matmul", dtype), params, (a.name, b.name))


def _norm(ctx: Ctx, node: Node) -> Node:
    """layer_norm and rms_norm over the last `normalized` dims, int8 and int16 alike: the integer kernels, gamma,
    beta and the output scale folded into an int32 weight and an int64 bias per column (twins.norm.norm_constants)."""
    t, dtype = ctx.tensors, ctx.dtype(node)
    x, out = t[node.inputs[0]], t[node.outputs[0]]
    size = int(np.prod(x.shape))
    cols = int(np.prod(x.shape[len(x.shape) - node.attrs["normalized"]:]))
    gamma, beta = (t[n].data if n is not None else None for n in (list(node.inputs[1:3]) + [None, None])[:2])
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    params, weight, bias = norm_constants(size // cols, cols, node.attrs["eps"], x.qparams.s, x.qparams.zp,
                                          out.qparams.s, out.qparams.zp, gamma, beta, lo, hi,
                                          np.int8 if dtype == "int8" else np.int16)
    inputs = (x.name, ctx.const(f"{node.name}_weight", weight, "int32"), ctx.const(f"{node.name}_bias", bias, "int64"))
    return call_node(node, kernel_name(node.op, dtype), params, inputs)


# op -> builder, for int8 activations; INTEGER: those that serve int16 as they are (codegen/lowering_s16.py)
INT8: dict[str, Callable[[Ctx, Node], Node | list[Node]]] = {
    "conv2d": _conv, "depthwise_conv2d": _conv, "linear": _linear,
    "max_pool2d": _pool, "avg_pool2d": _pool, "add": _add, "softmax": _softmax,
    "transpose": _transpose, "reshape": _alias, "slice": _slice, "pad": _pad,
    "gather": _gather, "scatter": _scatter, "sub": _add, "mul": _mul, "lut": _lut, "clamp": _lut, "concat": _concat, "upsample_nearest": _upsample,
    "mean": _reduce, "sum": _reduce, "matmul": _matmul, "layer_norm": _norm, "rms_norm": _norm,
    "conv_transpose2d": _conv_transpose, "upsample_bilinear": _bilinear,
}
INTEGER = ("conv2d", "depthwise_conv2d", "linear", "max_pool2d", "avg_pool2d", "add", "sub", "mul", "matmul",
           "transpose", "reshape", "slice", "concat", "layer_norm", "rms_norm", "pad", "gather", "scatter")
