"""The lowered IR and its memory plan as typed, versioned JSON plus .npy arrays: a package is data, never code.

- `dump(graph, memory)` -> (JSON text, [arrays]); array i is stored as `ir_data/<i>.npy` beside the JSON.
- `load(text, read_array)` checks the format name and version, then every field's type while it rebuilds the
  dataclasses; anything else raises FormatError (one line naming the field). Arrays are read through
  `read_array(i)`, which the caller implements with np.load(allow_pickle=False).
- Node attrs are plain values: None, bool, int, float, str, tuples (JSON arrays), and tagged objects for the
  rest: {"$list": [...]}, {"$dict": {...}}, {"$float": "nan"|"inf"|"-inf"}, {"$array": i} and
  {"$scalar": [dtype, value]} (numpy scalars keep their type: float32 arithmetic must not become float64).
- A call node's `Call` is stored as its attrs (`call_attrs`), keys in the order of its fields, the optional ones
  only when set: fallback, twin, twin_inputs with twin_quant (which may be null: twin_inputs marks a selected
  variant), unfused, widened. Loading rebuilds the Call from them (`_call`), so packages read as they always did.
"""
from __future__ import annotations

import json
import math
import re
from typing import Callable

import numpy as np

from mcu.codegen.errors import McuError
from mcu.codegen.ir import DTYPES, Call, Graph, IRError, Node, QParams, State, Tensor, verify
from mcu.codegen.memory import Location, MemoryPlan
from mcu.memory_planner import Buffer, Plan

FORMAT = "mcu-ir"
VERSION = 1
MAX_DEPTH = 32
_LAYOUT = re.compile(r"[A-Za-z]{0,8}\Z")
_SCALARS = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "float32", "float64"}


class FormatError(McuError):
    """A package's IR file is not the typed JSON this mcu writes."""


# -- writing ---------------------------------------------------------------------------------------------------
CALL_KEYS = ("kernel", "params", "quant", "float_node", "fallback", "twin", "twin_inputs", "twin_quant", "unfused",
             "widened")


def call_attrs(c: Call) -> dict:
    """A Call as the attrs dict a call node has always been stored with (the module docstring)."""
    attrs = {k: getattr(c, k) for k in CALL_KEYS}
    for k in ("fallback", "twin", "twin_inputs", "unfused", "widened"):
        if attrs[k] is None:
            del attrs[k]
    if not c.selected:
        del attrs["twin_quant"]
    return attrs


def dump(graph: Graph, memory: MemoryPlan) -> tuple[str, list[np.ndarray]]:
    arrays: list[np.ndarray] = []

    def array(a: np.ndarray) -> dict:
        arrays.append(np.ascontiguousarray(a))
        return {"$array": len(arrays) - 1}

    def value(v):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (np.generic,)):
            return {"$scalar": [v.dtype.name, v.item() if np.isfinite(v) or v.dtype.kind != "f" else repr(float(v))]}
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"$float": repr(v)}
        if isinstance(v, tuple):
            return [value(x) for x in v]
        if isinstance(v, list):
            return {"$list": [value(x) for x in v]}
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                raise TypeError(f"attrs dict with non-string keys: {list(v)[:3]}")
            return {"$dict": {k: value(x) for k, x in v.items()}}
        if isinstance(v, np.ndarray):
            return array(v)
        raise TypeError(f"cannot store a {type(v).__name__} in a package IR")

    def tensor(t: Tensor) -> dict:
        q = t.qparams
        return {"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "layout": t.layout,
                "qparams": None if q is None else {"scale": [value(float(s)) for s in q.scale],
                                                  "zero_point": [int(z) for z in q.zero_point], "axis": q.axis},
                "data": None if t.data is None else array(t.data)["$array"]}

    doc = {
        "format": FORMAT, "version": VERSION,
        "graph": {
            "tensors": [tensor(t) for t in graph.tensors.values()],
            "nodes": [{"name": n.name, "op": n.op, "inputs": list(n.inputs), "outputs": list(n.outputs),
                       "attrs": value(call_attrs(n.call) if n.call else dict(n.attrs))["$dict"], "source": n.source} for n in graph.nodes],
            "inputs": list(graph.inputs), "outputs": list(graph.outputs),
            **({"state": [{"name": x.name, "input": x.input, "output": x.output, "init": array(x.init)["$array"],
                           "source": x.source} for x in graph.state]} if graph.state else {})},
        "memory": {
            "locations": [[k, v.kind, v.index] for k, v in memory.locations.items()],
            "buffers": [[b.name, b.size, b.first, b.last, b.align] for b in memory.buffers],
            "plan": {"offsets": [[k, v] for k, v in memory.plan.offsets.items()],
                     "arena_bytes": memory.plan.arena_bytes, "algorithm": memory.plan.algorithm},
            "lower_bound": memory.lower_bound, "peak_before_schedule": memory.peak_before_schedule,
            "peak_after_schedule": memory.peak_after_schedule,
            "overlaps": None if memory.overlaps is None else [[a, b, g] for (a, b), g in memory.overlaps.items()]},
    }
    return json.dumps(doc, indent=None, separators=(",", ":"), allow_nan=False) + "\n", arrays


# -- reading ---------------------------------------------------------------------------------------------------
def _fail(where: str, what: str):
    raise FormatError(f"{where}: {what}")


def _get(d, key: str, where: str):
    if not isinstance(d, dict):
        _fail(where, f"expected an object, got {type(d).__name__}")
    if key not in d:
        _fail(where, f"missing key {key!r}")
    return d[key]


def _int(v, where: str, lo: int = 0, hi: int = 1 << 40) -> int:
    if type(v) is not int or not lo <= v <= hi:
        _fail(where, f"expected an integer in [{lo}, {hi}], got {str(v)[:40]}")
    return v


def _str(v, where: str) -> str:
    if not isinstance(v, str) or len(v) > 4096:
        _fail(where, f"expected a string, got {type(v).__name__}")
    return v


def _list(v, where: str) -> list:
    if not isinstance(v, list):
        _fail(where, f"expected an array, got {type(v).__name__}")
    return v


def _number(v, where: str) -> float:
    if isinstance(v, dict) and set(v) == {"$float"} and v["$float"] in ("nan", "inf", "-inf"):
        return float(v["$float"])
    if type(v) not in (int, float):
        _fail(where, f"expected a number, got {type(v).__name__}")
    return float(v)


class _Arrays:
    """The package's arrays, read once each through read_array(i)."""

    def __init__(self, read_array: Callable[[int], np.ndarray]):
        self.read_array = read_array
        self.cache: dict[int, np.ndarray] = {}

    def __call__(self, i, where: str) -> np.ndarray:
        i = _int(i, where, 0, 1 << 20)
        if i not in self.cache:
            self.cache[i] = self.read_array(i)
        return self.cache[i]


def _document(text: str) -> dict:
    """ir.json parsed, its format name and version checked."""
    try:
        doc = json.loads(text, parse_constant=lambda c: _fail("ir.json", f"{c} is not JSON"))
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"ir.json is not valid JSON ({str(exc)[:80]})") from None
    fmt = _get(doc, "format", "ir.json")
    version = _get(doc, "version", "ir.json")
    if fmt != FORMAT:
        _fail("ir.json", f"format {str(fmt)[:40]!r} is not {FORMAT!r}")
    if version != VERSION:
        _fail("ir.json", f"IR format version {str(version)[:20]} is not {VERSION}, the one this mcu reads; compile "
                         f"the model again with this mcu (`mcu compile`)")
    return doc


def _scalar(x, where: str):
    """A {"$scalar": [dtype, value]}'s numpy scalar."""
    x = _list(x, where)
    if len(x) != 2 or not isinstance(x[0], str) or x[0] not in _SCALARS:
        _fail(where, "a $scalar is [dtype, value]")
    raw = float(x[1]) if isinstance(x[1], str) and x[1] in ("nan", "inf", "-inf") else x[1]
    if type(raw) not in (bool, int, float):
        _fail(where, "a $scalar's value is a number")
    try:
        return np.dtype(x[0]).type(raw)
    except (OverflowError, ValueError):
        _fail(where, f"{str(raw)[:20]} does not fit {x[0]}")


def _value(v, where: str, arrays: _Arrays, depth: int = 0):
    """An attrs value as dump's `value` wrote it (the tags of the module docstring)."""
    if depth > MAX_DEPTH:
        _fail(where, "nested too deep")
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, list):
        return tuple(_value(x, where, arrays, depth + 1) for x in v)
    if isinstance(v, dict) and len(v) == 1:
        (tag, x), = v.items()
        if tag == "$list":
            return [_value(y, where, arrays, depth + 1) for y in _list(x, where)]
        if tag == "$dict":
            if not isinstance(x, dict):
                _fail(where, "$dict holds no object")
            return {k: _value(y, f"{where}.{k}"[:200], arrays, depth + 1) for k, y in x.items()}
        if tag == "$float":
            return _number(v, where)
        if tag == "$array":
            return arrays(x, where)
        if tag == "$scalar":
            return _scalar(x, where)
    _fail(where, f"not a value this format stores: {str(v)[:40]}")


def _qparams(q, where: str) -> QParams | None:
    if q is None:
        return None
    axis = _get(q, "axis", where)
    if axis is not None:
        _int(axis, f"{where} axis", 0, 8)
    return QParams(tuple(_number(s, f"{where} scale") for s in _list(_get(q, "scale", where), where)),
                   tuple(_int(z, f"{where} zero_point", -(1 << 31), 1 << 31)
                         for z in _list(_get(q, "zero_point", where), where)), axis)


def _tensor(d, i: int, arrays: _Arrays) -> Tensor:
    where = f"ir.json: tensor {i}"
    name = _str(_get(d, "name", where), where)
    shape = tuple(_int(s, f"{where} shape", 0, 1 << 31) for s in _list(_get(d, "shape", where), where))
    if len(shape) > 8:
        _fail(where, "more than 8 dims")
    dtype = _get(d, "dtype", where)
    if not isinstance(dtype, str) or dtype not in DTYPES:
        _fail(where, f"dtype {str(dtype)[:20]!r} is not one of {', '.join(DTYPES)}")
    layout = _get(d, "layout", where)
    if not isinstance(layout, str) or not _LAYOUT.match(layout):
        _fail(where, f"layout {str(layout)[:20]!r} is not a layout name")
    q = _qparams(_get(d, "qparams", where), where)
    data = _get(d, "data", where)
    if data is not None:
        data = arrays(data, where)
        if data.shape != shape or data.dtype != np.dtype(DTYPES[dtype]):
            _fail(where, f"its array is {data.dtype} {list(data.shape)}, not {dtype} {list(shape)}")
    return Tensor(name, shape, dtype, q, data, layout)


def _node(d, i: int, arrays: _Arrays) -> Node:
    where = f"ir.json: node {i}"
    attrs = _get(d, "attrs", where)
    if not isinstance(attrs, dict):
        _fail(where, "attrs is not an object")
    op = _str(_get(d, "op", where), where)
    attrs = _value({"$dict": attrs}, f"{where} attrs", arrays)
    call = _call(attrs, where) if op == "call" else None
    return Node(_str(_get(d, "name", where), where), op,
                tuple(None if x is None else _str(x, where) for x in _list(_get(d, "inputs", where), where)),
                tuple(_str(x, where) for x in _list(_get(d, "outputs", where), where)),
                {} if call else attrs, _str(_get(d, "source", where), where), call)


def _call(attrs: dict, where: str) -> Call:
    """A call node's Call from its stored attrs (its types are the IR verifier's to check)."""
    unknown = set(attrs) - set(CALL_KEYS)
    if unknown:
        _fail(where, f"a call's attrs hold unknown keys {sorted(unknown)[:3]}")
    for k in ("kernel", "params", "quant", "float_node"):
        _get(attrs, k, where)
    if ("twin_inputs" in attrs) != ("twin_quant" in attrs):
        _fail(where, "a call's twin_inputs and twin_quant come together")
    return Call(**attrs)


def _graph(g, arrays: _Arrays) -> Graph:
    """The graph, every tensor it names present and its IR invariants holding."""
    where = "ir.json graph"
    tensors = [_tensor(t, i, arrays) for i, t in enumerate(_list(_get(g, "tensors", where), where))]
    graph = Graph({t.name: t for t in tensors},
                  tuple(_node(n, i, arrays)
                        for i, n in enumerate(_list(_get(g, "nodes", "ir.json graph"), "ir.json graph"))),
                  tuple(_str(x, "ir.json inputs") for x in _list(_get(g, "inputs", "ir.json graph"), "ir.json")),
                  tuple(_str(x, "ir.json outputs") for x in _list(_get(g, "outputs", "ir.json graph"), "ir.json")),
                  tuple(_state(x, arrays) for x in _list(g.get("state", []), "ir.json state")))
    if len(graph.tensors) != len(tensors):
        _fail("ir.json", "two tensors share a name")
    for n in graph.nodes:
        for t in n.inputs + n.outputs:
            if t is not None and t not in graph.tensors:
                _fail("ir.json", f"node {n.name[:40]} names tensor {t[:40]!r}, which the graph does not hold")
    try:
        verify(graph)
    except IRError as exc:
        _fail("ir.json", f"the graph breaks an IR invariant ({exc})")
    return graph


def _state(x, arrays: _Arrays) -> State:
    w = "ir.json state"
    return State(_str(_get(x, "name", w), w), _int(_get(x, "input", w), w), _int(_get(x, "output", w), w),
                 arrays(_get(x, "init", w), w), _str(_get(x, "source", w), w))


_MEM = "ir.json memory"


def _fields(x, n: int) -> list:
    """A memory record: an array of n fields."""
    x = _list(x, _MEM)
    if len(x) != n:
        _fail(_MEM, f"expected {n} fields, got {len(x)}")
    return x


def _locations(m, graph: Graph) -> dict[str, Location]:
    w, locations = _MEM, {}
    for x in _list(_get(m, "locations", w), w):
        k, kind, index = _fields(x, 3)
        if kind not in ("arena", "input", "output", "const", "state"):
            _fail(w, f"location kind {str(kind)[:20]!r}")
        if _str(k, w) not in graph.tensors:
            _fail(w, f"location of unknown tensor {k[:40]!r}")
        locations[k] = Location(kind, _int(index, w))
    return locations


def _plan(m) -> Plan:
    w, p, offsets = _MEM, _get(m, "plan", _MEM), {}
    for x in _list(_get(p, "offsets", w), w):
        k, off = _fields(x, 2)
        offsets[_str(k, w)] = _int(off, w)
    return Plan(offsets, _int(_get(p, "arena_bytes", w), w), _str(_get(p, "algorithm", w), w))


def _check_placement(graph: Graph, locations: dict[str, Location], buffers: tuple[Buffer, ...], plan: Plan) -> None:
    """Every tensor placed once, as what it is, inside the arena or an I/O slot the graph has; offsets match
    buffers."""
    w = _MEM
    if set(locations) != set(graph.tensors):
        _fail(w, "the plan does not place every tensor of the graph exactly once")
    for k, loc in locations.items():
        t = graph.tensors[k]
        if (loc.kind == "const") != t.is_const:
            _fail(w, f"tensor {k[:40]!r} is {'a' if t.is_const else 'not a'} constant but placed as {loc.kind}")
        if loc.kind == "arena" and loc.index + t.nbytes > plan.arena_bytes:
            _fail(w, f"tensor {k[:40]!r} ends past the arena")
        if loc.kind in ("input", "output") and not loc.index < len(graph.inputs if loc.kind == "input" else graph.outputs):
            _fail(w, f"tensor {k[:40]!r} is {loc.kind} {loc.index}, which the graph does not have")
    buffer_names = {b.name for b in buffers}
    if len(buffer_names) != len(buffers) or set(plan.offsets) != buffer_names:
        _fail(w, "the plan's offsets and buffers do not match")


def _memory(m, graph: Graph) -> MemoryPlan:
    """The memory plan, checked against the graph."""
    w = _MEM
    locations = _locations(m, graph)
    buffers = tuple(Buffer(_str(b[0], w), *(_int(v, w) for v in b[1:]))
                    for b in (_fields(x, 5) for x in _list(_get(m, "buffers", w), w)))
    plan = _plan(m)
    overlaps = _get(m, "overlaps", w)
    if overlaps is not None:
        overlaps = {(_str(a, w), _str(b, w)): _int(g, w) for a, b, g in (_fields(x, 3) for x in _list(overlaps, w))}
    _check_placement(graph, locations, buffers, plan)
    return MemoryPlan(locations, buffers, plan, _int(_get(m, "lower_bound", w), w),
                      _int(_get(m, "peak_before_schedule", w), w), _int(_get(m, "peak_after_schedule", w), w),
                      overlaps)


def load(text: str, read_array: Callable[[int], np.ndarray]) -> tuple[Graph, MemoryPlan]:
    """Rebuild (graph, memory) from dump's JSON; FormatError on anything this version did not write."""
    doc = _document(text)
    graph = _graph(_get(doc, "graph", "ir.json"), _Arrays(read_array))
    return graph, _memory(_get(doc, "memory", "ir.json"), graph)
