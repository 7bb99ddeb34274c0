"""Remove data movement the layout pass made redundant.

- A transpose that only moves dims of size 1 keeps the byte order: it becomes a reshape (no code).
- Elementwise functions of one tensor (look-up tables, clamps) commute with transposes: a transpose
  feeding only such an op moves after it, so it can meet the transpose that undoes it.
- transpose(P2) of reshape(s) of transpose(P1) of x, where the reshapes end in the shape they started
  from, is one transpose of x (P1 then P2), and x itself when P2 undoes P1: readers of the result read x.
  This removes the NHWC -> torch -> NHWC round trips between consecutive 1-d convs / pools and around
  torch-order ops (linear, matmul, layer norm) whose neighbours are 4-d.
- Transposes and reshapes left without readers are dropped (drop_unread, also fold_matmul_operands').
"""
from __future__ import annotations

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


def cancel_transposes(graph: Graph) -> Graph:
    graph = _sink_transposes(graph)
    nodes = []
    for node in graph.nodes:
        if node.op == "transpose" and _keeps_order(graph.tensors[node.inputs[0]].shape, node.attrs["perm"]):
            node = node.replace(op="reshape", attrs={})
        nodes.append(node)
    producer = {o: n for n in nodes for o in n.outputs}
    rename: dict[str, str] = {}
    kept = []
    for node in nodes:
        node = node.replace(inputs=tuple(rename.get(i, i) for i in node.inputs))
        producer[node.outputs[0]] = node
        src = _source(node, producer, graph) if node.op == "transpose" else None
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
    return drop_unread(graph.replace(nodes=tuple(kept)), MOVES)


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
