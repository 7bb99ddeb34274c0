"""The tensor plan verifier: checks a memory plan tensor by tensor, re-deriving every allowed overlap.

- Two arena tensors live at one step may share bytes only under a rule of codegen/sharing.py, and only
  exactly as that rule says: an alias, an in-place elementwise op (or fused residual), a concat view (each
  input at its slice of the output; a channel view's slices interleaved as its producers' output_pixel_stride
  says, each tensor spanning its output_extent), a raster overlap or an in-place kernel (the last two only over
  a first input that no later node reads).
- Tensors linked by the exact-position rules form components whose members sit where the rules put them
  relative to each other, so they may share bytes.
- An overlap's gap is derived again from the kernel and its parameters, not taken from the plan.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mcu.codegen.ir import Graph, Node
from mcu.codegen.sharing import (IN_PLACE_INPUTS, STRIDED_KERNELS, concat_copies_exactly, concat_is_copy,
                                 concat_offsets, inplace_kind, is_channel_concat, kernel_raster_gap, output_extent,
                                 overlap_gap)
from mcu.memory_planner import PlanError

if TYPE_CHECKING:  # memory.py imports this module to verify its plans
    from mcu.codegen.memory import MemoryPlan

Span = tuple[int, int]  # (step of the producer, step of the last reader)


def _in_arena(mem: MemoryPlan, t: str, offset: int | None = None) -> bool:
    """t lives in the arena (at `offset`, when given)."""
    loc = mem.locations.get(t)
    return loc is not None and loc.kind == "arena" and (offset is None or loc.index == offset)


def live_spans(graph: Graph) -> dict[str, Span]:
    """tensor -> (step it is produced, step of its last reader), for every tensor a node produces."""
    span: dict[str, Span] = {}
    for step, n in enumerate(graph.nodes):
        for t in n.outputs:
            span.setdefault(t, (step, step))
        for t in n.inputs:
            if t is not None and t in span:
                span[t] = (span[t][0], step)
    for s in graph.state:  # a state's new value is read after the last op, when it is copied back
        t = graph.outputs[s.output]
        if t in span:
            span[t] = (span[t][0], len(graph.nodes) - 1)
    return span


def _apart_or_raster(graph: Graph, mem: MemoryPlan, node) -> bool:
    """A fused conv + residual add's output lies wholly above the conv's input, or starts at least the raster
    gap below it (the residual rule never covers the conv's windows, which read ahead of the writes). The gap
    is at most the output's size, so an output wholly below its input passes the second test."""
    x, out = mem.locations.get(node.inputs[0]), mem.locations[node.outputs[0]]
    if x is None or x.kind != "arena" or out.kind != "arena":
        return True
    ox, oo = x.index, out.index
    nx = graph.tensors[node.inputs[0]].nbytes
    return oo >= ox + nx or ox - oo >= kernel_raster_gap(node.call.kernel, node.call.params)


def concat_view_pairs(graph: Graph, mem: MemoryPlan, span: dict[str, Span], step: int, n: Node) -> set[frozenset]:
    """The (input, output) pairs of concat view n at `step` that sit exactly where the view puts them."""
    out = n.outputs[0]
    p, at = n.attrs["params"], mem.locations.get(out)
    pairs: set[frozenset] = set()
    if at is None or at.kind != "arena":
        return pairs
    if concat_copies_exactly(p) and sum(p["sizes"]) == graph.tensors[out].nbytes:
        # each input exactly at its slice, re-derived from the params: the sizes tile the output
        for (t, o), size in zip(concat_offsets(graph, n).items(), p["sizes"]):
            if _in_arena(mem, t, at.index + o) and graph.tensors[t].nbytes == size and span[t][1] == step:
                pairs.add(frozenset((t, out)))
    elif concat_is_copy(p) and is_channel_concat(graph, n):
        # interleaved: each input written by a strided kernel whose params put pixel q's C_i channels at
        # q * C_total + c_offset; the sizes tile the channel axis (is_channel_concat)
        for (t, o), c in zip(concat_offsets(graph, n).items(), p["sizes"]):
            prod = graph.producer(t)
            if (prod is not None and prod.op == "call" and prod.call.kernel in STRIDED_KERNELS
                    and tuple(prod.call.params["output"]) == tuple(graph.tensors[t].shape)
                    and prod.call.params.get("output_pixel_stride", 0) == graph.tensors[out].shape[3]
                    and _in_arena(mem, t, at.index + o) and span[t][1] == step):
                pairs.add(frozenset((t, out)))
    return pairs


def same_bytes_pairs(graph: Graph, mem: MemoryPlan, span: dict[str, Span], step: int, n: Node) -> set[frozenset]:
    """The (input, output) pairs of node n at `step` at one location by an alias or an in-place rule."""
    pairs: set[frozenset] = set()
    out = n.outputs[0] if n.outputs else None
    kind = inplace_kind(n)
    for t in n.inputs:
        if t is None or out is None:
            continue
        same = mem.locations.get(t) == mem.locations.get(out)
        if n.op == "alias" and same:
            pairs.add(frozenset((t, out)))
        elif (kind in IN_PLACE_INPUTS and t in IN_PLACE_INPUTS[kind](n) and same
              and span[t][1] == step and graph.tensors[t].nbytes == graph.tensors[out].nbytes
              and (kind != "residual" or _apart_or_raster(graph, mem, n))):
            pairs.add(frozenset((t, out)))
    return pairs


def exact_pairs(graph: Graph, mem: MemoryPlan, span: dict[str, Span]) -> set[frozenset]:
    """Every pair of tensors the exact-position rules (alias, in place, concat view) let share bytes."""
    allowed: set[frozenset] = set()
    for step, n in enumerate(graph.nodes):
        if n.op == "alias" and n.attrs.get("view") == "concat":
            allowed |= concat_view_pairs(graph, mem, span, step, n)
        else:
            allowed |= same_bytes_pairs(graph, mem, span, step, n)
    return allowed


def raster_pairs(graph: Graph, span: dict[str, Span]) -> dict[tuple[str, str], int]:
    """(output tensor, input tensor) -> gap, re-derived from the kernels, not from the plan, for an input last
    read here (a reshape of it read later is another tensor: its own pair check catches it)."""
    raster = {}
    for step, n in enumerate(graph.nodes):
        x = n.inputs[0] if n.inputs else None
        gap = overlap_gap(n) if x in span and span[x][1] == step else None
        if gap is not None:
            raster[n.outputs[0], x] = gap
    return raster


def components(arena: list[str], allowed: set[frozenset]) -> dict[str, str]:
    """arena tensor -> its component's representative: sharing is transitive along chains of allowed pairs (a
    reshape of an in-place result, ...)."""
    comp = {t: t for t in arena}

    def find(t):
        while comp[t] != t:
            t = comp[t]
        return t

    for pair in allowed:
        a, b = tuple(pair)
        if a in comp and b in comp:
            comp[find(a)] = find(b)
    return {t: find(t) for t in arena}


def check_overlaps(graph: Graph, mem: MemoryPlan, arena: list[str], span: dict[str, Span],
                   raster: dict[tuple[str, str], int], component: dict[str, str]) -> None:
    """Raise PlanError for a tensor past the arena's end, or two live together whose bytes overlap when neither
    a raster gap nor a component allows it."""
    extent = {n.outputs[0]: output_extent(graph, n) for n in graph.nodes if n.op == "call"}  # strided: more
    for i, a in enumerate(arena):
        oa, na = mem.locations[a].index, extent.get(a, graph.tensors[a].nbytes)
        if oa + na > mem.arena_bytes:
            raise PlanError(f"{a} [{oa}, {oa + na}) ends past the {mem.arena_bytes}-byte arena")
        for b in arena[i + 1:]:
            ob, nb = mem.locations[b].index, extent.get(b, graph.tensors[b].nbytes)
            live_together = span[a][0] <= span[b][1] and span[b][0] <= span[a][1]
            # arena lists tensors as produced, so a call's output b comes after its input a
            if (b, a) in raster and oa - ob >= raster[b, a]:
                continue
            if live_together and oa < ob + nb and ob < oa + na and component[a] != component[b]:
                raise PlanError(f"{a} [{oa}, {oa + na}) and {b} [{ob}, {ob + nb}) overlap while both are live "
                                f"and no aliasing or in-place rule allows it")


def verify_tensor_plan(graph: Graph, mem: MemoryPlan) -> None:
    """Raise PlanError unless every pair of arena tensors live at one step either uses disjoint bytes or shares
    bytes exactly as a rule allows (see the top of this file)."""
    span = live_spans(graph)
    arena = [t for t in span if _in_arena(mem, t)]
    component = components(arena, exact_pairs(graph, mem, span))
    check_overlaps(graph, mem, arena, span, raster_pairs(graph, span), component)
