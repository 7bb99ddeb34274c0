"""Convert 4-d activations from torch's NCHW to the kernels' NHWC, and weights to OHWI.

- Every 4-d non-constant tensor gets an NHWC shape and layout="NHWC" (graph inputs/outputs too; the
  host side transposes at the boundary, see manifest "layout").
- conv2d weights [O, I, KH, KW] -> [O, KH, KW, I]; depthwise [C, 1, KH, KW] -> [1, KH, KW, C]; transposed conv
  weights [I, O, KH, KW] -> [O, KH, KW, I] (their per-channel axis 1 -> 0).
- A reshape whose NHWC side is not trivially ordered (C > 1 and H*W > 1) gets an explicit transpose
  to or from torch order, so reshapes always move bytes in torch order.
- softmax over the channel dim of a 4-d tensor becomes softmax over the last (NHWC) dim.
- Axis attributes of 4-d ops are remapped: concat's, slice's, gather's and scatter's dim, mean/sum dims, permute's perm (composed with
  the layout permutations into one transpose). Upsample, clamp and look-up tables are layout-free.
- Broadcasting add/sub/mul with a 4-d output see every operand as 4-d NHWC: constants are transposed at
  compile time, lower-rank activations are viewed (or transposed) to the padded 4-d shape.
- Ops defined on torch order (linear, matmul, layer norm over the last dims) with 4-d operands run on
  torch-order copies: transposes around them (cancel_transposes removes the redundant ones).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from mcu.codegen.ir import REDUCTIONS, Graph, Node, Tensor
from mcu.codegen.lowering_shape import pad_widths
from mcu.codegen.errors import LoweringError

BROADCASTING = ("add", "sub", "mul", "div", "minimum", "maximum", "pow")  # elementwise ops of two tensors
TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)


def _nhwc(t: Tensor) -> Tensor:
    n, c, h, w = t.shape
    return t.replace(shape=(n, h, w, c), layout="NHWC")


def _trivial(shape_nchw) -> bool:
    """NCHW and NHWC orders coincide when C == 1 or H * W == 1."""
    _, c, h, w = shape_nchw
    return c == 1 or h * w == 1


class Rewrite:
    """The graph being rewritten: the old tensors, the new tensors and nodes, and the torch-order copies made."""

    def __init__(self, graph: Graph):
        self.old = graph.tensors
        self.tensors = {name: (_nhwc(t) if len(t.shape) == 4 and not t.is_const else t) for name, t in self.old.items()}
        self.nodes: list[Node] = []
        self.torch_copies: dict[str, str] = {}

    def transpose(self, src: str, perm, shape, layout, tag: str) -> str:
        """A new transpose of src into `<src>_<tag>`, of this shape and layout."""
        name = f"{src}_{tag}"
        self.tensors[name] = self.old[src].replace(name=name, shape=tuple(shape), layout=layout, data=None)
        self.nodes.append(Node(f"{name}_transpose", "transpose", (src,), (name,), {"perm": tuple(perm)}, ""))
        return name

    def torch_copy(self, src: str) -> str:
        """src (4-d NHWC) transposed once to torch order, shared by every op that needs it."""
        if src not in self.torch_copies:
            self.torch_copies[src] = self.transpose(src, TO_NCHW, self.old[src].shape, "", "torch")
        return self.torch_copies[src]

    def in_torch_order(self, node: Node) -> None:
        """node run on torch-order copies of its 4-d activations, a 4-d output transposed back to NHWC."""
        old = self.old
        ins = tuple(self.torch_copy(i) if i is not None and len(old[i].shape) == 4 and not old[i].is_const else i
                    for i in node.inputs)
        out = node.outputs[0]
        if len(old[out].shape) != 4:
            self.nodes.append(node.replace(inputs=ins))
            return
        tmp = f"{out}_torch_out"
        self.tensors[tmp] = old[out].replace(name=tmp)
        self.nodes.append(node.replace(inputs=ins, outputs=(tmp,)))
        self.nodes.append(Node(f"{out}_transpose", "transpose", (tmp,), (out,), {"perm": TO_NHWC}, node.source))

    def nhwc_operand(self, src: str) -> str:
        """A broadcasting operand of a 4-d result as a 4-d NHWC tensor (shape padded with leading 1s)."""
        t = self.old[src]
        if len(t.shape) == 4 and not t.is_const:
            return src
        shape4 = (1,) * (4 - len(t.shape)) + tuple(t.shape)
        nhwc = (shape4[0], shape4[2], shape4[3], shape4[1])
        name = f"{src}_nhwc"
        if name in self.tensors:
            return name
        if t.is_const:
            data = t.data.reshape(shape4).transpose(TO_NHWC)
            self.tensors[name] = t.replace(name=name, shape=nhwc, data=data.copy(), layout="NHWC")
            return name
        if _trivial(shape4):
            self.tensors[name] = t.replace(name=name, shape=nhwc, layout="NHWC")
            self.nodes.append(Node(f"{name}_reshape", "reshape", (src,), (name,), {}, ""))
            return name
        tmp = f"{src}_4d"
        self.tensors[tmp] = t.replace(name=tmp, shape=shape4)
        self.tensors[name] = t.replace(name=name, shape=nhwc, layout="NHWC")
        self.nodes.append(Node(f"{tmp}_reshape", "reshape", (src,), (tmp,), {}, ""))
        self.nodes.append(Node(f"{name}_transpose", "transpose", (tmp,), (name,), {"perm": TO_NHWC}, ""))
        return name

    def conv(self, node: Node) -> None:
        """A conv with its weights in OHWI (depthwise: [1, KH, KW, C])."""
        w = self.old[node.inputs[1]]
        perm = (0, 2, 3, 1) if node.op == "conv2d" else (1, 2, 3, 0)
        data = np.ascontiguousarray(w.data.transpose(perm))
        self.tensors[w.name] = w.replace(data=data, shape=data.shape, layout="OHWI")
        self.nodes.append(node)

    def conv_transpose(self, node: Node) -> None:
        """A transposed conv (groups 1) with its weights [C_in, C_out, KH, KW] as OHWI [C_out, KH, KW, C_in]."""
        w = self.old[node.inputs[1]]
        data = np.ascontiguousarray(w.data.transpose(1, 2, 3, 0))
        qp = w.qparams
        if qp is not None and not qp.per_tensor:
            qp = dataclasses.replace(qp, axis=0)
        self.tensors[w.name] = w.replace(data=data, shape=data.shape, layout="OHWI", qparams=qp)
        self.nodes.append(node)

    def reshape(self, node: Node) -> None:
        """A reshape moving bytes in torch order: transposes around it where NHWC and NCHW orders differ."""
        src, dst = node.inputs[0], node.outputs[0]
        if len(self.old[src].shape) == 4 and not _trivial(self.old[src].shape):
            src = self.torch_copy(src)
        if len(self.old[dst].shape) == 4 and not _trivial(self.old[dst].shape):
            tmp = f"{dst}_nchw"
            self.tensors[tmp] = self.old[dst].replace(name=tmp)
            self.nodes.append(node.replace(inputs=(src,), outputs=(tmp,)))
            self.nodes.append(Node(f"{dst}_transpose", "transpose", (tmp,), (dst,), {"perm": TO_NHWC}, node.source))
        else:
            self.nodes.append(node.replace(inputs=(src,)))


def nhwc_axes(node: Node, rank: int) -> Node:
    """node with its axis attributes remapped to NHWC (4-d concat, pad, slice and reductions; any permute)."""
    a = node.attrs
    if node.op == "permute":
        perm = tuple(TO_NCHW[a["perm"][TO_NHWC[i]]] for i in range(4)) if rank == 4 else a["perm"]
        return node.replace(op="transpose", attrs={"perm": tuple(perm)})
    if rank != 4:
        return node
    if node.op in ("concat", "slice", "gather", "scatter"):  # gather / scatter: 1-d indices (4-d in and out)
        return node.replace(attrs={**a, "dim": TO_NCHW[a["dim"] % 4]})
    if node.op == "pad":
        torch_widths = pad_widths(4, a["pads"])
        return node.replace(attrs={**a, "widths": tuple(torch_widths[TO_NHWC[i]] for i in range(4))})
    if node.op in REDUCTIONS:
        return node.replace(attrs={**a, "dims": tuple(sorted(TO_NCHW[d] for d in a["dims"]))})
    return node


def nhwc_softmax(node: Node) -> Node:
    """A 4-d softmax over the channels as one over the last (NHWC) dim."""
    if node.attrs["dim"] != 1:
        raise LoweringError(f"softmax over dim {node.attrs['dim']} of a 4-d tensor at {node.source}: "
                            f"only the channel dim (1) is supported for 4-d inputs")
    return node.replace(attrs={**node.attrs, "dim": 3})


def rewrite_node(r: Rewrite, node: Node) -> None:
    """Append node, in NHWC, to r (with whatever transposes, reshapes and constants it takes)."""
    old = r.old
    rank = len(old[node.inputs[0]].shape) if node.inputs and node.inputs[0] else 0
    if node.op in ("conv2d", "depthwise_conv2d"):
        r.conv(node)
    elif node.op == "conv_transpose2d":
        r.conv_transpose(node)
    elif node.op == "reshape":
        r.reshape(node)
    elif node.op == "softmax" and rank == 4:
        r.nodes.append(nhwc_softmax(node))
    elif node.op in ("linear", "matmul", "layer_norm", "rms_norm") or (
            node.op in ("gather", "scatter") and rank == 4 and len(old[node.outputs[0]].shape) != 4):
        r.in_torch_order(node)
    elif node.op in BROADCASTING and len(old[node.outputs[0]].shape) == 4:
        r.nodes.append(node.replace(inputs=tuple(r.nhwc_operand(i) for i in node.inputs)))
    elif node.op == "concat" and rank == 4:
        r.nodes.append(nhwc_axes(node.replace(inputs=tuple(r.nhwc_operand(i) for i in node.inputs)), rank))
    else:
        r.nodes.append(nhwc_axes(node, rank))


def to_nhwc(graph: Graph) -> Graph:
    r = Rewrite(graph)
    for node in graph.nodes:
        rewrite_node(r, node)
    return graph.replace(tensors=r.tensors, nodes=tuple(r.nodes))
