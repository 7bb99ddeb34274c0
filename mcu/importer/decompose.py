"""Composite ops as the primitives mcu has kernels for ("decompose, then cover").

Two stages, both before quantization:
- torch_decompositions (on the exported program, mcu.importer.export): the ops whose Core ATen decomposition lands on
  primitives we run (TORCH_DECOMPOSED: glu, pixel_shuffle, pixel_unshuffle, channel_shuffle, unflatten, movedim,
  tile, squeeze(), adaptive_avg_pool1d, softmin, the GRU/LSTM/RNN cells, addcmul, addcdiv, lerp by a
  tensor, true_divide, repeat_interleave, adaptive_max_pool1d) go through `ep.run_decompositions` with a table of
  just those ops, which also inlines autocast regions (INLINED_HOPS); GRU, LSTM and RNN over a sequence become
  one op per layer and direction (mcu.importer.recurrent: the time loop runs in C); everything else stays as exported.
- decompose_composites (on the unlifted GraphModule, run by McuQuantizer.transform_for_annotation and by the
  float importer, beside the BatchNorm folds, since some need new constants): constants folded, then every
  COMPOSITES op replaced by the decomposition its family in mcu.importer.composites gives (arith, indexing, norms,
  layers, spatial, logic), then constants folded again. The integer flows keep ELEMENTWISE_OPS whole (tables=True):
  one look-up table is more exact than log2's or sinh's primitives. Norms, variance, logsumexp, log_softmax, vector norms, clamp by tensors,
  PReLU and attention become means, sums, products, square roots, softmax and matmuls. The nodes that compute a
  statistic (a norm's mean and variance, a logsumexp) carry meta["mcu_float"] = the op's name: the quantizer
  leaves them float, so in int8 and a16w8 the whole statistic is one float32 island (dequantize, float kernels,
  quantize) instead of requantizing between every primitive.

Each replacement keeps the composite's source line. Pure graph rewrites: GraphModule in, the same module out.
"""
from __future__ import annotations

from functools import cached_property

import torch
from torch.fx import GraphModule, Node

from mcu.errors import UnsupportedOpError
from mcu.importer.composites import arith, indexing, layers, logic, norms, spatial
from mcu.importer.recurrent import RNN_DECOMPOSITIONS, projected
from mcu.importer.ops import ELEMENTWISE_OPS, add_constant, const_tensor, source_line


aten = torch.ops.aten

TORCH_DECOMPOSED = {
    aten.glu.default, aten.pixel_shuffle.default, aten.pixel_unshuffle.default, aten.channel_shuffle.default,
    aten.native_channel_shuffle.default, aten.unflatten.int, aten.movedim.intlist, aten.movedim.int,
    aten.tile.default, aten.squeeze.default, aten.adaptive_avg_pool1d.default,
    aten.cosine_similarity.default, aten.pairwise_distance.default, aten.hstack.default, aten.vstack.default,
    aten.atleast_1d.Sequence, aten.atleast_2d.Sequence, aten.atleast_1d.default, aten.atleast_2d.default,
    # recurrent cells (linear, sigmoid, tanh, chunk) and elementwise composites
    aten.gru_cell.default, aten.lstm_cell.default, aten.rnn_tanh_cell.default, aten.rnn_relu_cell.default,
    aten.addcmul.default, aten.addcdiv.default, aten.lerp.Tensor, aten.true_divide.Tensor,
    aten.true_divide.Scalar, aten.repeat_interleave.self_int, aten.adaptive_max_pool1d.default,
}
# Higher-order ops ep.run_decompositions inlines: an autocast region (timm's autocast-disabled blocks) is a no-op here.
INLINED_HOPS = {torch.ops.higher_order.wrap_with_autocast}


def needs_torch_decompositions(ep: torch.export.ExportedProgram) -> bool:
    return any(n.op == "call_function" and (n.target in TORCH_DECOMPOSED or n.target in INLINED_HOPS
                                            or n.target in RNN_DECOMPOSITIONS) for n in ep.graph.nodes)


def torch_decompositions(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """ep with TORCH_DECOMPOSED ops replaced by torch's own decompositions (a new program; ep is not changed)."""
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if op not in TORCH_DECOMPOSED:
            del table[op]
    for n in ep.graph.nodes:
        if n.op == "call_function" and projected(n):
            raise UnsupportedOpError(f"nn.LSTM with proj_size at {source_line(n) or '(no source line recorded)'} is not "
                                     f"supported; project the output with an nn.Linear after the LSTM")
    return ep.run_decompositions({**table, **RNN_DECOMPOSITIONS})


class Builder:
    """What a decomposition (mcu.importer.composites) builds with: inserts calls before the composite node `at`, each
    with its fake value (meta["val"]), the node's source line and, while `island` names one, meta["mcu_float"]."""

    def __init__(self, gm: GraphModule, at: Node, island: str | None = None):
        self.gm, self.at, self.island = gm, at, island

    @cached_property
    def fake_mode(self):
        return next(a.meta["val"].fake_mode for a in self.at.all_input_nodes
                    if isinstance(a.meta.get("val"), torch.Tensor) and hasattr(a.meta["val"], "fake_mode"))

    def __call__(self, target, *args, island: bool = True) -> Node:
        with self.gm.graph.inserting_before(self.at):
            n = self.gm.graph.call_function(target, args)
        vals = [[v.meta["val"] if isinstance(v, Node) else v for v in a] if isinstance(a, (list, tuple))
                else a.meta["val"] if isinstance(a, Node) else a for a in args]  # a cat's list of tensors
        with self.fake_mode:
            n.meta["val"] = target(*vals)
        n.meta["stack_trace"] = self.at.meta.get("stack_trace")
        if self.island and island:
            n.meta["mcu_float"] = self.island
        return n

    def const(self, name: str, value: torch.Tensor) -> Node:
        n = add_constant(self.gm, name, value.detach().float(), self.at)
        n.meta["val"] = self.fake_mode.from_tensor(getattr(self.gm, n.target))
        return n

    def tensor(self, n) -> torch.Tensor | None:
        """The constant a get_attr node holds, else None."""
        return const_tensor(self.gm, n)

    def shape(self, n: Node) -> list[int]:
        return _shape(n)

    def arg(self, i: int, name: str, default=None):
        """Argument i (or keyword `name`) of the composite node."""
        return _arg(self.at, i, name, default)

    def refuse(self, what: str, fix: str) -> UnsupportedOpError:
        """The error to raise for a form of the composite mcu cannot decompose."""
        return UnsupportedOpError(f"{what} at {source_line(self.at) or '(no source line recorded)'} is not "
                                  f"supported; {fix}")


def _shape(n: Node) -> list[int]:
    return [int(d) for d in n.meta["val"].shape]


def _arg(n: Node, i: int, name: str, default=None):
    return n.args[i] if len(n.args) > i else n.kwargs.get(name, default)


COMPOSITES = {**arith.DECOMPOSITIONS, **indexing.DECOMPOSITIONS, **norms.DECOMPOSITIONS, **layers.DECOMPOSITIONS, **spatial.DECOMPOSITIONS, **logic.DECOMPOSITIONS}
# Moved to the last dim by permutes where they run over another (layers.softmax_over_last).
SOFTMAXES = {aten.softmax.int, aten._softmax.default}
# Kept whole in the integer flows (tables=True), where an integer kernel runs them: mcu_rms_norm_s8 / _s16.
INTEGER_KERNEL_OPS = {aten.rms_norm.default}
# Decomposed only when mcu's own kernel does not apply (_is_uniform is False).
RESAMPLED_WHEN_UNEVEN = {aten.upsample_nearest2d.vec, aten.adaptive_avg_pool2d.default, aten.upsample_nearest1d.vec}


def _is_uniform(n: Node) -> bool:
    """A nearest upsample by integer factors, an adaptive pool whose sizes divide: mcu's own kernels."""
    shape_in, shape_out = _shape(n.args[0])[-2:], _shape(n)[-2:]
    if n.target == aten.adaptive_avg_pool2d.default:
        return all(i % o == 0 for i, o in zip(shape_in, shape_out))
    return all(o % i == 0 for i, o in zip(shape_in, shape_out)) and _integer_scales(n)


def _integer_scales(n: Node) -> bool:
    scales = _arg(n, 2, "scale_factors")
    return scales is None or all(float(s).is_integer() for s in scales)


# Ops whose value is known at compile time from their arguments alone (static shapes): folded into constants.
CONSTANT_OPS = {aten.zeros.default, aten.ones.default, aten.full.default, aten.scalar_tensor.default,
                aten.arange.default, aten.arange.start, aten.arange.start_step, aten.zeros_like.default,
                aten.ones_like.default, aten.full_like.default, aten.fill.Scalar, aten.empty_like.default}
CASTS = {aten.to.dtype, aten._to_copy.default}  # of a constant: folded with it
LIKE_OPS = {aten.zeros_like.default, aten.ones_like.default, aten.full_like.default, aten.fill.Scalar,
            aten.empty_like.default}  # read only their input's shape (empty_like's values: whatever fills it)


def _value(gm: GraphModule, a):
    if isinstance(a, Node):
        return const_tensor(gm, a)
    if isinstance(a, (list, tuple)):
        return type(a)(_value(gm, i) for i in a)
    return a


def _is_const(gm: GraphModule, a) -> bool:
    if isinstance(a, Node):
        return a.op == "get_attr"
    if isinstance(a, (list, tuple)):
        return all(_is_const(gm, i) for i in a)
    return True


def fold_constants(gm: GraphModule) -> bool:
    """Compute at compile time every node whose inputs are all constants (zeros, full, arange, a GRU's initial
    state and what only it feeds), and drop the products and sums with an all-zero constant (an LSTM's zero
    cell state). Each folded value becomes a buffer read by get_attr. True when anything changed."""
    graph, changed = gm.graph, False
    for n in list(graph.nodes):
        if n.op != "call_function" or not isinstance(n.meta.get("val"), torch.Tensor):
            continue
        args, kwargs, replacement = n.args, dict(n.kwargs), None
        if n.target in LIKE_OPS:
            args = (torch.empty(tuple(n.args[0].meta["val"].shape)),) + tuple(n.args[1:])
        elif n.target in CASTS and isinstance(n.args[0], Node) and n.args[0].target in CONSTANT_OPS:
            src = n.args[0]  # arange(8).float(): the integer constant computed, then cast
            src_kwargs = {k: v for k, v in src.kwargs.items() if k not in ("device", "pin_memory")}
            args = (src.target(*_value(gm, list(src.args)), **src_kwargs),) + tuple(n.args[1:])
        elif not (n.target in CONSTANT_OPS or (_is_const(gm, list(n.args)) and _is_const(gm, list(kwargs.values()))
                                               and any(isinstance(a, Node) for a in n.all_input_nodes))):
            zero = _zero_operand(gm, n)
            if zero is None:
                continue
            replacement = zero
        if replacement is None:
            kwargs.pop("device", None), kwargs.pop("pin_memory", None)
            value = n.target(*_value(gm, list(args)), **_value(gm, kwargs))
            if not value.is_floating_point():
                continue  # an index (arange for a gather) stays as it is
            replacement = add_constant(gm, "_mcu_const", value.float(), n)
            replacement.meta["val"] = n.meta["val"]
        elif replacement == "zeros":
            replacement = add_constant(gm, "_mcu_const", torch.zeros(tuple(n.meta["val"].shape)), n)
            replacement.meta["val"] = n.meta["val"]
        n.replace_all_uses_with(replacement)
        graph.erase_node(n)
        changed = True
    return changed


def _zero_operand(gm: GraphModule, n: Node):
    """"zeros" for a product with an all-zero constant, the other operand for a sum with one that does not
    broadcast it; None otherwise."""
    if n.target not in (aten.mul.Tensor, aten.add.Tensor, aten.sub.Tensor) or len(n.args) < 2:
        return None
    a, b = n.args[:2]
    zero = [isinstance(v, Node) and v.op == "get_attr" and not const_tensor(gm, v).any() for v in (a, b)]
    if n.target == aten.mul.Tensor and any(zero):
        return "zeros"
    alpha = n.kwargs.get("alpha", 1)
    for z, other in ((zero[1], a), (zero[0] if n.target == aten.add.Tensor and alpha == 1 else False, b)):
        if z and isinstance(other, Node) and tuple(other.meta["val"].shape) == tuple(n.meta["val"].shape):
            return other
    return None


def decompose_composites(gm: GraphModule, tables: bool = False, whole=None) -> GraphModule:
    """Fold constants, replace every COMPOSITES op by its primitives (again while a decomposition made composites:
    isnan's comparison), fold again (in place; returns gm). With tables (the integer flows), an elementwise op of
    ELEMENTWISE_OPS stays whole: one look-up table computed with the op itself is more exact than its primitives;
    and RMS norms (aten's, and the hand-written x * rsqrt(mean(x^2) + eps) * w) stay one rms_norm (INTEGER_KERNEL_OPS:
    one integer kernel). A node for which whole(node) is True stays as it is (the int8 flow's transposed convs and
    bilinear resampling, which have int8 kernels)."""
    changed = fold_constants(gm)
    if tables:
        changed |= norms.fuse_rms_norms(gm, Builder)
    for _ in range(4):
        if not _decompose_once(gm, tables, whole):
            break
        changed = True
    if changed:
        fold_constants(gm)  # what the decompositions computed from constants alone (a bilinear's x2 view)
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return gm


def _decompose_once(gm: GraphModule, tables: bool, whole=None) -> bool:
    """Each composite node of gm replaced by its decomposition; True when any was."""
    changed = False
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or (tables and (n.target in ELEMENTWISE_OPS or n.target in INTEGER_KERNEL_OPS)) \
                or (whole is not None and whole(n)):
            continue
        if n.target in RESAMPLED_WHEN_UNEVEN and not _is_uniform(n):
            out = spatial.resample(Builder(gm, n), n)
        elif n.target in SOFTMAXES:
            out = layers.softmax_over_last(Builder(gm, n), n)
        elif n.target in COMPOSITES:
            out = COMPOSITES[n.target](Builder(gm, n), n)
        else:
            continue
        if out is n:
            continue  # the form that runs as it is (a gather by run-time indices)
        if isinstance(out, tuple):  # a multi-output op: each getitem of it becomes its output
            for user in list(n.users):
                user.replace_all_uses_with(out[user.args[1]])
                gm.graph.erase_node(user)
            gm.graph.erase_node(n)
            changed = True
            continue
        n.replace_all_uses_with(out)
        gm.graph.erase_node(n)
        changed = True
    return changed
