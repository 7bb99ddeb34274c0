"""Fold a multiplication by a positive number (a `lut` of x * c or x / c: attention's scores * hd^-0.5) into the
matmul that produces its input, when the matmul has no other consumer: the product's requantization takes c in its
multiplier (attrs["scale"]), one rounding instead of two, and the table pass over the scores is gone. Integer
matmuls only (lowering_s8._matmul reads the scale)."""
from __future__ import annotations

from mcu.codegen.ir import Graph

SCALES = {"mul.Tensor": lambda c: c, "mul.Scalar": lambda c: c, "div.Tensor": lambda c: 1.0 / c,
          "div.Scalar": lambda c: 1.0 / c}


def scale_of(lut) -> float | None:
    """c when `lut` computes x * c (or x / c) with c a positive number, else None."""
    name, args, kwargs = lut.attrs.get("fn") or ("", (), ())
    if name not in SCALES or kwargs or len(args) != 2 or args[0] is not ... or isinstance(args[1], bool):
        return None
    if not isinstance(args[1], (int, float)) or args[1] <= 0:
        return None
    return float(SCALES[name](args[1]))


def fold_scale(graph: Graph) -> Graph:
    nodes = list(graph.nodes)
    tensors = dict(graph.tensors)
    for lut in [n for n in nodes if n.op == "lut" and "act" not in n.attrs]:
        c, src = scale_of(lut), lut.inputs[0]
        producer = next((n for n in nodes if src in n.outputs), None)
        users = [n for n in nodes if src in n.inputs]
        if c is None or producer is None or producer.op != "matmul" or "act" in producer.attrs or len(users) != 1 \
                or src in graph.outputs or tensors[src].dtype not in ("int8", "int16") \
                or tensors[src].dtype != tensors[lut.outputs[0]].dtype:
            continue
        fused = producer.replace(outputs=lut.outputs, attrs={**producer.attrs,
                                                             "scale": producer.attrs.get("scale", 1.0) * c})
        nodes[nodes.index(producer)] = fused
        nodes.remove(lut)
        del tensors[src]
    return graph.replace(nodes=tuple(nodes), tensors=tensors)
