"""Norms and statistics as means, sums, products and square roots: group, instance and RMS norm, variance and std,
logsumexp, log_softmax, vector norms. The nodes that compute a statistic carry meta["mcu_float"] (b.island).
The integer flows keep RMS norm whole instead (one integer kernel): fuse_rms_norms turns the hand-written llama form
into aten.rms_norm, and mcu.importer.decompose leaves aten.rms_norm as it is there (INTEGER_KERNEL_OPS)."""
from __future__ import annotations

import math

import torch
from torch.fx import Node

aten = torch.ops.aten


def _dims(dims, rank: int) -> list[int]:
    if rank == 0:
        return []
    if dims is None or dims == []:
        return list(range(rank))
    return sorted(int(d) % rank for d in ([dims] if isinstance(dims, int) else dims))


def _normalized(b, x: Node, dims: list[int], eps: float, center: bool = True) -> Node:
    """(x - mean) / sqrt(var + eps) over dims (population variance); without center, x / sqrt(mean(x^2) + eps)."""
    d = b(aten.sub.Tensor, x, b(aten.mean.dim, x, dims, True)) if center else x
    var = b(aten.mean.dim, b(aten.mul.Tensor, d, d), dims, True)
    return b(aten.mul.Tensor, d, b(aten.rsqrt.default, b(aten.add.Tensor, var, float(eps))))


def _channel_affine(b, y: Node, weight: Node | None, bias: Node | None) -> Node:
    """y * weight[c] + bias[c] over dim 1, as a depthwise 1x1 conv (the BatchNorm form, integer in int8)."""
    w, beta = b.tensor(weight), b.tensor(bias)
    if w is None and beta is None:
        return y
    shape = b.shape(y)
    c = shape[1]
    w = torch.ones(c) if w is None else w.reshape(c)
    beta = torch.zeros(c) if beta is None else beta.reshape(c)
    x4 = y if len(shape) == 4 else b(aten.reshape.default, y, [shape[0], c, 1, -1], island=False)
    out = b(aten.conv2d.default, x4, b.const("_mcu_norm_weight", w.reshape(c, 1, 1, 1)),
            b.const("_mcu_norm_bias", beta), [1, 1], [0, 0], [1, 1], c, island=False)
    return out if len(shape) == 4 else b(aten.reshape.default, out, shape, island=False)


def _group_norm(b, n):
    x, groups = n.args[0], int(n.args[1])
    weight, bias, eps = b.arg(2, "weight"), b.arg(3, "bias"), b.arg(4, "eps", 1e-5)
    b.island = "group_norm"
    shape = b.shape(x)
    xg = b(aten.reshape.default, x, [shape[0], groups, -1])
    y = b(aten.reshape.default, _normalized(b, xg, [2], eps), shape)
    return _channel_affine(b, y, weight, bias)


def _instance_norm(b, n):
    x, weight, bias = n.args[:3]
    if not b.arg(5, "use_input_stats", True):
        raise b.refuse("instance_norm with running statistics (track_running_stats=True in eval mode)",
                     "use BatchNorm with the same statistics, or track_running_stats=False")
    eps = b.arg(7, "eps", 1e-5)
    b.island = "instance_norm"
    y = _normalized(b, x, list(range(2, len(b.shape(x)))), eps)
    return _channel_affine(b, y, weight, bias)


def _rms_norm(b, n):
    x, normalized_shape = n.args[:2]
    weight, eps = b.arg(2, "weight"), b.arg(3, "eps")
    eps = torch.finfo(torch.float32).eps if eps is None else eps
    b.island = "rms_norm"
    rank = len(b.shape(x))
    y = _normalized(b, x, list(range(rank - len(normalized_shape), rank)), eps, center=False)
    w = b.tensor(weight)
    return y if w is None else b(aten.mul.Tensor, y, b.const("_mcu_rms_weight", w))


def _only_user(n: Node, target) -> Node | None:
    users = list(n.users)
    return users[0] if len(users) == 1 and users[0].op == "call_function" and users[0].target == target else None


def _other(n: Node, a: Node):
    """The operand of binary n that is not a (None when both are)."""
    x, y = n.args[:2]
    return y if x is a and y is not a else x if y is a and x is not a else None


CASTS = {aten.to.dtype, aten._to_copy.default}


def _same_dtype(cast: Node, src: Node) -> bool:
    return cast.meta["val"].dtype == src.meta["val"].dtype


def _hand_rms_norm(tensor, r: Node):
    """(x, last node, weight node or None, eps) when rsqrt node r ends x * rsqrt(mean(x^2, -1, keepdim) + eps)
    [* weight], the llama RMSNorm; else None."""
    add = r.args[0]
    if not (isinstance(add, Node) and add.target == aten.add.Tensor and len(add.users) == 1
            and isinstance(add.args[1], (int, float)) and isinstance(add.args[0], Node)):
        return None
    mean = add.args[0]
    if mean.target != aten.mean.dim or len(mean.users) != 1 or not (len(mean.args) > 2 and mean.args[2]):
        return None
    sq = mean.args[0]
    if not isinstance(sq, Node) or len(sq.users) != 1:
        return None
    if sq.target == aten.pow.Tensor_Scalar and sq.args[1] == 2:
        x = sq.args[0]
    elif sq.target == aten.mul.Tensor and sq.args[0] is sq.args[1]:
        x = sq.args[0]
    else:
        return None
    if not isinstance(x, Node) or not isinstance(x.meta.get("val"), torch.Tensor):
        return None
    rank = len(x.meta["val"].shape)
    if rank == 0 or [int(d) % rank for d in mean.args[1]] != [rank - 1]:
        return None
    y = _only_user(r, aten.mul.Tensor)
    if y is None or _other(y, r) is not x:
        return None
    cols = int(x.meta["val"].shape[-1])
    out, weight = y, None
    while len(y.users) == 1 and next(iter(y.users)).target in CASTS and _same_dtype(next(iter(y.users)), y):
        y = next(iter(y.users))  # HF's hidden_states.to(input_dtype): a float32 -> float32 cast
    last = _only_user(y, aten.mul.Tensor)
    if last is not None:
        w = _other(last, y)
        if isinstance(w, Node) and w.op == "get_attr" and tuple(tensor(w).shape) == (cols,):
            out, weight = last, w
    return x, out, weight, float(add.args[1])


def fuse_rms_norms(gm, builder) -> bool:
    """Every hand-written RMSNorm (x * rsqrt(mean(x^2, -1, keepdim=True) + eps) * weight) as one aten.rms_norm
    (kept whole in the integer flows: one integer kernel). True when any was fused."""
    changed = False
    for r in list(gm.graph.nodes):
        if r.op != "call_function" or r.target != aten.rsqrt.default:
            continue
        found = _hand_rms_norm(builder(gm, r).tensor, r)
        if found is None:
            continue
        x, out, weight, eps = found
        b = builder(gm, out)
        fused = b(aten.rms_norm.default, x, [int(x.meta["val"].shape[-1])], weight, eps, island=False)
        out.replace_all_uses_with(fused)
        changed = True
    if changed:
        gm.graph.eliminate_dead_code()
    return changed


def _var(b, n, sqrt: bool):
    x = n.args[0]
    rank = len(b.shape(x))
    dims = _dims(b.arg(1, "dim"), rank)
    if n.target in (aten.var.correction, aten.std.correction):
        correction, keepdim = n.kwargs.get("correction", 1), n.kwargs.get("keepdim", False)
        correction = 1 if correction is None else correction
    else:
        correction, keepdim = (1 if b.arg(2, "unbiased", True) else 0), b.arg(3, "keepdim", False)
    b.island = "std" if sqrt else "var"
    count = math.prod(b.shape(x)[d] for d in dims)
    d = b(aten.sub.Tensor, x, b(aten.mean.dim, x, dims, True))
    v = b(aten.sum.dim_IntList, b(aten.mul.Tensor, d, d), dims, bool(keepdim))
    v = b(aten.mul.Tensor, v, 1.0 / (count - correction) if count > correction else math.inf)  # torch: inf / nan
    return b(aten.sqrt.default, v) if sqrt else v


def _logsumexp(b, n):
    x = n.args[0]
    rank = len(b.shape(x))
    dims = _dims(b.arg(1, "dim"), rank)
    keepdim = bool(b.arg(2, "keepdim", False))
    b.island = "logsumexp"
    return _logsumexp_of(b, x, dims, keepdim)


def _logsumexp_of(b, x: Node, dims: list[int], keepdim: bool) -> Node:
    """log(sum(exp(x))) over dims, their max subtracted first."""
    if not dims:  # a 0-d tensor: logsumexp(x) = x
        return b(aten.mul.Tensor, x, 1.0)
    m = b(aten.amax.default, x, dims, True)
    s = b(aten.sum.dim_IntList, b(aten.exp.default, b(aten.sub.Tensor, x, m)), dims, True)
    out = b(aten.add.Tensor, b(aten.log.default, s), m)
    return out if keepdim else b(aten.squeeze.dims, out, dims)


def _log_softmax(b, n):
    x = n.args[0]
    rank = len(b.shape(x))
    dim = int(n.args[1]) % rank
    b.island = "log_softmax"
    return b(aten.sub.Tensor, x, _logsumexp_of(b, x, [dim], True))


def _vector_norm(b, n):
    x = n.args[0]
    order, dims, keepdim = b.arg(1, "ord", 2), b.arg(2, "dim"), bool(b.arg(3, "keepdim", False))
    dims = _dims(dims, len(b.shape(x)))
    b.island = "vector_norm"
    if order == 2:
        return b(aten.sqrt.default, b(aten.sum.dim_IntList, b(aten.mul.Tensor, x, x), dims, keepdim))
    if order == 1:
        return b(aten.sum.dim_IntList, b(aten.abs.default, x), dims, keepdim)
    if order == math.inf:
        return b(aten.amax.default, b(aten.abs.default, x), dims, keepdim)
    raise b.refuse(f"vector norm of order {order}", "use ord 1, 2 or inf")


def _native_layer_norm(b, n):
    """native_layer_norm's three outputs: layer_norm, and the mean and 1 / sqrt(var + eps) it normalized with
    (keepdim over the normalized dims)."""
    x, normalized, weight, bias, eps = n.args[:5]
    rank = len(b.shape(x))
    dims = list(range(rank - len(normalized), rank))
    y = b(aten.layer_norm.default, x, normalized, weight, bias, float(eps), island=False)
    b.island = "layer_norm"
    mean = b(aten.mean.dim, x, dims, True)
    d = b(aten.sub.Tensor, x, mean)
    rstd = b(aten.rsqrt.default, b(aten.add.Tensor, b(aten.mean.dim, b(aten.mul.Tensor, d, d), dims, True), float(eps)))
    return y, mean, rstd


def _native_group_norm(b, n):
    """native_group_norm's three outputs: group_norm, and the [N, groups] mean and 1 / sqrt(var + eps)."""
    x, weight, bias, batch, _, _, groups, eps = n.args[:8]
    b.island = "group_norm"
    xg = b(aten.reshape.default, x, [int(batch), int(groups), -1])
    mean = b(aten.mean.dim, xg, [2], True)
    d = b(aten.sub.Tensor, xg, mean)
    rstd = b(aten.rsqrt.default, b(aten.add.Tensor, b(aten.mean.dim, b(aten.mul.Tensor, d, d), [2], True), float(eps)))
    y = _channel_affine(b, b(aten.reshape.default, b(aten.mul.Tensor, d, rstd), b.shape(x)), weight, bias)
    flat = [int(batch), int(groups)]
    return y, b(aten.reshape.default, mean, flat), b(aten.reshape.default, rstd, flat)


DECOMPOSITIONS = {
    aten.native_layer_norm.default: _native_layer_norm, aten.native_group_norm.default: _native_group_norm,
    aten.group_norm.default: _group_norm,
    aten.instance_norm.default: _instance_norm,
    aten.rms_norm.default: _rms_norm,
    aten.var.correction: lambda b, n: _var(b, n, False), aten.var.dim: lambda b, n: _var(b, n, False),
    aten.std.correction: lambda b, n: _var(b, n, True), aten.std.dim: lambda b, n: _var(b, n, True),
    aten.logsumexp.default: _logsumexp,
    aten.log_softmax.int: _log_softmax, aten._log_softmax.default: _log_softmax,
    aten.linalg_vector_norm.default: _vector_norm, aten.norm.ScalarOpt_dim: _vector_norm,
}
