"""The package manifest as a record: what emit knows about a compiled model, JSON only when written to disk."""
from __future__ import annotations

import json
from dataclasses import dataclass

from mcu.codegen.ir import Graph
from mcu.codegen.kernels import KERNELS
from mcu.codegen.memory import MemoryPlan

IO_FIELDS = ("name", "shape", "layout", "dtype", "bytes", "zero_point")  # of emit's I/O records, then "scale"


@dataclass(frozen=True)
class Manifest:
    """manifest.json's fields in file order; `as_dict` is the JSON object (mcu/api.py adds "package" on writing)."""
    name: str
    board: str
    kernels: list[str]  # kernel sources under runtime_c/kernels, without .c: what SCons / CMake compile
    arena_bytes: int
    arena_lower_bound: int
    planner: str
    schedule_peak_before: int
    schedule_peak_after: int
    weights_bytes: int
    inputs: list[dict]
    outputs: list[dict]
    ops: list[dict]
    fallbacks: list[dict]
    state: tuple = ()  # the state region's buffers (emit's state records, as the manifest lists them)
    state_bytes: int = 0
    generate: dict | None = None  # a decoder step's <name>_generate: {"vocab", "positions"}
    widened: tuple = ()  # the calls storing their weights widened: {"name", "kernel", "bytes", "instructions"}

    def as_dict(self) -> dict:
        return {"name": self.name, "board": self.board, "kernels": self.kernels, "arena_bytes": self.arena_bytes,
                "arena_lower_bound": self.arena_lower_bound, "planner": self.planner,
                "schedule_peak_before": self.schedule_peak_before, "schedule_peak_after": self.schedule_peak_after,
                "weights_bytes": self.weights_bytes, "inputs": self.inputs, "outputs": self.outputs, "ops": self.ops,
                "fallbacks": self.fallbacks,
                **({"state_bytes": self.state_bytes, "state": list(self.state)} if self.state else {}),
                **({"generate": self.generate} if self.generate else {}),
                **({"widened": list(self.widened)} if self.widened else {})}

    def to_json(self) -> str:
        """The text of manifest.json as emit writes it (before mcu/api.py seals it)."""
        return json.dumps(self.as_dict(), indent=2) + "\n"


def io_entry(graph: Graph, io: dict) -> dict:
    """One input or output of the manifest from emit's I/O record: the real scale, None for a float32 tensor."""
    t = graph.tensors[io["tensor"]]
    index = {k: io[k] for k in ("index_range", "index_use") if k in io}  # an int32 input's legal values
    return {k: io[k] for k in IO_FIELDS} | {"scale": t.qparams.s if t.qparams else None} | index


STATE_FIELDS = ("name", "offset", "bytes", "shape", "layout", "dtype", "zero_point", "source")


def state_entry(graph: Graph, record: dict) -> dict:
    """One state buffer of the manifest from emit's state record: its place in the region and its quantization."""
    t = graph.tensors[record["tensor"]]
    return {k: record[k] for k in STATE_FIELDS} | {"scale": t.qparams.s if t.qparams else None}


def build_manifest(graph: Graph, mem: MemoryPlan, *, name: str, board: str, inputs: list[dict],
                   outputs: list[dict], weights_bytes: int, state: list[dict] = (), state_bytes: int = 0,
                   generate: dict | None = None) -> Manifest:
    """The manifest of a lowered, planned graph; inputs and outputs are emit's I/O records."""
    sources = {s for n in graph.nodes if n.op == "call" for s in KERNELS[n.call.kernel].sources}
    return Manifest(
        name=name, board=board, kernels=sorted(sources), arena_bytes=mem.arena_bytes,
        arena_lower_bound=mem.lower_bound, planner=mem.plan.algorithm,
        schedule_peak_before=mem.peak_before_schedule, schedule_peak_after=mem.peak_after_schedule,
        weights_bytes=weights_bytes, inputs=[io_entry(graph, x) for x in inputs],
        outputs=[io_entry(graph, x) for x in outputs],
        ops=[{"name": n.name, "kernel": n.call.kernel if n.call else "alias", "source": n.source}
             for n in graph.nodes],
        fallbacks=[{"op": n.call.fallback, "name": n.name, "kernel": n.call.kernel, "source": n.source}
                   for n in graph.nodes if n.call and n.call.fallback],
        state=tuple(state_entry(graph, r) for r in state), state_bytes=state_bytes,
        generate=None if generate is None else {"vocab": generate["vocab"], "positions": generate["positions"]},
        widened=tuple({"name": n.name, "kernel": n.call.kernel, "bytes": n.call.widened[0],
                       "instructions": n.call.widened[1]} for n in graph.nodes if n.call and n.call.widened))
