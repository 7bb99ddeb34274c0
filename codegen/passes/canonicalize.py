"""Rewrite equivalent ops onto one form: global means/adaptive pools become avg_pool2d, grouped
convs with one input channel per group become depthwise_conv2d (other means stay for the reduce kernel,
other grouped convs for the grouped conv kernel)."""
from __future__ import annotations

from mcu.codegen.ir import Graph, Node
from mcu.codegen.errors import LoweringError  # noqa: F401  (re-exported: the passes import it from here)


def _avg_pool(node: Node, kernel, stride) -> Node:
    return node.replace(op="avg_pool2d", attrs={
        "kernel": tuple(kernel), "stride": tuple(stride), "padding": (0, 0), "ceil_mode": False,
        "count_include_pad": True, "divisor_override": 0, **({"act": node.attrs["act"]} if "act" in node.attrs else {})})


def canonicalize(graph: Graph) -> Graph:
    nodes = []
    for node in graph.nodes:
        shape = graph.tensors[node.inputs[0]].shape if node.inputs and node.inputs[0] else ()
        if node.op == "adaptive_avg_pool2d":
            (h, w), (oh, ow) = shape[2:], node.attrs["output_size"]
            if h % oh or w % ow:
                raise LoweringError(f"adaptive_avg_pool2d from {h}x{w} to {oh}x{ow} at {node.source}: the "
                                    f"input size must be a multiple of the output size")
            node = _avg_pool(node, (h // oh, w // ow), (h // oh, w // ow))
        elif node.op == "mean" and len(shape) == 4 and node.attrs["dims"] == (2, 3):
            node = _avg_pool(node, shape[2:], (1, 1))
        elif node.op == "conv2d" and node.attrs["groups"] != 1 and node.attrs["groups"] == shape[1]:
            node = node.replace(op="depthwise_conv2d")
        nodes.append(node)
    return graph.replace(nodes=tuple(nodes))
