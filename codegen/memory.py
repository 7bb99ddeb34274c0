"""Where every tensor of a lowered graph lives, and in which order the ops run.

- Constants live in flash; a graph input/output lives in the caller's buffer; everything else is
  planned into the one arena by mcu.memory_planner, one buffer per storage group, with the overlap gaps its
  kernels allow (codegen/sharing.py says which tensors may share bytes and how).
- Schedule: the ops are reordered (memory_planner.schedule) to minimize the peak of live groups.
- Raster-copy kernels get their plain gap (no copies) unless the read-first gap lowers the arena.
- The plan is checked tensor by tensor (codegen/plan_verifier.py) before plan_graph returns it.
"""
from __future__ import annotations

from dataclasses import dataclass

from mcu.codegen.ir import Graph
from mcu.codegen.errors import McuError
from mcu.codegen import plan_verifier
from mcu.codegen.sharing import group_offsets, overlap_gap, overwritable, storage_groups
from mcu.memory_planner import Buffer, Plan, lower_bound, plan
from mcu.memory_planner.schedule import Op, best_order, peak

ARENA_ALIGN = 16   # the arena base
BUFFER_ALIGN = 4   # every buffer inside it: word accesses are aligned on every core


@dataclass(frozen=True)
class Location:
    kind: str  # "arena", "input", "output", "const", "state"
    index: int  # arena or state-region offset, or input/output position


@dataclass(frozen=True)
class MemoryPlan:
    locations: dict[str, Location]
    buffers: tuple[Buffer, ...]
    plan: Plan
    lower_bound: int
    peak_before_schedule: int  # peak of live bytes in the importer's order
    peak_after_schedule: int   # ... in the chosen order
    overlaps: dict = None      # (output buffer, input buffer) -> gap, see overlap_gap

    @property
    def arena_bytes(self) -> int:
        return self.plan.arena_bytes


def overwritable_inputs(graph: Graph) -> list[bool]:
    """Per node, in the graph's current order: may its output be written over its first input (which dies
    there and lives in the arena)? What codegen/passes/inplace.py asks before it picks an in-place kernel."""
    group = storage_groups(graph)
    return overwritable(graph, group, _external(graph, group))


def _overlaps(graph: Graph, group: dict[str, str], external, copy: bool = True) -> dict[tuple[str, str], int]:
    """(output group, input group) -> gap for raster and in-place kernels whose input group dies at the node."""
    found = {}
    for n, ok in zip(graph.nodes, overwritable(graph, group, external)):
        gap = overlap_gap(n, copy) if ok else None
        if gap is not None:
            found[group[n.outputs[0]], group[n.inputs[0]]] = gap
    return found


def state_offsets(graph: Graph) -> tuple[list[int], int]:
    """Each state's offset in the state region (in graph.state's order, BUFFER_ALIGN apart) and the region's bytes."""
    offsets, end = [], 0
    for s in graph.state:
        offsets.append(end)
        end += -(-graph.tensors[graph.inputs[s.input]].nbytes // BUFFER_ALIGN) * BUFFER_ALIGN
    return offsets, end


def rows_written_in_place(graph: Graph, s) -> bool:
    """Is state s's update a scatter into the state itself (a KV cache written at a position) that is the state's
    only reader? Then the scatter writes its rows straight into the state region: no copy of the table, none back."""
    t, u = graph.inputs[s.input], graph.outputs[s.output]
    node = graph.producer(u)
    return node is not None and node.op == "call" and node.call.kernel.startswith("mcu_scatter_") \
        and node.inputs[0] == t and [n.name for n in graph.consumers(t)] == [node.name] \
        and graph.outputs.count(u) == 1


def _external(graph: Graph, group: dict[str, str]) -> dict[str, Location]:
    """Storage groups outside the arena: the caller's inputs and outputs, and the state region's values (a state's
    update is planned in the arena, alive to the end, and copied back after the last op; one whose rows are
    written in place, rows_written_in_place, is the state region itself)."""
    external: dict[str, Location] = {}
    offsets = state_offsets(graph)[0]
    held_in = dict(zip((s.input for s in graph.state), offsets))
    held_out = {s.output: off for s, off in zip(graph.state, offsets)}
    in_place = {s.output for s in graph.state if rows_written_in_place(graph, s)}
    for i, t in enumerate(graph.inputs):
        external[group[t]] = Location("state", held_in[i]) if i in held_in else Location("input", i)
    for i, t in enumerate(graph.outputs):
        if i in in_place:
            external[group[t]] = Location("state", held_out[i])
        if i in held_out:
            continue
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


def _dependencies(graph: Graph, group: dict[str, str]) -> list[frozenset[int]]:
    """Op i runs after the producers of its inputs and, where it writes over an input in place,
    after every other reader of that input."""
    producer = {t: i for i, n in enumerate(graph.nodes) for t in n.outputs}
    readers: dict[str, set[int]] = {}
    for i, n in enumerate(graph.nodes):
        for t in n.inputs:
            if t is not None:
                readers.setdefault(t, set()).add(i)
    deps = []
    for i, n in enumerate(graph.nodes):
        d = {producer[t] for t in n.inputs if t in producer}
        for t in n.inputs:
            if t is not None and n.op != "alias" and group.get(t) == group.get(n.outputs[0]):
                # i overwrites t: every reader of t, or of a reshape of t made before i, reads first
                older = [u for u in group if group[u] == group[t] and (u in graph.inputs or producer.get(u, i) < i)]
                d |= set().union(*(readers.get(u, set()) for u in older)) - {i}
        deps.append(frozenset(d))
    return deps


def schedule(graph: Graph) -> tuple[Graph, int, int]:
    """(graph with its nodes in the peak-minimizing order, peak before, peak after)."""
    group = storage_groups(graph)
    ops, sizes = _ops_and_sizes(graph, group, _external(graph, group))
    order = best_order(ops, sizes, deps=_dependencies(graph, group))
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
    for s in graph.state:  # a state's new value lives until it is copied back, after the last op
        last[group[graph.outputs[s.output]]] = len(graph.nodes) - 1
    _, sizes = _ops_and_sizes(graph, group, external)
    buffers = tuple(Buffer(g, sizes[g], first[g], last[g], BUFFER_ALIGN)
                    for g in sorted(first, key=lambda g: (first[g], g)) if g not in external)
    overlaps = _overlaps(graph, group, external)
    result = plan(buffers, overlaps=overlaps)
    # raster_copy kernels copy a block only where the plan needs their read-first gap: each takes its plain gap
    # (no copies) unless that grows the arena
    chosen = dict(overlaps)
    for key, gap in _overlaps(graph, group, external, copy=False).items():
        if gap != chosen[key]:
            trial = plan(buffers, overlaps={**chosen, key: gap})
            if trial.arena_bytes <= result.arena_bytes:
                chosen[key], result = gap, trial
    locations, inside = {}, group_offsets(graph)
    for t, tensor in graph.tensors.items():
        if tensor.is_const:
            locations[t] = Location("const", 0)
        elif group[t] in external:
            locations[t] = external[group[t]]
        elif group[t] in result.offsets:
            locations[t] = Location("arena", result.offsets[group[t]] + inside.get(t, 0))
    # the bound with every read-first gap (the best the copies allow); the gaps the plan was made with
    mem = MemoryPlan(locations, buffers, result, lower_bound(buffers, overlaps), before, after, chosen)
    plan_verifier.verify_tensor_plan(graph, mem)
    return graph, mem


def buffer_labels(graph: Graph, mem: MemoryPlan) -> dict[str, str]:
    """Buffer name -> 'tensor (producing kernel)' for reports and pictures."""
    labels = {}
    for n in graph.nodes:
        for t in n.outputs:
            if any(b.name == t for b in mem.buffers):
                labels[t] = f"{t} ({(n.call.kernel if n.call else n.op).removeprefix('mcu_')})"
    return labels


def describe(graph: Graph, mem: MemoryPlan) -> str:
    """The plan as a table plus an ASCII picture (what `mcu plan` prints)."""
    from mcu.memory_planner.planner import dump

    labels = buffer_labels(graph, mem)
    rows = [f"arena {mem.arena_bytes:,} B, liveness lower bound {mem.lower_bound:,} B ({mem.plan.algorithm}); "
            f"schedule peak {mem.peak_before_schedule:,} B in import order, {mem.peak_after_schedule:,} B "
            f"as scheduled",
            f"{'buffer':42} {'bytes':>8} {'offset':>8} {'steps':>9}"]
    for b in mem.buffers:
        rows.append(f"{labels.get(b.name, b.name):42} {b.size:>8,} {mem.plan.offsets[b.name]:>8,} "
                    f"{b.first:>4}-{b.last:<4}")
    return "\n".join(rows) + "\n\n" + dump(list(mem.buffers), mem.plan)


def picture(graph: Graph, mem: MemoryPlan, title: str = "") -> str:
    from mcu.memory_planner.picture import svg
    return svg(list(mem.buffers), mem.plan, title=title, labels=buffer_labels(graph, mem),
               lower_bound=mem.lower_bound)
