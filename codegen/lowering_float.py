"""Lowering overrides for float32 ops (quantize="none", mixed= float layers): FLOAT32 maps each op to a float
kernel call (the same node attrs as codegen/lowering.py says, quant None); transposes, reshapes and the geometry
helpers are int8's. Fused activations become float clamp bounds; no bound is +-FLT_MAX."""
from __future__ import annotations

from typing import Callable

import numpy as np

from mcu.codegen.ir import Node
from mcu.codegen.lowering import _dims4, call_node, conv_geometry, f32, matmul_dims, pool_geometry
from mcu.codegen.lowering_s8 import INT8
from mcu.codegen.twins.float32 import BINARY_OPS, REDUCE_OPS, UNARY_OPS
from mcu.codegen.twins.recurrent import RNN_CELLS
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


def _binary_op(ctx, node: Node) -> Node:
    """div, minimum, maximum, pow of two tensors: mcu_binary_f32."""
    a, b, out = (ctx.tensors[t] for t in (*node.inputs[:2], node.outputs[0]))
    params = {"input1": _dims4(a.shape, node.source), "input2": _dims4(b.shape, node.source),
              "output": _dims4(out.shape, node.source), "op": BINARY_OPS.index(node.op), **_act(node)}
    return _call(node, "mcu_binary_f32", params, (a.name, b.name))


def _matmul(ctx, node: Node) -> Node:
    a, b = ctx.tensors[node.inputs[0]], ctx.tensors[node.inputs[1]]
    return _call(node, "mcu_matmul_f32", {**matmul_dims(a, b, node), **_act(node)}, (a.name, b.name))


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
    op = REDUCE_OPS[{"mean": "sum", "amax": "max", "amin": "min"}.get(node.op, node.op)]
    return _call(node, "mcu_reduce_f32", {"input": dims_in, "output": dims_out, "divisor": divisor, "op": op},
                 (x.name,))


def _arg(ctx, node: Node) -> Node:
    """argmax / argmin over one dim as [outer, len, inner] (None: the whole tensor); the first extreme wins, NaN
    counts as the largest (torch's rules)."""
    x = ctx.tensors[node.inputs[0]]
    shape = tuple(x.shape) or (1,)
    d = node.attrs["dim"]
    outer, length, inner = (1, int(np.prod(shape)), 1) if d is None else \
        (int(np.prod(shape[:d])), int(shape[d]), int(np.prod(shape[d + 1:])))
    return _call(node, "mcu_arg_f32", {"outer": outer, "len": length, "inner": inner,
                                       "op": 0 if node.op == "argmax" else 1}, (x.name,))


def _argsort(ctx, node: Node) -> Node:
    """argsort along one dim as [outer, len, inner]: int32 indices, stable (mcu_argsort_f32)."""
    x = ctx.tensors[node.inputs[0]]
    shape, d = tuple(x.shape) or (1,), node.attrs["dim"] if x.shape else 0
    return _call(node, "mcu_argsort_f32", {"outer": int(np.prod(shape[:d])), "len": int(shape[d]),
                                           "inner": int(np.prod(shape[d + 1:])),
                                           "descending": int(node.attrs["descending"])}, (x.name,))


# aten overload of a `lut` node -> (MCU_UNARY_* name, (a, b, c) from the op's scalar args and kwargs)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _unary_spec(fn, source: str) -> tuple[str, tuple[float, float, float]]:
    """The mcu_unary_f32 function and scalars of a `lut` node's (aten overload, args, kwargs)."""
    name, args, kwargs = fn
    op, kw = name.split(".")[0], dict(kwargs)
    scalars = [a for a in args if a is not ...]

    def arg(i, key, default):
        return args[i] if len(args) > i else kw.get(key, default)

    if args and args[0] is not ... and op in ("add", "mul"):  # scalar first: the same sum or product
        args = (..., args[0], *args[2:])
    plain = {"abs", "neg", "exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "sigmoid", "tanh",
             "floor", "ceil", "trunc", "sign", "erf", "hardswish", "hardsigmoid", "silu", "mish", "log1p", "expm1",
             "atan", "asin", "acos"}
    if op in plain:
        return op, (0.0, 0.0, 0.0)
    if op == "log_sigmoid":
        return "log_sigmoid", (0.0, 0.0, 0.0)
    if op == "round" and arg(1, "decimals", 0) == 0:
        return "round", (0.0, 0.0, 0.0)
    if op == "leaky_relu":
        return "leaky_relu", (float(arg(1, "negative_slope", 0.01)), 0.0, 0.0)
    if op == "rrelu" and not arg(3, "training", False):
        return "leaky_relu", ((float(arg(1, "lower", 1 / 8)) + float(arg(2, "upper", 1 / 3))) / 2, 0.0, 0.0)
    if op == "elu":
        return "elu", (float(arg(1, "alpha", 1.0)), float(arg(2, "scale", 1.0)), float(arg(3, "input_scale", 1.0)))
    if op == "selu":
        return "elu", (SELU_ALPHA, SELU_SCALE, 1.0)
    if op == "celu":
        alpha = float(arg(1, "alpha", 1.0))
        return "elu", (alpha, 1.0, 1.0 / alpha)
    if op == "softplus":
        return "softplus", (float(arg(1, "beta", 1.0)), float(arg(2, "threshold", 20.0)), 0.0)
    if op == "gelu":
        return ("gelu_tanh" if kw.get("approximate", "none") == "tanh" else "gelu"), (0.0, 0.0, 0.0)
    if op in ("hardshrink", "softshrink"):
        return op, (float(arg(1, "lambd", 0.5)), 0.0, 0.0)
    if op == "threshold":
        return "threshold", (float(args[1]), float(args[2]), 0.0)
    if op in ("add", "sub") and args[0] is ... and len(scalars) == 1:
        s = float(scalars[0]) * float(kw.get("alpha", 1))
        return "affine", (1.0, s if op == "add" else -s, 0.0)
    if op == "mul" and args[0] is ... and len(scalars) == 1:
        return "affine", (float(scalars[0]), 0.0, 0.0)
    if op == "rsub" and args[0] is ...:
        return "affine", (-float(arg(2, "alpha", 1)), float(args[1]), 0.0)
    if op == "div" and args[0] is ... and len(scalars) == 1 and kw.get("rounding_mode") is None:
        return "div", (float(scalars[0]), 0.0, 0.0)
    if op == "pow" and args[0] is ...:
        e = float(args[1])
        special = {2.0: "square", 0.5: "sqrt", -1.0: "reciprocal", -0.5: "rsqrt"}
        if e in special:
            return special[e], (0.0, 0.0, 0.0)
        return ("affine", (1.0, 0.0, 0.0)) if e == 1.0 else ("pow", (e, 0.0, 0.0))
    raise LoweringError(f"the elementwise function {name} with arguments {scalars} at {source} has no float32 "
                        f"form in mcu_unary_f32; compile with quantize='int8' (it runs through a table there)")


def _unary(ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    name, (a, b, c) = _unary_spec(node.attrs["fn"], node.source)
    params = {"size": int(np.prod(x.shape)), "op": UNARY_OPS.index(name), "a": f32(a), "b": f32(b), "c": f32(c)}
    if node.attrs.get("act") is None:
        return _call(node, "mcu_unary_f32", params, (x.name,))
    # a ReLU fused into the function (passes/fuse_clamp.py): the function into a temporary, then the clamp
    tmp = ctx.temp(f"{node.name}_unclamped", x.shape, "float32")
    return [_call(node.replace(outputs=(tmp,), attrs={**node.attrs, "float_node": None}), "mcu_unary_f32", params,
                  (x.name,)),
            _call(node.replace(name=f"{node.name}_clamp"), "mcu_clamp_f32",
                  {"size": params["size"], **_act(node)}, (tmp,))]


def _concat(ctx, node: Node) -> Node:
    ins, out, dim = [ctx.tensors[i] for i in node.inputs], ctx.tensors[node.outputs[0]], node.attrs["dim"]
    sizes = tuple(int(np.prod(x.shape[dim:], dtype=np.int64)) for x in ins)
    params = {"num_inputs": len(ins), "outer": int(np.prod(out.shape[:dim], dtype=np.int64)),
              "sizes": sizes + (0,) * (8 - len(sizes))}
    return _call(node, "mcu_concat_f32", params, node.inputs)


def _recurrent(ctx, node: Node) -> Node:
    """rnn (GRU, tanh, ReLU) and lstm over x [B, T, I] from h0 (and c0): mcu_rnn_f32 / mcu_lstm_f32, the time loop
    inside the kernel. An absent bias is a NULL input."""
    x, h0 = ctx.tensors[node.inputs[0]], ctx.tensors[node.inputs[1]]
    cell = RNN_CELLS.index(node.attrs.get("cell", "lstm"))
    params = {"batches": int(x.shape[0]), "steps": int(x.shape[1]), "input_size": int(x.shape[2]),
              "hidden": int(h0.shape[-1]), "cell": cell, "reverse": int(node.attrs["reverse"])}
    return _call(node, "mcu_lstm_f32" if node.op == "lstm" else "mcu_rnn_f32", params, node.inputs)


def _layer_norm(ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    cols = int(np.prod(x.shape[len(x.shape) - node.attrs["normalized"]:]))
    return _call(node, "mcu_layer_norm_f32", {"rows": int(np.prod(x.shape)) // cols, "cols": cols,
                                              "eps": f32(node.attrs["eps"]), "rms": int(node.op == "rms_norm")},
                 (*node.inputs, None, None)[:3])  # rms_norm: no bias


FLOAT32: dict[str, Callable] = {
    "conv2d": _conv, "depthwise_conv2d": _conv, "linear": _linear, "max_pool2d": _pool, "avg_pool2d": _pool,
    "add": _binary, "sub": _binary, "mul": _binary, "softmax": _softmax, "clamp": _clamp,
    "div": _binary_op, "minimum": _binary_op, "maximum": _binary_op, "pow": _binary_op,
    "matmul": _matmul, "rnn": _recurrent, "lstm": _recurrent, "lut": _unary, "concat": _concat, "layer_norm": _layer_norm, "rms_norm": _layer_norm, "transpose": INT8["transpose"], "reshape": INT8["reshape"], "slice": INT8["slice"], "gather": INT8["gather"], "scatter": INT8["scatter"], "upsample_nearest": INT8["upsample_nearest"], "pad": INT8["pad"], "mean": _reduce, "sum": _reduce, "amax": _reduce, "amin": _reduce, "prod": _reduce, "argmax": _arg, "argmin": _arg, "argsort": _argsort,
}
