"""Rewrite ops the kernels do not take directly into ops they do, on views of the same bytes.

- conv1d / conv_transpose1d / max_pool1d / avg_pool1d / upsample_nearest1d on [N, C, L] run as their 2-d op on
  the [N, C, 1, L] view: reshape in, 2-d op, reshape out (the conv weight [O, I, K] becomes [O, I, 1, K], a
  transposed conv's [I, O, K] [I, O, 1, K]).
- A mean or sum of a 4-d tensor without keepdim becomes the keepdim reduction followed by a reshape, so
  the layout pass only ever sees 4-d -> 4-d reductions.
- A concat of more than MAX_CONCAT inputs becomes a chain: the first MAX_CONCAT inputs into a temporary
  with the output's qparams, then that temporary and the next inputs (it is copied, not requantized).
- A model output that is a model input, or a reshape of one (an identity, flatten or view model), gets a copy
  (a whole-tensor slice): inputs and outputs are separate buffers.
"""
from __future__ import annotations

from mcu.codegen.ir import REDUCTIONS, Graph, Node

MAX_CONCAT = 8  # MCU_CONCAT_MAX_INPUTS
ONE_D = {"conv1d": "conv2d", "max_pool1d": "max_pool2d", "avg_pool1d": "avg_pool2d",
         "upsample_nearest1d": "upsample_nearest", "conv_transpose1d": "conv_transpose2d"}


def _attrs_2d(node: Node) -> dict:
    a = node.attrs
    if node.op == "conv1d":
        return {**a, "stride": (1, *a["stride"]), "padding": (0, *a["padding"]), "dilation": (1, *a["dilation"])}
    if node.op == "conv_transpose1d":
        return {**a, "stride": (1, *a["stride"]), "padding": (0, *a["padding"]), "dilation": (1, *a["dilation"]),
                "output_padding": (0, *a["output_padding"])}
    if node.op == "upsample_nearest1d":
        return {**a, "scale": (1, *a["scale"])}
    out = {**a, "kernel": (1, *a["kernel"]), "stride": (1, *a["stride"]), "padding": (0, *a["padding"])}
    if node.op == "avg_pool1d":
        out["divisor_override"] = 0
    return out


def decompose(graph: Graph) -> Graph:
    tensors = dict(graph.tensors)
    nodes: list[Node] = []

    def view(src: str, shape, name: str) -> str:
        tensors[name] = tensors[src].replace(name=name, shape=tuple(shape), data=None)
        nodes.append(Node(f"{name}_reshape", "reshape", (src,), (name,), {}, ""))
        return name

    for node in graph.nodes:
        if node.op in ONE_D and len(tensors[node.inputs[0]].shape) == 3:
            x, out = tensors[node.inputs[0]], tensors[node.outputs[0]]
            ins = [view(x.name, (x.shape[0], x.shape[1], 1, x.shape[2]), f"{node.name}_in4d")]
            if node.op in ("conv1d", "conv_transpose1d"):
                w = tensors[node.inputs[1]]
                name = f"{w.name}_4d"
                tensors[name] = w.replace(name=name, shape=(w.shape[0], w.shape[1], 1, w.shape[2]),
                                          data=w.data.reshape(w.shape[0], w.shape[1], 1, w.shape[2]))
                ins += [name, *node.inputs[2:]]
            tmp = f"{node.name}_out4d"
            tensors[tmp] = out.replace(name=tmp, shape=(out.shape[0], out.shape[1], 1, out.shape[2]))
            nodes.append(node.replace(op=ONE_D[node.op], inputs=tuple(ins), outputs=(tmp,), attrs=_attrs_2d(node)))
            nodes.append(Node(f"{node.name}_reshape", "reshape", (tmp,), node.outputs, {}, node.source))
        elif node.op in REDUCTIONS and len(tensors[node.inputs[0]].shape) == 4 and not node.attrs["keepdim"]:
            x, out = tensors[node.inputs[0]], tensors[node.outputs[0]]
            tmp = f"{node.name}_keepdim"
            shape = tuple(1 if i in node.attrs["dims"] else d for i, d in enumerate(x.shape))
            tensors[tmp] = out.replace(name=tmp, shape=shape)
            nodes.append(node.replace(outputs=(tmp,), attrs={**node.attrs, "keepdim": True}))
            nodes.append(Node(f"{node.name}_reshape", "reshape", (tmp,), node.outputs, {}, node.source))
        elif node.op == "concat" and len(node.inputs) > MAX_CONCAT:
            ins, out, dim, i = list(node.inputs), tensors[node.outputs[0]], node.attrs["dim"], 0
            while len(ins) > MAX_CONCAT:
                tmp = f"{node.name}_part{i}"
                shape = list(out.shape)
                shape[dim] = sum(tensors[t].shape[dim] for t in ins[:MAX_CONCAT])
                tensors[tmp] = out.replace(name=tmp, shape=tuple(shape))
                nodes.append(node.replace(name=f"{node.name}_{i}", inputs=tuple(ins[:MAX_CONCAT]), outputs=(tmp,)))
                ins, i = [tmp] + ins[MAX_CONCAT:], i + 1
            nodes.append(node.replace(inputs=tuple(ins)))
        else:
            nodes.append(node)
    return graph.replace(tensors=tensors, nodes=tuple(nodes))


def copy_aliased_outputs(graph: Graph) -> Graph:
    """A model output that is a model input or a reshape of one (after the transposes that only move size-1
    dims are gone) gets a copy, a whole-tensor slice: inputs and outputs are separate buffers (pass)."""
    tensors, nodes, outputs = dict(graph.tensors), list(graph.nodes), list(graph.outputs)
    for i, t in enumerate(outputs):
        if _views_an_input(graph, t):
            copy = f"{t}_copy"
            tensors[copy] = tensors[t].replace(name=copy, data=None)
            nodes.append(Node(f"{t}_copy", "slice", (t,), (copy,), {"dim": 0, "start": 0, "step": 1}, ""))
            outputs[i] = copy
    return graph.replace(tensors=tensors, nodes=tuple(nodes), outputs=tuple(outputs))


def _views_an_input(graph: Graph, t: str) -> bool:
    producer = {o: n for n in graph.nodes for o in n.outputs}
    while t in producer and producer[t].op in ("reshape", "alias"):
        t = producer[t].inputs[0]
    return t in graph.inputs

