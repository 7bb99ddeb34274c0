"""The small IR every compiler stage speaks: tensors with shape, dtype and quantization; a list of ops.

Invariants (checked by `verify`):
- every node input is a graph input, a constant, or the output of an earlier node (the list is a schedule);
- every tensor is produced once; graph outputs are produced;
- constants carry data whose shape and dtype match the tensor;
- a node has a `Call` exactly when its op is "call" (then its attrs are empty), a well-formed one: field types
  as declared, every tensor its quant and twin fields name in the graph.
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
class Call:
    """A lowered node's C kernel call (built by codegen/lowering.py's `call_node`; the passes add the rest).

    kernel: the C function (its registry entry, codegen/kernels); params: its params struct's field values (a
    dict the twin takes as is); quant: (multiplier tensor, shift tensor) for per-channel kernels, else None;
    float_node: the float value the output quantizes (mcu debug); fallback: the op a float32 kernel stands in
    for (manifest["fallbacks"]). A variant (codegen/passes/select_kernels.py) keeps in twin the portable kernel
    the reference runs, and in twin_inputs and twin_quant its portable constants; an in-place variant
    (codegen/passes/inplace.py) sets twin only. unfused: a fused call's portable calls, dicts of kernel, params,
    quant, inputs and output (codegen/passes/fuse_add.py). widened: a variant storing its weights widened
    (codegen/passes/widen_weights.py), the flash it costs and the instructions per inference it saves."""
    kernel: str
    params: dict
    quant: tuple[str, ...] | None = None
    float_node: str | None = None
    fallback: str | None = None
    twin: str | None = None
    twin_inputs: tuple[str | None, ...] | None = None  # set (with twin_quant, maybe None) when a variant is selected
    twin_quant: tuple[str, ...] | None = None
    unfused: tuple[dict, ...] | None = None
    widened: tuple[int, int] | None = None  # weights stored widened: (extra flash bytes, instructions saved)

    def replace(self, **kw) -> "Call":
        return dataclasses.replace(self, **kw)

    @property
    def portable(self) -> str:
        """The portable kernel whose twin the reference runs."""
        return self.twin or self.kernel

    @property
    def selected(self) -> bool:
        """A variant replaced the portable kernel and prepared its own constants (twin_inputs, twin_quant)."""
        return self.twin_inputs is not None

    def reference_args(self, inputs: tuple[str | None, ...]) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
        """(quant, inputs) of the portable twin, for a node with these inputs."""
        if self.selected:
            return self.twin_quant or (), self.twin_inputs
        return self.quant or (), inputs


@dataclass(frozen=True)
class Node:
    name: str
    op: str
    inputs: tuple[str | None, ...]  # None marks an absent optional input (e.g. no bias)
    outputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict, compare=False)
    source: str = ""  # the user's source line this op came from
    call: Call | None = field(default=None, compare=False)  # exactly on op "call"

    def replace(self, **kw) -> "Node":
        return dataclasses.replace(self, **kw)

    def with_call(self, **kw) -> "Node":
        """This call node with the given fields of its Call replaced."""
        return self.replace(call=self.call.replace(**kw))


@dataclass(frozen=True)
class State:
    """A buffer the model keeps between calls (an RNN's hidden state, a KV cache): graph input `input` is its value
    when a call starts and graph output `output` its value at the end (positions, which passes keep). The memory
    plan puts the input in the state region, never in the arena; the generated run writes the output back after
    its last op. init: what <prefix>_reset writes, in the input tensor's dtype and torch order."""
    name: str    # the buffer's name in the user's model
    input: int
    output: int
    init: np.ndarray = field(compare=False, repr=False)
    source: str = ""  # the user's line that writes it


@dataclass(frozen=True)
class Graph:
    tensors: dict[str, Tensor]
    nodes: tuple[Node, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    state: tuple[State, ...] = ()  # inputs / outputs that are state, not the caller's

    def replace(self, **kw) -> "Graph":
        return dataclasses.replace(self, **kw)

    @property
    def user_inputs(self) -> tuple[str, ...]:
        """The inputs the caller passes (the state inputs excluded): <prefix>_run's input pointers, in order."""
        held = {s.input for s in self.state}
        return tuple(t for i, t in enumerate(self.inputs) if i not in held)

    @property
    def user_outputs(self) -> tuple[str, ...]:
        held = {s.output for s in self.state}
        return tuple(t for i, t in enumerate(self.outputs) if i not in held)

    def producer(self, tensor: str) -> Node | None:
        for node in self.nodes:
            if tensor in node.outputs:
                return node
        return None

    def consumers(self, tensor: str) -> list[Node]:
        return [n for n in self.nodes if tensor in n.inputs]

    def used_constants(self) -> list[str]:
        """Every constant a call reads (an input or a quant tensor), sorted by name: weights.c's arrays."""
        return sorted({t for n in self.nodes for t in n.inputs + (tuple(n.call.quant or ()) if n.call else ())
                       if t is not None and self.tensors[t].is_const})

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
        _verify_call(graph, node)
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
    _verify_state(graph)
    return graph


def _verify_state(graph: Graph) -> None:
    """Each state is one input and one output of the same shape and dtype, its init of that shape and dtype."""
    if len({s.input for s in graph.state}) != len(graph.state) or len({s.output for s in graph.state}) != len(graph.state):
        raise IRError("two states share an input or an output")
    k = len(graph.state)
    if [s.input for s in graph.state] != list(range(len(graph.inputs) - k, len(graph.inputs))) or \
            [s.output for s in graph.state] != list(range(len(graph.outputs) - k, len(graph.outputs))):
        raise IRError("the states are not the last inputs and outputs, in order")
    for s in graph.state:
        t, u = graph.tensors[graph.inputs[s.input]], graph.tensors[graph.outputs[s.output]]
        if t.dtype != u.dtype or int(np.prod(t.shape)) != int(np.prod(u.shape)):
            raise IRError(f"state {s.name}: value {t.dtype} {t.shape} but update {u.dtype} {u.shape}")
        if t.qparams != u.qparams:
            raise IRError(f"state {s.name}: its update is on other qparams ({u.qparams} vs {t.qparams})")
        if s.init.dtype != np.dtype(DTYPES[t.dtype]) or s.init.size != int(np.prod(t.shape)):
            raise IRError(f"state {s.name}: init {s.init.dtype} [{s.init.size}] vs {t.dtype} {t.shape}")


def _names(v, graph: Graph, what: str, node: Node, optional: bool = False) -> None:
    """v is a tuple of tensor names of the graph (None allowed where optional)."""
    if not isinstance(v, tuple):
        raise IRError(f"{node.name}: call {what} is a {type(v).__name__}, not a tuple")
    for t in v:
        if not (t is None and optional) and (not isinstance(t, str) or t not in graph.tensors):
            raise IRError(f"{node.name}: call {what} names {t!r}, which the graph does not hold")


def _verify_call(graph: Graph, node: Node) -> None:
    """A Call exactly on op "call", well-formed (the invariant at the top of this file)."""
    c = node.call
    if (node.op == "call") != (c is not None):
        raise IRError(f"{node.name}: op {node.op!r} with{'out' if c is None else ''} a Call")
    if c is None:
        return
    if not isinstance(c, Call) or node.attrs:
        raise IRError(f"{node.name}: a call node holds one Call and no attrs")
    for f in ("kernel", "float_node", "fallback", "twin"):
        v = getattr(c, f)
        if not (isinstance(v, str) and v) and (f == "kernel" or v is not None):
            raise IRError(f"{node.name}: call {f} {v!r} is not a name")
    if not isinstance(c.params, dict) or not all(isinstance(k, str) for k in c.params):
        raise IRError(f"{node.name}: call params are not a dict of field names")
    for f in ("quant", "twin_quant", "twin_inputs"):
        if getattr(c, f) is not None:
            _names(getattr(c, f), graph, f, node, optional=f == "twin_inputs")
    if (c.twin_quant is not None or c.twin_inputs is not None) and not (c.selected and c.twin):
        raise IRError(f"{node.name}: twin constants without a selected variant's twin kernel")
    if c.unfused is not None and not (isinstance(c.unfused, tuple) and all(
            isinstance(u, dict) and {"kernel", "params", "quant", "inputs", "output"} <= set(u) for u in c.unfused)):
        raise IRError(f"{node.name}: call unfused is not a tuple of calls (kernel, params, quant, inputs, output)")
    if c.widened is not None and not (c.selected and isinstance(c.widened, tuple) and len(c.widened) == 2
                                      and all(isinstance(v, int) and v >= 0 for v in c.widened)):
        raise IRError(f"{node.name}: call widened is not a selected variant's (bytes, instructions)")
