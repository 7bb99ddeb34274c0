"""Comparisons, logical ops and where as float 0/1 tensors and their products (a float island in int8); sort and
topk along a short dim as ranks from pairwise comparisons."""
from __future__ import annotations

import torch
from torch.fx import Node

aten = torch.ops.aten


# comparison -> (strict, equality, operands swapped): x > y is relu(sign(x - y)); the others follow
COMPARISONS = {
    aten.gt.Tensor: ("gt", False), aten.gt.Scalar: ("gt", False), aten.lt.Tensor: ("gt", True),
    aten.lt.Scalar: ("gt", True), aten.ge.Tensor: ("ge", False), aten.ge.Scalar: ("ge", False),
    aten.le.Tensor: ("ge", True), aten.le.Scalar: ("ge", True), aten.eq.Tensor: ("eq", False),
    aten.eq.Scalar: ("eq", False), aten.ne.Tensor: ("ne", False), aten.ne.Scalar: ("ne", False),
}


LOGICAL = {aten.logical_not.default, aten.logical_and.default, aten.logical_or.default, aten.logical_xor.default,
           aten.bitwise_not.default, aten.bitwise_and.Tensor, aten.bitwise_or.Tensor,  # ~, &, | of bools
           aten.__and__.Tensor, aten.__or__.Tensor}


NOT = {aten.logical_not.default, aten.bitwise_not.default}


AND = {aten.logical_and.default, aten.bitwise_and.Tensor, aten.__and__.Tensor}


# ops that only move elements: a bool tensor through them stays what its origin is
VIEWS = {aten.view.default, aten.reshape.default, aten.unsqueeze.default, aten.squeeze.dim, aten.expand.default,
         aten.permute.default, aten.transpose.int, aten.slice.Tensor, aten.select.int, aten.clone.default,
         aten.alias.default}


def _mask(b, c) -> Node:
    """A condition as a float 0/1 tensor: already one (a decomposed comparison or logical op, or a view of one: a
    position mask `arange(n) <= pos`), or a constant bool mask. A boolean model input is refused."""
    if isinstance(c, Node) and c.meta["val"].dtype == torch.bool:
        t = b.tensor(c)
        if t is not None:
            return b.const("_mcu_mask", t.float())
        views, origin = [], c
        while isinstance(origin, Node) and origin.target in VIEWS:
            views.append(origin)
            origin = origin.args[0]
        if not isinstance(origin, Node) or origin.op == "placeholder" or origin.meta["val"].dtype == torch.bool:
            raise b.refuse("a boolean model input as a condition", "pass it as a float 0/1 tensor")
        for v in reversed(views):  # the views again, on the 0/1 float the comparison became
            origin = b(v.target, origin, *v.args[1:], island=False)
        return _masked(origin)
    return c


def _truth(b, c) -> Node:
    """A logical op's operand as 0/1: a mask as it is, any other float x as x != 0 (|sign(x)|, as torch reads
    logical_and(0.5, -2) as True)."""
    c = _mask(b, c)
    if not isinstance(c, Node) or c.meta.get("mcu_mask"):
        return c
    if c.op == "get_attr":  # a constant: its truth computed here
        return b.const("_mcu_mask", (b.tensor(c) != 0).float())
    return b(aten.abs.default, b(aten.sign.default, c))


def _masked(node: Node) -> Node:
    node.meta["mcu_mask"] = True  # a 0/1 float: a later logical op reads it as it is
    return node


ARANGES = {aten.arange.default, aten.arange.start, aten.arange.start_step}


def _int_constant(b, a) -> torch.Tensor | None:
    """An integer constant operand (an arange, a stored int tensor), else None."""
    if not isinstance(a, Node) or a.meta["val"].is_floating_point():
        return None
    if a.target in ARANGES and all(isinstance(v, int) for v in a.args):
        return torch.arange(*a.args)
    return b.tensor(a)


def _position_compare(b, n) -> Node | None:
    """An integer constant vector against an integer model input of one element (a position: `arange(n) <= pos`,
    a KV cache's mask): the position as a float, gathered from the table [0, 1, ..., max + 1] (the device checks
    the index against that range: an index error past it), compared with the constant as _compare does, in the
    float island. The table grows with the constant's range, not with its square. None for any other comparison."""
    x, y = n.args[:2]
    for const_side, (c, p) in enumerate(((x, y), (y, x))):
        values = _int_constant(b, c)
        if values is None or not isinstance(p, Node) or p.meta["val"].is_floating_point() or \
                b.tensor(p) is not None or p.meta["val"].numel() != 1 or values.numel() == 0:
            continue
        b.island = "comparison"
        if list(p.meta["val"].shape) != [1]:
            p = b(aten.reshape.default, p, [1], island=False)
        positions = torch.arange(int(values.max()) + 2, dtype=torch.float32).reshape(-1, 1)
        q = b(aten.reshape.default, b(aten.index_select.default, b.const("_mcu_position", positions), 0, p), [1])
        v = b.const("_mcu_compare", values.reshape(-1).float())
        out = _comparison(b, n.target, *((v, q) if const_side == 0 else (q, v)))
        return _masked(b(aten.reshape.default, out, list(n.meta["val"].shape), island=False))
    return None


def _compare(b, n):
    """A comparison as a float 0/1 tensor (a float island in int8): gt = relu(sign(x - y)), ge = 1 - gt(y, x),
    eq = 1 - |sign(x - y)|, ne = |sign(x - y)|. Exact for finite values. An integer constant against a position
    input: _position_compare."""
    looked_up = _position_compare(b, n)
    if looked_up is not None:
        return looked_up
    b.island = "comparison"
    return _masked(_comparison(b, n.target, *n.args[:2]))


def _comparison(b, target, x, y) -> Node:
    """Comparison `target` of x and y (nodes, or one a number) as the float 0/1 node _compare describes."""
    kind, swapped = COMPARISONS[target]
    if swapped:
        x, y = y, x
    if kind == "ge":
        x, y = y, x
    diff = b(aten.sub.Tensor, x, y) if isinstance(x, Node) else b(aten.rsub.Scalar, y, x)
    s = b(aten.sign.default, diff)
    if kind in ("gt", "ge"):
        gt = b(aten.relu.default, s)
        return gt if kind == "gt" else b(aten.rsub.Scalar, gt, 1.0)
    a = b(aten.abs.default, s)
    return a if kind == "ne" else b(aten.rsub.Scalar, a, 1.0)


def _logical(b, n):
    b.island = "comparison"
    c = [_truth(b, a) for a in n.args[:1 if n.target in NOT else 2]]
    if n.target in NOT:
        return _masked(b(aten.rsub.Scalar, c[0], 1.0))
    if n.target == aten.logical_xor.default:
        return _masked(b(aten.abs.default, b(aten.sub.Tensor, c[0], c[1])))
    both = b(aten.mul.Tensor, c[0], c[1])
    return _masked(both if n.target in AND else b(aten.sub.Tensor, b(aten.add.Tensor, c[0], c[1]), both))


def _where(b, n):
    """where(c, a, b) = c * a + (1 - c) * b on a 0/1 float c (exact for finite a and b); masked_fill is
    where(mask, value, x)."""
    b.island = "where"
    if n.target == aten.masked_fill.Scalar:
        x, cond, value = n.args[:3]
        cond, yes, no = cond, value, x
    else:
        cond, yes, no = n.args[:3]
    c = _mask(b, cond)
    if isinstance(c, Node) and c.meta["val"].dtype == torch.bool:
        raise b.refuse("where on a computed boolean", "compute the condition with a comparison")
    keep = _times(b, c, yes)
    if not isinstance(no, Node) and float(no) == 0.0:
        return keep
    return b(aten.add.Tensor, keep, _times(b, b(aten.rsub.Scalar, c, 1.0), no))


def _times(b, c, v) -> Node:
    """c * v for a tensor or a Python number v (where's scalar forms)."""
    return b(aten.mul.Tensor, c, v if isinstance(v, Node) else b.const("_mcu_where", torch.tensor(float(v))))


def _any_all(b, n):
    """any / all over dims as a 0/1 float: the max (any) or min (all) of the operands' truth."""
    b.island = "comparison"
    x = _truth(b, n.args[0])
    rank = len(b.shape(n.args[0]))
    dims = n.args[1] if len(n.args) > 1 else list(range(rank))
    dims = [int(dims)] if isinstance(dims, int) else [int(d) for d in dims] or list(range(rank))
    keepdim = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
    op = aten.amax.default if n.target in ANY else aten.amin.default
    return _masked(b(op, x, dims, keepdim))


ANY = {aten.any.default, aten.any.dim, aten.any.dims}
ALL = {aten.all.default, aten.all.dim, aten.all.dims}


SORT_LIMIT = 1 << 16  # elements of the pairwise comparison [..., n, n] a sort or topk may build


def _sort_topk(b, n):
    """sort(x, dim, descending) and topk(x, k, dim, largest, sorted) along a short dim (a float island in int8):
    the rank of x_i is #{j: x_j before x_i} + #{j < i: x_j == x_i} (comparisons as signs of differences, ties in
    index order), output k holds the x_i of rank k and its index i (0/1 one-hots of the ranks times x and times
    i; exact for finite values). The indices are float32 tensors holding whole numbers."""
    x = n.args[0]
    shape = b.shape(x)
    if n.target == aten.topk.default:
        k, dim, first = int(n.args[1]), b.arg(2, "dim", -1), bool(b.arg(3, "largest", True))
    else:
        dim, first = b.arg(1, "dim", -1), bool(b.arg(2, "descending", False))
        if n.target == aten.sort.stable:
            dim, first = n.kwargs.get("dim", -1), bool(n.kwargs.get("descending", False))
        k = shape[dim] if shape else 1
    if not shape:
        raise b.refuse(f"{n.target.__name__} of a 0-d tensor", "sort a tensor with at least one dim")
    dim %= len(shape)
    size = shape[dim]
    numel = int(torch.tensor(shape).prod())
    if size * size * max(1, numel // max(size, 1)) > SORT_LIMIT and numel == size == k:
        return _argsorted(b, x, dim, first, shape)
    if size * size * max(1, numel // max(size, 1)) > SORT_LIMIT:
        raise b.refuse(f"{n.target.__name__} over {size} elements of a {shape} tensor (pairwise ranks need "
                       f"{SORT_LIMIT} elements at most)", "sort a shorter dim, or a tensor whose other dims are 1")
    b.island = "sort"
    last = dim == len(shape) - 1
    y = x if last else b(aten.transpose.int, x, dim, -1)
    xi, xj = b(aten.unsqueeze.default, y, -1), b(aten.unsqueeze.default, y, -2)
    sign = b(aten.sign.default, b(aten.sub.Tensor, xj, xi) if first else b(aten.sub.Tensor, xi, xj))
    before = b(aten.relu.default, sign)
    ties = b(aten.mul.Tensor, b(aten.rsub.Scalar, b(aten.abs.default, sign), 1.0),
             b.const("_mcu_sort_ties", torch.ones(size, size).tril(-1)))
    rank = b(aten.sum.dim_IntList, b(aten.add.Tensor, before, ties), [-1], False)
    step = b(aten.sub.Tensor, b(aten.unsqueeze.default, rank, -2),
             b.const("_mcu_sort_ranks", torch.arange(k, dtype=torch.float32)[:, None]))
    onehot = b(aten.rsub.Scalar, b(aten.abs.default, b(aten.sign.default, step)), 1.0)
    values = b(aten.sum.dim_IntList, b(aten.mul.Tensor, onehot, xj), [-1], False)
    index = b(aten.sum.dim_IntList, b(aten.mul.Tensor, onehot, b.const(
        "_mcu_sort_positions", torch.arange(size, dtype=torch.float32))), [-1], False)
    if not last:
        values, index = (b(aten.transpose.int, t, dim, -1) for t in (values, index))
    b.island = None
    return values, index


def _argsorted(b, x, dim: int, first: bool, shape: list[int]):
    """sort of a tensor with one dim of size > 1: the argsort kernel (mcu_argsort_f32, stable; float32, an
    island in int8) gives the indices, a gather of the flattened x by them the values."""
    b.island = "sort"
    index = b(aten.argsort.default, x, dim, first)
    flat_index = b(aten.reshape.default, index, [-1])
    values = b(aten.reshape.default, b(aten.index_select.default, b(aten.reshape.default, x, [-1]), 0, flat_index),
               shape)
    b.island = None
    return values, index


DECOMPOSITIONS = {
    **{op: _any_all for op in ANY | ALL},
    **{op: _compare for op in COMPARISONS}, **{op: _logical for op in LOGICAL},
    aten.where.self: _where, aten.where.Scalar: _where, aten.where.ScalarSelf: _where, aten.where.ScalarOther: _where,
    aten.masked_fill.Scalar: _where,
    aten.sort.default: _sort_topk, aten.sort.stable: _sort_topk, aten.topk.default: _sort_topk,
}
