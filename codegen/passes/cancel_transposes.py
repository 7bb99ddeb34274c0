"""Remove data movement the layout pass made redundant.

- A transpose that only moves dims of size 1 keeps the byte order: it becomes a reshape (no code).
- Elementwise functions of one tensor (look-up tables, clamps) commute with transposes: a transpose
  feeding only such an op moves after it, so it can meet the transpose that undoes it.
- transpose(P2) of reshape(s) of transpose(P1) of x, where the reshapes end in the shape they started
  from, is one transpose of x (P1 then P2), and x itself when P2 undoes P1: readers of the result read x.
  This removes the NHWC -> torch -> NHWC round trips between consecutive 1-d convs / pools and around
  torch-order ops (linear, matmul, layer norm) whose neighbours are 4-d.
- Any other chain of transposes and reshapes with two transposes or more is one transpose of a reshape of x
  (compose: the dims factored as the reshapes cut them), where that needs rank 4 or less: a channel shuffle
  (NHWC -> torch, a reshape to groups, the groups' transpose, back to NHWC) is a transpose within each pixel.
- Transposes and reshapes left without readers are dropped (drop_unread, also fold_matmul_operands').
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import Graph, Node

MOVES = ("transpose", "reshape")
ELEMENTWISE = ("lut", "clamp")


def _keeps_order(shape, perm) -> bool:
    """True when transposing `shape` by `perm` leaves every element where it was."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def _sink_transposes(graph: Graph) -> Graph:
    """elementwise(transpose(x)) -> transpose(elementwise(x)) when the transpose has no other reader."""
    nodes, tensors = list(graph.nodes), dict(graph.tensors)
    changed = True
    while changed:
        changed = False
        for i, node in enumerate(nodes):
            if node.op not in ELEMENTWISE:
                continue
            y = node.inputs[0]
            tr = next((n for n in nodes if y in n.outputs), None)
            readers = [n for n in nodes if y in n.inputs]
            if tr is None or tr.op != "transpose" or len(readers) != 1 or y in graph.outputs:
                continue
            x, out = tensors[tr.inputs[0]], tensors[node.outputs[0]]
            moved = f"{out.name}_before_{tr.name}"
            tensors[moved] = out.replace(name=moved, shape=x.shape, layout=x.layout)
            nodes[i] = node.replace(inputs=(x.name,), outputs=(moved,))
            nodes.insert(i + 1, tr.replace(inputs=(moved,), outputs=(out.name,)))
            nodes.remove(tr)
            del tensors[y]
            changed = True
            break
    return graph.replace(nodes=tuple(nodes), tensors=tensors)


def _source(node: Node, producer: dict[str, Node], graph: Graph) -> tuple[str, tuple[int, ...]] | None:
    """(x, perm) when node (a transpose) equals transpose(x, perm) of an earlier transpose's input x."""
    t = node.inputs[0]
    shape = graph.tensors[t].shape
    while t in producer and producer[t].op == "reshape":  # reshapes only reinterpret torch-order bytes
        t = producer[t].inputs[0]
    first = producer.get(t)
    if first is None or first.op != "transpose" or graph.tensors[t].shape != shape:
        return None
    p1, p2 = first.attrs["perm"], node.attrs["perm"]
    x = first.inputs[0]
    if graph.tensors[x].qparams != graph.tensors[node.outputs[0]].qparams:
        return None
    return x, tuple(p1[p2[i]] for i in range(len(p2)))


def _steps_to(node: Node, producer: dict[str, Node], graph: Graph) -> tuple[str, list] | None:
    """(x, steps) when node (a transpose) reads, through transposes and reshapes of one qparams, a tensor x that
    no such node makes: steps are ("transpose", perm) and ("reshape", shape) in the order they apply to x."""
    steps, cur = [], node
    while True:
        steps.insert(0, ("transpose", tuple(cur.attrs["perm"])) if cur.op == "transpose"
                     else ("reshape", graph.tensors[cur.outputs[0]].shape))
        t = cur.inputs[0]
        if t not in producer or producer[t].op not in MOVES:
            break
        cur = producer[t]
    if graph.tensors[t].qparams != graph.tensors[node.outputs[0]].qparams:
        return None
    return t, steps


def compose(shape: tuple[int, ...], steps: list) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(dims, perm) such that transpose(reshape(x, dims), perm) holds x's elements where `steps` leave them, x of
    `shape`, with no dim of size 1 and no two dims that stay neighbours; None if a reshape cuts a dim in a way no
    factoring of the dims before it allows. Each dim is a run of factors (ids into `size`, major first); a reshape
    that cuts a factor splits it (everywhere it appears) into an outer and an inner factor."""
    size: dict[int, int] = {}
    dims = []
    for d in shape:
        size[len(size)] = d
        dims.append([len(size) - 1])
    start = [f for d in dims for f in d]

    def split(f: int, outer: int) -> None:
        a, b = len(size), len(size) + 1
        size[a], size[b] = outer, size[f] // outer
        for seq in [start, *dims]:
            if f in seq:
                i = seq.index(f)
                seq[i:i + 1] = [a, b]

    for op, arg in steps:
        if op == "transpose":
            dims = [dims[p] for p in arg]
            continue
        flat, grouped, i = [f for d in dims for f in d if size[f] > 1], [], 0
        for target in arg:
            group, prod = [], 1
            while prod < target:
                f = flat[i]
                if prod * size[f] > target:
                    if target % prod or size[f] % (target // prod):
                        return None
                    split(f, target // prod)
                    flat[i:i + 1] = [len(size) - 2, len(size) - 1]
                    f = flat[i]
                group.append(f)
                prod *= size[f]
                i += 1
            grouped.append(group)
        dims = grouped
    out = [f for d in dims for f in d if size[f] > 1]
    src = [f for f in start if size[f] > 1]
    runs = []  # out as runs of factors that are also neighbours, in order, in src
    for f in out:
        if runs and src.index(f) == src.index(runs[-1][-1]) + 1:
            runs[-1].append(f)
        else:
            runs.append([f])
    order = sorted(runs, key=lambda r: src.index(r[0]))
    dims_in = tuple(int(np.prod([size[f] for f in r])) for r in order)
    return dims_in, tuple(order.index(r) for r in runs)


def _one_transpose(node: Node, x: str, dims: tuple, perm: tuple, graph: Graph, tensors: dict) -> list[Node]:
    """node (the last transpose of a chain from x) as reshape(x, dims), one transpose by perm, a reshape to its
    output's shape: the reshapes only where shapes differ, no transpose where perm keeps the order."""
    out = graph.tensors[node.outputs[0]]
    new, src = [], x
    if tuple(graph.tensors[x].shape) != dims and perm != tuple(range(len(perm))):
        tensors[f"{node.name}_in"] = out.replace(name=f"{node.name}_in", shape=dims, layout="")
        new.append(Node(f"{node.name}_in", "reshape", (x,), (f"{node.name}_in",)))
        src = f"{node.name}_in"
    if perm != tuple(range(len(perm))):
        moved = tuple(dims[p] for p in perm)
        name = node.outputs[0] if moved == tuple(out.shape) else f"{node.name}_moved"
        if name != node.outputs[0]:
            tensors[name] = out.replace(name=name, shape=moved, layout="")
        new.append(node.replace(inputs=(src,), outputs=(name,), attrs={"perm": perm}))
        src = name
    if src != node.outputs[0]:
        new.append(Node(f"{node.name}_out", "reshape", (src,), (node.outputs[0],)))
    return new


def cancel_transposes(graph: Graph) -> Graph:
    graph = _sink_transposes(graph)
    nodes = []
    for node in graph.nodes:
        if node.op == "transpose" and _keeps_order(graph.tensors[node.inputs[0]].shape, node.attrs["perm"]):
            node = node.replace(op="reshape", attrs={})
        nodes.append(node)
    producer = {o: n for n in nodes for o in n.outputs}
    tensors = dict(graph.tensors)
    rename: dict[str, str] = {}
    kept = []
    for node in nodes:
        node = node.replace(inputs=tuple(rename.get(i, i) for i in node.inputs))
        producer[node.outputs[0]] = node
        now = graph.replace(tensors=tensors)
        src = _source(node, producer, now) if node.op == "transpose" else None
        chain = _steps_to(node, producer, now) if node.op == "transpose" and src is None else None
        if chain is not None and sum(op == "transpose" for op, _ in chain[1]) > 1:
            composed = compose(tensors[chain[0]].shape, chain[1])
            if composed is not None and len(composed[0]) <= 4:
                for n in _one_transpose(node, chain[0], *composed, now, tensors):
                    producer[n.outputs[0]] = n
                    kept.append(n)
                continue
        if src is not None:
            x, perm = src
            if perm != tuple(range(len(perm))):
                node = node.replace(inputs=(x,), attrs={"perm": perm})
            elif node.outputs[0] in graph.outputs:
                node = node.replace(op="reshape", inputs=(x,), attrs={})
            else:
                rename[node.outputs[0]] = x
                continue
            producer[node.outputs[0]] = node
        kept.append(node)
    return drop_unread(graph.replace(nodes=tuple(kept), tensors=tensors), MOVES)


def drop_unread(graph: Graph, ops) -> Graph:
    """graph without the nodes of `ops` (data movement) whose outputs nobody reads, and without the tensors no node
    touches (constants stay)."""
    nodes = list(graph.nodes)
    while True:
        read = {i for n in nodes for i in n.inputs} | set(graph.outputs)
        live = [n for n in nodes if n.op not in ops or any(o in read for o in n.outputs)]
        if len(live) == len(nodes):
            break
        nodes = live
    used = {t for n in nodes for t in n.inputs + n.outputs} | set(graph.inputs) | set(graph.outputs)
    return graph.replace(nodes=tuple(nodes), tensors={k: v for k, v in graph.tensors.items()
                                                      if k in used or v.is_const})
