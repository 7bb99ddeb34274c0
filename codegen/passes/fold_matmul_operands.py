"""Read a matmul's right operand where it lies instead of copying it into the order the product wants.

- Transposed: matmul(a, permute(x)) with the permute swapping the last two dims is matmul(a, x) with
  attrs["rhs_transposed"] = True (x is [.., N, K]: each output element a dot product of two contiguous rows,
  as attention's q @ k^T reads the key cache).
- Repeated: repeat_interleave(x, g, dim=0) of a 3-d x (torch gives reshape to [B, 1, ..], concat of g copies
  along dim 1, reshape to [B * g, ..]) as the right operand of a 3-d matmul is x with attrs["rhs_group"] = g:
  output batch b reads x's batch b // g (grouped-query attention reading its shared key and value heads).
- Either order of the two folds; a fold applies only when the folded-away tensors have no other reader, are not
  graph outputs and carry the quantization of x (so the product's arithmetic is unchanged).
- The copies left without readers are dropped.
"""
from __future__ import annotations

from mcu.codegen.ir import Graph, Node
from mcu.codegen.passes.cancel_transposes import drop_unread

COPIES = ("reshape", "concat", "permute", "transpose")  # what a fold leaves unread


def _only_reader(graph: Graph, tensor: str, node: Node) -> bool:
    readers = graph.consumers(tensor)
    return tensor not in graph.outputs and len(readers) == 1 and readers[0] is node


def _unwrap_transpose(graph: Graph, rhs: str, node: Node) -> str | None:
    """x when rhs = permute(x) swapping the last two dims and node is rhs's only reader."""
    p = graph.producer(rhs)
    if p is None or p.op not in ("permute", "transpose") or not _only_reader(graph, rhs, node):
        return None
    perm = tuple(p.attrs.get("perm", ()))
    r = len(perm)
    if r < 2 or perm != tuple(range(r - 2)) + (r - 1, r - 2):
        return None
    x = p.inputs[0]
    return x if graph.tensors[x].qparams == graph.tensors[rhs].qparams else None


def _unwrap_repeat(graph: Graph, rhs: str, node: Node) -> tuple[str, int] | None:
    """(x, g) when rhs = repeat_interleave(x, g, dim=0) of a 3-d x, read only by node."""
    t = graph.tensors
    merge = graph.producer(rhs)
    if merge is None or merge.op != "reshape" or not _only_reader(graph, rhs, node):
        return None
    cat = graph.producer(merge.inputs[0])
    if cat is None or cat.op != "concat" or cat.attrs.get("dim") != 1 or len(set(cat.inputs)) != 1:
        return None
    if not _only_reader(graph, merge.inputs[0], merge):
        return None
    split = graph.producer(cat.inputs[0])
    if split is None or split.op != "reshape":
        return None
    x, g = split.inputs[0], len(cat.inputs)
    sx, s1, s2 = t[x].shape, t[cat.inputs[0]].shape, t[rhs].shape
    if len(sx) != 3 or s1 != (sx[0], 1, sx[1], sx[2]) or s2 != (sx[0] * g, sx[1], sx[2]):
        return None
    if not (t[x].qparams == t[cat.inputs[0]].qparams == t[merge.inputs[0]].qparams == t[rhs].qparams):
        return None
    return x, g


def _fold(graph: Graph, node: Node) -> tuple[Graph, Node]:
    rhs, attrs = node.inputs[1], dict(node.attrs)
    for _ in range(2):
        if not attrs.get("rhs_transposed") and (x := _unwrap_transpose(graph, rhs, node)) is not None:
            rhs, attrs["rhs_transposed"] = x, True
        elif attrs.get("rhs_group", 1) == 1 and len(graph.tensors[node.inputs[0]].shape) == 3 \
                and (xg := _unwrap_repeat(graph, rhs, node)) is not None:
            rhs, attrs["rhs_group"] = xg
        else:
            break
        graph = drop_unread(graph.replace(nodes=tuple(n.replace(inputs=(n.inputs[0], rhs)) if n is node else n
                                                       for n in graph.nodes)), COPIES)
        node = next(n for n in graph.nodes if n.name == node.name)
    return graph, node.replace(attrs=attrs)


def fold_matmul_operands(graph: Graph) -> Graph:
    for name in [n.name for n in graph.nodes if n.op == "matmul"]:
        node = next(n for n in graph.nodes if n.name == name)
        folded_graph, folded = _fold(graph, node)
        if folded.inputs != node.inputs:
            graph = folded_graph.replace(nodes=tuple(folded if n.name == name else n for n in folded_graph.nodes))
    return graph
