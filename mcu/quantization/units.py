"""The layers ("units") of an exported graph a precision can be set for, and the mixed= rules that set them.

Units are read off the exported graph's module paths: a conv or linear together with what its module wraps (the
BatchNorm and activation of a conv-bn-act Sequential: the highest ancestor module holding no other conv or linear)
and the BatchNorm / ReLU siblings that follow it in a flat Sequential; the other ops (residual adds, squeeze-excite
gates, ...) by their module; the model's own forward by its class name. A unit's name and keys are `mixed=` keys.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.fx import Node

aten = torch.ops.aten

WEIGHTED = {aten.conv1d.default, aten.conv2d.default, aten.linear.default, aten.conv_transpose1d.default,
            aten.conv_transpose2d.input}
FOLLOWERS = {"batch_norm", "_native_batch_norm_legit_no_training", "relu", "relu_", "relu6", "hardtanh",
             "hardtanh_"}  # ops that fold or fuse into the conv / linear before them
PRODUCTS = {"matmul", "bmm", "mm"}
VIEWS = {"view", "reshape", "flatten", "permute", "squeeze", "unsqueeze", "contiguous", "clone", "dropout",
         "_unsafe_view", "expand", "t", "transpose", "alias", "detach"}


@dataclass(frozen=True)
class Unit:
    name: str          # the module path, a mixed= key
    macs: int
    params: int
    channels: int      # bias entries
    ops: int
    keys: tuple[str, ...] = ()  # the mixed= keys that set it: its name, and siblings it took (BatchNorm, ReLU)
    elements: int = 0  # outputs of its ops without MACs (adds, pools, gates, softmax): priced one MAC each
    products: int = 0  # MACs of products of two activations (q @ k^T, attention @ v): no int16 kernel runs them
    root: bool = False  # the ops of the model's own forward, keyed by its class name, which covers every module


def _paths(node: Node) -> list[str]:
    return [p for p, _ in (node.meta.get("nn_module_stack") or {}).values()]


def _op(node: Node) -> str:
    """aten.relu.default -> "relu"; "" for what is not an aten call."""
    parts = str(node.target).split(".")
    return parts[1] if node.op == "call_function" and len(parts) > 2 and parts[0] == "aten" else ""


def _root_name(node: Node) -> str:
    t = next(iter(node.meta["nn_module_stack"].values()))[1]
    return (t if isinstance(t, str) else t.__name__).rsplit(".", 1)[-1]


def _numel(node) -> int:
    return int(np.prod(node.meta["val"].shape)) if isinstance(node, Node) and "val" in node.meta else 0


def units(graph: torch.fx.Graph) -> list[Unit]:
    """The layers of an exported graph a precision can be set for, in graph order."""
    ops = [n for n in graph.nodes if n.op == "call_function" and _paths(n)]
    weighted = [n for n in ops if n.target in WEIGHTED]
    inner = [_paths(n)[-1] for n in weighted]
    unit_of = _weighted_units(weighted, inner)
    named = set(unit_of.values())
    unit_of.update(_followers(weighted, unit_of))
    unit_of.update(_other_units(ops, unit_of, named, inner))
    moves = _views_only(unit_of)
    ops = [n for n in ops if unit_of[n] not in moves]
    found = _sizes(ops, unit_of)
    keys = _keys(ops, unit_of)
    roots = {_root_name(n) for n in ops if not _paths(n)[-1]}
    return [Unit(name, *row[:4], elements=row[4], keys=tuple(sorted(keys[name], key=lambda k: (k != name, k))),
                 root=name in roots, products=row[5]) for name, row in found.items()]


def _holds(inner: list[str], path: str) -> int:
    """How many of the conv / linear module paths `inner` lie within the module at path."""
    return sum(1 for q in inner if q == path or q.startswith(path + "."))


def _weighted_units(weighted: list[Node], inner: list[str]) -> dict[Node, str]:
    """Each conv / linear's unit: the highest module around it that holds no other conv / linear."""
    unit_of: dict[Node, str] = {}
    for n, q in zip(weighted, inner):
        parts, best = q.split("."), q
        for k in range(len(parts) - 1, 0, -1):
            if _holds(inner, ".".join(parts[:k])) != 1:
                break
            best = ".".join(parts[:k])
        unit_of[n] = best
    return unit_of


def _followers(weighted: list[Node], unit_of: dict[Node, str]) -> dict[Node, str]:
    """The BatchNorm and activation after each conv / linear, siblings in a flat Sequential: in its unit."""
    taken: dict[Node, str] = {}
    for n in weighted:
        m = n
        while len(m.users) == 1 and _op(next(iter(m.users))) in FOLLOWERS:
            m = next(iter(m.users))
            if m in unit_of or m in taken or not _paths(m)[-1:] or not _paths(m)[-1]:
                break
            taken[m] = unit_of[n]
    return taken


def _other_units(ops: list[Node], unit_of: dict[Node, str], named: set[str], inner: list[str]) -> dict[Node, str]:
    """The unit of every other op: the unit around it, else the highest module around it that holds no conv /
    linear; in the model's own forward, the unit named by its class (a mixed= key by type)."""
    other: dict[Node, str] = {}
    for n in ops:
        if n in unit_of:
            continue
        q = _paths(n)[-1]
        if not q:
            other[n] = _root_name(n)
            continue
        around = next((u for u in named if q == u or q.startswith(u + ".")), None)
        if around is None:
            parts = q.split(".")
            while len(parts) > 1 and not _holds(inner, ".".join(parts[:-1])):
                parts = parts[:-1]
            around = ".".join(parts)
        other[n] = around
    return other


def _views_only(unit_of: dict[Node, str]) -> set[str]:
    """The units of views alone: they have no precision of their own (they share their input's quantization)."""
    return {u for u in set(unit_of.values()) if all(_op(n) in VIEWS for n, v in unit_of.items() if v == u)}


def _sizes(ops: list[Node], unit_of: dict[Node, str]) -> dict[str, list[int]]:
    """Per unit, in graph order: [MACs, parameters, bias entries, ops, outputs of its ops without MACs, MACs of
    products of two activations]."""
    found: dict[str, list[int]] = {}
    for n in ops:
        macs = params = channels = products = 0
        if n.target in WEIGHTED:  # conv / linear: MACs = outputs x weights per output; transposed: per input
            w = n.args[1]
            params, channels = _numel(w), int(w.meta["val"].shape[0])
            macs = _numel(n.args[0] if "transpose" in str(n.target) else n) * (params // channels)
        elif _op(n) in PRODUCTS:
            k = _numel(n) * int(n.args[0].meta["val"].shape[-1])
            macs, products = (k, 0) if any(_is_constant(a) for a in n.args[:2]) else (0, k)
        row = found.setdefault(unit_of[n], [0, 0, 0, 0, 0, 0])
        row[0] += macs
        row[1] += params
        row[2] += channels
        row[3] += 1
        row[4] += 0 if macs or products or _op(n) in VIEWS else _numel(n)
        row[5] += products
    return found


def _is_constant(node) -> bool:
    """A parameter, buffer or constant of the exported program (torch.export names them p_, b_, c_), through views."""
    while isinstance(node, Node) and node.op == "call_function" and _op(node) in VIEWS:
        node = node.args[0]
    return isinstance(node, Node) and node.op in ("placeholder", "get_attr") and node.name[:2] in ("p_", "b_", "c_")


def _keys(ops: list[Node], unit_of: dict[Node, str]) -> dict[str, set[str]]:
    """The module paths a unit's rule must name: its own, and those of followers outside it."""
    keys: dict[str, set[str]] = {}
    for n in ops:
        q, u = _paths(n)[-1], unit_of[n]
        keys.setdefault(u, {u}).add(q if q and not (q == u or q.startswith(u + ".")) else u)
    return keys


def rules(choice: dict[str, str], all_units: list[Unit], default: str) -> dict[str, str]:
    """The mixed= dict for `choice` (unit name -> precision): every key of a chosen unit; and since a key also
    covers the modules inside it, the units inside a chosen one get their own precision explicitly."""
    out = {}
    for u in all_units:
        for k in u.keys or (u.name,):
            if u.name in choice:
                out[k] = choice[u.name]
    everything = any(u.root and u.name in choice for u in all_units)
    for u in all_units:
        if u.name not in choice and (everything or any(k.startswith(c + ".") for k in u.keys or (u.name,)
                                                       for c in out)):
            out.update({k: default for k in u.keys or (u.name,)})
    return {k: out[k] for k in sorted(out)}
