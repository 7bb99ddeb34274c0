"""A concat written in place (both builds); optimize="memory": a conv whose input dies at it runs as its in-place
variant, with planned scratch.

- Memory mode keeps the portable kernels, whose outputs may start `raster_gap` bytes below a dying
  input (codegen/sharing.py). Along a chain each such overlap moves the next tensor down by its gap, so
  the arena grows by the sum of the gaps. An in-place kernel's output may start at its input's very
  offset instead: a chain of them stays put, and costs its largest scratch, not the sum of its gaps.
- The registry (codegen/kernels) gives each portable kernel's in-place variant (mode "memory"), the geometry
  it runs (`overwrites`, the twins' `*_fits`; mcu_kernels.h) and its scratch size (the twin of its
  `*_scratch_bytes`).
- A node is swapped only where its input dies there in the current order and both tensors live in the
  arena (memory.overwritable_inputs): elsewhere the variant could not overwrite the input and its
  scratch would be bytes for nothing.
- The scratch is a new int8 tensor `<node>_scratch`, the node's second output: the planner gives it
  arena bytes live during the call only, and emit passes it before the output (the C argument order).
  the Call's twin keeps the portable kernel, which the reference runs (the same results).
- Concat in place (before the swaps): where every dim before the concat axis is 1 (params outer == 1) each
  input is one contiguous slice of the output, at byte offset sum(sizes[:i]). If every input is an exact copy
  (its qparams equal the output's: lowering's copy encoding) and is the output of a call that nothing else
  reads (or of a reshape chain of one, each read only by the next), not a graph input or output, and the
  concat's output is not a graph output (emit addresses arena
  bytes only), the concat becomes a view: op "alias" with attrs["view"] = "concat" and the kernel's params.
  No code runs; sharing.storage_groups gives each input its slice of the output's buffer (group_offsets), and
  the reference runs the concat twin. Otherwise (differing qparams, an input read elsewhere, ...) the copy stays.
- Channel concat in place: a concat over the last axis of 4-d NHWC tensors (sharing.is_channel_concat) under the
  same conditions, where every input comes straight from a call of a kernel that writes strided output
  (a `strided` kernel: the portable conv and pool loops, the int8 conv and average pool variants) not already
  strided, becomes a view too: each producer's params get output_pixel_stride = C_total, so it writes pixel
  q's C_i channels at q * C_total + c_offset of the concat's buffer (its tensor sits c_offset elements into it). Such a producer
  never overlaps its input (sharing.overlap_gap) nor runs as an in-place variant (its output is a slice).
"""
from __future__ import annotations

from mcu.codegen.ir import Graph
from mcu.codegen.kernels import names, variants_of
from mcu.codegen.memory import overwritable_inputs
from mcu.codegen.sharing import concat_copies_exactly, concat_is_copy, is_channel_concat, reshape_chain
from mcu.codegen.target import Target
from mcu.codegen.passes.select_kernels import with_scratch

STRIDED = names(strided=True)


def concat_view(graph: Graph, node) -> bool:
    """May this concat call become a view of its inputs written in place (module docstring)?"""
    if node.op != "call" or node.call.kernel != "mcu_concat_s8":
        return False
    external = set(graph.inputs) | set(graph.outputs)
    channels = concat_is_copy(node.call.params) and is_channel_concat(graph, node)
    if (not (concat_copies_exactly(node.call.params) or channels) or node.outputs[0] in external
            or len(set(node.inputs)) != len(node.inputs)):
        return False
    if channels:  # each input straight from a strided-capable call that writes it contiguously today
        for t in node.inputs:
            producer = graph.producer(t)
            if (producer is None or producer.op != "call" or producer.call.kernel not in STRIDED
                    or producer.call.params.get("output_pixel_stride", 0) != 0 or producer.outputs[0] != t
                    or t in external or graph.consumers(t) != [node]):
                return False
        return True
    for t in node.inputs:  # t, or the tensor it reshapes, comes from a call and is read by nothing else
        chain = reshape_chain(graph, t)
        producer = graph.producer(chain[-1])
        if (graph.tensors[t].is_const or producer is None or producer.op != "call"
                or any(u in external or len(graph.consumers(u)) != 1 for u in chain)
                or graph.consumers(t) != [node]):
            return False
    return True


def concat_views(graph: Graph) -> Graph:
    views = [n for n in graph.nodes if concat_view(graph, n)]
    stride = {}  # producer of a channel concat's input -> C_total
    for n in views:
        if n.call.params["outer"] > 1:
            stride.update({graph.producer(t).name: graph.tensors[n.outputs[0]].shape[3] for t in n.inputs})
    names = {n.name for n in views}
    return graph.replace(nodes=tuple(
        n.replace(op="alias", attrs={"view": "concat", "params": n.call.params}, call=None) if n.name in names else
        n.with_call(params={**n.call.params, "output_pixel_stride": stride[n.name]})
        if n.name in stride else n
        for n in graph.nodes))


def use_inplace_kernels(graph: Graph, target: Target) -> Graph:
    graph = concat_views(graph)  # both builds: the speed build's producers are the board's strided variants
    if target.variants:  # optimize="speed": the board's fastest kernels
        return graph
    nodes, tensors = [], dict(graph.tensors)
    for node, dies in zip(graph.nodes, overwritable_inputs(graph)):
        v = next(iter(variants_of(node.call.kernel, "memory")), None) if node.op == "call" else None
        if v is not None and dies and v.applies(node.call.params):
            node = with_scratch(tensors, node, v.scratch(node.call.params)).with_call(kernel=v.name,
                                                                                      twin=node.call.kernel)
        nodes.append(node)
    return graph.replace(nodes=tuple(nodes), tensors=tensors)
