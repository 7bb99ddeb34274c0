"""Layers as matmuls, linears, slices and elementwise ops: clamp by tensors, PReLU, attention, cumsum, embedding /
index_select / x[idx] with constant indices, bilinear."""
from __future__ import annotations

import math

import torch
from torch.fx import Node


aten = torch.ops.aten


def _clamp_tensor(b, n):
    x = n.args[0]
    low = b.arg(1, "min") if n.target != aten.clamp_max.Tensor else None
    high = b.arg(2, "max") if n.target == aten.clamp.Tensor else \
        (b.arg(1, "max") if n.target == aten.clamp_max.Tensor else None)
    y = x if low is None else b(aten.maximum.default, x, low)
    return y if high is None else b(aten.minimum.default, y, high)


def _prelu(b, n):
    x, weight = n.args[:2]
    w = b.tensor(weight)
    if w is None or w.numel() == 1:  # one slope: a leaky ReLU (a table in int8)
        if w is None:
            raise b.refuse("prelu with a computed slope", "make the slope an nn.Parameter (nn.PReLU)")
        return b(aten.leaky_relu.default, x, float(w.reshape(-1)[0]))
    shape = b.shape(x)
    c = w.numel()
    slope = b.const("_mcu_prelu_slope", w.reshape([c] + [1] * (len(shape) - 2)))
    pos = b(aten.relu.default, x)
    return b(aten.add.Tensor, pos, b(aten.mul.Tensor, b(aten.sub.Tensor, x, pos), slope))


def _sdpa(b, n):
    q, k, v = n.args[:3]
    mask, dropout, causal = b.arg(3, "attn_mask"), b.arg(4, "dropout_p", 0.0), b.arg(5, "is_causal", False)
    scale = b.arg(6, "scale")
    if dropout:
        raise b.refuse(f"scaled_dot_product_attention with dropout_p={dropout}", "pass dropout_p=0.0 in eval")
    if n.kwargs.get("enable_gqa"):
        raise b.refuse("scaled_dot_product_attention with enable_gqa", "repeat the key and value heads first")
    qs, ks, vs = b.shape(q), b.shape(k), b.shape(v)
    if qs[:-2] != ks[:-2] or ks[:-2] != vs[:-2]:
        raise b.refuse(f"scaled_dot_product_attention of q {qs}, k {ks}, v {vs} (broadcast batch dims)",
                     "expand q, k and v to the same batch dims")
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else float(scale)
    if len(qs) != 3:  # [..., L, E] as [B, L, E]: the softmax runs over the innermost dim in every layout
        batch = math.prod(qs[:-2])
        q, k, v = (b(aten.reshape.default, t, [batch, *s[-2:]], island=False) for t, s in ((q, qs), (k, ks), (v, vs)))
    s = b(aten.mul.Tensor, b(aten.matmul.default, q, b(aten.transpose.int, k, -2, -1)), scale)
    if causal or mask is not None:
        b.island = "attention mask"  # a -1e9 mask would swamp an int8 range: the masked softmax stays float
        if isinstance(mask, Node) and mask.meta["val"].dtype != torch.bool:
            s = b(aten.add.Tensor, s, _scores_shaped(b, mask, qs, ks))
        else:
            allowed = torch.ones(qs[-2], ks[-2], dtype=torch.bool).tril() if causal else b.tensor(mask)
            if allowed is None:  # computed by the model (a comparison): the additive mask at run time
                s = b(aten.add.Tensor, s, _scores_shaped(b, b(aten.where.Scalar, mask, 0.0, -1e9), qs, ks))
            else:
                bias = torch.zeros(allowed.shape).masked_fill(~allowed.bool(), -1e9)
                s = b(aten.add.Tensor, s, _scores_shaped(b, b.const("_mcu_attn_mask", bias), qs, ks))
    out = b(aten.matmul.default, b(aten.softmax.int, s, -1), v, island=False)
    return out if len(qs) == 3 else b(aten.reshape.default, out, [*qs[:-1], vs[-1]], island=False)


def _scores_shaped(b, mask, qs, ks):
    """An additive mask broadcastable to the scores [..., L, S] as one the [B, L, S] scores take: its last two
    dims when it repeats over the batch dims, else expanded and flattened like them."""
    ms = list(b.shape(mask))
    if len(ms) <= 2 or (len(qs) == 3 and len(ms) == 3):
        return mask
    if all(d == 1 for d in ms[:-2]):
        return b(aten.reshape.default, mask, ms[-2:], island=False)
    full = [*qs[:-2], qs[-2], ks[-2]]
    return b(aten.reshape.default, b(aten.expand.default, mask, full, island=False),
             [math.prod(qs[:-2]), qs[-2], ks[-2]], island=False)


def _cumsum(b, n):
    """cumsum along a dim: a linear layer with a lower-triangular 0/1 weight (exact in int8 too)."""
    x = n.args[0]
    shape = b.shape(x)
    dim = int(b.arg(1, "dim")) % len(shape)
    last = dim == len(shape) - 1
    y = x if last else b(aten.transpose.int, x, dim, -1)
    y = b(aten.linear.default, y, b.const("_mcu_cumsum", torch.ones(shape[dim], shape[dim]).tril()))
    return y if last else b(aten.transpose.int, y, dim, -1)


def _gather(b, n):
    """embedding(weight, indices) and index_select(x, dim, indices) with constant indices: one slice per index,
    cat, then the index tensor's shape. Indices computed at run time (integer inputs) keep the op: a gather."""
    if n.target == aten.embedding.default:
        x, idx, dim = n.args[0], n.args[1], 0
    elif n.target == aten.index.Tensor:
        x, dim, idx = n.args[0], *_one_index(b, n.args[1])
    else:
        x, dim, idx = n.args[0], int(n.args[1]), n.args[2]
    index = b.tensor(idx) if isinstance(idx, Node) else torch.as_tensor(idx)
    table = b.tensor(x)
    if index is None and dim == 0 and table is not None:  # a causal mask's row at the position: a comparison
        row = triangular_row(b, table, idx, b.shape(n))
        if row is not None:
            return row
    if index is None:
        return n  # indices known at run time only (token ids, a position): one gather kernel (mcu_gather)
    shape = b.shape(x)
    if not shape:  # a 0-d tensor: index 0 of it, as torch's index_select allows
        return b(aten.reshape.default, x, b.shape(n))
    dim %= len(shape)
    flat = [int(i) % shape[dim] for i in index.reshape(-1).tolist()]
    parts = [b(aten.slice.Tensor, x, dim, i, i + 1) for i in flat]
    y = parts[0] if len(parts) == 1 else b(aten.cat.default, parts, dim)
    out = b.shape(n)
    return y if b.shape(y) == out else b(aten.reshape.default, y, out)


# comparisons of a column j with a row p a constant table's rows can follow (a causal mask: j > p masked)
ROW_PATTERNS = (aten.gt.Tensor, aten.ge.Tensor, aten.lt.Tensor, aten.le.Tensor)


def triangular_row(b, table: torch.Tensor, p: Node, out_shape: list[int]) -> Node | None:
    """Row p (a one-element integer input) of a constant [P, N] table whose rows hold one value where column j
    compares with p one way (j > p, say) and another elsewhere (a causal mask `torch.full((S, S), -inf).triu(1)`
    indexed by the position): computed from the position as a clamped difference (as logic._position_compare compares), scaled and shifted, instead of
    gathered, so flash holds N + P numbers instead of P x N. None for any other table."""
    if table.dim() != 2 or p.meta["val"].is_floating_point() or p.meta["val"].numel() != 1:
        return None
    rows, cols = table.shape
    j, q = torch.arange(cols)[None, :], torch.arange(rows)[:, None]
    for target in ROW_PATTERNS:
        cond = target(j, q)
        if cond.all() or not cond.any():
            continue
        yes, no = table[cond], table[~cond]
        if not (bool((yes == yes[0]).all()) and bool((no == no[0]).all())) or not torch.isfinite(table).all():
            continue
        b.island = "comparison"
        if list(p.meta["val"].shape) != [1]:
            p = b(aten.reshape.default, p, [1], island=False)
        a, z = float(yes[0]), float(no[0])
        # k = a - z times the comparison is clamp(k (j - p), ..) for integers j, p: folded into the constants
        # where every k j is exact (an integer k, |k| max(P, N) < 2^24), else a product after the clamp
        k = a - z
        scale = k if k == round(k) and abs(k) * max(rows, cols) < 2 ** 24 else 1.0
        positions = torch.arange(rows, dtype=torch.float32).reshape(-1, 1) * scale
        at = b(aten.reshape.default, b(aten.index_select.default, b.const("_mcu_position", positions), 0, p), [1])
        # j > p is clamp(j - p, 0, 1), j >= p clamp(j + 1 - p, 0, 1); j < p, j <= p likewise from p - j
        upper, strict = target in (aten.gt.Tensor, aten.ge.Tensor), target in (aten.gt.Tensor, aten.lt.Tensor)
        columns = (torch.arange(cols, dtype=torch.float32) + (0 if strict else 1 if upper else -1)) * scale
        v = b.const("_mcu_columns", columns)
        d = b(aten.sub.Tensor, v, at) if upper else b(aten.sub.Tensor, at, v)
        row = b(aten.clamp.default, d, min(0.0, scale), max(0.0, scale))
        if scale != k:
            row = b(aten.mul.Tensor, row, k)
        if z != 0.0:
            row = b(aten.add.Tensor, row, z)
        return b(aten.reshape.default, row, out_shape, island=False)
    return None


def _one_index(b, indices) -> tuple[int, Node]:
    """x[..., idx, ...] (aten.index with one index tensor): its dim and the index."""
    used = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(used) != 1:
        raise b.refuse(f"indexing with {len(used)} index tensors", "index one dim at a time (x[i][:, j])")
    return used[0]


def _bilinear(b, n):
    """bilinear(x1, x2, W, b)[..., k] = x1 W_k x2 + b_k: a linear layer of x1 onto [K * J] (W's in and out axes
    swapped), times x2 per k, summed over j (the product and sum a float island in int8)."""
    x1, x2, weight, bias = n.args[0], n.args[1], n.args[2], b.arg(3, "bias")
    w = b.tensor(weight)
    if w is None:
        raise b.refuse("bilinear with a computed weight", "make the weight an nn.Parameter")
    k, i, j = w.shape
    t = b(aten.linear.default, x1, b.const("_mcu_bilinear_weight", w.permute(0, 2, 1).reshape(k * j, i)))
    t = b(aten.reshape.default, t, b.shape(x1)[:-1] + [k, j])
    b.island = "bilinear"
    y = b(aten.sum.dim_IntList, b(aten.mul.Tensor, t, b(aten.unsqueeze.default, x2, -2)), [-1], False)
    beta = b.tensor(bias) if bias is not None else None
    return y if beta is None else b(aten.add.Tensor, y, b.const("_mcu_bilinear_bias", beta))


def softmax_over_last(b, n):
    """softmax over a dim the kernels do not run it over (not the last; for a 4-d tensor not the channels, which
    are last in NHWC) as permute, softmax over the last dim, permute back: data movement around the integer
    kernel instead of an error. n itself where the kernels run it."""
    x = n.args[0]
    rank = len(b.shape(x))
    dim = int(n.args[1]) % max(rank, 1)
    if rank == 0 or dim == rank - 1 or (rank == 4 and dim == 1):
        return n
    perm = [i for i in range(rank) if i != dim] + [dim]
    inverse = [perm.index(i) for i in range(rank)]
    y = b(aten.permute.default, x, perm, island=False)
    return b(aten.permute.default, b(aten.softmax.int, y, -1, island=False), inverse, island=False)


DECOMPOSITIONS = {
    aten.clamp.Tensor: _clamp_tensor, aten.clamp_min.Tensor: _clamp_tensor, aten.clamp_max.Tensor: _clamp_tensor,
    aten.prelu.default: _prelu,
    aten.scaled_dot_product_attention.default: _sdpa,
    aten.cumsum.default: _cumsum,
    aten.embedding.default: _gather, aten.index_select.default: _gather, aten.index.Tensor: _gather,
    aten.bilinear.default: _bilinear,
}
