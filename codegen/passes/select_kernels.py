"""Pick each call's kernel variant for the target board, and prepare its constants at compile time.

- `lower` emits portable kernels (the reference); this pass swaps in a faster variant when the
  board has the features it needs and the node's parameters qualify.
- VARIANTS lists, per portable kernel, candidates in order of preference. The first whose
  `requires` features the board has and whose `applies(params)` holds wins.
- A variant keeps the portable kernel's arithmetic exactly; its numpy twin is the portable twin
  (attrs["twin"]). `prepare` may rewrite constants (repack weights, fold offsets into the bias) and
  params, returning the new node and any new constant tensors.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mcu.codegen.ir import Graph, Node, Tensor


@dataclass(frozen=True)
class Target:
    """What the code generator may assume about the core."""
    name: str = "portable"
    features: frozenset[str] = frozenset()  # "dsp", "mve", "fpu"

    @staticmethod
    def of_board(board) -> "Target":
        feats = {f for f, on in (("dsp", board.dsp), ("mve", board.mve), ("fpu", bool(board.fpu))) if on}
        return Target(board.name, frozenset(feats))


@dataclass(frozen=True)
class Variant:
    kernel: str                       # C function name
    path: str                         # source under runtime_c/kernels, without .c
    requires: frozenset[str] = frozenset()
    applies: Callable[[dict], bool] = lambda params: True
    prepare: Callable[[Node, dict[str, Tensor]], tuple[Node, dict[str, Tensor]]] | None = field(default=None)


# portable kernel -> variants, most preferred first
VARIANTS: dict[str, list[Variant]] = {}


def select_kernels(graph: Graph, target: Target) -> Graph:
    nodes, tensors = [], dict(graph.tensors)
    for node in graph.nodes:
        if node.op == "call":
            for v in VARIANTS.get(node.attrs["kernel"], []):
                if v.requires <= target.features and v.applies(node.attrs["params"]):
                    base = node.attrs["kernel"]
                    node = node.replace(attrs={**node.attrs, "kernel": v.kernel, "path": v.path,
                                               "twin": node.attrs.get("twin", base)})
                    if v.prepare is not None:
                        node, new = v.prepare(node, tensors)
                        tensors.update(new)
                    break
        nodes.append(node)
    return graph.replace(nodes=tuple(nodes), tensors=tensors)
