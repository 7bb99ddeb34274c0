"""Comparisons, logical ops and where as float 0/1 tensors and their products (a float island in int8)."""
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


LOGICAL = {aten.logical_not.default, aten.logical_and.default, aten.logical_or.default,
           aten.bitwise_not.default, aten.bitwise_and.Tensor, aten.bitwise_or.Tensor,  # ~, &, | of bools
           aten.__and__.Tensor, aten.__or__.Tensor}


NOT = {aten.logical_not.default, aten.bitwise_not.default}


AND = {aten.logical_and.default, aten.bitwise_and.Tensor, aten.__and__.Tensor}


def _mask(b, c) -> Node:
    """A condition as a float 0/1 tensor: already one (a decomposed comparison), or a constant bool mask."""
    if isinstance(c, Node) and c.meta["val"].dtype == torch.bool:
        t = b.tensor(c)
        if t is None:
            raise b.refuse("a boolean model input as a condition", "pass it as a float 0/1 tensor")
        return b.const("_mcu_mask", t.float())
    return c


def _compare(b, n):
    """A comparison as a float 0/1 tensor (a float island in int8): gt = relu(sign(x - y)), ge = 1 - gt(y, x),
    eq = 1 - |sign(x - y)|, ne = |sign(x - y)|. Exact for finite values."""
    kind, swapped = COMPARISONS[n.target]
    x, y = n.args[:2]
    if swapped:
        x, y = y, x
    b.island = "comparison"
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
    c = [_mask(b, a) for a in n.args[:1 if n.target in NOT else 2]]
    if n.target in NOT:
        return b(aten.rsub.Scalar, c[0], 1.0)
    both = b(aten.mul.Tensor, c[0], c[1])
    return both if n.target in AND else \
        b(aten.sub.Tensor, b(aten.add.Tensor, c[0], c[1]), both)


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
    keep = b(aten.mul.Tensor, c, yes)
    return b(aten.add.Tensor, keep, b(aten.mul.Tensor, b(aten.rsub.Scalar, c, 1.0), no))


DECOMPOSITIONS = {
    **{op: _compare for op in COMPARISONS}, **{op: _logical for op in LOGICAL},
    aten.where.self: _where, aten.masked_fill.Scalar: _where,
}
