"""Gathers and scatters with constant indices as slices and a cat: gather, diagonal, scatter (of a tensor),
slice_scatter and select_scatter. Each output element is picked from one flattened source (the input or the scattered
values) at an index known at compile time; runs of consecutive picks from one source become one slice, exact in int8
too. scatter_add adds a linear layer's 0/1 weight times the flattened values; scatter_reduce (sum, mean) and
index_put with accumulate=True add it to the input times a per-element constant. as_strided and masked_scatter
(a constant mask) are picks too; embedding_bag (constant indices) a linear layer over the table (sum, mean) or
each bag's rows and an amax (max)."""
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


def _add_scattered(b, x, src, weight: torch.Tensor, keep: torch.Tensor | None):
    """x * keep + (weight @ src.flatten()) reshaped as x: a scatter that adds (keep None: x as it is)."""
    shape = b.shape(x)
    flat = b(aten.reshape.default, src, [1, weight.shape[1]])
    added = b(aten.reshape.default, b(aten.linear.default, flat, b.const("_mcu_scatter_add", weight)), shape)
    if keep is not None and not bool((keep == 1).all()):
        x = b(aten.mul.Tensor, x, b.const("_mcu_scatter_keep", keep.reshape(shape)))
    return b(aten.add.Tensor, x, added)


def _scatter_weight(b, n, shape, src_shape, dim, index) -> torch.Tensor:
    """W[p, q] = 1 where src element q lands on element p of the output (scatter along dim by index)."""
    pos, src_pos = _positions(shape), _positions(src_shape)
    weight = torch.zeros(pos.numel(), src_pos.numel())
    for coord in torch.cartesian_prod(*[torch.arange(s) for s in index.shape]).reshape(-1, index.dim()).tolist():
        target = list(coord)
        target[dim] = int(index[tuple(coord)]) % shape[dim]
        weight[int(pos[tuple(target)]), int(src_pos[tuple(coord)])] += 1.0
    return weight


def _scatter_reduce(b, n):
    """scatter_reduce(x, dim, index, src, reduce, include_self) with reduce sum or mean: x times a per-element
    constant (0 where written and not include_self, 1 / count for a mean) plus the scatter_add matrix (its rows
    divided by the count for a mean) times src."""
    x, dim, idx, src, reduce = n.args[:5]
    include_self = bool(b.arg(5, "include_self", True))
    if reduce not in ("sum", "mean"):
        raise b.refuse(f"scatter_reduce with reduce='{reduce}'", "use reduce='sum' or 'mean' (or scatter_add)")
    shape = b.shape(x)
    dim %= len(shape)
    weight = _scatter_weight(b, n, shape, b.shape(src), dim, _constant_index(b, n, idx))
    hits = weight.sum(1)
    keep = torch.where(hits > 0, torch.tensor(float(include_self)), torch.tensor(1.0))
    if reduce == "mean":
        count = hits + float(include_self)
        scale = torch.where(hits > 0, 1.0 / count.clamp(min=1), torch.ones_like(count))
        keep, weight = keep * scale, weight * scale[:, None]
    return _add_scattered(b, x, src, weight, keep)


def _index_put(b, n):
    """index_put(x, indices, values, accumulate) with constant indices: picks of x and the values broadcast to
    the indexed shape (the last write wins), or with accumulate the values' scatter_add matrix added. Indices
    known at run time only keep the op (mcu_scatter, one index tensor)."""
    x, indices, values = n.args[:3]
    accumulate = bool(b.arg(3, "accumulate", False))
    consts = [None if i is None else b.tensor(i) for i in indices]
    if any(c is None and i is not None for c, i in zip(consts, indices)):
        return n
    shape = b.shape(x)
    pos = _positions(shape)
    target = pos[tuple(slice(None) if c is None else c.long() for c in consts)]
    if not isinstance(values, torch.fx.Node):
        raise b.refuse("index_put of a scalar", "put a tensor (torch.full_like)")
    vpos = _positions(b.shape(values)).broadcast_to(target.shape).reshape(-1)
    target = target.reshape(-1)
    if accumulate:
        weight = torch.zeros(pos.numel(), _positions(b.shape(values)).numel())
        weight.index_put_((target, vpos), torch.ones(target.numel()), accumulate=True)
        return _add_scattered(b, x, values, weight, None)
    picks = torch.stack([torch.zeros(pos.numel(), dtype=torch.long), pos.reshape(-1)], 1)
    picks[target] = torch.stack([torch.ones_like(vpos), vpos], 1)
    return _picks(b, [x, values], picks, shape)


def _as_strided(b, n):
    """as_strided(x, size, stride, storage_offset): the picks of x's contiguous storage at storage_offset +
    sum(i * stride)."""
    x, size, stride = n.args[:3]
    offset = int(b.arg(3, "storage_offset", 0) or 0)
    flat = torch.full(list(size), offset, dtype=torch.long)
    for d, (s, st) in enumerate(zip(size, stride)):
        view = [1] * len(size)
        view[d] = s
        flat = flat + (torch.arange(s) * st).reshape(view)
    flat = flat.reshape(-1)
    if flat.numel() and int(flat.max()) >= _positions(b.shape(x)).numel():
        raise b.refuse("as_strided past the end of its input", "keep size, stride and storage_offset inside it")
    return _picks(b, [x], torch.stack([torch.zeros_like(flat), flat], 1), list(size))


def _masked_scatter(b, n):
    """masked_scatter(x, mask, source) with a constant mask: where the mask (broadcast to x) is true, the next
    element of source in order; elsewhere x."""
    x, mask, source = n.args[:3]
    m = b.tensor(mask)
    if m is None:
        raise b.refuse("masked_scatter with a mask computed by the model", "make the mask a constant (a buffer)")
    shape = b.shape(x)
    m = m.bool().broadcast_to(shape).reshape(-1)
    pos = _positions(shape).reshape(-1)
    picks = torch.stack([torch.zeros_like(pos), pos], 1)
    chosen = m.nonzero().reshape(-1)
    picks[chosen] = torch.stack([torch.ones_like(chosen), torch.arange(chosen.numel())], 1)
    return _picks(b, [x, source], picks, shape)


def _integer_constant(b, node) -> torch.Tensor | None:
    """The value of an integer tensor computed from constants alone (fold_constants keeps those as they are: the
    arange offsets and flattened indices of a 2-d embedding_bag), else None."""
    value = b.tensor(node)
    if value is not None or not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return value
    known = []
    args = torch.fx.node.map_arg((node.args, node.kwargs), lambda a: known.append(_integer_constant(b, a)) or known[-1])
    if any(k is None for k in known):
        return None
    kwargs = {k: v for k, v in args[1].items() if k not in ("device", "pin_memory")}
    return node.target(*args[0], **kwargs)


def _embedding_bag(b, n):
    """embedding_bag(weight, indices, offsets, ..., mode, ..., per_sample_weights, include_last_offset) with
    constant indices and offsets: sum and mean as a linear layer over the table's rows (W[bag, row] = the
    sample's weight, / the bag's size for a mean) on the transposed table, max as each bag's rows and an amax.
    An empty bag gives zeros. Only the bag values output may be used."""
    weight, idx, offsets = n.args[:3]
    mode = int(b.arg(4, "mode", 0))
    psw, last = b.arg(6, "per_sample_weights"), bool(b.arg(7, "include_last_offset", False))
    padding_idx = b.arg(8, "padding_idx")
    index, offs = _integer_constant(b, idx), _integer_constant(b, offsets) if offsets is not None else None
    if index is None or (offsets is not None and offs is None):
        raise b.refuse("embedding_bag with indices computed by the model", "make indices and offsets constants")
    rows, dim = b.shape(weight)
    index = index.long()
    if index.dim() == 2:  # fixed-size bags
        bags = [index[i].tolist() for i in range(index.shape[0])]
        sample = torch.arange(index.numel()).reshape(index.shape).tolist()
    else:
        starts = offs.long().tolist() + ([] if last else [index.numel()])
        bags = [index[lo:hi].tolist() for lo, hi in zip(starts[:-1], starts[1:])]
        sample = [list(range(lo, hi)) for lo, hi in zip(starts[:-1], starts[1:])]
    if psw is not None:
        psw_value = b.tensor(psw)
        if psw_value is None:
            raise b.refuse("embedding_bag with per_sample_weights computed by the model", "make them constants")
        psw_value = psw_value.reshape(-1)
    keep = [[(r, s) for r, s in zip(bag, ss) if padding_idx is None or r % rows != padding_idx % rows]
            for bag, ss in zip(bags, sample)]
    if mode == 2:  # max
        parts = []
        for bag in keep:
            if not bag:
                raise b.refuse("embedding_bag mode='max' with an empty bag", "give every bag an index")
            rows_of = _picks(b, [weight], torch.tensor([[0, (r % rows) * dim + j] for r, _ in bag
                                                        for j in range(dim)]), [len(bag), dim])
            parts.append(b(aten.amax.default, rows_of, [0], True))
        y = parts[0] if len(parts) == 1 else b(aten.cat.default, parts, 0)
    else:
        w = torch.zeros(len(keep), rows)
        for i, bag in enumerate(keep):
            for r, s in bag:
                w[i, r % rows] += float(psw_value[s]) if psw is not None else 1.0
            if mode == 1 and bag:
                w[i] /= len(bag)
        t = b(aten.transpose.int, weight, 0, 1)
        y = b(aten.transpose.int, b(aten.linear.default, t, b.const("_mcu_embedding_bag", w)), 0, 1)
    for user in list(n.users):
        if user.args[1] != 0 and user.users:
            raise b.refuse("embedding_bag's offset2bag, bag_size or max_indices output", "use only the bag values")
        user.replace_all_uses_with(y)
        user.graph.erase_node(user)
    return y


DECOMPOSITIONS = {
    aten.gather.default: _gather, aten.scatter.src: _scatter, aten.slice_scatter.default: _slice_scatter,
    aten.select_scatter.default: _slice_scatter, aten.diagonal.default: _diagonal, aten.scatter_add.default: _scatter_add,
    aten.scatter_reduce.two: _scatter_reduce, aten.index_put.default: _index_put, aten.as_strided.default: _as_strided,
    aten.masked_scatter.default: _masked_scatter, aten.embedding_bag.padding_idx: _embedding_bag,
    aten._embedding_bag.default: _embedding_bag, aten.embedding_bag.default: _embedding_bag,
}
