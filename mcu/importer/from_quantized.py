"""Converted PT2E GraphModule (Q/DQ around float ops) -> mcu IR with integer tensors, in torch (NCHW) order.

- A quantize_per_tensor node defines an int8 (or, a16w8, int16) activation; its dequantize reads the same
  tensor. A quantize of another quantized tensor's dequantize is a requantization: an identity look-up table
  between int8 tensors, a `convert` node where the integer type changes (mixed precision).
- An op left float by the quantizer (meta["mcu_precision"] == "float32", mixed precision) becomes a float32
  node as frontend_float makes them: a `dequantize` node feeds it each integer input, a `quantize` node
  turns its result back into the consumer's integer tensor, and its parameters stay float32 constants.
- The float bias of an a16w8 conv/linear (the quantizer leaves it float) becomes a float32 constant; the
  int16 lowering stores it as int64.
- A frozen int8/int32 parameter behind a dequantize_per_channel becomes a constant with per-channel qparams.
- A float op (conv, add, ...) becomes one IR node whose output is the quantize node that follows it;
  a ReLU/ReLU6 between the two is recorded as the node's `act` (real-valued clamp range).
- An elementwise function of one activation (sigmoid, GELU, x * 2, ...) becomes a `lut` node whose
  attrs["fn"] = (aten overload, args with ... for the tensor, kwargs) names the float function.
- Float parameters of fallback ops (layer norm's weight and bias) become float32 constants.
"""
from __future__ import annotations

import operator

import numpy as np
import torch
from torch.fx import GraphModule, Node as FxNode
import mcu.torchao_quiet  # noqa: F401  (before any torchao import)
from torchao.quantization.pt2e import quantize_pt2e  # noqa: F401  (registers quantized_decomposed ops)

from mcu.codegen.ir import Graph, Node, QParams, Tensor, verify
from mcu.errors import QuantizationError
from mcu.importer.ops import ELEMENTWISE_OPS, op_name, source_line

aten = torch.ops.aten
qd = torch.ops.quantized_decomposed

Q_OPS = {qd.quantize_per_tensor.default}
DQ_OPS = {qd.dequantize_per_tensor.default, qd.dequantize_per_channel.default}
IDENTITY_OPS = {aten.dropout.default, aten.contiguous.default, aten.clone.default}
RESHAPE_OPS = {aten.flatten.using_ints, aten.view.default, aten.reshape.default, aten._unsafe_view.default,
               aten.squeeze.dim, aten.squeeze.dims, aten.unsqueeze.default}
ACTIVATIONS = {aten.relu.default: (0.0, float("inf")), aten.relu_.default: (0.0, float("inf")),
               aten.relu6.default: (0.0, 6.0)}
LUT_OPS = ELEMENTWISE_OPS | {aten.sigmoid.default, aten.sigmoid_.default, aten.tanh.default, aten.tanh_.default,
                            aten.rsub.Scalar}
# Two-tensor ops with a float32 kernel only (mcu_binary_f32): float islands in integer models (mcu.quantization.quantizer).
FLOAT_BINARY_OPS = {aten.minimum.default: "minimum", aten.maximum.default: "maximum", aten.pow.Tensor_Tensor: "pow"}
BINARY_OPS = {aten.add.Tensor: "add", aten.add_.Tensor: "add", aten.sub.Tensor: "sub", aten.sub_.Tensor: "sub",
              aten.mul.Tensor: "mul", aten.mul_.Tensor: "mul", aten.div.Tensor: "div", aten.div_.Tensor: "div"}
FLOAT_PARAM_OPS = {aten.layer_norm.default}  # run in the float32 fallback, parameters stay float
# Reductions over dims (the whole tensor when no dims are given); amax, amin and prod have float32 kernels only
REDUCE_OPS = {aten.sum.dim_IntList: "sum", aten.sum.default: "sum", aten.mean.default: "mean",
              aten.amax.default: "amax", aten.amin.default: "amin", aten.prod.dim_int: "prod",
              aten.prod.default: "prod"}
# Index results (int32 tensors; torch's int64): float32 kernels only, float islands in int8
ARG_OPS = {aten.argmax.default: "argmax", aten.argmin.default: "argmin"}
# IR ops that read only their first tensor argument
UNARY_IR_OPS = ("reshape", "slice", "pad", "softmax", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "mean", "clamp",
                "lut", "permute", "upsample_nearest", "upsample_nearest1d", "sum", "max_pool1d", "avg_pool1d",
                "amax", "amin", "prod", "argmax", "argmin")


def _shape(n: FxNode) -> tuple[int, ...]:
    return tuple(int(d) for d in n.meta["val"].shape)


def _ints(v, k: int = 2) -> tuple[int, ...]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return tuple(int(x) for x in (v * k if len(v) == 1 else v))


def _lut_fn(n: FxNode) -> tuple:
    """(functional aten overload name, args with ... in place of the tensor, sorted kwargs)."""
    packet = n.target.overloadpacket.__name__
    if packet.endswith("_") and not packet.startswith("_"):
        packet = packet[:-1]  # in-place form -> the functional op
    args = tuple(... if isinstance(x, FxNode) else x for x in n.args)
    return f"{packet}.{n.target._overloadname}", args, tuple(sorted(n.kwargs.items()))


def _clamp_range(lo, hi) -> tuple[float, float]:
    return (float("-inf") if lo is None else float(lo), float("inf") if hi is None else float(hi))


def _first(n: FxNode) -> FxNode:
    """The first tensor argument (the first element of a list argument, for cat)."""
    return n.args[0][0] if isinstance(n.args[0], (list, tuple)) else n.args[0]


def _upsample_factors(n: FxNode, shape_in) -> tuple[int, ...]:
    out = _shape(n)
    scales = n.args[2] if len(n.args) > 2 else n.kwargs.get("scale_factors")
    factors = tuple(o // i for o, i in zip(out[2:], shape_in[2:]))
    exact = all(o == f * i for o, f, i in zip(out[2:], factors, shape_in[2:]))
    if not exact or (scales and any(float(s) != f for s, f in zip(scales, factors))):
        raise QuantizationError(f"nearest upsampling from {list(shape_in[2:])} to {list(out[2:])} at {source_line(n)}: "
                                f"only integer scale factors are supported")
    return factors


def _breadth_attrs(n: FxNode, shape_in: tuple[int, ...]) -> tuple[str, dict] | None:
    """(IR op, attrs) of the op-breadth ops (elementwise, LUT, data movement, reductions, 1-d, matmul, norms)."""
    t, a, rank = n.target, list(n.args), len(shape_in)
    if t in BINARY_OPS and sum(isinstance(x, FxNode) for x in a[:2]) == 1 or t in LUT_OPS:
        return "lut", {"fn": _lut_fn(n)}
    if t in FLOAT_BINARY_OPS:
        return FLOAT_BINARY_OPS[t], {}
    if t in BINARY_OPS:
        op = BINARY_OPS[t]
        if op == "div" and n.kwargs.get("rounding_mode") is not None:
            raise QuantizationError(f"division with rounding_mode={n.kwargs['rounding_mode']!r} at {source_line(n)} "
                                    f"is not supported; divide, then apply torch.floor or torch.trunc")
        if n.kwargs.get("alpha", 1) != 1:
            raise QuantizationError(f"{op} with alpha != 1 at {source_line(n)}")
        return op, {}
    if t == aten.clamp.default:
        lo = a[1] if len(a) > 1 else n.kwargs.get("min")
        hi = a[2] if len(a) > 2 else n.kwargs.get("max")
        return "clamp", {"act": _clamp_range(lo, hi)}
    if t == aten.slice.Tensor:
        dim = int(a[1] if len(a) > 1 else 0) % rank
        size = shape_in[dim]
        start, end = (a[2] if len(a) > 2 else None), (a[3] if len(a) > 3 else None)
        start = 0 if start is None else min(max(int(start) + (size if int(start) < 0 else 0), 0), size)
        step = int(a[4]) if len(a) > 4 else 1
        return "slice", {"dim": dim, "start": start, "step": step}
    if t == aten.cat.default:
        return "concat", {"dim": int(a[1] if len(a) > 1 else n.kwargs.get("dim", 0)) % rank}
    if t == aten.permute.default:
        return "permute", {"perm": tuple(int(d) % rank for d in a[1])}
    if t == aten.transpose.int:
        perm = list(range(rank))
        i, j = int(a[1]) % rank, int(a[2]) % rank
        perm[i], perm[j] = perm[j], perm[i]
        return "permute", {"perm": tuple(perm)}
    if t == aten.upsample_nearest2d.vec:
        return "upsample_nearest", {"scale": _upsample_factors(n, shape_in)}
    if t == aten.upsample_nearest1d.vec:
        return "upsample_nearest1d", {"scale": _upsample_factors(n, shape_in)}
    if t in ARG_OPS:  # argmax / argmin over one dim (None: the flattened tensor)
        dim = a[1] if len(a) > 1 else n.kwargs.get("dim")
        keepdim = bool(a[2]) if len(a) > 2 else bool(n.kwargs.get("keepdim", False))
        return ARG_OPS[t], {"dim": None if dim is None else int(dim) % max(rank, 1), "keepdim": keepdim}
    if t in REDUCE_OPS:
        dims = a[1] if len(a) > 1 and a[1] not in (None, []) else n.kwargs.get("dim") or list(range(rank))
        dims = [dims] if isinstance(dims, int) else dims
        keepdim = bool(a[2]) if len(a) > 2 else bool(n.kwargs.get("keepdim", False))
        return REDUCE_OPS[t], {"dims": tuple(sorted(int(d) % max(rank, 1) for d in dims)), "keepdim": keepdim}
    if t == aten.conv1d.default:
        stride, padding, dilation, groups = (a[3:] + [1, 0, 1, 1][len(a[3:]):])[:4]
        if isinstance(padding, str):
            raise QuantizationError(f"conv1d padding='{padding}' at {source_line(n)}; pass explicit padding ints")
        return "conv1d", {"stride": _ints(stride, 1), "padding": _ints(padding, 1), "dilation": _ints(dilation, 1),
                          "groups": int(groups)}
    if t in (aten.max_pool1d.default, aten.avg_pool1d.default):
        k = _ints(a[1], 1)
        stride = _ints(a[2], 1) if len(a) > 2 and a[2] else k
        pad = _ints(a[3], 1) if len(a) > 3 else (0,)
        if t == aten.max_pool1d.default:
            if len(a) > 4 and _ints(a[4], 1) != (1,):
                raise QuantizationError(f"max_pool1d with dilation at {source_line(n)} is not supported")
            return "max_pool1d", {"kernel": k, "stride": stride, "padding": pad,
                                  "ceil_mode": bool(a[5]) if len(a) > 5 else False}
        return "avg_pool1d", {"kernel": k, "stride": stride, "padding": pad, "ceil_mode": bool(a[4]) if len(a) > 4
                              else False, "count_include_pad": bool(a[5]) if len(a) > 5 else True}
    if t in (aten.matmul.default, aten.bmm.default):
        return "matmul", {}
    if t == aten.layer_norm.default:
        return "layer_norm", {"normalized": len(a[1]), "eps": float(a[4]) if len(a) > 4 else 1e-5}
    return None


def _attrs(n: FxNode, shape_in: tuple[int, ...]) -> tuple[str, dict]:
    """(IR op, attrs) for a float compute node."""
    t, a = n.target, list(n.args)
    breadth = _breadth_attrs(n, shape_in)
    if breadth is not None:
        return breadth
    if t == aten.conv2d.default:
        stride, padding, dilation, groups = (a[3:] + [1, 0, 1, 1][len(a[3:]):])[:4]
        if isinstance(padding, str):
            raise QuantizationError(f"conv2d padding='{padding}' at {source_line(n)}; pass explicit padding ints")
        return "conv2d", {"stride": _ints(stride), "padding": _ints(padding), "dilation": _ints(dilation),
                          "groups": int(groups)}
    if t == aten.linear.default:
        return "linear", {}
    if t in (aten.add.Tensor, aten.add_.Tensor):
        if n.kwargs.get("alpha", 1) != 1:
            raise QuantizationError(f"add with alpha != 1 at {source_line(n)}")
        return "add", {}
    if t == aten.max_pool2d.default:
        k = _ints(a[1])
        stride = _ints(a[2]) if len(a) > 2 and a[2] else k
        pad = _ints(a[3]) if len(a) > 3 else (0, 0)
        dil = _ints(a[4]) if len(a) > 4 else (1, 1)
        ceil = bool(a[5]) if len(a) > 5 else False
        if dil != (1, 1):
            raise QuantizationError(f"max_pool2d with dilation at {source_line(n)} is not supported")
        return "max_pool2d", {"kernel": k, "stride": stride, "padding": pad, "ceil_mode": ceil}
    if t == aten.avg_pool2d.default:
        k = _ints(a[1])
        stride = _ints(a[2]) if len(a) > 2 and a[2] else k
        pad = _ints(a[3]) if len(a) > 3 else (0, 0)
        ceil = bool(a[4]) if len(a) > 4 else False
        include_pad = bool(a[5]) if len(a) > 5 else True
        divisor = int(a[6]) if len(a) > 6 and a[6] else 0
        return "avg_pool2d", {"kernel": k, "stride": stride, "padding": pad, "ceil_mode": ceil,
                              "count_include_pad": include_pad, "divisor_override": divisor}
    if t == aten.adaptive_avg_pool2d.default:
        return "adaptive_avg_pool2d", {"output_size": _ints(a[1])}
    if t == aten.mean.dim:
        dims = sorted(d % len(shape_in) for d in _ints(a[1], 1))
        keepdim = bool(a[2]) if len(a) > 2 else bool(n.kwargs.get("keepdim", False))
        return "mean", {"dims": tuple(dims), "keepdim": keepdim}
    if t in RESHAPE_OPS:
        return "reshape", {}
    if t in (aten.pad.default, aten.constant_pad_nd.default):
        mode = a[2] if t == aten.pad.default and len(a) > 2 else "constant"
        value = (a[3] if len(a) > 3 else n.kwargs.get("value")) if t == aten.pad.default else \
            (a[2] if len(a) > 2 else 0.0)
        if mode != "constant":
            raise QuantizationError(f"pad mode '{mode}' at {source_line(n)}: only constant padding is supported")
        return "pad", {"pads": tuple(int(p) for p in a[1]), "value": float(value or 0.0)}
    if t in (aten.softmax.int, aten._softmax.default):
        return "softmax", {"dim": int(a[1]) % len(shape_in)}
    if t in (aten.hardtanh.default, aten.hardtanh_.default, *ACTIVATIONS):
        lo, hi = ACTIVATIONS.get(t) or (float(a[1]) if len(a) > 1 else -1.0, float(a[2]) if len(a) > 2 else 1.0)
        return "clamp", {"act": (lo, hi)}
    if t == aten.batch_norm.default or t == aten._native_batch_norm_legit_no_training.default:
        raise QuantizationError(f"BatchNorm at {source_line(n)} does not follow a conv2d, so it cannot be "
                                f"folded; put it right after a conv2d (standalone BatchNorm comes later)")
    raise QuantizationError(f"op '{op_name(n)}' at {source_line(n)} has no int8 lowering")


def _act_range(n: FxNode) -> tuple[float, float] | None:
    if n.target in ACTIVATIONS:
        return ACTIVATIONS[n.target]
    if n.target == aten.clamp.default:
        return _clamp_range(n.args[1] if len(n.args) > 1 else n.kwargs.get("min"),
                            n.args[2] if len(n.args) > 2 else n.kwargs.get("max"))
    if n.target in (aten.hardtanh.default, aten.hardtanh_.default):
        return (float(n.args[1]) if len(n.args) > 1 else -1.0, float(n.args[2]) if len(n.args) > 2 else 1.0)
    return None


INT_DTYPES = {torch.int8: "int8", torch.int16: "int16"}
WEIGHTED = {aten.conv2d.default, aten.conv1d.default, aten.linear.default}


def _q_dtype(n: FxNode) -> str:
    """The integer type of a quantize node's output (args: x, scale, zero point, qmin, qmax, dtype)."""
    dtype = n.args[5] if len(n.args) > 5 else n.kwargs.get("dtype", torch.int8)
    if dtype not in INT_DTYPES:
        raise QuantizationError(f"activations quantized to {dtype} at {source_line(n)}: mcu supports int8 and int16")
    return INT_DTYPES[dtype]


def _reader_line(q: FxNode) -> str:
    """The source line of the first op that reads quantize node q's value (through its dequantize), for the
    requantizations torchao inserts between ops, which have no line of their own."""
    for dq in q.users:
        for user in dq.users:
            line = source_line(user)
            if line:
                return line
    return ""


def _is_float_op(n: FxNode) -> bool:
    return n.meta.get("mcu_precision") == "float32"


def import_quantized(gm: GraphModule) -> Graph:
    """Build the integer IR of a torchao-converted GraphModule."""
    tensors: dict[str, Tensor] = {}
    nodes: list[Node] = []
    value: dict[FxNode, str] = {}  # fx node -> IR tensor holding its (quantized) value
    pending: dict[FxNode, tuple[FxNode, tuple | None]] = {}  # float result -> (compute node, act range)
    inputs: list[str] = []
    outputs: list[str] = []

    def const(n: FxNode) -> np.ndarray:
        return getattr(gm, n.target).detach().cpu().numpy()

    def float_const(n: FxNode | None) -> str | None:
        if n is None:
            return None
        name = f"c{len(tensors)}"
        obj = gm
        for part in n.target.split("."):
            obj = getattr(obj, part)
        data = np.ascontiguousarray(obj.detach().cpu().numpy(), dtype=np.float32)
        tensors[name] = Tensor(name, tuple(data.shape), "float32", data=data)
        return name

    floats: dict[FxNode, str] = {}  # fx node of a float op (mixed precision) -> its float32 IR tensor
    dequantized: dict[str, str] = {}  # integer tensor -> its float32 dequantize

    def float_input(a: FxNode) -> str:
        if a in floats:
            return floats[a]
        if a.op == "get_attr":
            return float_const(a)
        if a.op == "placeholder" and a not in value:  # a float op reads the model's input: a float32 input
            value[a] = f"input{len(inputs)}"
            inputs.append(value[a])
            tensors[value[a]] = Tensor(value[a], _shape(a), "float32")
            return value[a]
        if a.op == "placeholder" and tensors[value[a]].dtype == "float32":
            return value[a]
        src = value.get(a)
        if src is None:
            raise QuantizationError(f"input {a.name} of a float32 op is neither quantized nor float")
        if src not in dequantized:
            dequantized[src] = f"t{len(tensors)}"
            tensors[dequantized[src]] = Tensor(dequantized[src], tensors[src].shape, "float32")
            nodes.append(Node(f"n{len(nodes)}_dequantize", "dequantize", (src,), (dequantized[src],), {},
                              source_line(a)))
        return dequantized[src]

    def float_op(n: FxNode) -> str:
        """One float32 IR node for an op the quantizer left float (as frontend_float builds them)."""
        if n.target in IDENTITY_OPS:
            return float_input(n.args[0])
        ins = [float_input(a) if isinstance(a, FxNode) else None for a in n.args
               if isinstance(a, FxNode) or a is None]
        if n.target == aten.cat.default:
            ins = [float_input(a) for a in n.args[0]]
        op, attrs = _attrs(n, tensors[ins[0]].shape)
        if op in UNARY_IR_OPS:
            ins = ins[:1]
        name = f"t{len(tensors)}"
        tensors[name] = Tensor(name, _shape(n), "int32" if op in ("argmax", "argmin") else "float32")
        nodes.append(Node(f"n{len(nodes)}_{op}", op, tuple(ins), (name,), {**attrs, "float_node": n.name},
                          source_line(n)))
        return name

    for n in gm.graph.nodes:
        if n.op == "placeholder":
            continue  # becomes an input at its quantize node
        if n.op == "get_attr" or (n.op == "call_module"):
            continue
        if n.op == "output":
            for o in n.args[0]:
                if o in floats:  # a float op's result is the model's output (mixed precision)
                    outputs.append(floats[o])
                    continue
                if o not in value:
                    raise QuantizationError(f"model output {o.name} is not quantized")
                outputs.append(value[o])
            continue
        t = n.target
        if t in Q_OPS:
            src, scale, zp, dtype = n.args[0], float(n.args[1]), int(n.args[2]), _q_dtype(n)
            name = f"t{len(tensors)}"
            if src.op == "placeholder" and any(u.op == "call_function" and u.target not in Q_OPS for u in src.users):
                # the input also feeds a float op: it stays one float32 input, quantized here for the others
                tensors[name] = Tensor(name, _shape(src), dtype, QParams.tensor(scale, zp))
                nodes.append(Node(f"n{len(nodes)}_quantize", "quantize", (float_input(src),), (name,), {},
                                  source_line(src)))
            elif src.op == "placeholder":
                name = f"input{len(inputs)}"
                inputs.append(name)
                tensors[name] = Tensor(name, _shape(src), dtype, QParams.tensor(scale, zp))
            elif src in floats:  # a float op's result -> the consumer's integer tensor
                tensors[name] = Tensor(name, _shape(src), dtype, QParams.tensor(scale, zp))
                nodes.append(Node(f"n{len(nodes)}_quantize", "quantize", (floats[src],), (name,), {},
                                  source_line(src)))
            elif src in pending:
                compute, act = pending.pop(src)
                shape_in = tensors[value[_first(compute)]].shape
                op, attrs = _attrs(compute, shape_in)
                if act is not None:
                    attrs = {**attrs, "act": act}
                tensors[name] = Tensor(name, _shape(src), dtype, QParams.tensor(scale, zp))
                ins = [value.get(a) if isinstance(a, FxNode) else None for a in compute.args
                       if isinstance(a, FxNode) or a is None]
                if compute.target in WEIGHTED and len(compute.args) > 2 and isinstance(compute.args[2], FxNode) \
                        and compute.args[2].op == "get_attr":
                    ins[2] = float_const(compute.args[2])  # a16w8: the float bias
                if op in UNARY_IR_OPS:
                    ins = ins[:1]
                elif op == "concat":
                    ins = [value[a] for a in compute.args[0]]
                elif op == "layer_norm":
                    ins = ins[:1] + [float_const(w) for w in (list(compute.args) + [None] * 4)[2:4]]
                attrs = {**attrs, "float_node": src.name}  # the float value this output quantizes (mcu debug)
                nodes.append(Node(f"n{len(nodes)}_{op}", op, tuple(ins), (name,), attrs, source_line(compute)))
            elif src.op == "call_function" and src.target in DQ_OPS and src.args[0] in value:
                # requantization (torchao's Q(DQ(x)) between differing qparams): an identity look-up table
                # between int8 tensors, a convert where the type changes
                x = tensors[value[src.args[0]]]
                tensors[name] = Tensor(name, x.shape, dtype, QParams.tensor(scale, zp))
                if x.dtype == dtype == "int8":
                    nodes.append(Node(f"n{len(nodes)}_lut", "lut", (x.name,), (name,),
                                      {"fn": ("clone.default", (...,), ())}, _reader_line(n)))
                else:
                    nodes.append(Node(f"n{len(nodes)}_convert", "convert", (x.name,), (name,), {},
                                      _reader_line(n)))
            else:
                raise QuantizationError(f"quantize of {src.name} has no producer we can lower")
            value[n] = name
        elif t in DQ_OPS:
            src = n.args[0]
            if src.op == "get_attr":
                data = const(src)
                scale = const(n.args[1]) if isinstance(n.args[1], FxNode) else np.array([n.args[1]])
                name = f"c{len(tensors)}"
                if t == qd.dequantize_per_channel.default:
                    zps = const(n.args[2])
                    qp = QParams(tuple(float(s) for s in scale), tuple(int(z) for z in zps), int(n.args[3]))
                else:
                    qp = QParams.tensor(float(n.args[1]), int(n.args[2]))
                dtype = {np.dtype(np.int8): "int8", np.dtype(np.int16): "int16", np.dtype(np.int32): "int32"}[data.dtype]
                tensors[name] = Tensor(name, tuple(data.shape), dtype, qp, data=data)
                value[n] = name
            else:
                value[n] = value[src]
        elif n.op == "call_function" and _is_float_op(n) and t not in Q_OPS | DQ_OPS:
            floats[n] = float_op(n)
        elif t == operator.getitem:
            raise QuantizationError(f"multi-output op {n.args[0].name} is not supported")
        elif t in IDENTITY_OPS:
            value[n] = value[n.args[0]]
            if n.args[0] in pending:
                pending[n] = pending.pop(n.args[0])
        elif _act_range(n) is not None and n.args[0] in pending and pending[n.args[0]][1] is None:
            compute, _ = pending.pop(n.args[0])
            pending[n] = (compute, _act_range(n))
        elif n.op == "call_function":
            for i, a in enumerate(n.args):
                if i == 2 and t in WEIGHTED:
                    continue  # a float bias: a16w8 (int64 in the lowering)
                if isinstance(a, FxNode) and a.op == "get_attr" and n.target not in DQ_OPS | FLOAT_PARAM_OPS:
                    if const(a).dtype.is_floating_point if hasattr(const(a).dtype, "is_floating_point") \
                            else np.issubdtype(const(a).dtype, np.floating):
                        raise QuantizationError(
                            f"op '{op_name(n)}' at {source_line(n)} has float parameters that were not "
                            f"quantized; it is not supported by the int8 flow")
            pending[n] = (n, None)
    if pending:
        n = next(iter(pending))
        raise QuantizationError(f"op '{op_name(n)}' at {source_line(n)} has no quantized output; "
                                f"it is not supported by the int8 flow")
    return verify(Graph(tensors, tuple(nodes), tuple(inputs), tuple(outputs)))
