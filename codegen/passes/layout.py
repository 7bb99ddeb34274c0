"""Convert 4-d activations from torch's NCHW to the kernels' NHWC, and weights to OHWI.

- Every 4-d non-constant tensor gets an NHWC shape and layout="NHWC" (graph inputs/outputs too; the
  host side transposes at the boundary, see manifest "layout").
- conv2d weights [O, I, KH, KW] -> [O, KH, KW, I]; depthwise [C, 1, KH, KW] -> [1, KH, KW, C].
- A reshape whose NHWC side is not trivially ordered (C > 1 and H*W > 1) gets an explicit transpose
  to or from torch order, so reshapes always move bytes in torch order.
- softmax over the channel dim of a 4-d tensor becomes softmax over the last (NHWC) dim.
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import Graph, Node, Tensor
from mcu.codegen.passes.canonicalize import LoweringError

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)


def _nhwc(t: Tensor) -> Tensor:
    n, c, h, w = t.shape
    return t.replace(shape=(n, h, w, c), layout="NHWC")


def _trivial(shape_nchw) -> bool:
    """NCHW and NHWC orders coincide when C == 1 or H * W == 1."""
    _, c, h, w = shape_nchw
    return c == 1 or h * w == 1


def to_nhwc(graph: Graph) -> Graph:
    old = graph.tensors
    tensors = {name: (_nhwc(t) if len(t.shape) == 4 and not t.is_const else t) for name, t in old.items()}
    nodes: list[Node] = []

    def transpose(src: str, perm, shape, layout, tag: str) -> str:
        name = f"{src}_{tag}"
        tensors[name] = old[src].replace(name=name, shape=tuple(shape), layout=layout, data=None)
        nodes.append(Node(f"{name}_transpose", "transpose", (src,), (name,), {"perm": tuple(perm)}, ""))
        return name

    for node in graph.nodes:
        if node.op in ("conv2d", "depthwise_conv2d"):
            w = old[node.inputs[1]]
            perm = (0, 2, 3, 1) if node.op == "conv2d" else (1, 2, 3, 0)
            data = np.ascontiguousarray(w.data.transpose(perm))
            tensors[w.name] = w.replace(data=data, shape=data.shape, layout="OHWI")
            nodes.append(node)
        elif node.op == "reshape":
            src, dst = node.inputs[0], node.outputs[0]
            if len(old[src].shape) == 4 and not _trivial(old[src].shape):
                src = transpose(src, TO_NCHW, old[src].shape, "", "nchw")
            if len(old[dst].shape) == 4 and not _trivial(old[dst].shape):
                tmp = f"{dst}_nchw"
                tensors[tmp] = old[dst].replace(name=tmp)
                nodes.append(node.replace(inputs=(src,), outputs=(tmp,)))
                nodes.append(Node(f"{dst}_transpose", "transpose", (tmp,), (dst,), {"perm": TO_NHWC}, node.source))
            else:
                nodes.append(node.replace(inputs=(src,)))
        elif node.op == "softmax" and len(old[node.inputs[0]].shape) == 4:
            if node.attrs["dim"] != 1:
                raise LoweringError(f"softmax over dim {node.attrs['dim']} of a 4-d tensor at {node.source}: "
                                    f"only the channel dim (1) is supported for 4-d inputs")
            nodes.append(node.replace(attrs={**node.attrs, "dim": 3}))
        elif node.op == "linear" and len(old[node.inputs[0]].shape) == 4:
            raise LoweringError(f"linear on a 4-d tensor at {node.source}: flatten it first")
        else:
            nodes.append(node)
    return graph.replace(tensors=tensors, nodes=tuple(nodes))
