"""BatchNorm folding before quantization (run by McuQuantizer.transform_for_annotation and the float importer).

fold_batch_norms: a BatchNorm after a conv2d/linear or a transposed conv of groups 1 (whose output feeds only it) is
folded into that op's weight and bias; any other BatchNorm becomes a depthwise 1x1 conv2d (viewed to 4-d when its input is 2-d or 3-d), so it
quantizes and runs like every other conv. prepare_pt2e already folds conv2d+BatchNorm2d; this catches the rest
(Linear+BatchNorm1d, standalone BN).
"""
from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule, Node

from mcu.importer.ops import add_constant, const_tensor

aten = torch.ops.aten
BN_OPS = {aten.batch_norm.default, aten._native_batch_norm_legit_no_training.default}
FOLD_INTO = {aten.conv2d.default, aten.linear.default}
# transposed convs (groups 1) hold the output channels on the weight's axis 1: [C_in, C_out, K...]
TRANSPOSED = {aten.conv_transpose2d.input, aten.conv_transpose1d.default}


def _groups(src: Node) -> int:
    return int(src.args[6]) if len(src.args) > 6 else int(src.kwargs.get("groups", 1))


def _bn_affine(gm: GraphModule, bn: Node) -> tuple[torch.Tensor, torch.Tensor]:
    """(scale, shift) with bn(x) = x * scale + shift per channel."""
    _, weight, bias, mean, var = bn.args[:5]
    eps = bn.args[7] if bn.target == aten.batch_norm.default else bn.args[6]
    mean, var = const_tensor(gm, mean), const_tensor(gm, var)
    c = mean.shape[0]
    gamma = const_tensor(gm, weight) if weight is not None else torch.ones(c)
    beta = const_tensor(gm, bias) if bias is not None else torch.zeros(c)
    scale = gamma / torch.sqrt(var + eps)
    return scale, beta - mean * scale


def fold_batch_norms(gm: GraphModule, multi_output: bool = False) -> GraphModule:
    """Fold every BatchNorm; the multi-output form (_native_batch_norm_legit_no_training, what
    run_decompositions leaves) only with multi_output=True (the float importer): for int8 it is left to
    prepare_pt2e's own conv-bn fusion."""
    for bn in [n for n in gm.graph.nodes if n.op == "call_function" and n.target in BN_OPS]:
        if bn.target == aten._native_batch_norm_legit_no_training.default:
            if not multi_output or any(u.target != operator.getitem or u.args[1] != 0 for u in bn.users):
                continue
            for u in list(bn.users):  # getitem(bn, 0) is the normalized tensor: bn stands for it below
                u.replace_all_uses_with(bn)
                gm.graph.erase_node(u)
            if isinstance(bn.meta.get("val"), (tuple, list)):
                bn.meta["val"] = bn.meta["val"][0]
        scale, shift = _bn_affine(gm, bn)
        src = bn.args[0]
        weight = const_tensor(gm, src.args[1]) if isinstance(src, Node) and src.op == "call_function" \
            and (src.target in FOLD_INTO or src.target in TRANSPOSED and _groups(src) == 1) \
            and len(src.users) == 1 else None
        if weight is not None:
            bias = const_tensor(gm, src.args[2]) if len(src.args) > 2 and src.args[2] is not None else None
            bias = torch.zeros_like(shift) if bias is None else bias
            shape = (-1,) + (1,) * (weight.dim() - 1)
            if src.target in TRANSPOSED:
                shape = (1, -1) + (1,) * (weight.dim() - 2)
            args = list(src.args) + [None] * (3 - len(src.args))
            args[1] = add_constant(gm, "_mcu_folded_weight", weight * scale.reshape(shape), src)
            args[2] = add_constant(gm, "_mcu_folded_bias", bias * scale + shift, src)
            src.args = tuple(args)
            bn.replace_all_uses_with(src)
        else:
            _bn_as_depthwise(gm, bn, scale, shift)
        gm.graph.erase_node(bn)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def _bn_as_depthwise(gm: GraphModule, bn: Node, scale: torch.Tensor, shift: torch.Tensor) -> None:
    src = bn.args[0]
    shape = list(src.meta["val"].shape)
    c = shape[1]
    w = add_constant(gm, "_mcu_bn_weight", scale.reshape(c, 1, 1, 1), bn)
    b = add_constant(gm, "_mcu_bn_bias", shift, bn)
    g = gm.graph
    with g.inserting_before(bn):
        x = src
        if len(shape) != 4:
            x = g.call_function(aten.view.default, (src, [shape[0], c, 1, -1]))
            x.meta = {**bn.meta, "val": src.meta["val"].reshape(shape[0], c, 1, -1)}
        conv = g.call_function(aten.conv2d.default, (x, w, b, [1, 1], [0, 0], [1, 1], c))
        conv.meta = {**bn.meta, "val": x.meta["val"] if len(shape) == 4 else x.meta["val"]}
        out = conv
        if len(shape) != 4:
            out = g.call_function(aten.view.default, (conv, shape))
            out.meta = dict(bn.meta)
    bn.replace_all_uses_with(out)


# ---- Views as slices, identities removed (run on the exported program, before any other stage) -------------
