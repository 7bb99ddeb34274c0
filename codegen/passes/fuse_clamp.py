"""Fuse a standalone ReLU/ReLU6 (a `clamp` sharing its input's qparams) into the op that produces its
input, when that op has an output clamp and no other consumer; any other clamp stays (a look-up table)."""
from __future__ import annotations

from mcu.codegen.ir import Graph

CLAMPABLE = {"conv2d", "depthwise_conv2d", "linear", "add", "max_pool2d", "avg_pool2d", "sub", "mul", "matmul",
             "lut"}


def fuse_clamp(graph: Graph) -> Graph:
    nodes = list(graph.nodes)
    tensors = dict(graph.tensors)
    for clamp in [n for n in nodes if n.op == "clamp"]:
        src = clamp.inputs[0]
        producer = next((n for n in nodes if src in n.outputs), None)
        users = [n for n in nodes if src in n.inputs]
        if producer is None or producer.op not in CLAMPABLE or len(users) != 1 or src in graph.outputs:
            continue
        lo, hi = clamp.attrs["act"]
        old_lo, old_hi = producer.attrs.get("act", (float("-inf"), float("inf")))
        out = clamp.outputs[0]
        fused = producer.replace(outputs=(out,), attrs={**producer.attrs, "act": (max(lo, old_lo), min(hi, old_hi)),
                                                        "float_node": clamp.attrs.get("float_node")})
        nodes[nodes.index(producer)] = fused
        nodes.remove(clamp)
        del tensors[src]
    return graph.replace(nodes=tuple(nodes), tensors=tensors)
