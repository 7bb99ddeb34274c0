"""Constants with the same element type and bytes become one array (pass: Graph -> Graph).

An unrolled GRU or LSTM reads the same weights at every step, and each call's prepared copy (packed rows,
folded biases, requantization records) is built per call: without this pass the flash holds one copy per step.
The first tensor (in node order) keeps its name; later readers point at it. Deterministic.
"""
from __future__ import annotations

import hashlib

from mcu.codegen.ir import Graph


def share_constants(graph: Graph) -> Graph:
    first: dict[tuple[str, str], str] = {}
    alias: dict[str, str] = {}

    def canonical(t: str | None) -> str | None:
        if t is None or not graph.tensors[t].is_const:
            return t
        if t not in alias:
            tensor = graph.tensors[t]
            key = (tensor.dtype, hashlib.sha256(tensor.data.tobytes()).hexdigest())
            alias[t] = first.setdefault(key, t)
        return alias[t]

    nodes = []
    for n in graph.nodes:
        if n.call is not None and n.call.quant:
            n = n.with_call(quant=tuple(canonical(t) for t in n.call.quant))
        nodes.append(n.replace(inputs=tuple(canonical(t) for t in n.inputs)))
    return graph.replace(nodes=tuple(nodes))  # the copies stay in the table, unread: emit writes read ones only
