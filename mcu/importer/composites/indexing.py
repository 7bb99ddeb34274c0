"""Gathers and scatters with constant indices as slices and a cat: gather, diagonal, scatter (of a tensor),
slice_scatter and select_scatter. Each output element is picked from one flattened source (the input or the scattered
values) at an index known at compile time; runs of consecutive picks from one source become one slice, exact in int8
too. scatter_add adds a linear layer's 0/1 weight times the flattened values."""
from __future__ import annotations

import torch

aten = torch.ops.aten


def _picks(b, sources: list, picks: torch.Tensor, out_shape: list[int]):
    """The tensor whose flat element e is sources[picks[e, 0]].flatten()[picks[e, 1]]: runs of consecutive picks as
    slices of the flattened sources, one cat, the output's shape."""
    flats = [b(aten.reshape.default, s, [-1]) for s in sources]
    runs, rows = [], picks.tolist()
    for src, i in rows:
        if runs and runs[-1][0] == src and runs[-1][2] == i:
            runs[-1][2] = i + 1
        else:
            runs.append([src, i, i + 1])
    parts = [b(aten.slice.Tensor, flats[s], 0, lo, hi) for s, lo, hi in runs]
    y = parts[0] if len(parts) == 1 else b(aten.cat.default, parts, 0)
    return b(aten.reshape.default, y, out_shape)


def _positions(shape: list[int]) -> torch.Tensor:
    """The flat position in a contiguous tensor of `shape` of every element."""
    return torch.arange(max(1, int(torch.tensor(shape).prod())) if shape else 1).reshape(shape)


def _constant_index(b, n, idx):
    index = b.tensor(idx)
    if index is None:
        raise b.refuse(f"{n.target.__name__} with indices computed by the model", "make the index a constant (a buffer)")
    return index.long()


def _gather(b, n):
    """gather(x, dim, index): out[..., j, ...] = x[..., index[..., j, ...], ...] along dim."""
    x, dim, idx = n.args[:3]
    shape = b.shape(x)
    dim %= max(len(shape), 1)
    index = _constant_index(b, n, idx)
    pos = _positions(shape)
    coords = torch.meshgrid(*[torch.arange(s) for s in index.shape], indexing="ij") if index.dim() else ()
    where = list(coords)
    if where:
        where[dim] = index % shape[dim]
    flat = pos[tuple(where)].reshape(-1) if where else pos.reshape(-1)
    return _picks(b, [x], torch.stack([torch.zeros_like(flat), flat], 1), b.shape(n))


def _scatter(b, n):
    """scatter(x, dim, index, src): x with x[..., index[i], ...] = src[i] along dim (the last write wins, as torch's
    CPU kernel does)."""
    x, dim, idx, src = n.args[:4]
    if not isinstance(src, torch.fx.Node) or b.arg(4, "reduce") is not None:
        raise b.refuse("scatter of a scalar or with reduce=", "scatter a tensor without reduce")
    shape = b.shape(x)
    dim %= len(shape)
    index = _constant_index(b, n, idx)
    picks = torch.stack([torch.zeros(_positions(shape).numel(), dtype=torch.long),
                         _positions(shape).reshape(-1)], 1)
    src_pos = _positions(b.shape(src))
    for coord in torch.cartesian_prod(*[torch.arange(s) for s in index.shape]).reshape(-1, index.dim()).tolist():
        target = list(coord)
        target[dim] = int(index[tuple(coord)]) % shape[dim]
        picks[int(_positions(shape)[tuple(target)])] = torch.tensor([1, int(src_pos[tuple(coord)])])
    return _picks(b, [x, src], picks, shape)


def _diagonal(b, n):
    x = n.args[0]
    offset, d1, d2 = b.arg(1, "offset", 0), b.arg(2, "dim1", 0), b.arg(3, "dim2", 1)
    flat = _positions(b.shape(x)).diagonal(offset, d1, d2).reshape(-1)
    return _picks(b, [x], torch.stack([torch.zeros_like(flat), flat], 1), b.shape(n))


def _scatter_add(b, n):
    """scatter_add(x, dim, index, src): x + W @ src.flatten(), W[p, q] = 1 where src element q lands on x's p."""
    x, dim, idx, src = n.args[:4]
    shape, src_shape = b.shape(x), b.shape(src)
    dim %= len(shape)
    index = _constant_index(b, n, idx)
    pos, src_pos = _positions(shape), _positions(src_shape)
    weight = torch.zeros(pos.numel(), src_pos.numel())
    for coord in torch.cartesian_prod(*[torch.arange(s) for s in index.shape]).reshape(-1, index.dim()).tolist():
        target = list(coord)
        target[dim] = int(index[tuple(coord)]) % shape[dim]
        weight[int(pos[tuple(target)]), int(src_pos[tuple(coord)])] += 1.0
    flat = b(aten.reshape.default, src, [1, src_pos.numel()])
    added = b(aten.reshape.default, b(aten.linear.default, flat, b.const("_mcu_scatter_add", weight)), shape)
    return b(aten.add.Tensor, x, added)


def _slice_scatter(b, n):
    """slice_scatter(x, src, dim, start, end, step) and select_scatter(x, src, dim, index): x with that slice
    (that index) replaced by src."""
    x, src = n.args[:2]
    shape = b.shape(x)
    dim = int(b.arg(2, "dim", 0)) % len(shape)
    if n.target == aten.select_scatter.default:
        i = int(n.args[3]) % shape[dim]
        chosen = range(i, i + 1)
    else:
        start, end, step = b.arg(3, "start"), b.arg(4, "end"), b.arg(5, "step", 1)
        chosen = range(shape[dim])[slice(start, end, step)]
    pos = _positions(shape)
    picks = torch.stack([torch.zeros(pos.numel(), dtype=torch.long), pos.reshape(-1)], 1)
    written = pos.index_select(dim, torch.tensor(list(chosen), dtype=torch.long)).reshape(-1)
    picks[written] = torch.stack([torch.ones_like(written), torch.arange(written.numel())], 1)
    return _picks(b, [x, src], picks, shape)


DECOMPOSITIONS = {
    aten.gather.default: _gather, aten.scatter.src: _scatter, aten.slice_scatter.default: _slice_scatter,
    aten.select_scatter.default: _slice_scatter, aten.diagonal.default: _diagonal, aten.scatter_add.default: _scatter_add,
}
