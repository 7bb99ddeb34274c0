"""Convert 4-d activations from torch's NCHW to the kernels' NHWC, and weights to OHWI.

- Every 4-d non-constant tensor gets an NHWC shape and layout="NHWC" (graph inputs/outputs too; the
  host side transposes at the boundary, see manifest "layout").
- conv2d weights [O, I, KH, KW] -> [O, KH, KW, I]; depthwise [C, 1, KH, KW] -> [1, KH, KW, C].
- A reshape whose NHWC side is not trivially ordered (C > 1 and H*W > 1) gets an explicit transpose
  to or from torch order, so reshapes always move bytes in torch order.
- softmax over the channel dim of a 4-d tensor becomes softmax over the last (NHWC) dim.
- Axis attributes of 4-d ops are remapped: concat's and slice's dim, mean/sum dims, permute's perm (composed with
  the layout permutations into one transpose). Upsample, clamp and look-up tables are layout-free.
- Broadcasting add/sub/mul with a 4-d output see every operand as 4-d NHWC: constants are transposed at
  compile time, lower-rank activations are viewed (or transposed) to the padded 4-d shape.
- Ops defined on torch order (linear, matmul, layer norm over the last dims) with 4-d operands run on
  torch-order copies: transposes around them (cancel_transposes removes the redundant ones).
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import REDUCTIONS, Graph, Node, Tensor
from mcu.codegen.lowering import pad_widths
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


def to_nhwc(graph: Graph) -> Graph:
    old = graph.tensors
    tensors = {name: (_nhwc(t) if len(t.shape) == 4 and not t.is_const else t) for name, t in old.items()}
    nodes: list[Node] = []

    def transpose(src: str, perm, shape, layout, tag: str) -> str:
        name = f"{src}_{tag}"
        tensors[name] = old[src].replace(name=name, shape=tuple(shape), layout=layout, data=None)
        nodes.append(Node(f"{name}_transpose", "transpose", (src,), (name,), {"perm": tuple(perm)}, ""))
        return name

    torch_copies: dict[str, str] = {}

    def torch_copy(src: str) -> str:
        """src (4-d NHWC) transposed once to torch order, shared by every op that needs it."""
        if src not in torch_copies:
            torch_copies[src] = transpose(src, TO_NCHW, old[src].shape, "", "torch")
        return torch_copies[src]

    def in_torch_order(node: Node) -> None:
        ins = tuple(torch_copy(i) if i is not None and len(old[i].shape) == 4 and not old[i].is_const else i
                    for i in node.inputs)
        out = node.outputs[0]
        if len(old[out].shape) != 4:
            nodes.append(node.replace(inputs=ins))
            return
        tmp = f"{out}_torch_out"
        tensors[tmp] = old[out].replace(name=tmp)
        nodes.append(node.replace(inputs=ins, outputs=(tmp,)))
        nodes.append(Node(f"{out}_transpose", "transpose", (tmp,), (out,), {"perm": TO_NHWC}, node.source))

    def nhwc_operand(src: str) -> str:
        """A broadcasting operand of a 4-d result as a 4-d NHWC tensor (shape padded with leading 1s)."""
        t = old[src]
        if len(t.shape) == 4 and not t.is_const:
            return src
        shape4 = (1,) * (4 - len(t.shape)) + tuple(t.shape)
        nhwc = (shape4[0], shape4[2], shape4[3], shape4[1])
        name = f"{src}_nhwc"
        if name in tensors:
            return name
        if t.is_const:
            data = t.data.reshape(shape4).transpose(TO_NHWC)
            tensors[name] = t.replace(name=name, shape=nhwc, data=data.copy(), layout="NHWC")
            return name
        if _trivial(shape4):
            tensors[name] = t.replace(name=name, shape=nhwc, layout="NHWC")
            nodes.append(Node(f"{name}_reshape", "reshape", (src,), (name,), {}, ""))
            return name
        tmp = f"{src}_4d"
        tensors[tmp] = t.replace(name=tmp, shape=shape4)
        tensors[name] = t.replace(name=name, shape=nhwc, layout="NHWC")
        nodes.append(Node(f"{tmp}_reshape", "reshape", (src,), (tmp,), {}, ""))
        nodes.append(Node(f"{name}_transpose", "transpose", (tmp,), (name,), {"perm": TO_NHWC}, ""))
        return name

    for node in graph.nodes:
        rank = len(old[node.inputs[0]].shape) if node.inputs and node.inputs[0] else 0
        if node.op in ("conv2d", "depthwise_conv2d"):
            w = old[node.inputs[1]]
            perm = (0, 2, 3, 1) if node.op == "conv2d" else (1, 2, 3, 0)
            data = np.ascontiguousarray(w.data.transpose(perm))
            tensors[w.name] = w.replace(data=data, shape=data.shape, layout="OHWI")
            nodes.append(node)
        elif node.op == "reshape":
            src, dst = node.inputs[0], node.outputs[0]
            if len(old[src].shape) == 4 and not _trivial(old[src].shape):
                src = torch_copy(src)
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
        elif node.op in ("linear", "matmul", "layer_norm"):
            in_torch_order(node)
        elif node.op in BROADCASTING and len(old[node.outputs[0]].shape) == 4:
            nodes.append(node.replace(inputs=tuple(nhwc_operand(i) for i in node.inputs)))
        elif node.op == "concat" and rank == 4:
            ins = tuple(nhwc_operand(i) for i in node.inputs)
            nodes.append(node.replace(inputs=ins, attrs={**node.attrs, "dim": TO_NCHW[node.attrs["dim"]]}))
        elif node.op == "pad" and rank == 4:
            torch_widths = pad_widths(4, node.attrs["pads"])
            stored = [torch_widths[TO_NHWC[i]] for i in range(4)]
            nodes.append(node.replace(attrs={**node.attrs, "widths": tuple(stored)}))
        elif node.op == "slice" and rank == 4:
            nodes.append(node.replace(attrs={**node.attrs, "dim": TO_NCHW[node.attrs["dim"]]}))
        elif node.op in REDUCTIONS and rank == 4:
            dims = tuple(sorted(TO_NCHW[d] for d in node.attrs["dims"]))
            nodes.append(node.replace(attrs={**node.attrs, "dims": dims}))
        elif node.op == "permute":
            perm = node.attrs["perm"]
            if rank == 4:
                perm = tuple(TO_NCHW[perm[TO_NHWC[i]]] for i in range(4))
            nodes.append(node.replace(op="transpose", attrs={"perm": tuple(perm)}))
        else:
            nodes.append(node)
    return graph.replace(tensors=tensors, nodes=tuple(nodes))
