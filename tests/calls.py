"""The one way tests build a lowered call node (codegen/ir.py's Node with its Call) without running lowering."""
from __future__ import annotations

from mcu.codegen.ir import Call, Node


def call(name: str, kernel: str, inputs, outputs, params: dict | None = None, quant=None, **fields) -> Node:
    """Node `name` calling `kernel` on `inputs` (names, None for NULL) into `outputs` (a name or several);
    `fields`: the Call's other fields (twin, twin_inputs, ...)."""
    outputs = (outputs,) if isinstance(outputs, str) else tuple(outputs)
    return Node(name, "call", tuple(inputs), outputs, call=Call(kernel, {} if params is None else params, quant,
                                                                **fields))


def kernel_of(node: Node) -> str | None:
    """The kernel a node calls, None for an alias (or an op not lowered)."""
    return node.call.kernel if node.call else None
