"""mixed= precision rules: which precision (int8, a16w8, float32) an op of the exported graph runs in.

- A rule's key is a module name ('classifier', 'layers.0'), a module type (nn.Linear or 'Linear'), or an op family
  ('op:softmax', 'op:matmul', 'op:mul': the aten op's name without overload or leading underscore).
- A node takes the rule of the innermost module (torch.export's nn_module_stack) that a rule names; an op-family rule
  wins over module rules for the ops it names (per-op-family precision, e.g. int16 activations for softmax only).
"""
from __future__ import annotations

from torch.fx import Node

from mcu.errors import McuError

PRECISIONS = ("int8", "a16w8", "float32")


def check_mixed(mixed: dict | None) -> tuple:
    """The `mixed` rules as ((module name or type, precision), ...), or an McuError naming the bad entry."""
    rules = []
    for key, precision in (mixed or {}).items():
        if precision not in PRECISIONS:
            raise McuError(f"mixed[{key!r}] = {precision!r}: a precision must be one of {', '.join(PRECISIONS)}")
        if not (isinstance(key, str) or isinstance(key, type)):
            raise McuError(f"mixed key {key!r}: use a module name (e.g. 'classifier'), a module type "
                           f"(e.g. torch.nn.Linear or 'Linear') or an op family (e.g. 'op:softmax', 'op:matmul')")
        if isinstance(key, str) and key.startswith("op:") and not key[3:].isidentifier():
            raise McuError(f"mixed key {key!r}: an op family is 'op:' and an aten op's name (op:softmax, op:matmul, "
                           f"op:mul, op:add)")
        rules.append((key, precision))
    return tuple(rules)


def _matches(key, path: str, type_name: str) -> bool:
    if isinstance(key, type):
        return type_name.rsplit(".", 1)[-1] == key.__name__
    return path == key or path.startswith(key + ".") or type_name.rsplit(".", 1)[-1] == key


def _op_family(node: Node) -> str:
    """The aten op's name without overload or leading underscore: softmax for aten._softmax.default."""
    name = getattr(node.target, "_opname", None) or getattr(node.target, "__name__", "")
    return str(name).split(".")[0].lstrip("_")


def op_rule(node: Node, rules: tuple) -> str | None:
    """The precision an op-family rule ('op:softmax') gives `node`, if one names it."""
    found = None
    for key, precision in rules:
        if isinstance(key, str) and key.startswith("op:") and key[3:] == _op_family(node):
            found = precision
    return found


def precision_of(node: Node, rules: tuple, default: str) -> str:
    """The precision the innermost module of `node` (torch.export's nn_module_stack) gets from `rules`; an op-family
    rule ('op:softmax') wins over module rules for the ops it names."""
    if not rules:
        return default
    found = default
    for path, type_name in (node.meta.get("nn_module_stack") or {}).values():  # outermost first
        type_name = type_name if isinstance(type_name, str) else f"{type_name.__module__}.{type_name.__name__}"
        for key, precision in rules:
            if not (isinstance(key, str) and key.startswith("op:")) and _matches(key, path, type_name):
                found = precision
    return op_rule(node, rules) or found
