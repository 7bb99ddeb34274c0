"""The state region of a model that keeps state between calls, as bytes: what <prefix>_reset writes, and its
buffers as the arrays the reference reads and writes (codegen/ir.py's State; the offsets of codegen/memory.py).

A region is the bytes the C sees: each buffer at its manifest offset, in its stored order (NHWC for 4-d).
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import DTYPES, Graph
from mcu.codegen.memory import state_offsets


def region_bytes(graph: Graph) -> int:
    return state_offsets(graph)[1]


def initial_region(graph: Graph) -> bytes:
    """The region as <prefix>_reset leaves it: every buffer's initial value."""
    return pack_region(graph, [_stored(graph, s.input, s.init) for s in graph.state])


def _stored(graph: Graph, i: int, torch_order: np.ndarray) -> np.ndarray:
    t = graph.tensors[graph.inputs[i]]
    if t.layout == "NHWC":
        n, h, w, c = t.shape
        return np.ascontiguousarray(torch_order.reshape(n, c, h, w).transpose(0, 2, 3, 1))
    return torch_order.reshape(t.shape)


def unpack_region(graph: Graph, region: bytes) -> list[np.ndarray]:
    """The region's buffers as arrays in their stored shapes (the reference's state inputs)."""
    offsets, size = state_offsets(graph)
    if len(region) != size:
        raise ValueError(f"a state region of {len(region)} bytes; the model's is {size}")
    out = []
    for s, off in zip(graph.state, offsets):
        t = graph.tensors[graph.inputs[s.input]]
        out.append(np.frombuffer(region[off:off + t.nbytes], dtype=DTYPES[t.dtype]).reshape(t.shape).copy())
    return out


def pack_region(graph: Graph, arrays: list[np.ndarray]) -> bytes:
    """Buffers (stored shapes, or any shape with the right element count) -> the region's bytes."""
    offsets, size = state_offsets(graph)
    region = bytearray(size)
    for s, off, a in zip(graph.state, offsets, arrays, strict=True):
        t = graph.tensors[graph.inputs[s.input]]
        data = np.ascontiguousarray(a, dtype=DTYPES[t.dtype]).tobytes()
        region[off:off + len(data)] = data
    return bytes(region)


def with_initial_state(graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The reference's inputs for one call from the initial state: the caller's, then each state buffer's."""
    return list(inputs) + unpack_region(graph, initial_region(graph))


def reference_step(graph: Graph, inputs: list[np.ndarray], region: bytes) -> tuple[list[np.ndarray], bytes]:
    """One call of the numpy reference: (every user output in stored order, the region after the call)."""
    from mcu.codegen.reference import run_reference

    raw = run_reference(graph, list(inputs) + unpack_region(graph, region))
    k = len(graph.state)
    return raw[:len(raw) - k], pack_region(graph, raw[len(raw) - k:]) if k else region
