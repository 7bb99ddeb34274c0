"""Composite ops as the primitives mcu has kernels for ("decompose, then cover").

Two stages, both before quantization:
- torch_decompositions (on the exported program, mcu.importer.export): the ops whose Core ATen decomposition lands on
  primitives we run (TORCH_DECOMPOSED: glu, pixel_shuffle, pixel_unshuffle, channel_shuffle, unflatten, movedim,
  tile, squeeze(), adaptive_avg_pool1d, softmin, GRU, LSTM) go through `ep.run_decompositions` with a table of
  just those ops; everything else stays as exported.
- decompose_composites (on the unlifted GraphModule, run by McuQuantizer.transform_for_annotation and by the
  float importer, beside the BatchNorm folds, since some need new constants): norms, variance, logsumexp,
  log_softmax, vector norms, clamp by tensors, PReLU and attention become means, sums, products, square roots,
  softmax and matmuls. The nodes that compute a statistic (a norm's mean and variance, a logsumexp) carry
  meta["mcu_float"] = the op's name: the quantizer leaves them float, so in int8 and a16w8 the whole statistic
  is one float32 island (dequantize, float kernels, quantize) instead of requantizing between every primitive.

Each replacement keeps the composite's source line. Pure graph rewrites: GraphModule in, the same module out.
"""
from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from mcu.errors import UnsupportedOpError
from mcu.importer.ops import add_constant, const_tensor, source_line


aten = torch.ops.aten

TORCH_DECOMPOSED = {
    aten.glu.default, aten.pixel_shuffle.default, aten.pixel_unshuffle.default, aten.channel_shuffle.default,
    aten.native_channel_shuffle.default, aten.unflatten.int, aten.movedim.intlist, aten.movedim.int,
    aten.tile.default, aten.squeeze.default, aten.adaptive_avg_pool1d.default, aten.gru.input, aten.lstm.input,
    aten.cosine_similarity.default, aten.pairwise_distance.default, aten.hstack.default, aten.vstack.default,
    aten.atleast_1d.Sequence, aten.atleast_2d.Sequence, aten.atleast_1d.default, aten.atleast_2d.default,
}


def torch_decompositions(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """ep with TORCH_DECOMPOSED ops replaced by torch's own decompositions (a new program; ep is not changed)."""
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if op not in TORCH_DECOMPOSED:
            del table[op]
    return ep.run_decompositions(table)


class _Builder:
    """Inserts calls before one node, each with its fake value (meta["val"]) and the node's source line."""

    def __init__(self, gm: GraphModule, at: Node, island: str | None):
        self.gm, self.at, self.island = gm, at, island
        self.fake_mode = next(a.meta["val"].fake_mode for a in at.all_input_nodes
                              if isinstance(a.meta.get("val"), torch.Tensor) and hasattr(a.meta["val"], "fake_mode"))

    def __call__(self, target, *args, island: bool = True) -> Node:
        with self.gm.graph.inserting_before(self.at):
            n = self.gm.graph.call_function(target, args)
        vals = [a.meta["val"] if isinstance(a, Node) else a for a in args]
        with self.fake_mode:
            n.meta["val"] = target(*vals)
        n.meta["stack_trace"] = self.at.meta.get("stack_trace")
        if self.island and island:
            n.meta["mcu_float"] = self.island
        return n

    def const(self, name: str, value: torch.Tensor) -> Node:
        n = add_constant(self.gm, name, value.detach().float(), self.at)
        n.meta["val"] = self.fake_mode.from_tensor(getattr(self.gm, n.target))
        return n


def _shape(n: Node) -> list[int]:
    return [int(d) for d in n.meta["val"].shape]


def _dims(dims, rank: int) -> list[int]:
    if rank == 0:
        return []
    if dims is None or dims == []:
        return list(range(rank))
    return sorted(int(d) % rank for d in ([dims] if isinstance(dims, int) else dims))


def _arg(n: Node, i: int, name: str, default=None):
    return n.args[i] if len(n.args) > i else n.kwargs.get(name, default)


def _normalized(b: _Builder, x: Node, dims: list[int], eps: float, center: bool = True) -> Node:
    """(x - mean) / sqrt(var + eps) over dims (population variance); without center, x / sqrt(mean(x^2) + eps)."""
    d = b(aten.sub.Tensor, x, b(aten.mean.dim, x, dims, True)) if center else x
    var = b(aten.mean.dim, b(aten.mul.Tensor, d, d), dims, True)
    return b(aten.mul.Tensor, d, b(aten.rsqrt.default, b(aten.add.Tensor, var, float(eps))))


def _channel_affine(b: _Builder, y: Node, weight: Node | None, bias: Node | None) -> Node:
    """y * weight[c] + bias[c] over dim 1, as a depthwise 1x1 conv (the BatchNorm form, integer in int8)."""
    w, beta = const_tensor(b.gm, weight), const_tensor(b.gm, bias)
    if w is None and beta is None:
        return y
    shape = _shape(y)
    c = shape[1]
    w = torch.ones(c) if w is None else w.reshape(c)
    beta = torch.zeros(c) if beta is None else beta.reshape(c)
    x4 = y if len(shape) == 4 else b(aten.reshape.default, y, [shape[0], c, 1, -1], island=False)
    out = b(aten.conv2d.default, x4, b.const("_mcu_norm_weight", w.reshape(c, 1, 1, 1)),
            b.const("_mcu_norm_bias", beta), [1, 1], [0, 0], [1, 1], c, island=False)
    return out if len(shape) == 4 else b(aten.reshape.default, out, shape, island=False)


def _group_norm(gm, n):
    x, groups = n.args[0], int(n.args[1])
    weight, bias, eps = _arg(n, 2, "weight"), _arg(n, 3, "bias"), _arg(n, 4, "eps", 1e-5)
    b = _Builder(gm, n, "group_norm")
    shape = _shape(x)
    xg = b(aten.reshape.default, x, [shape[0], groups, -1])
    y = b(aten.reshape.default, _normalized(b, xg, [2], eps), shape)
    return _channel_affine(b, y, weight, bias)


def _instance_norm(gm, n):
    x, weight, bias = n.args[:3]
    if not _arg(n, 5, "use_input_stats", True):
        raise _refuse(n, "instance_norm with running statistics (track_running_stats=True in eval mode)",
                      "use BatchNorm with the same statistics, or track_running_stats=False")
    eps = _arg(n, 7, "eps", 1e-5)
    b = _Builder(gm, n, "instance_norm")
    y = _normalized(b, x, list(range(2, len(_shape(x)))), eps)
    return _channel_affine(b, y, weight, bias)


def _rms_norm(gm, n):
    x, normalized_shape = n.args[:2]
    weight, eps = _arg(n, 2, "weight"), _arg(n, 3, "eps")
    eps = torch.finfo(torch.float32).eps if eps is None else eps
    b = _Builder(gm, n, "rms_norm")
    rank = len(_shape(x))
    y = _normalized(b, x, list(range(rank - len(normalized_shape), rank)), eps, center=False)
    w = const_tensor(gm, weight)
    return y if w is None else b(aten.mul.Tensor, y, b.const("_mcu_rms_weight", w))


def _var(gm, n, sqrt: bool):
    x = n.args[0]
    rank = len(_shape(x))
    dims = _dims(_arg(n, 1, "dim"), rank)
    if n.target in (aten.var.correction, aten.std.correction):
        correction, keepdim = n.kwargs.get("correction", 1), n.kwargs.get("keepdim", False)
        correction = 1 if correction is None else correction
    else:
        correction, keepdim = (1 if _arg(n, 2, "unbiased", True) else 0), _arg(n, 3, "keepdim", False)
    b = _Builder(gm, n, "std" if sqrt else "var")
    count = math.prod(_shape(x)[d] for d in dims)
    d = b(aten.sub.Tensor, x, b(aten.mean.dim, x, dims, True))
    v = b(aten.sum.dim_IntList, b(aten.mul.Tensor, d, d), dims, bool(keepdim))
    v = b(aten.mul.Tensor, v, 1.0 / (count - correction) if count > correction else math.inf)  # torch: inf / nan
    return b(aten.sqrt.default, v) if sqrt else v


def _logsumexp(gm, n, x=None, dims=None, keepdim=None, b=None):
    x = n.args[0] if x is None else x
    rank = len(_shape(x))
    dims = _dims(_arg(n, 1, "dim"), rank) if dims is None else dims
    keepdim = bool(_arg(n, 2, "keepdim", False)) if keepdim is None else keepdim
    b = b or _Builder(gm, n, "logsumexp")
    if not dims:  # a 0-d tensor: logsumexp(x) = x
        return b(aten.mul.Tensor, x, 1.0)
    m = b(aten.amax.default, x, dims, True)
    s = b(aten.sum.dim_IntList, b(aten.exp.default, b(aten.sub.Tensor, x, m)), dims, True)
    out = b(aten.add.Tensor, b(aten.log.default, s), m)
    return out if keepdim else b(aten.squeeze.dims, out, dims)


def _log_softmax(gm, n):
    x = n.args[0]
    rank = len(_shape(x))
    dim = int(n.args[1]) % rank
    b = _Builder(gm, n, "log_softmax")
    return b(aten.sub.Tensor, x, _logsumexp(gm, n, x, [dim], True, b))


def _vector_norm(gm, n):
    x = n.args[0]
    order, dims, keepdim = _arg(n, 1, "ord", 2), _arg(n, 2, "dim"), bool(_arg(n, 3, "keepdim", False))
    dims = _dims(dims, len(_shape(x)))
    b = _Builder(gm, n, "vector_norm")
    if order == 2:
        return b(aten.sqrt.default, b(aten.sum.dim_IntList, b(aten.mul.Tensor, x, x), dims, keepdim))
    if order == 1:
        return b(aten.sum.dim_IntList, b(aten.abs.default, x), dims, keepdim)
    if order == math.inf:
        return b(aten.amax.default, b(aten.abs.default, x), dims, keepdim)
    raise _refuse(n, f"vector norm of order {order}", "use ord 1, 2 or inf")


def _clamp_tensor(gm, n):
    x = n.args[0]
    low = _arg(n, 1, "min") if n.target != aten.clamp_max.Tensor else None
    high = _arg(n, 2, "max") if n.target == aten.clamp.Tensor else \
        (_arg(n, 1, "max") if n.target == aten.clamp_max.Tensor else None)
    b = _Builder(gm, n, None)
    y = x if low is None else b(aten.maximum.default, x, low)
    return y if high is None else b(aten.minimum.default, y, high)


def _prelu(gm, n):
    x, weight = n.args[:2]
    w = const_tensor(gm, weight)
    b = _Builder(gm, n, None)
    if w is None or w.numel() == 1:  # one slope: a leaky ReLU (a table in int8)
        if w is None:
            raise _refuse(n, "prelu with a computed slope", "make the slope an nn.Parameter (nn.PReLU)")
        return b(aten.leaky_relu.default, x, float(w.reshape(-1)[0]))
    shape = _shape(x)
    c = w.numel()
    slope = b.const("_mcu_prelu_slope", w.reshape([c] + [1] * (len(shape) - 2)))
    pos = b(aten.relu.default, x)
    return b(aten.add.Tensor, pos, b(aten.mul.Tensor, b(aten.sub.Tensor, x, pos), slope))


def _sdpa(gm, n):
    q, k, v = n.args[:3]
    mask, dropout, causal = _arg(n, 3, "attn_mask"), _arg(n, 4, "dropout_p", 0.0), _arg(n, 5, "is_causal", False)
    scale = _arg(n, 6, "scale")
    if dropout:
        raise _refuse(n, f"scaled_dot_product_attention with dropout_p={dropout}", "pass dropout_p=0.0 in eval")
    if n.kwargs.get("enable_gqa"):
        raise _refuse(n, "scaled_dot_product_attention with enable_gqa", "repeat the key and value heads first")
    b = _Builder(gm, n, None)
    qs, ks, vs = _shape(q), _shape(k), _shape(v)
    if qs[:-2] != ks[:-2] or ks[:-2] != vs[:-2]:
        raise _refuse(n, f"scaled_dot_product_attention of q {qs}, k {ks}, v {vs} (broadcast batch dims)",
                      "expand q, k and v to the same batch dims")
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else float(scale)
    if len(qs) != 3:  # [..., L, E] as [B, L, E]: the softmax runs over the innermost dim in every layout
        batch = math.prod(qs[:-2])
        q, k, v = (b(aten.reshape.default, t, [batch, *s[-2:]], island=False) for t, s in ((q, qs), (k, ks), (v, vs)))
    s = b(aten.mul.Tensor, b(aten.matmul.default, q, b(aten.transpose.int, k, -2, -1)), scale)
    if causal or mask is not None:
        b.island = "attention mask"  # a -1e9 mask would swamp an int8 range: the masked softmax stays float
        if isinstance(mask, Node) and mask.meta["val"].dtype != torch.bool:
            s = b(aten.add.Tensor, s, mask)
        else:
            allowed = torch.ones(qs[-2], ks[-2], dtype=torch.bool).tril() if causal else const_tensor(gm, mask)
            if allowed is None:
                raise _refuse(n, "scaled_dot_product_attention with a computed boolean mask",
                              "pass a float additive mask, or is_causal=True")
            bias = torch.zeros(allowed.shape).masked_fill(~allowed.bool(), -1e9)
            s = b(aten.add.Tensor, s, b.const("_mcu_attn_mask", bias))
    out = b(aten.matmul.default, b(aten.softmax.int, s, -1), v, island=False)
    return out if len(qs) == 3 else b(aten.reshape.default, out, [*qs[:-1], vs[-1]], island=False)


def _cumsum(gm, n):
    """cumsum along a dim: a linear layer with a lower-triangular 0/1 weight (exact in int8 too)."""
    x = n.args[0]
    shape = _shape(x)
    dim = int(_arg(n, 1, "dim")) % len(shape)
    b = _Builder(gm, n, None)
    last = dim == len(shape) - 1
    y = x if last else b(aten.transpose.int, x, dim, -1)
    y = b(aten.linear.default, y, b.const("_mcu_cumsum", torch.ones(shape[dim], shape[dim]).tril()))
    return y if last else b(aten.transpose.int, y, dim, -1)


def _conv_transpose(gm, n):
    """conv_transpose1d/2d as a conv: the input zero-stuffed (nearest upsample times a 0/1 mask, a float island
    in int8), padded by dilation * (k - 1) - padding (+ output_padding at the end), convolved with the weight
    flipped and its in/out channels swapped per group. 1-d runs as 2-d on [N, C, 1, L]."""
    x, weight, bias = n.args[0], n.args[1], _arg(n, 2, "bias")
    one_d = n.target == aten.conv_transpose1d.default
    k = 1 if one_d else 2
    stride, padding, out_pad = (list(_arg(n, i, nm, [d] * k)) for i, nm, d in
                                ((3, "stride", 1), (4, "padding", 0), (5, "output_padding", 0)))
    groups, dilation = int(_arg(n, 6, "groups", 1)), list(_arg(n, 7, "dilation", [1] * k))
    w = const_tensor(gm, weight)
    if w is None:
        raise _refuse(n, "a transposed conv with a computed weight", "make the weight an nn.Parameter")
    b = _Builder(gm, n, None)
    if one_d:
        stride, padding, out_pad, dilation = [1] + stride, [0] + padding, [0] + out_pad, [1] + dilation
        x = b(aten.unsqueeze.default, x, 2)
        w = w.unsqueeze(2)
    shape = _shape(x)
    cin, cout_g = w.shape[:2]
    wc = w.reshape(groups, cin // groups, cout_g, *w.shape[2:]).transpose(1, 2)
    wc = wc.reshape(groups * cout_g, cin // groups, *w.shape[2:]).flip(-1, -2)
    if stride != [1, 1]:
        up = b(aten.upsample_nearest2d.vec, x, [shape[2] * stride[0], shape[3] * stride[1]], None)
        mask = torch.zeros(1, 1, shape[2] * stride[0], shape[3] * stride[1])
        mask[..., ::stride[0], ::stride[1]] = 1.0
        b.island = "conv_transpose"
        x = b(aten.mul.Tensor, up, b.const("_mcu_stuff_mask", mask))
        b.island = None
    pads = []
    for i in (1, 0):  # W then H, as constant_pad_nd lists them
        edge = dilation[i] * (wc.shape[2 + i] - 1) - padding[i]
        pads += [edge, edge + out_pad[i] - (stride[i] - 1)]
    if any(p > 0 for p in pads):
        x = b(aten.constant_pad_nd.default, x, [max(p, 0) for p in pads], 0.0)
    for i, (before, after) in ((3, pads[:2]), (2, pads[2:])):
        if before < 0 or after < 0:
            size = _shape(x)[i]
            x = b(aten.slice.Tensor, x, i, max(-before, 0), size - max(-after, 0))
    bias_node = None if bias is None else b.const("_mcu_convt_bias", const_tensor(gm, bias))
    y = b(aten.conv2d.default, x, b.const("_mcu_convt_weight", wc), bias_node, [1, 1], [0, 0], dilation, groups)
    return b(aten.squeeze.dims, y, [2]) if one_d else y


def _axis_matrix(n: Node, shape: list[int], axis: int) -> torch.Tensor:
    """The [out, in] matrix of the op along one spatial axis (2 or 3 of [N, C, H, W]; a 1-d op's L is axis 3):
    the op itself run on one-hot images that are constant along the other axis, so its own index and weight
    rules (scale factors, align_corners) give the weights."""
    size = shape[axis]
    eye = torch.eye(size)
    if n.target in ONE_D_RESAMPLES:
        probe = eye[:, None, :].contiguous()
        with torch.no_grad():
            return n.target(probe, *n.args[1:], **n.kwargs)[:, 0, :].T.contiguous()
    other = shape[5 - axis]
    probe = (eye[:, None, None, :].expand(size, 1, other, size) if axis == 3
             else eye[:, None, :, None].expand(size, 1, size, other)).contiguous()
    args = [probe] + list(n.args[1:])
    with torch.no_grad():
        out = n.target(*args, **n.kwargs)
    return (out[:, 0, 0, :] if axis == 3 else out[:, 0, :, 0]).T.contiguous()  # [out, in]


def _resample(gm, n):
    """Bilinear / bicubic upsampling, nearest by a non-integer factor, an adaptive average pool whose sizes do
    not divide: separable, so two linear layers with constant weights (one per spatial axis, skipped where the
    axis keeps its size and the matrix is the identity), run over W then over H (transposed to last)."""
    x = n.args[0]
    shape = _shape(x)
    b = _Builder(gm, n, None)
    one_d = n.target in ONE_D_RESAMPLES
    if len(shape) != (3 if one_d else 4) and not (len(shape) == 3 and n.target == aten.adaptive_avg_pool2d.default):
        raise _refuse(n, f"{n.target.__name__} of a {len(shape)}-d tensor", "pass [N, C, L] or [N, C, H, W]")
    unbatched = len(shape) == 3 and not one_d
    if one_d:
        shape = [shape[0], shape[1], 1, shape[2]]
    y = x
    if unbatched:  # [C, H, W]
        shape = [1] + shape
    for axis in ((3,) if one_d else (3, 2)):
        m = _axis_matrix(n, shape, axis)
        if m.shape[0] == m.shape[1] and torch.equal(m, torch.eye(m.shape[0])):
            continue
        if axis == 2:
            y = b(aten.transpose.int, y, -2, -1)
        y = b(aten.linear.default, y, b.const("_mcu_resample", m))
        if axis == 2:
            y = b(aten.transpose.int, y, -2, -1)
    return y


def _is_uniform(n: Node) -> bool:
    """A nearest upsample by integer factors, an adaptive pool whose sizes divide: mcu's own kernels."""
    shape_in, shape_out = _shape(n.args[0])[-2:], _shape(n)[-2:]
    if n.target == aten.adaptive_avg_pool2d.default:
        return all(i % o == 0 for i, o in zip(shape_in, shape_out))
    return all(o % i == 0 for i, o in zip(shape_in, shape_out)) and _integer_scales(n)


def _integer_scales(n: Node) -> bool:
    scales = _arg(n, 2, "scale_factors")
    return scales is None or all(float(s).is_integer() for s in scales)


ONE_D_RESAMPLES = {aten.upsample_nearest1d.vec}

# comparison -> (strict, equality, operands swapped): x > y is relu(sign(x - y)); the others follow
COMPARISONS = {
    aten.gt.Tensor: ("gt", False), aten.gt.Scalar: ("gt", False), aten.lt.Tensor: ("gt", True),
    aten.lt.Scalar: ("gt", True), aten.ge.Tensor: ("ge", False), aten.ge.Scalar: ("ge", False),
    aten.le.Tensor: ("ge", True), aten.le.Scalar: ("ge", True), aten.eq.Tensor: ("eq", False),
    aten.eq.Scalar: ("eq", False), aten.ne.Tensor: ("ne", False), aten.ne.Scalar: ("ne", False),
}
LOGICAL = {aten.logical_not.default, aten.logical_and.default, aten.logical_or.default,
           aten.bitwise_not.default, aten.bitwise_and.Tensor, aten.bitwise_or.Tensor,  # ~, &, | of bools
           aten.__and__.Tensor, aten.__or__.Tensor}
NOT = {aten.logical_not.default, aten.bitwise_not.default}
AND = {aten.logical_and.default, aten.bitwise_and.Tensor, aten.__and__.Tensor}


def _mask(b: _Builder, c) -> Node:
    """A condition as a float 0/1 tensor: already one (a decomposed comparison), or a constant bool mask."""
    if isinstance(c, Node) and c.meta["val"].dtype == torch.bool:
        t = const_tensor(b.gm, c)
        if t is None:
            raise _refuse(b.at, "a boolean model input as a condition", "pass it as a float 0/1 tensor")
        return b.const("_mcu_mask", t.float())
    return c


def _compare(gm, n):
    """A comparison as a float 0/1 tensor (a float island in int8): gt = relu(sign(x - y)), ge = 1 - gt(y, x),
    eq = 1 - |sign(x - y)|, ne = |sign(x - y)|. Exact for finite values."""
    kind, swapped = COMPARISONS[n.target]
    x, y = n.args[:2]
    if swapped:
        x, y = y, x
    b = _Builder(gm, n, "comparison")
    if kind == "ge":
        x, y = y, x
    diff = b(aten.sub.Tensor, x, y) if isinstance(x, Node) else b(aten.rsub.Scalar, y, x)
    s = b(aten.sign.default, diff)
    if kind in ("gt", "ge"):
        gt = b(aten.relu.default, s)
        return gt if kind == "gt" else b(aten.rsub.Scalar, gt, 1.0)
    a = b(aten.abs.default, s)
    return a if kind == "ne" else b(aten.rsub.Scalar, a, 1.0)


def _logical(gm, n):
    b = _Builder(gm, n, "comparison")
    c = [_mask(b, a) for a in n.args[:1 if n.target in NOT else 2]]
    if n.target in NOT:
        return b(aten.rsub.Scalar, c[0], 1.0)
    both = b(aten.mul.Tensor, c[0], c[1])
    return both if n.target in AND else \
        b(aten.sub.Tensor, b(aten.add.Tensor, c[0], c[1]), both)


def _where(gm, n):
    """where(c, a, b) = c * a + (1 - c) * b on a 0/1 float c (exact for finite a and b); masked_fill is
    where(mask, value, x)."""
    b = _Builder(gm, n, "where")
    if n.target == aten.masked_fill.Scalar:
        x, cond, value = n.args[:3]
        cond, yes, no = cond, value, x
    else:
        cond, yes, no = n.args[:3]
    c = _mask(b, cond)
    if isinstance(c, Node) and c.meta["val"].dtype == torch.bool:
        raise _refuse(n, "where on a computed boolean", "compute the condition with a comparison")
    keep = b(aten.mul.Tensor, c, yes)
    return b(aten.add.Tensor, keep, b(aten.mul.Tensor, b(aten.rsub.Scalar, c, 1.0), no))


def _gather(gm, n):
    """embedding(weight, indices) and index_select(x, dim, indices) with constant indices: one slice per index,
    cat, then the index tensor's shape (indices computed at run time, integer inputs, are refused)."""
    if n.target == aten.embedding.default:
        x, idx, dim = n.args[0], n.args[1], 0
    else:
        x, dim, idx = n.args[0], int(n.args[1]), n.args[2]
    index = const_tensor(gm, idx) if isinstance(idx, Node) else torch.as_tensor(idx)
    if index is None:
        raise _refuse(n, f"{n.target.__name__} with indices computed by the model",
                      "make the indices a constant (a buffer), or gather with slices")
    shape = _shape(x)
    dim %= len(shape)
    b = _Builder(gm, n, None)
    flat = [int(i) % shape[dim] for i in index.reshape(-1).tolist()]
    parts = [b(aten.slice.Tensor, x, dim, i, i + 1) for i in flat]
    y = parts[0] if len(parts) == 1 else b(aten.cat.default, parts, dim)
    out = _shape(n)
    return y if _shape(y) == out else b(aten.reshape.default, y, out)


def _bilinear(gm, n):
    """bilinear(x1, x2, W, b)[..., k] = x1 W_k x2 + b_k: a linear layer of x1 onto [K * J] (W's in and out axes
    swapped), times x2 per k, summed over j (the product and sum a float island in int8)."""
    x1, x2, weight, bias = n.args[0], n.args[1], n.args[2], _arg(n, 3, "bias")
    w = const_tensor(gm, weight)
    if w is None:
        raise _refuse(n, "bilinear with a computed weight", "make the weight an nn.Parameter")
    k, i, j = w.shape
    b = _Builder(gm, n, None)
    t = b(aten.linear.default, x1, b.const("_mcu_bilinear_weight", w.permute(0, 2, 1).reshape(k * j, i)))
    t = b(aten.reshape.default, t, _shape(x1)[:-1] + [k, j])
    b.island = "bilinear"
    y = b(aten.sum.dim_IntList, b(aten.mul.Tensor, t, b(aten.unsqueeze.default, x2, -2)), [-1], False)
    beta = const_tensor(gm, bias) if bias is not None else None
    return y if beta is None else b(aten.add.Tensor, y, b.const("_mcu_bilinear_bias", beta))


def _refuse(n: Node, what: str, fix: str):
    return UnsupportedOpError(f"{what} at {source_line(n) or '(no source line recorded)'} is not supported; {fix}")


COMPOSITES = {
    aten.group_norm.default: _group_norm,
    aten.instance_norm.default: _instance_norm,
    aten.rms_norm.default: _rms_norm,
    aten.var.correction: lambda gm, n: _var(gm, n, False), aten.var.dim: lambda gm, n: _var(gm, n, False),
    aten.std.correction: lambda gm, n: _var(gm, n, True), aten.std.dim: lambda gm, n: _var(gm, n, True),
    aten.logsumexp.default: _logsumexp,
    aten.log_softmax.int: _log_softmax, aten._log_softmax.default: _log_softmax,
    aten.linalg_vector_norm.default: _vector_norm, aten.norm.ScalarOpt_dim: _vector_norm,
    aten.clamp.Tensor: _clamp_tensor, aten.clamp_min.Tensor: _clamp_tensor, aten.clamp_max.Tensor: _clamp_tensor,
    aten.prelu.default: _prelu,
    aten.scaled_dot_product_attention.default: _sdpa,
    aten.cumsum.default: _cumsum,
    aten.conv_transpose1d.default: _conv_transpose, aten.conv_transpose2d.input: _conv_transpose,
    aten.upsample_bilinear2d.vec: _resample, aten.upsample_bicubic2d.vec: _resample,
    **{op: _compare for op in COMPARISONS}, **{op: _logical for op in LOGICAL},
    aten.where.self: _where, aten.masked_fill.Scalar: _where,
    aten.embedding.default: _gather, aten.index_select.default: _gather,
    aten.bilinear.default: _bilinear,
}
# Decomposed only when mcu's own kernel does not apply (_is_uniform is False).
RESAMPLED_WHEN_UNEVEN = {aten.upsample_nearest2d.vec, aten.adaptive_avg_pool2d.default, aten.upsample_nearest1d.vec}


# Ops whose value is known at compile time from their arguments alone (static shapes): folded into constants.
CONSTANT_OPS = {aten.zeros.default, aten.ones.default, aten.full.default, aten.scalar_tensor.default,
                aten.arange.default, aten.arange.start, aten.arange.start_step, aten.zeros_like.default,
                aten.ones_like.default, aten.full_like.default}
LIKE_OPS = {aten.zeros_like.default, aten.ones_like.default, aten.full_like.default}  # read only their input's shape


def _value(gm: GraphModule, a):
    if isinstance(a, Node):
        return const_tensor(gm, a)
    if isinstance(a, (list, tuple)):
        return type(a)(_value(gm, i) for i in a)
    return a


def _is_const(gm: GraphModule, a) -> bool:
    if isinstance(a, Node):
        return a.op == "get_attr"
    if isinstance(a, (list, tuple)):
        return all(_is_const(gm, i) for i in a)
    return True


def fold_constants(gm: GraphModule) -> bool:
    """Compute at compile time every node whose inputs are all constants (zeros, full, arange, a GRU's initial
    state and what only it feeds), and drop the products and sums with an all-zero constant (an LSTM's zero
    cell state). Each folded value becomes a buffer read by get_attr. True when anything changed."""
    graph, changed = gm.graph, False
    for n in list(graph.nodes):
        if n.op != "call_function" or not isinstance(n.meta.get("val"), torch.Tensor):
            continue
        args, kwargs = n.args, dict(n.kwargs)
        if n.target in LIKE_OPS:
            args = (torch.empty(tuple(n.args[0].meta["val"].shape)),) + tuple(n.args[1:])
        elif not (n.target in CONSTANT_OPS or (_is_const(gm, list(n.args)) and _is_const(gm, list(kwargs.values()))
                                               and any(isinstance(a, Node) for a in n.all_input_nodes))):
            zero = _zero_operand(gm, n)
            if zero is None:
                continue
            replacement = zero
        else:
            replacement = None
        if replacement is None:
            kwargs.pop("device", None), kwargs.pop("pin_memory", None)
            value = n.target(*_value(gm, list(args)), **_value(gm, kwargs))
            if not value.is_floating_point():
                continue  # an index (arange for a gather) stays as it is
            replacement = add_constant(gm, "_mcu_const", value.float(), n)
            replacement.meta["val"] = n.meta["val"]
        elif replacement == "zeros":
            replacement = add_constant(gm, "_mcu_const", torch.zeros(tuple(n.meta["val"].shape)), n)
            replacement.meta["val"] = n.meta["val"]
        n.replace_all_uses_with(replacement)
        graph.erase_node(n)
        changed = True
    return changed


def _zero_operand(gm: GraphModule, n: Node):
    """"zeros" for a product with an all-zero constant, the other operand for a sum with one that does not
    broadcast it; None otherwise."""
    if n.target not in (aten.mul.Tensor, aten.add.Tensor, aten.sub.Tensor) or len(n.args) < 2:
        return None
    a, b = n.args[:2]
    zero = [isinstance(v, Node) and v.op == "get_attr" and not const_tensor(gm, v).any() for v in (a, b)]
    if n.target == aten.mul.Tensor and any(zero):
        return "zeros"
    alpha = n.kwargs.get("alpha", 1)
    for z, other in ((zero[1], a), (zero[0] if n.target == aten.add.Tensor and alpha == 1 else False, b)):
        if z and isinstance(other, Node) and tuple(other.meta["val"].shape) == tuple(n.meta["val"].shape):
            return other
    return None


def decompose_composites(gm: GraphModule) -> GraphModule:
    """Fold constants, replace every COMPOSITES op by its primitives, fold again (in place; returns gm)."""
    changed = fold_constants(gm)
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and n.target in RESAMPLED_WHEN_UNEVEN and not _is_uniform(n):
            out = _resample(gm, n)
            n.replace_all_uses_with(out)
            gm.graph.erase_node(n)
            changed = True
        elif n.op == "call_function" and n.target in COMPOSITES:
            out = COMPOSITES[n.target](gm, n)
            n.replace_all_uses_with(out)
            gm.graph.erase_node(n)
            changed = True
    if changed:
        fold_constants(gm)  # what the decompositions computed from constants alone (a bilinear's x2 view)
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return gm

