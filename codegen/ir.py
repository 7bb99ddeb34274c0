"""The small IR every compiler stage speaks: tensors with shape, dtype and quantization; a list of ops.

Invariants (checked by `verify`):
- every node input is a graph input, a constant, or the output of an earlier node (the list is a schedule);
- every tensor is produced once; graph outputs are produced;
- constants carry data whose shape and dtype match the tensor.
Passes never mutate a Graph they receive: they build a new one (`Graph.replace`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

DTYPES = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint16": np.uint16, "float32": np.float32}
REDUCTIONS = ("mean", "sum", "amax", "amin", "prod")  # IR ops reducing over attrs["dims"] (keepdim attr)
C_TYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t", "uint16": "uint16_t", "float32": "float"}


@dataclass(frozen=True)
class QParams:
    """Affine quantization: real = (q - zero_point) * scale. Per channel when axis is set."""
    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None

    @property
    def per_tensor(self) -> bool:
        return self.axis is None

    @property
    def s(self) -> float:
        assert self.axis is None, "per-channel qparams have no single scale"
        return self.scale[0]

    @property
    def zp(self) -> int:
        assert self.axis is None, "per-channel qparams have no single zero point"
        return self.zero_point[0]

    @staticmethod
    def tensor(scale: float, zero_point: int) -> "QParams":
        return QParams((float(scale),), (int(zero_point),))


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    qparams: QParams | None = None
    data: np.ndarray | None = field(default=None, compare=False, repr=False)
    layout: str = ""  # "NHWC" for 4-d activations after the layout pass, "" means torch order

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(DTYPES[self.dtype]).itemsize

    def replace(self, **kw) -> "Tensor":
        return dataclasses.replace(self, **kw)


@dataclass(frozen=True)
class Node:
    name: str
    op: str
    inputs: tuple[str | None, ...]  # None marks an absent optional input (e.g. no bias)
    outputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict, compare=False)
    source: str = ""  # the user's source line this op came from

    def replace(self, **kw) -> "Node":
        return dataclasses.replace(self, **kw)


@dataclass(frozen=True)
class Graph:
    tensors: dict[str, Tensor]
    nodes: tuple[Node, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    def replace(self, **kw) -> "Graph":
        return dataclasses.replace(self, **kw)

    def producer(self, tensor: str) -> Node | None:
        for node in self.nodes:
            if tensor in node.outputs:
                return node
        return None

    def consumers(self, tensor: str) -> list[Node]:
        return [n for n in self.nodes if tensor in n.inputs]

    def summary(self) -> str:
        lines = []
        for n in self.nodes:
            ins = ", ".join(f"{i}{list(self.tensors[i].shape)}" for i in n.inputs if i)
            outs = ", ".join(f"{o}{list(self.tensors[o].shape)}" for o in n.outputs)
            lines.append(f"{n.name}: {n.op}({ins}) -> {outs}")
        return "\n".join(lines)


class IRError(AssertionError):
    """An IR invariant does not hold: a compiler bug, not a user error."""


def verify(graph: Graph) -> Graph:
    """Check the invariants listed at the top of this file; return the graph for chaining."""
    defined = set(graph.inputs) | {n for n, t in graph.tensors.items() if t.is_const}
    for name in graph.inputs:
        if name not in graph.tensors:
            raise IRError(f"graph input {name} has no tensor")
    for name, t in graph.tensors.items():
        if name != t.name:
            raise IRError(f"tensor key {name} != name {t.name}")
        if t.is_const:
            if tuple(t.data.shape) != tuple(t.shape) or t.data.dtype != np.dtype(DTYPES[t.dtype]):
                raise IRError(f"constant {name}: data {t.data.shape} {t.data.dtype} vs {t.shape} {t.dtype}")
    names = set()
    for node in graph.nodes:
        if node.name in names:
            raise IRError(f"duplicate node name {node.name}")
        names.add(node.name)
        for i in node.inputs:
            if i is not None and i not in defined:
                raise IRError(f"{node.name} reads {i} before it is defined")
        for o in node.outputs:
            if o in defined:
                raise IRError(f"{o} is produced twice (again by {node.name})")
            if o not in graph.tensors:
                raise IRError(f"{node.name} writes unknown tensor {o}")
            defined.add(o)
    for o in graph.outputs:
        if o not in defined:
            raise IRError(f"graph output {o} is never produced")
    return graph
