"""Slice before converting: slice(convert(x)) -> convert(slice(x)) (pass: Graph -> Graph).

A convert between precisions (quantize, dequantize, convert) works element by element, so it commutes with a slice.
Where its output feeds that slice alone (a recurrent layer's whole output sequence quantized, then its last step
taken: `y[:, -1]`), slicing first converts only the elements kept. The slice takes the convert's input type and
qparams, the convert moves to the slice's place and writes the slice's output tensor, which keeps its name, so
readers are unchanged. Repeats until no pair is left (a slice of a slice of a convert).
"""
from __future__ import annotations

from mcu.codegen.ir import Graph

CONVERTS = ("quantize", "dequantize", "convert")


def slice_first(graph: Graph) -> Graph:
    while True:
        moved = _move_one(graph)
        if moved is None:
            return graph
        graph = moved


def _move_one(graph: Graph) -> Graph | None:
    producer = {o: n for n in graph.nodes for o in n.outputs}
    for i, node in enumerate(graph.nodes):
        src = producer.get(node.inputs[0]) if node.op == "slice" and node.inputs else None
        if src is None or src.op not in CONVERTS or node.inputs[0] in graph.outputs or \
                [n.name for n in graph.consumers(node.inputs[0])] != [node.name]:
            continue
        x, out = graph.tensors[src.inputs[0]], graph.tensors[node.outputs[0]]
        cut = f"{node.name}_first"
        tensors = {**graph.tensors, cut: x.replace(name=cut, shape=out.shape, data=None)}
        del tensors[node.inputs[0]]
        nodes = [n for n in graph.nodes[:i] if n is not src]
        nodes += [node.replace(inputs=(src.inputs[0],), outputs=(cut,)), src.replace(inputs=(cut,), outputs=node.outputs)]
        return graph.replace(tensors=tensors, nodes=tuple(nodes + list(graph.nodes[i + 1:])))
    return None
