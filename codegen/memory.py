"""Where every tensor of a lowered graph lives, and in which order the ops run.

- Constants live in flash; a graph input/output lives in the caller's buffer; everything else is
  planned into the one arena by mcu.memory_planner.
- Storage groups: an `alias` node (reshape) gives its output its input's bytes; an op whose kernel
  is in-place "elementwise" (add) gives its output the bytes of a same-sized input whose last reader
  it is; a conv fused with its residual add (inplace "residual", codegen/passes/fuse_add.py) gives its
  output the bytes of the residual operand (its last input) if it dies there: the kernel reads
  residual[i] before it writes output[i]. Tensors of one group share one arena buffer; the group lives
  from its first producer to its last reader.
- Raster overlap: a kernel in RASTER_KERNELS writes its output pixels in order and reads, for output
  pixel p, only input pixels at or after the window corner of p (and of every later pixel). Its
  output may then start `gap` bytes below an input that dies there and overlap it (`raster_gap`), if the
  output is born at the node (not the bytes of a residual it took in place).
- In place: an in-place variant (its spec's `overwrites`; optimize="memory", codegen/passes/inplace.py) writes each
  output byte only once no later read needs the input bytes at or below it, so its output may start at
  its dying input's very offset (gap 0: in place) or below it; only for the geometry the kernel runs
  (mcu_kernels.h, the twins' `*_fits`). Its scratch is the node's second output: a tensor live during
  the call only.
- Concat views (optimize="memory", codegen/passes/inplace.py): each input of a concat that copies its inputs
  unchanged is written by its producer straight into its slice of the output's buffer, at the offset
  `group_offsets` gives; the concat runs no code. A slice is contiguous (every dim before the axis is 1) or, for
  a channel concat of NHWC tensors, interleaved: its producer (a STRIDED_KERNELS call) writes each pixel's
  C_i channels output_pixel_stride = C_total elements after the previous pixel's, starting c_offset elements
  into the buffer. Such a tensor's bytes run over `output_extent`, not its size; it never overlaps its input.
- Schedule: the ops are reordered (memory_planner.schedule) to minimize the peak of live groups.
- `verify_tensor_plan` checks the result tensor by tensor: two tensors live at the same step may
  share bytes only under one of the rules above, and only exactly as that rule says; an overlap's gap
  is derived again from the kernel and its parameters, not taken from the plan.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcu.codegen.ir import DTYPES, Graph
from mcu.codegen.errors import McuError
from mcu.memory_planner import Buffer, Plan, PlanError, lower_bound, plan
from mcu.memory_planner.schedule import Op, best_order, peak
from mcu.codegen.kernels import KERNELS, names

# Kernel properties, from the registry (codegen/kernels): `raster` kernels run n, y, x (output pixels in order,
# in blocks of `raster_block` pixels or one row, every read of a block before any write of the next); `strided`
# ones honour params["output_pixel_stride"] (the portable conv and pool loop nests, mcu_kernels.h); an in-place
# variant's `overwrites` is the geometry it runs over its dying input.
RASTER_KERNELS = names(raster=True)
STRIDED_KERNELS = names(strided=True)

# a spec's `inplace` -> the inputs whose bytes the output may take exactly, if one dies at the node: any same-sized
# input of an elementwise kernel; the residual (last input) of a conv fused with its add (passes/fuse_add.py)
# (never the conv's input as well: its windows read ahead of the writes)
IN_PLACE_INPUTS = {"elementwise": lambda n: n.inputs,
                   "residual": lambda n: n.inputs[-1:] if n.inputs[-1] not in n.inputs[:-1] else ()}


def inplace_kind(node) -> str:
    """The registry's `inplace` property of a call's kernel ("" for anything else)."""
    return KERNELS[node.attrs["kernel"]].inplace if node.op == "call" else ""


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
    peak_after_schedule: int   # ... in the chosen order
    overlaps: dict = None      # (output buffer, input buffer) -> gap, see overlap_gap

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
        if n.op == "alias" and n.attrs.get("view") == "concat":  # each input: a slice of the output's bytes
            for t in n.inputs:  # (its reshape chain is its group: one slice)
                root[find(t)] = find(n.outputs[0])
        elif n.op == "alias":
            root[find(n.outputs[0])] = find(n.inputs[0])
    last_read: dict[str, int] = {}  # alias group -> step of its last reader
    for step, n in enumerate(graph.nodes):
        for t in n.inputs:
            if t is not None:
                last_read[find(t)] = step
    pinned = {find(t) for t in graph.inputs + graph.outputs}
    for step, n in enumerate(graph.nodes):
        if (inplace_kind(n) not in IN_PLACE_INPUTS or find(n.outputs[0]) in pinned
                or find(n.outputs[0]) != n.outputs[0]):  # a concat slice keeps its slice
            continue
        out = graph.tensors[n.outputs[0]]
        for t in IN_PLACE_INPUTS[inplace_kind(n)](n):
            if t is None or graph.tensors[t].is_const or graph.tensors[t].nbytes != out.nbytes:
                continue
            if inplace_kind(n) == "residual" and find(n.inputs[0]) == find(t):
                continue  # the conv's input in other words (a reshape of it)
            g = find(t)
            if g not in pinned and last_read.get(g) == step:
                root[find(out.name)] = g
                last_read[g] = max(step, last_read.get(out.name, step))
                break
    return {t: find(t) for t in graph.tensors}


def concat_is_copy(params: dict) -> bool:
    """Every input of the concat is copied unchanged (its qparams equal the output's: lowering._requant's
    copy encoding)."""
    return all(m == 1 << 30 and s == 1 and off == -params["output_offset"]
               for m, s, off in zip(params["multiplier"], params["shift"], params["input_offset"]))


def concat_copies_exactly(params: dict) -> bool:
    """A concat whose inputs are each one contiguous slice of its output (every dim before the axis is 1) and
    copied unchanged."""
    return params["outer"] == 1 and concat_is_copy(params)


def is_channel_concat(graph: Graph, node) -> bool:
    """A concat (call or view) over the last axis of 4-d NHWC tensors with more than one pixel: each input is
    interleaved in the output, pixel by pixel."""
    out = graph.tensors[node.outputs[0]]
    p = node.attrs["params"]
    return (len(out.shape) == 4 and out.layout == "NHWC" and p["outer"] > 1
            and p["outer"] == int(np.prod(out.shape[:3])) and sum(p["sizes"]) == out.shape[3]
            and all(tuple(graph.tensors[t].shape) == (*out.shape[:3], c) for t, c in zip(node.inputs, p["sizes"])))


def pixel_stride(node) -> int | None:
    """The output pixel stride (elements) of a call that writes its pixels apart (stride > C_out), else None."""
    params = node.attrs.get("params") or {} if node.op == "call" else {}
    stride = params.get("output_pixel_stride", 0)
    return stride if stride and stride > params["output"][3] else None


def output_extent(graph: Graph, node) -> int:
    """Bytes from a call's first output byte past its last one: the tensor's size, or for a strided output
    ((pixels - 1) * stride + C_out) elements."""
    out = graph.tensors[node.outputs[0]]
    stride = pixel_stride(node)
    if stride is None:
        return out.nbytes
    n, h, w, c = node.attrs["params"]["output"]
    return ((n * h * w - 1) * stride + c) * (out.nbytes // (n * h * w * c))


def concat_offsets(graph: Graph, node) -> dict[str, int]:
    """input -> byte offset of its first element in the output of a concat view: the sizes laid end to end
    (outer == 1: whole slices; a channel concat: the channel offset of each pixel's slice)."""
    itemsize = np.dtype(DTYPES[graph.tensors[node.outputs[0]].dtype]).itemsize
    starts = np.cumsum((0,) + tuple(node.attrs["params"]["sizes"][:-1])) * itemsize
    return {t: int(o) for t, o in zip(node.inputs, starts)}


def reshape_chain(graph: Graph, t: str) -> list[str]:
    """t, then the tensors it is a reshape (alias) of, back to the one a call or a graph input produced."""
    chain = [t]
    while (p := graph.producer(chain[-1])) is not None and p.op == "alias" and not p.attrs.get("view"):
        chain.append(p.inputs[0])
    return chain


def group_offsets(graph: Graph) -> dict[str, int]:
    """tensor -> byte offset of its bytes in its storage group's buffer: a concat view's inputs (and what they
    reshape) sit at their slices (concat_offsets); every other tensor at 0."""
    return {u: o for n in graph.nodes if n.op == "alias" and n.attrs.get("view") == "concat"
            for t, o in concat_offsets(graph, n).items() for u in reshape_chain(graph, t)}


def raster_gap(params: dict, block: int | str = 1, first: bool = False) -> int:
    """Smallest safe (offset(input) - offset(output)) for a raster kernel with these params that works through
    its output pixels (n, y, x) in order in blocks of `block` pixels ("row": one output row): max over blocks of
    (bytes written up to the block's end) - (first input byte any pixel from the block's start on reads); when
    the kernel reads each block whole before writing any of it (`first`), from the next block's start on."""
    n, oh, ow, oc = params["output"]
    _, ih, iw, ic = params["input"]
    rows = np.maximum(np.arange(oh) * params["stride_h"] - params["pad_top"], 0)
    cols = np.maximum(np.arange(ow) * params["stride_w"] - params["pad_left"], 0)
    first_in = (np.arange(n)[:, None, None] * ih * iw + rows[None, :, None] * iw + cols[None, None, :]).ravel()
    first_in = np.minimum.accumulate(first_in[::-1])[::-1]  # what any later pixel still reads
    size = ow if block == "row" else int(block)
    starts = np.arange(0, first_in.size, size)
    written = np.minimum(starts + size, first_in.size) * oc  # through the block's last pixel
    if first:  # the block's own reads are done; the last block's writes meet no later read
        starts, written = starts[1:], written[:-1]
    return int(max(0, (written - first_in[starts] * ic).max())) if starts.size else 0


def kernel_raster_gap(kernel: str, params: dict, copy: bool = True) -> int:
    """raster_gap for a raster kernel, with its registry's block and order (`copy` False: a raster_copy kernel's
    plain gap, under which it copies nothing)."""
    spec = KERNELS[kernel]
    return raster_gap(params, spec.raster_block, spec.raster_first and (copy or not spec.raster_copy))


def overlap_gap(node, copy: bool = True) -> int | None:
    """How many bytes below its first input a call's output must start to overlap it, if that input dies
    at the call: 0 for an in-place kernel on geometry it runs, else raster_gap for a raster kernel (`copy` False:
    a raster_copy kernel's plain gap); None when the kernel's output may not overlap its input."""
    kernel = node.attrs.get("kernel") if node.op == "call" else None
    if pixel_stride(node) is not None:  # raster_gap assumes contiguous pixels
        return None
    overwrites = KERNELS[kernel].overwrites if kernel else None
    if overwrites is not None and overwrites(node.attrs["params"]):
        return 0
    if kernel in RASTER_KERNELS:
        return kernel_raster_gap(kernel, node.attrs["params"], copy)
    return None


def _overwritable(graph: Graph, group: dict[str, str], external) -> list[bool]:
    """Per node: its output and its first input live in different arena buffers, and no later node reads
    the input's bytes, so the output may be written over them."""
    last_read: dict[str, int] = {}
    for step, n in enumerate(graph.nodes):
        for t in n.inputs:
            if t is not None:
                last_read[group[t]] = step
    born: dict[str, int] = {}
    for step, n in enumerate(graph.nodes):
        for t in n.outputs:
            born.setdefault(group[t], step)
    sliced = {group[t] for t in group_offsets(graph)}  # a concat's buffer: its slices are not at its start
    flags = []
    for step, n in enumerate(graph.nodes):
        src = group[n.inputs[0]] if n.inputs and n.inputs[0] is not None else None
        dst = group[n.outputs[0]]  # born here: not the bytes of an input it took in place (fused residual)
        flags.append(n.op == "call" and src is not None and not graph.tensors[n.inputs[0]].is_const
                     and src not in external and dst not in external and src != dst and last_read.get(src) == step
                     and born[dst] == step and dst not in sliced)
    return flags


def overwritable_inputs(graph: Graph) -> list[bool]:
    """Per node, in the graph's current order: may its output be written over its first input (which dies
    there and lives in the arena)? What codegen/passes/inplace.py asks before it picks an in-place kernel."""
    group = storage_groups(graph)
    return _overwritable(graph, group, _external(graph, group))


def _overlaps(graph: Graph, group: dict[str, str], external, copy: bool = True) -> dict[tuple[str, str], int]:
    """(output group, input group) -> gap for raster and in-place kernels whose input group dies at the node."""
    found = {}
    for n, ok in zip(graph.nodes, _overwritable(graph, group, external)):
        gap = overlap_gap(n, copy) if ok else None
        if gap is not None:
            found[group[n.outputs[0]], group[n.inputs[0]]] = gap
    return found


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
    verify_tensor_plan(graph, mem)
    return graph, mem


def buffer_labels(graph: Graph, mem: MemoryPlan) -> dict[str, str]:
    """Buffer name -> 'tensor (producing kernel)' for reports and pictures."""
    labels = {}
    for n in graph.nodes:
        for t in n.outputs:
            if any(b.name == t for b in mem.buffers):
                labels[t] = f"{t} ({n.attrs.get('kernel', n.op).removeprefix('mcu_')})"
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


def _apart_or_raster(graph: Graph, mem: MemoryPlan, node) -> bool:
    """A fused conv + residual add's output lies wholly above the conv's input, or starts at least the raster
    gap below it (the residual rule never covers the conv's windows, which read ahead of the writes). The gap
    is at most the output's size, so an output wholly below its input passes the second test."""
    x, out = mem.locations.get(node.inputs[0]), mem.locations[node.outputs[0]]
    if x is None or x.kind != "arena" or out.kind != "arena":
        return True
    ox, oo = x.index, out.index
    nx = graph.tensors[node.inputs[0]].nbytes
    return oo >= ox + nx or ox - oo >= kernel_raster_gap(node.attrs["kernel"], node.attrs["params"])


def verify_tensor_plan(graph: Graph, mem: MemoryPlan) -> None:
    """Raise PlanError unless every pair of arena tensors live at one step either uses disjoint bytes
    or shares bytes exactly as an alias, an in-place elementwise op (or fused residual), a concat view (each
    input at its slice of the output; a channel view's slices interleaved as its producers' output_pixel_stride
    says, each tensor spanning its output_extent), a raster overlap or an in-place kernel allows (the last two only over
    a first input that no later node reads). Tensors linked by the exact-position rules form components
    whose members sit where the rules put them relative to each other, so they may share bytes."""
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
        if n.op == "alias" and n.attrs.get("view") == "concat":
            # each input exactly at its slice, re-derived from the params: the sizes tile the output
            p, at = n.attrs["params"], mem.locations.get(out)
            if (concat_copies_exactly(p) and at is not None and at.kind == "arena"
                    and sum(p["sizes"]) == graph.tensors[out].nbytes):
                for (t, o), size in zip(concat_offsets(graph, n).items(), p["sizes"]):
                    if (mem.locations.get(t) == Location("arena", at.index + o) and graph.tensors[t].nbytes == size
                            and span[t][1] == step):
                        allowed.add(frozenset((t, out)))
            elif concat_is_copy(p) and at is not None and at.kind == "arena" and is_channel_concat(graph, n):
                # interleaved: each input written by a strided kernel whose params put pixel q's C_i channels at
                # q * C_total + c_offset; the sizes tile the channel axis (is_channel_concat)
                for (t, o), c in zip(concat_offsets(graph, n).items(), p["sizes"]):
                    prod = graph.producer(t)
                    if (prod is not None and prod.op == "call" and prod.attrs["kernel"] in STRIDED_KERNELS
                            and tuple(prod.attrs["params"]["output"]) == tuple(graph.tensors[t].shape)
                            and prod.attrs["params"].get("output_pixel_stride", 0) == graph.tensors[out].shape[3]
                            and mem.locations.get(t) == Location("arena", at.index + o) and span[t][1] == step):
                        allowed.add(frozenset((t, out)))
            continue
        for t in n.inputs:
            if t is None or out is None:
                continue
            same = mem.locations.get(t) == mem.locations.get(out)
            if n.op == "alias" and same:
                allowed.add(frozenset((t, out)))
            elif (inplace_kind(n) in IN_PLACE_INPUTS and t in IN_PLACE_INPUTS[inplace_kind(n)](n) and same
                  and span[t][1] == step and graph.tensors[t].nbytes == graph.tensors[out].nbytes
                  and (inplace_kind(n) != "residual" or _apart_or_raster(graph, mem, n))):
                allowed.add(frozenset((t, out)))
    # (output tensor, input tensor) -> gap, re-derived from the kernels, not from the plan, for an input
    # last read here (a reshape of it read later is another tensor: its own pair check below catches it)
    raster = {}
    for step, n in enumerate(graph.nodes):
        x = n.inputs[0] if n.inputs else None
        gap = overlap_gap(n) if x in span and span[x][1] == step else None
        if gap is not None:
            raster[n.outputs[0], x] = gap
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
            if live_together and oa < ob + nb and ob < oa + na and find(a) != find(b):
                raise PlanError(f"{a} [{oa}, {oa + na}) and {b} [{ob}, {ob + nb}) overlap while both are live "
                                f"and no aliasing or in-place rule allows it")
