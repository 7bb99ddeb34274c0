"""Where every tensor of a lowered graph lives, and in which order the ops run.

- Constants live in flash; a graph input/output lives in the caller's buffer; everything else is
  planned into the one arena by mcu.memory_planner.
- Storage groups: an `alias` node (reshape) gives its output its input's bytes; an op whose kernel
  is in-place "elementwise" (add) gives its output the bytes of a same-sized input whose last reader
  it is. Tensors of one group share one arena buffer; the group lives from its first producer to its
  last reader.
- Schedule: the ops are reordered (memory_planner.schedule) to minimize the peak of live groups.
- `verify_tensor_plan` checks the result tensor by tensor: two tensors live at the same step may
  share bytes only under one of the rules above, and only exactly as that rule says.
"""
from __future__ import annotations

from dataclasses import dataclass

from mcu.codegen.ir import Graph
from mcu.errors import McuError
from mcu.memory_planner import Buffer, Plan, PlanError, lower_bound, plan
from mcu.memory_planner.schedule import Op, best_order, peak

ARENA_ALIGN = 16   # the arena base
BUFFER_ALIGN = 4   # every buffer inside it: word accesses are aligned on every core


@dataclass(frozen=True)
class Location:
    kind: str  # "arena", "input", "output", "const"
    index: int  # arena offset, or input/output position


@dataclass(frozen=True)
class MemoryPlan:
    locations: dict[str, Location]
    buffers: tuple[Buffer, ...]
    plan: Plan
    lower_bound: int
    peak_before_schedule: int  # peak of live bytes in the importer's order
    peak_after_schedule: int   # ... in the chosen order (== lower_bound)

    @property
    def arena_bytes(self) -> int:
        return self.plan.arena_bytes


def storage_groups(graph: Graph) -> dict[str, str]:
    """tensor -> the representative tensor whose bytes it uses (see the module docstring)."""
    root: dict[str, str] = {}

    def find(t):
        while root.get(t, t) != t:
            t = root[t]
        return t

    for n in graph.nodes:
        if n.op == "alias":
            root[find(n.outputs[0])] = find(n.inputs[0])
    last_read: dict[str, int] = {}  # alias group -> step of its last reader
    for step, n in enumerate(graph.nodes):
        for t in n.inputs:
            if t is not None:
                last_read[find(t)] = step
    pinned = {find(t) for t in graph.inputs + graph.outputs}
    for step, n in enumerate(graph.nodes):
        if n.attrs.get("inplace") != "elementwise" or find(n.outputs[0]) in pinned:
            continue
        out = graph.tensors[n.outputs[0]]
        for t in n.inputs:
            if t is None or graph.tensors[t].is_const or graph.tensors[t].nbytes != out.nbytes:
                continue
            g = find(t)
            if g not in pinned and last_read.get(g) == step:
                root[find(out.name)] = g
                last_read[g] = max(step, last_read.get(out.name, step))
                break
    return {t: find(t) for t in graph.tensors}


def _external(graph: Graph, group: dict[str, str]) -> dict[str, Location]:
    external: dict[str, Location] = {}
    for i, t in enumerate(graph.inputs):
        external[group[t]] = Location("input", i)
    for i, t in enumerate(graph.outputs):
        g = group[t]
        if g in external:
            raise McuError(f"model output {i} is model input {external[g].index} (or a reshape of it); "
                           f"the model must compute something")
        external[g] = Location("output", i)
    return external


def _ops_and_sizes(graph: Graph, group: dict[str, str], external) -> tuple[list[Op], dict[str, int]]:
    ops = [Op(n.name, tuple(group[t] for t in n.inputs if t is not None and not graph.tensors[t].is_const),
              tuple(group[t] for t in n.outputs)) for n in graph.nodes]
    sizes = {}
    for t, g in group.items():
        if not graph.tensors[t].is_const:
            sizes[g] = 0 if g in external else max(sizes.get(g, 0), graph.tensors[t].nbytes)
    return ops, sizes


def schedule(graph: Graph) -> tuple[Graph, int, int]:
    """(graph with its nodes in the peak-minimizing order, peak before, peak after)."""
    group = storage_groups(graph)
    ops, sizes = _ops_and_sizes(graph, group, _external(graph, group))
    order = best_order(ops, sizes)
    before, after = peak(ops, sizes), peak(ops, sizes, order)
    if after >= before:
        return graph, before, before
    return graph.replace(nodes=tuple(graph.nodes[i] for i in order)), before, after


def plan_graph(graph: Graph) -> tuple[Graph, MemoryPlan]:
    """Schedule, group and plan `graph`: returns the (reordered) graph and its memory plan."""
    graph, before, after = schedule(graph)
    group = storage_groups(graph)
    external = _external(graph, group)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for step, n in enumerate(graph.nodes):
        for t in n.outputs:
            first.setdefault(group[t], step)
            last[group[t]] = max(last.get(group[t], step), step)
        for t in n.inputs:
            if t is not None and not graph.tensors[t].is_const:
                last[group[t]] = max(last.get(group[t], step), step)
    _, sizes = _ops_and_sizes(graph, group, external)
    buffers = tuple(Buffer(g, sizes[g], first[g], last[g], BUFFER_ALIGN)
                    for g in sorted(first, key=lambda g: (first[g], g)) if g not in external)
    result = plan(buffers)
    locations = {}
    for t, tensor in graph.tensors.items():
        if tensor.is_const:
            locations[t] = Location("const", 0)
        elif group[t] in external:
            locations[t] = external[group[t]]
        elif group[t] in result.offsets:
            locations[t] = Location("arena", result.offsets[group[t]])
    mem = MemoryPlan(locations, buffers, result, lower_bound(buffers), before, after)
    verify_tensor_plan(graph, mem)
    return graph, mem


def verify_tensor_plan(graph: Graph, mem: MemoryPlan) -> None:
    """Raise PlanError unless every pair of arena tensors live at one step either uses disjoint bytes
    or shares bytes exactly as an alias or an in-place elementwise op allows."""
    span: dict[str, tuple[int, int]] = {}
    for step, n in enumerate(graph.nodes):
        for t in n.outputs:
            span.setdefault(t, (step, step))
        for t in n.inputs:
            if t is not None and t in span:
                span[t] = (span[t][0], step)
    arena = [t for t in span if mem.locations.get(t, Location("", 0)).kind == "arena"]
    allowed: set[frozenset[str]] = set()
    for step, n in enumerate(graph.nodes):
        out = n.outputs[0] if n.outputs else None
        for t in n.inputs:
            if t is None or out is None:
                continue
            same = mem.locations.get(t) == mem.locations.get(out)
            if n.op == "alias" and same:
                allowed.add(frozenset((t, out)))
            elif (n.attrs.get("inplace") == "elementwise" and same and span[t][1] == step
                  and graph.tensors[t].nbytes == graph.tensors[out].nbytes):
                allowed.add(frozenset((t, out)))
    # sharing is transitive along chains of allowed pairs (a reshape of an in-place result, ...)
    comp = {t: t for t in arena}

    def find(t):
        while comp[t] != t:
            t = comp[t]
        return t

    for pair in allowed:
        a, b = tuple(pair)
        if a in comp and b in comp:
            comp[find(a)] = find(b)
    for i, a in enumerate(arena):
        oa, na = mem.locations[a].index, graph.tensors[a].nbytes
        if oa + na > mem.arena_bytes:
            raise PlanError(f"{a} [{oa}, {oa + na}) ends past the {mem.arena_bytes}-byte arena")
        for b in arena[i + 1:]:
            ob, nb = mem.locations[b].index, graph.tensors[b].nbytes
            live_together = span[a][0] <= span[b][1] and span[b][0] <= span[a][1]
            if live_together and oa < ob + nb and ob < oa + na and find(a) != find(b):
                raise PlanError(f"{a} [{oa}, {oa + na}) and {b} [{ob}, {ob + nb}) overlap while both are live "
                                f"and no aliasing or in-place rule allows it")
