"""An aten node as an IR op and its attrs (op_attrs), for both importers (from_quantized, from_float), and the op
tables they share."""
from __future__ import annotations

import torch
from torch.fx import Node as FxNode

from mcu.codegen.ir import Node, Tensor
from mcu.errors import QuantizationError
from mcu.importer.ops import ELEMENTWISE_OPS, SCATTER_OPS, op_name, source_line
import mcu.importer.recurrent  # noqa: F401  (registers torch.ops.mcu.rnn and .lstm)

aten = torch.ops.aten

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
# Reductions over dims (the whole tensor when no dims are given); amax, amin and prod have float32 kernels only
REDUCE_OPS = {aten.sum.dim_IntList: "sum", aten.sum.default: "sum", aten.mean.default: "mean",
              aten.amax.default: "amax", aten.amin.default: "amin", aten.prod.dim_int: "prod",
              aten.prod.default: "prod"}
# Index results (int32 tensors; torch's int64): float32 kernels only, float islands in int8
ARG_OPS = {aten.argmax.default: "argmax", aten.argmin.default: "argmin"}
SORT_OPS = {aten.argsort.default, aten.argsort.stable}  # int32 indices sorting one dim (stably)
# IR ops that read only their first tensor argument
UNARY_IR_OPS = ("reshape", "slice", "pad", "softmax", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "mean", "clamp",
                "lut", "permute", "upsample_nearest", "upsample_nearest1d", "upsample_bilinear", "sum", "max_pool1d",
                "avg_pool1d", "amax", "amin", "prod", "argmax", "argmin", "argsort")


def fx_shape(n: FxNode) -> tuple[int, ...]:
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


GATHER_OPS = {aten.embedding.default, aten.index_select.default, aten.index.Tensor}  # with run-time indices


def gather_args(n: FxNode) -> tuple[FxNode, FxNode, int]:
    """(table, indices, dim) of an embedding, an index_select or x[idx] (aten.index with one index tensor)."""
    if n.target == aten.embedding.default:
        return n.args[0], n.args[1], 0
    if n.target == aten.index_select.default:
        return n.args[0], n.args[2], int(n.args[1])
    dim, idx = next((d, i) for d, i in enumerate(n.args[1]) if i is not None)
    return n.args[0], idx, dim




def scatter_args(n: FxNode) -> tuple[FxNode, FxNode, FxNode, int]:
    """(table, indices, values, dim) of an index_put with one index tensor (not accumulating) or an index_copy."""
    if n.target == aten.index_copy.default:
        return n.args[0], n.args[2], n.args[3], int(n.args[1])
    used = [(d, i) for d, i in enumerate(n.args[1]) if i is not None]
    accumulate = n.args[3] if len(n.args) > 3 else n.kwargs.get("accumulate", False)
    if len(used) != 1 or accumulate:
        raise QuantizationError(f"index_put at {source_line(n)} with {len(used)} index tensors"
                                f"{' accumulating' if accumulate else ''}: mcu writes rows along one dim "
                                f"(cache[:, :, pos] = k)")
    return n.args[0], used[0][1], n.args[2], used[0][0]


def first_arg(n: FxNode) -> FxNode:
    """The first tensor argument (the first element of a list argument, for cat)."""
    return n.args[0][0] if isinstance(n.args[0], (list, tuple)) else n.args[0]


def tensor_args(n: FxNode, op: str) -> list[FxNode | None]:
    """The FX nodes behind compute node n's IR inputs (n lowered as IR op `op`), in order; None for an absent one."""
    if op == "concat":
        return list(n.args[0])
    if op == "gather":
        return list(gather_args(n)[:2])
    if op == "scatter":
        return list(scatter_args(n)[:3])
    ins = [a for a in n.args if isinstance(a, FxNode) or a is None]
    return ins[:1] if op in UNARY_IR_OPS else ins


def append_float_node(n: FxNode, op: str, attrs: dict, ins: list, tensors: dict, nodes: list) -> tuple[str, ...]:
    """Append the float32 IR node of compute node n (IR op `op`) reading `ins`, its output tensors into `tensors`
    (int32 for an index result: argmax, argmin, argsort, a reshape of indices); returns their names (several for a
    multi-output op, an LSTM's y and c_n, read by getitems)."""
    vals = n.meta["val"] if isinstance(n.meta["val"], (tuple, list)) else (n.meta["val"],)
    names = tuple(f"t{len(tensors) + k}" for k in range(len(vals)))
    index = op in ("argmax", "argmin", "argsort") or (op == "reshape" and tensors[ins[0]].dtype == "int32")
    for out, val in zip(names, vals):
        tensors[out] = Tensor(out, tuple(int(d) for d in val.shape), "int32" if index else "float32")
    nodes.append(Node(f"n{len(nodes)}_{op}", op, tuple(ins), names, {**attrs, "float_node": n.name}, source_line(n)))
    return names


def _upsample_factors(n: FxNode, shape_in) -> tuple[int, ...]:
    out = fx_shape(n)
    scales = n.args[2] if len(n.args) > 2 else n.kwargs.get("scale_factors")
    factors = tuple(o // i for o, i in zip(out[2:], shape_in[2:]))
    exact = all(o == f * i for o, f, i in zip(out[2:], factors, shape_in[2:]))
    if not exact or (scales and any(float(s) != f for s, f in zip(scales, factors))):
        raise QuantizationError(f"nearest upsampling from {list(shape_in[2:])} to {list(out[2:])} at {source_line(n)}: "
                                f"only integer scale factors are supported")
    return factors


def _breadth_attrs(n: FxNode, shape_in: tuple[int, ...]) -> tuple[str, dict] | None:
    """(IR op, attrs) of the op-breadth ops (elementwise, LUT, data movement, reductions, 1-d, matmul, norms)."""
    for family in (_elementwise_attrs, _movement_attrs, _reduction_attrs, _one_d_attrs):
        found = family(n, shape_in)
        if found is not None:
            return found
    if n.target in (aten.matmul.default, aten.bmm.default):
        return "matmul", {}
    if n.target == torch.ops.mcu.rnn.default:
        return "rnn", {"cell": str(n.args[6]), "reverse": bool(n.args[7])}
    if n.target == torch.ops.mcu.lstm.default:
        return "lstm", {"reverse": bool(n.args[7])}
    if n.target in GATHER_OPS:
        return "gather", {"dim": gather_args(n)[2] % len(shape_in)}
    if n.target in SCATTER_OPS:
        return "scatter", {"dim": scatter_args(n)[3] % len(shape_in)}
    if n.target == aten.layer_norm.default:
        a = list(n.args)
        return "layer_norm", {"normalized": len(a[1]), "eps": float(a[4]) if len(a) > 4 else 1e-5}
    if n.target == aten.rms_norm.default:  # kept whole in the integer flows (mcu.importer.decompose)
        a = list(n.args)
        eps = a[3] if len(a) > 3 else n.kwargs.get("eps")
        return "rms_norm", {"normalized": len(a[1]), "eps": torch.finfo(torch.float32).eps if eps is None else float(eps)}
    return None


def _elementwise_attrs(n: FxNode, shape_in: tuple[int, ...]) -> tuple[str, dict] | None:
    """Look-up tables (a function of one tensor, or of a tensor and a scalar), binary ops, clamp."""
    t, a = n.target, list(n.args)
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
    return None


def _movement_attrs(n: FxNode, shape_in: tuple[int, ...]) -> tuple[str, dict] | None:
    """Data movement: slice, concat, permute (and transpose), nearest upsampling."""
    t, a, rank = n.target, list(n.args), len(shape_in)
    if t == aten.slice.Tensor:
        dim = int(a[1] if len(a) > 1 else 0) % rank
        size = shape_in[dim]
        start = a[2] if len(a) > 2 else None  # the end follows from the output's shape
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
    if t == aten.upsample_bilinear2d.vec:
        scales = a[3] if len(a) > 3 else n.kwargs.get("scale_factors")
        return "upsample_bilinear", {"align_corners": bool(a[2]),
                                     "scales": tuple(float(s) for s in scales) if scales else None}
    return None


def _reduction_attrs(n: FxNode, shape_in: tuple[int, ...]) -> tuple[str, dict] | None:
    """argmax / argmin over one dim (None: the flattened tensor); sum, mean, amax, amin, prod over dims."""
    t, a, rank = n.target, list(n.args), len(shape_in)
    if t in ARG_OPS:
        dim = a[1] if len(a) > 1 else n.kwargs.get("dim")
        keepdim = bool(a[2]) if len(a) > 2 else bool(n.kwargs.get("keepdim", False))
        return ARG_OPS[t], {"dim": None if dim is None else int(dim) % max(rank, 1), "keepdim": keepdim}
    if t in SORT_OPS:  # argsort(x, dim, descending); .stable takes them as keywords
        dim = a[1] if len(a) > 1 and t == aten.argsort.default else n.kwargs.get("dim", -1)
        descending = a[2] if len(a) > 2 and t == aten.argsort.default else n.kwargs.get("descending", False)
        return "argsort", {"dim": int(dim) % max(rank, 1), "descending": bool(descending)}
    if t in REDUCE_OPS:
        dims = a[1] if len(a) > 1 and a[1] not in (None, []) else n.kwargs.get("dim") or list(range(rank))
        dims = [dims] if isinstance(dims, int) else dims
        keepdim = bool(a[2]) if len(a) > 2 else bool(n.kwargs.get("keepdim", False))
        return REDUCE_OPS[t], {"dims": tuple(sorted(int(d) % max(rank, 1) for d in dims)), "keepdim": keepdim}
    return None


def _one_d_attrs(n: FxNode, shape_in: tuple[int, ...]) -> tuple[str, dict] | None:
    """conv1d, max_pool1d, avg_pool1d; transposed convs (2-d and 1-d)."""
    t, a = n.target, list(n.args)
    if t in (aten.conv_transpose2d.input, aten.conv_transpose1d.default):
        k = 2 if t == aten.conv_transpose2d.input else 1
        stride, padding, out_pad, groups, dilation = (a[3:] + [1, 0, 0, 1, 1][len(a[3:]):])[:5]
        op = "conv_transpose2d" if k == 2 else "conv_transpose1d"
        return op, {"stride": _ints(stride, k), "padding": _ints(padding, k), "output_padding": _ints(out_pad, k),
                    "dilation": _ints(dilation, k), "groups": int(groups)}
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
    return None


def op_attrs(n: FxNode, shape_in: tuple[int, ...]) -> tuple[str, dict]:
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


def act_range(n: FxNode) -> tuple[float, float] | None:
    if n.target in ACTIVATIONS:
        return ACTIVATIONS[n.target]
    if n.target == aten.clamp.default:
        return _clamp_range(n.args[1] if len(n.args) > 1 else n.kwargs.get("min"),
                            n.args[2] if len(n.args) > 2 else n.kwargs.get("max"))
    if n.target in (aten.hardtanh.default, aten.hardtanh_.default):
        return (float(n.args[1]) if len(n.args) > 1 else -1.0, float(n.args[2]) if len(n.args) > 2 else 1.0)
    return None
