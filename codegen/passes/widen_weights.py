"""Spend flash on speed: store a variant's weights widened where that saves the most instructions per flash byte.

- select_kernels prepares every variant's constants narrow (int8 weights in flash, widened in the kernel's loop). A
  variant whose registry entry has `widen` (params -> instructions per inference saved per extra flash byte: the
  DSP convs' int16 weights, the scalar GEMM's split words; codegen/kernels/geometry.py) can store them widened
  instead, prepared again with wide=True from the portable constants the call keeps (twin_inputs, twin_quant).
- With a budget (Target.flash_budget: bytes the model's constants may take, mcu.compile's flash_budget), layers
  widen in order of instructions saved per byte, most first, while every constant the calls read still fits in
  it; a layer that would overshoot is passed over for the next, and none widens below MIN_WIDEN_GAIN. Without a
  budget, a layer widens where it saves at least WIDEN_GAIN instructions a byte (one exchange rate, any board).
- Each widened call records `widened` = (the extra flash bytes, the estimated instructions saved per inference);
  the manifest lists them (codegen/manifest.py) and `mcu size` sums them against the budget.
- A budget below what the narrow constants need widens nothing (the front end refuses a budget the user set that
  low; the board's fit check refuses a model too large for the board).
"""
from __future__ import annotations

from mcu.codegen.ir import Graph, Node, Tensor
from mcu.codegen.kernels import spec
from mcu.codegen.kernels.geometry import MIN_WIDEN_GAIN, WIDEN_GAIN
from mcu.codegen.target import Target


def constant_bytes(graph: Graph) -> int:
    """Flash bytes of every constant the calls read (weights.c's arrays)."""
    return sum(graph.tensors[t].nbytes for t in graph.used_constants())


def _widened(node: Node, tensors: dict[str, Tensor]) -> tuple[Node, dict[str, Tensor]] | None:
    """node's variant prepared again, widened, from the portable constants its call keeps."""
    c = node.call
    portable = node.replace(inputs=c.twin_inputs).with_call(quant=c.twin_quant)
    return spec(c.kernel).prepare(portable, tensors, wide=True)


def widen_weights(graph: Graph, target: Target) -> Graph:
    budget = target.flash_budget
    used = constant_bytes(graph)
    floor = WIDEN_GAIN if budget is None else MIN_WIDEN_GAIN
    gains = [(spec(n.call.kernel).widen(n.call.params), i) for i, n in enumerate(graph.nodes)
             if n.op == "call" and n.call.selected and spec(n.call.kernel).widen is not None]
    nodes, tensors = list(graph.nodes), dict(graph.tensors)
    for gain, i in sorted((g for g in gains if g[0] >= floor), key=lambda g: (-g[0], g[1])):
        node = nodes[i]
        trial = dict(tensors)
        prepared = _widened(node, trial)
        if prepared is None:
            continue
        wide, new = prepared
        trial.update(new)
        extra = sum(t.nbytes for t in new.values()) - sum(tensors[t].nbytes for t in new if t in tensors)
        if budget is not None and used + extra > budget:
            continue
        used += extra
        weights = int(sum(tensors[t].data.size for t in node.call.twin_inputs[1:2] if t is not None))
        nodes[i] = wide.with_call(widened=(max(0, int(extra)), int(gain * weights)))
        tensors = trial
    return graph.replace(nodes=tuple(nodes), tensors=tensors)
