"""Pick each call's kernel variant for the target board, and prepare its constants at compile time.

- `lower` emits portable kernels (the reference); this pass swaps in a faster variant when the
  board has the features it needs and the node's parameters qualify.
- The registry (codegen/kernels) lists, per portable kernel, its variants in order of preference: Helium
  (`_mve`, needs "mve"), then DSP/SIMD32 (`_dsp`, needs "dsp"), then scalar (`_fast`, any core); a
  specialised kernel (1x1 conv) before the general one. The first whose `requires` features the board
  has, whose `applies(params)` holds and whose `prepare` does not decline wins; else the portable kernel
  stays. `prepare` rewrites the node's constants into the form its kernel wants (codegen/kernels/prepare.py).
- Twins: the reference keeps the portable semantics. A variant node's Call keeps `twin` (the portable
  kernel), `twin_inputs` and `twin_quant` (the portable constants, still in the graph
  but not emitted), and codegen/reference.py runs the portable twin on those. So the device is always
  compared with the unprepared computation, and a wrong `prepare` shows up as a mismatch; no variant
  needs a twin of its own. The exception is a variant in another arithmetic (the spec's `arithmetic`, e.g. the
  int8 adds with 16-bit multipliers): its prepare builds that arithmetic's params where its error bound holds,
  and its twin is the registered kernel holding the arithmetic.
- Scratch: a variant that needs working memory (the DSP convs' widened pixel pair, the scalar and int4 convs'
  im2col window, the depthwise 3x3 kernels' row of padding)
  names its size, the twin of its C `*_scratch_bytes` (codegen/twins), as its spec's `scratch`: the node gets
  a scratch tensor sized exactly for it (with_scratch), which the planner places in the arena, live during
  the call only. These variants (the Helium conv's 3 windows and row table too) therefore take any window
  size. What no scratch can lift stays: the scalar GEMM's two channels per word need
  128 * sum|w| < 2^23 for the low channel (pack_pairs_s32), or its sum would spill into the high one.
"""
from __future__ import annotations

from mcu.codegen.ir import Graph, Node, Tensor
from mcu.codegen.kernels import KernelSpec, variants_of
from mcu.codegen.target import Target


def with_scratch(graph_tensors: dict[str, Tensor], node: Node, nbytes: int) -> Node:
    """`node` with a scratch tensor `<node>_scratch` of `nbytes` as its second output: the planner gives it arena
    bytes live during the call only (aligned to BUFFER_ALIGN, 4), and emit passes it right before the output."""
    name = f"{node.name}_scratch"
    graph_tensors[name] = Tensor(name, (max(1, int(nbytes)),), "int8")
    return node.replace(outputs=(node.outputs[0], name))


def as_variant(node: Node, v: KernelSpec, tensors: dict[str, Tensor]) -> Node | None:
    """`node` (a call of v's portable kernel) as a call of variant v, its constants prepared and its scratch added
    (new constants and the scratch go into `tensors`); None when v's prepare declines these constants."""
    c = node.call
    candidate = node.with_call(kernel=v.name, twin=v.arithmetic or c.portable, twin_inputs=c.twin_inputs if c.selected else node.inputs,
                               twin_quant=c.twin_quant if c.selected else c.quant)
    if v.prepare is not None:
        prepared = v.prepare(candidate, tensors)
        if prepared is None:
            return None
        candidate, new = prepared
        tensors.update(new)
    if v.scratch is not None:
        candidate = with_scratch(tensors, candidate, v.scratch(candidate.call.params))
    return candidate


def select_kernels(graph: Graph, target: Target, skip: frozenset[str] = frozenset()) -> Graph:
    """skip: variants not to pick (scripts/ew_bench.py measures the ones they would replace)."""
    nodes, tensors = [], dict(graph.tensors)
    for node in graph.nodes:
        if node.op == "call" and (target.variants or "int4" in target.features):
            for v in variants_of(node.call.kernel):
                if v.name in skip:
                    continue
                # optimize="memory" keeps the portable kernels, bar the int4 ones the weights are packed for
                wanted = target.variants or "int4" in v.requires
                if wanted and v.requires <= target.features and v.applies(node.call.params):
                    candidate = as_variant(node, v, tensors)
                    if candidate is not None:
                        node = candidate
                        break
        nodes.append(node)
    return graph.replace(nodes=tuple(nodes), tensors=tensors)
