"""Lowering, one pass: every op becomes its kernel call, dispatched on (op, element type).

- Converts between precisions (requantize, dequantize, quantize) first, whatever their types.
- A node whose tensors are all float32 takes FLOAT32's builder (codegen/lowering_float.py); one with an int16
  activation INT16's (codegen/lowering_s16.py); any other INT8's (codegen/lowering_s8.py). INT16 and FLOAT32 are
  INT8's builders plus overrides, not copies.
- Reshapes become op "alias" (no code; the planner gives the output the input's bytes). A builder may return
  several calls (a float fallback: dequantize, float kernel, quantize).
"""
from __future__ import annotations

from mcu.codegen.errors import LoweringError
from mcu.codegen.ir import Graph, Node
from mcu.codegen.lowering import Ctx
from mcu.codegen.lowering_s8 import INT8
from mcu.codegen.lowering_float import FLOAT32
from mcu.codegen.lowering_s16 import CONVERTS, INT16, UNSUPPORTED

INDEX_OPS = ("argmax", "argmin", "argsort")  # float32 in, int32 indices out
TABLES = {"int8": INT8, "int16": INT16, "float32": FLOAT32}
MISSING = {"int8": "has no int8 kernel", "int16": f"has no int16 kernel {UNSUPPORTED}",
           "float32": "has no float32 kernel"}


def element_type(graph: Graph, node: Node) -> str:
    """float32 when every tensor of the node is; int16 when one of its activations is; else int8."""
    tensors = [graph.tensors[t] for t in (*node.inputs, *node.outputs) if t is not None]
    if all(t.dtype == "float32" for t in tensors[:len(node.inputs)]) and node.op in INDEX_OPS:
        return "float32"
    if all(t.dtype == "float32" for t in tensors):
        return "float32"
    if any(t.dtype == "int16" and not t.is_const for t in tensors):
        return "int16"
    return "int8"


def lower(graph: Graph) -> Graph:
    """Replace every op by its kernel call (pass: Graph -> Graph)."""
    ctx, nodes = Ctx(graph), []
    for n in graph.nodes:
        if n.op in ("call", "alias"):
            nodes.append(n)
            continue
        if n.op in CONVERTS:
            lowered = CONVERTS[n.op](ctx, n)
        else:
            dtype = element_type(graph, n)
            if n.op not in TABLES[dtype]:
                raise LoweringError(f"op '{n.op}' at {n.source} {MISSING[dtype]}")
            lowered = TABLES[dtype][n.op](ctx, n)
        nodes.extend(lowered if isinstance(lowered, list) else [lowered])
    return graph.replace(nodes=tuple(nodes), tensors=ctx.tensors)
