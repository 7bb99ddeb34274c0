"""View and form rewrites on the exported program, before quantization (views_as_slices, run by mcu.importer.export).

split, chunk, unbind, narrow and select become slices; mm, mv, addmm, addmv and baddbmm become matmul (and adds); t
becomes permute; eval-mode dropout, alias, contiguous and clone vanish (views become reshapes); stack, roll, flip,
non-constant pads, expand and repeat become slices and cats; a training-mode BatchNorm or rrelu is refused.
"""
from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule, Node

from mcu.errors import UnsupportedOpError
from mcu.importer.ops import source_line

aten = torch.ops.aten
PIECE_OPS = {aten.split.Tensor, aten.split_with_sizes.default, aten.chunk.default, aten.unbind.int,
             aten.unsafe_split.Tensor, aten.unsafe_split_with_sizes.default}  # unsafe_: a GRU/LSTM cell's gates
IDENTITIES = {aten.dropout.default, aten.alias.default, aten.contiguous.default, aten.clone.default,
              aten.lift_fresh_copy.default, aten.detach_.default}  # the latter two: x[torch.tensor([...])]
MATMUL_FORMS = {aten.mm.default, aten.mv.default, aten.addmm.default, aten.baddbmm.default, aten.addmv.default}
VALUES_AND_INDICES = {aten.max.dim: (aten.amax.default, aten.argmax.default),
                      aten.min.dim: (aten.amin.default, aten.argmin.default)}
SCALAR_FORMS = {aten.add.Scalar: aten.add.Tensor, aten.sub.Scalar: aten.sub.Tensor, aten.mul.Scalar: aten.mul.Tensor,
                aten.div.Scalar: aten.div.Tensor}
GRAD_MODE_WRAPPER = torch.ops.higher_order.wrap_with_set_grad_enabled
DEAD_CHECKS = {GRAD_MODE_WRAPPER, aten._assert_tensor_metadata.default}  # an inlined autocast region leaves the latter
WHOLE_REDUCTIONS = {aten.sum.default: aten.sum.dim_IntList, aten.mean.default: aten.mean.dim}
REWRITTEN_OPS = PIECE_OPS | MATMUL_FORMS | IDENTITIES | set(WHOLE_REDUCTIONS) | {
    aten._unsafe_view.default, aten.clamp_min.default, aten.clamp_max.default, aten.expand.default, aten.repeat.default,
    *SCALAR_FORMS, *VALUES_AND_INDICES, *DEAD_CHECKS, aten.expand_as.default, aten.stack.default, aten.roll.default, aten.flip.default, aten.pad.default,aten.narrow.default, aten.select.int, aten.view.default,
                                                        aten.batch_norm.default, aten.rrelu.default, aten.t.default}


def _pieces(n: Node) -> list[tuple[int, int]]:
    """[(start, end)] along the dim of a split / split_with_sizes / chunk / unbind node, from its input's shape."""
    x = n.args[0]
    size = int(x.meta["val"].shape[_dim(n)])
    if n.target == aten.unbind.int:
        return [(i, i + 1) for i in range(size)]
    if n.target in (aten.split_with_sizes.default, aten.unsafe_split_with_sizes.default):
        sizes = [int(s) for s in n.args[1]]
    else:
        step = int(n.args[1]) if n.target in (aten.split.Tensor, aten.unsafe_split.Tensor) else -(-size // int(n.args[1]))
        sizes = [min(step, size - i) for i in range(0, size, step)]
    ends = [sum(sizes[:i + 1]) for i in range(len(sizes))]
    return list(zip([0] + ends[:-1], ends))


def _dim(n: Node) -> int:
    rank = len(n.args[0].meta["val"].shape)
    default = 0
    dim = n.args[2] if n.target != aten.unbind.int and len(n.args) > 2 else \
        (n.args[1] if n.target == aten.unbind.int and len(n.args) > 1 else n.kwargs.get("dim", default))
    return int(dim) % rank


def _new_node(graph, target, args: tuple, before: Node) -> Node:
    """A call of `target` inserted before `before`, its value computed on the fake tensors, its source line
    `before`'s."""
    with graph.inserting_before(before):
        n = graph.call_function(target, args)
    def val(a):
        return a.meta["val"] if isinstance(a, Node) else [val(i) for i in a] if isinstance(a, (list, tuple)) else a
    vals = [val(a) for a in args]
    fake = next(v for v in vals if isinstance(v, torch.Tensor)) if not isinstance(vals[0], list) else vals[0][0]
    with fake.fake_mode:
        n.meta["val"] = target(*vals)
    n.meta["stack_trace"] = before.meta.get("stack_trace")
    return n


def _slice_node(graph, x: Node, dim: int, start: int, end: int, before: Node) -> Node:
    return _new_node(graph, aten.slice.Tensor, (x, dim, start, end), before)


def _scaled(graph, x: Node, factor, before: Node) -> Node:
    return x if factor == 1 else _new_node(graph, aten.mul.Tensor, (x, factor), before)


def _as_matmul(graph, n: Node) -> None:
    """mm, mv -> matmul; addmm, addmv, baddbmm (c, a, b, beta, alpha) -> beta * c + alpha * matmul(a, b)."""
    if n.target in (aten.mm.default, aten.mv.default):
        n.target = aten.matmul.default
        return
    c, a, b = n.args[:3]
    beta, alpha = n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1)
    product = _scaled(graph, _new_node(graph, aten.matmul.default, (a, b), n), alpha, n)
    n.target, n.args, n.kwargs = aten.add.Tensor, (product, _scaled(graph, c, beta, n)), {}


BROADCASTING = {aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor, aten.minimum.default,
                aten.maximum.default, aten.pow.Tensor_Tensor}


def _as_copies(graph, n: Node) -> None:
    """expand / repeat as cats of the tensor with itself, one dim at a time (an expand that only feeds
    broadcasting ops vanishes: they broadcast it themselves)."""
    x = n.args[0]
    shape_in = [int(d) for d in x.meta["val"].shape]
    shape_out = [int(d) for d in n.meta["val"].shape]
    if n.target != aten.repeat.default and all(u.op == "call_function" and u.target in BROADCASTING
                                               for u in n.users):
        n.replace_all_uses_with(x)
        graph.erase_node(n)
        return
    lead = len(shape_out) - len(shape_in)
    have = [1] * lead + shape_in
    steps = [(d, want // h) for d, (h, want) in enumerate(zip(have, shape_out)) if h != want]
    y = x if lead == 0 else _new_node(graph, aten.reshape.default, (x, have), n)
    for d, times in steps[:-1]:
        y = _new_node(graph, aten.cat.default, ([y] * times, d), n)
    if steps:  # the last step is the node itself (its name is the program's output name when it is one)
        d, times = steps[-1]
        n.target, n.args, n.kwargs = aten.cat.default, ([y] * times, d), {}
    else:
        n.target, n.args, n.kwargs = aten.reshape.default, (y, shape_out), {}


MAX_FLIP = 256  # a flip is one slice per index (and cats of them): refused beyond this length


def _pad_as_slices(graph, n: Node) -> None:
    """F.pad in reflect, replicate or circular mode: per padded dim, the edge slices (one wide, or the wrapped
    block) cat around the tensor. The last cat is the node itself."""
    x, pads = n.args[0], [int(p) for p in n.args[1]]
    mode = n.args[2] if len(n.args) > 2 else n.kwargs.get("mode")
    if mode not in ("reflect", "replicate", "circular") or any(p < 0 for p in pads):
        raise UnsupportedOpError(f"pad mode {mode!r} with pads {pads} at {source_line(n) or '(no source line)'}: "
                                 f"mcu pads with non-negative constant, reflect, replicate or circular pads")
    rank = len(x.meta["val"].shape)
    steps = [(rank - 1 - i, pads[2 * i], pads[2 * i + 1]) for i in range(len(pads) // 2)]
    steps = [(d, a, b) for d, a, b in steps if a or b]
    y = x
    for k, (d, before, after) in enumerate(steps):
        size = int(y.meta["val"].shape[d])
        if mode == "reflect":
            left = [(i, i + 1) for i in range(before, 0, -1)]
            right = [(size - 2 - i, size - 1 - i) for i in range(after)]
        elif mode == "replicate":
            left, right = [(0, 1)] * before, [(size - 1, size)] * after
        else:
            left, right = ([(size - before, size)] if before else []), ([(0, after)] if after else [])
        parts = [_slice_node(graph, y, d, a, b, n) for a, b in left] + [y] + \
            [_slice_node(graph, y, d, a, b, n) for a, b in right]
        if k == len(steps) - 1:
            n.target, n.args, n.kwargs = aten.cat.default, (parts, d), {}
            return
        y = _new_node(graph, aten.cat.default, (parts, d), n)
    n.replace_all_uses_with(x)
    graph.erase_node(n)


def _as_slices_and_cats(graph, n: Node) -> None:
    """roll: two slices swapped by a cat per rolled dim; flip: the one-wide slices of each flipped dim in reverse
    order, cat. The last cat is the node itself (it keeps its name)."""
    x = n.args[0]
    shape = [int(d) for d in x.meta["val"].shape]
    rank = len(shape)
    if n.target == aten.roll.default:
        shifts = n.args[1] if len(n.args) > 1 else n.kwargs["shifts"]
        dims = n.args[2] if len(n.args) > 2 else n.kwargs.get("dims", [])
        shifts, dims = ([shifts] if isinstance(shifts, int) else list(shifts)), \
            ([dims] if isinstance(dims, int) else list(dims))
        flat = not dims
        y = _new_node(graph, aten.reshape.default, (x, [-1]), n) if flat else x
        size_of = (lambda d: int(y.meta["val"].shape[d]))
        steps = [(d % max(len(y.meta["val"].shape), 1), s) for s, d in zip(shifts, dims or [0])]
        pieces = []
        for d, s in steps:
            size = size_of(d)
            s %= size
            pieces.append((d, [(size - s, size), (0, size - s)] if s else None))
    else:
        dims = n.args[1] if len(n.args) > 1 else n.kwargs["dims"]
        flat, y = False, x
        pieces = []
        for d in (int(d) % rank for d in dims):
            if shape[d] > MAX_FLIP:
                raise UnsupportedOpError(f"flip of a dim of {shape[d]} at {source_line(n) or '(no source line)'}: "
                                         f"mcu flips dims of at most {MAX_FLIP} (one slice each)")
            pieces.append((d, [(i, i + 1) for i in reversed(range(shape[d]))] if shape[d] > 1 else None))
    pieces = [(d, p) for d, p in pieces if p]
    for i, (d, bounds) in enumerate(pieces):
        parts = [_slice_node(graph, y, d, a, b, n) for a, b in bounds]
        last = i == len(pieces) - 1 and not flat
        if last:
            n.target, n.args, n.kwargs = aten.cat.default, (parts, d), {}
            return
        y = _new_node(graph, aten.cat.default, (parts, d), n)
    n.target, n.args, n.kwargs = aten.reshape.default, (y, shape), {}


def views_as_slices(gm: GraphModule) -> bool:
    """Rewrite split, split_with_sizes, chunk, unbind, narrow and select as aten.slice.Tensor (+ squeeze.dims for
    unbind and select), and drop eval-mode dropout and alias: one view op for every later stage. Each piece keeps
    its node (name, value, source line): a getitem becomes the slice (or the squeeze of one). In place; True when
    anything changed. A BatchNorm in training mode is refused (its batch statistics are not eval maths).
    Each node gets the first of VIEW_REWRITES that applies to it."""
    graph, changed = gm.graph, False
    for n in list(graph.nodes):
        if n.op != "call_function":
            continue
        _refuse_training_mode(n)
        changed |= any(rewrite(graph, n) for rewrite in VIEW_REWRITES)
    if changed:
        graph.lint()
        gm.recompile()
    return changed


def _refuse_training_mode(n: Node) -> None:
    """A BatchNorm or rrelu in training mode: its result depends on the batch or on chance, not eval maths."""
    if n.target == aten.batch_norm.default and len(n.args) > 5 and n.args[5] is True:
        raise UnsupportedOpError(
            f"batch_norm in training mode at {source_line(n) or '(no source line recorded)'}: it normalizes with "
            f"the batch's own statistics, which a compiled model cannot reproduce; call model.eval() (or pass "
            f"training=False to F.batch_norm) so the running statistics are used")
    if n.target == aten.rrelu.default and (n.args[3] if len(n.args) > 3 else n.kwargs.get("training", False)):
        raise UnsupportedOpError(
            f"rrelu in training mode at {source_line(n) or '(no source line recorded)'} draws a random slope per "
            f"element; call model.eval() (or pass training=False) so it uses the mean slope (lower + upper) / 2")


# Each rewrite(graph, n) changes n in place and returns True, or returns False (n untouched) when it does not apply.
def _drop_grad_mode(graph, n: Node) -> bool:
    """torch.export under torch.no_grad() can leave a dead wrapper of the grad-mode switch, an inlined autocast
    region a dtype assertion: erased."""
    if n.target not in DEAD_CHECKS or n.users:
        return False
    graph.erase_node(n)
    return True


def _pieces_as_slices(graph, n: Node) -> bool:
    """split, split_with_sizes, chunk, unbind: each getitem becomes its piece's slice (unbind: its squeeze)."""
    if n.target not in PIECE_OPS:
        return False
    dim, pieces = _dim(n), _pieces(n)
    for user in list(n.users):
        start, end = pieces[int(user.args[1])]
        if n.target == aten.unbind.int:
            s = _slice_node(graph, n.args[0], dim, start, end, user)
            user.target, user.args, user.kwargs = aten.squeeze.dims, (s, [dim]), {}
        else:
            user.target, user.args, user.kwargs = aten.slice.Tensor, (n.args[0], dim, start, end), {}
    graph.erase_node(n)
    return True


def _matmul_forms(graph, n: Node) -> bool:
    if n.target not in MATMUL_FORMS:
        return False
    _as_matmul(graph, n)
    return True


def _t_as_permute(graph, n: Node) -> bool:
    if n.target != aten.t.default:
        return False
    rank = len(n.args[0].meta["val"].shape)
    n.target, n.args = aten.permute.default, (n.args[0], [1, 0] if rank == 2 else list(range(rank)))
    return True


def _narrow_as_slice(graph, n: Node) -> bool:
    if n.target != aten.narrow.default:
        return False
    x, dim, start, length = n.args[:4]
    n.target, n.args = aten.slice.Tensor, (x, dim, int(start), int(start) + int(length))
    return True


def _select_as_slice(graph, n: Node) -> bool:
    """select(x, dim, i): the squeeze of a one-wide slice."""
    if n.target != aten.select.int:
        return False
    x, dim, index = n.args[:3]
    dim = int(dim) % len(x.meta["val"].shape)
    index = int(index) % int(x.meta["val"].shape[dim])
    s = _slice_node(graph, x, dim, index, index + 1, n)
    n.target, n.args = aten.squeeze.dims, (s, [dim])
    return True


def _values_and_indices(graph, n: Node) -> bool:
    """x.max(dim) / x.min(dim): the values an amax / amin, the indices an argmax / argmin (int32), each only if
    read."""
    if n.target not in VALUES_AND_INDICES or not all(u.target == operator.getitem for u in n.users):
        return False
    dim = int(n.args[1]) if len(n.args) > 1 else int(n.kwargs["dim"])
    keepdim = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
    values, indices = VALUES_AND_INDICES[n.target]
    for u in list(n.users):
        if not u.users:
            graph.erase_node(u)
        elif u.args[1] == 0:
            u.target, u.args, u.kwargs = values, (n.args[0], [dim], keepdim), {}
        else:
            u.target, u.args, u.kwargs = indices, (n.args[0], dim, keepdim), {}
    graph.erase_node(n)
    return True


def _canonical_forms(graph, n: Node) -> bool:
    """x op scalar: the Tensor overload (it takes a scalar as well); sum(x), mean(x): over every dim, the form the
    quantizer annotates; view: reshape (after a dropped clone it is not a view); clamp_min / clamp_max: clamp."""
    if n.target in SCALAR_FORMS:
        n.target = SCALAR_FORMS[n.target]
    elif n.target in WHOLE_REDUCTIONS:
        rank = len(n.args[0].meta["val"].shape)
        n.target, n.args, n.kwargs = WHOLE_REDUCTIONS[n.target], (n.args[0], list(range(rank))), {}
    elif n.target in (aten.view.default, aten._unsafe_view.default):
        n.target = aten.reshape.default
    elif n.target in (aten.clamp_min.default, aten.clamp_max.default):
        bound = n.args[1] if len(n.args) > 1 else n.kwargs.get("min", n.kwargs.get("max"))
        low, high = (bound, None) if n.target == aten.clamp_min.default else (None, bound)
        n.target, n.args, n.kwargs = aten.clamp.default, (n.args[0], low, high), {}
    else:
        return False
    return True


def _stack_as_cat(graph, n: Node) -> bool:
    """stack: the cat of the unsqueezed tensors."""
    if n.target != aten.stack.default:
        return False
    tensors = list(n.args[0])
    dim = int(n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", 0)) % (len(tensors[0].meta["val"].shape) + 1)
    n.args, n.kwargs = ([_new_node(graph, aten.unsqueeze.default, (t, dim), n) for t in tensors], dim), {}
    n.target = aten.cat.default
    return True


def _copies_and_moves(graph, n: Node) -> bool:
    """Non-constant pads, roll, flip, expand and repeat as slices and cats."""
    if n.target == aten.pad.default and (n.args[2] if len(n.args) > 2 else n.kwargs.get("mode", "constant")) \
            != "constant":
        _pad_as_slices(graph, n)
    elif n.target in (aten.roll.default, aten.flip.default):
        _as_slices_and_cats(graph, n)
    elif n.target in (aten.expand.default, aten.expand_as.default, aten.repeat.default):
        _as_copies(graph, n)
    else:
        return False
    return True


def _drop_identity(graph, n: Node) -> bool:
    """Eval-mode (or p = 0) dropout, alias, contiguous, clone, a constant's lift_fresh_copy and detach_ vanish; one that is a program output becomes a
    reshape, which keeps its name (the output's name)."""
    if n.target not in IDENTITIES or not (n.target != aten.dropout.default or not (len(n.args) > 2 and n.args[2])
                                          or not n.args[1]):
        return False
    if any(u.op == "output" for u in n.users):
        n.target, n.args, n.kwargs = aten.reshape.default, (n.args[0], list(n.meta["val"].shape)), {}
        return True
    n.replace_all_uses_with(n.args[0])
    graph.erase_node(n)
    return True


VIEW_REWRITES = (_drop_grad_mode, _pieces_as_slices, _matmul_forms, _t_as_permute, _narrow_as_slice, _select_as_slice,
                 _values_and_indices, _canonical_forms, _stack_as_cat, _copies_and_moves, _drop_identity)
