"""The int8 run's default precisions for a decoder step (a model that writes a KV cache into its state), from issue
#28's measurements on the trained tiny LM (scripts/tinyllm_accuracy.py):

- every op but those below takes int16 activations (a16w8's kernels, int8 weights): dropping int16 from any one
  family of the block (linear, RMSNorm, softmax, mul, add) costs 1 to 6 points of next-token agreement;
- the cache writes (index_put / index_copy into a state) and the products of two activations (q @ k^T, attention
  @ v) stay int8: the cache is read in int8 by the int8 products, and int16 there would copy the whole cache
  every step (mcu.quantization.quantizer's MOVE_OPS keep repeat_interleave's copies in int8);
- so does an addition that broadcasts (the attention mask added to the scores): in int16 it has no kernel and runs
  as a float island, 0.2 M instructions a step on the M55 with a full cache (1.12 M a token against 0.91 M), for
  2 points of agreement (95.6 % against 93.6 %) that the instruction goal (1.0 M) cannot pay;
- the output projection, a product of the activations with a constant's transpose (a tied embedding's table), runs
  as a linear layer (classifier_as_linear): int16 logits from int8 weights per row, where int8 logits tie or
  misorder near-equal candidates;
- a model is a decoder when a scatter op writes one of its state inputs and it has a softmax.

`mixed=` rules still win over these defaults, op by op.
"""
from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from mcu.importer.ops import SCATTER_OPS

aten = torch.ops.aten
PRODUCTS = {aten.matmul.default, aten.bmm.default}
SOFTMAXES = {aten.softmax.int, aten._softmax.default}


def is_decoder(model: GraphModule, states: int) -> bool:
    """A scatter writes one of the last `states` inputs (a KV cache) and some op is a softmax."""
    if not states:
        return False
    inputs = set([n for n in model.graph.nodes if n.op == "placeholder"][-states:])
    nodes = [n for n in model.graph.nodes if n.op == "call_function"]
    writes = any(n.target in SCATTER_OPS and n.args and n.args[0] in inputs for n in nodes)
    return writes and any(n.target in SOFTMAXES for n in nodes)


def decoder_precision(node: Node) -> str:
    """int8 for a cache write, a matmul (the products of two activations once the output projection is a linear
    layer) and an addition that broadcasts; a16w8 for everything else."""
    if node.target == aten.add.Tensor and all(isinstance(a, Node) and "val" in a.meta for a in node.args[:2]):
        if node.args[0].meta["val"].shape != node.args[1].meta["val"].shape:
            return "int8"
    return "int8" if node.target in SCATTER_OPS or node.target in PRODUCTS else "a16w8"


def _constant_matrix(model: GraphModule, node) -> torch.Tensor | None:
    """The value of a 2-d parameter or buffer node reads (a get_attr: a folded W.t() is one), else None."""
    if not isinstance(node, Node) or node.op != "get_attr":
        return None
    value = getattr(model, str(node.target), None)
    return value if isinstance(value, torch.Tensor) and value.dim() == 2 and value.is_floating_point() else None


def classifier_as_linear(model: GraphModule) -> GraphModule:
    """x @ M with M a 2-d constant [K, N] (a tied embedding's W.t(), folded), as linear(x, M.t()): a fully connected
    layer with per-row int8 weights."""
    for k, node in enumerate(list(model.graph.nodes)):
        if node.op != "call_function" or node.target not in PRODUCTS or len(node.args) != 2:
            continue
        m = _constant_matrix(model, node.args[1])
        if m is None:
            continue
        name = f"_mcu_linear_weight_{k}"
        model.register_buffer(name, m.t().contiguous())
        with model.graph.inserting_before(node):
            w = model.graph.get_attr(name)
            w.meta["val"] = node.args[1].meta["val"].t().contiguous() if "val" in node.args[1].meta else None
            linear = model.graph.call_function(aten.linear.default, (node.args[0], w))
        linear.meta = {**node.meta}
        node.replace_all_uses_with(linear)
        model.graph.erase_node(node)
    model.graph.eliminate_dead_code()
    model.recompile()
    return model
