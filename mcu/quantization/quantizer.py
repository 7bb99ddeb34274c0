"""PT2E int8 quantization with mcu's own Quantizer (torchao prepare_pt2e / convert_pt2e).

Scheme (TFLite-compatible integer semantics):
- weights int8 symmetric per output channel, range [-127, 127] (weights="int4": [-7, 7], packed two per byte);
- activations int8 asymmetric per tensor, range [-128, 127];
- bias int32, scale derived as s_in * s_w[c];
- BatchNorm folded into the conv/linear before it (prepare_pt2e, mcu.importer.batch_norms); ReLU / ReLU6 annotated after their producer so
  they fuse (the producer's output takes the activation's qparams);
- ops that only move or select values (pools, flatten, reshape, permute, upsample) share their input's qparams;
- softmax and sigmoid outputs are fixed at scale 1/256, zero point -128; tanh at 1/128, 0 (TFLite's);
- elementwise functions of one activation (GELU, hardswish, x * 2, ...), binary ops, concat, sum, matmul
  and layer norm observe their own output (concat requantizes inputs whose qparams differ);
- layer norm's weight and bias stay float (it runs in the float32 fallback);
- activations="int16" (quantize="a16w8", TFLite's "16x8"): activations int16 symmetric per tensor (zero point
  0), weights int8 as above, biases left float (the lowering stores them as int64 at s_in * s_w[c], beyond
  int32's reach at these scales); softmax, sigmoid and tanh outputs fixed at scale 1/32768;
- mixed precision: `mixed` maps module names (a name covers its submodules) or module types (classes or class
  names) to "int8", "a16w8" or "float32"; each op takes the precision of the innermost module that names one,
  else the run's. float32 ops are left unannotated (torchao keeps them float) and carry
  meta["mcu_precision"] = "float32" for the importer; where precisions meet, torchao's own Q/DQ pairs become
  the converts; an op that only moves values (a view, a copy, a concat of one tensor's copies) or rescales them
  by a number runs in the integer precision of the op it reads, so values cross precisions where they are used;
- bias correction (mcu.quantization.bias) between calibration and conversion; the observers and qspecs are in
  mcu.quantization.observers.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable, Iterable

import torch
from torch.fx import GraphModule, Node

import mcu.torchao_quiet  # noqa: F401  (before any torchao import)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    QuantizationAnnotation,
    Quantizer,
    SharedQuantizationSpec,
)

from mcu.errors import McuError
from mcu.importer.ops import ELEMENTWISE_OPS, FLOAT_ISLAND_OPS, WEIGHTED_OPS
from mcu.importer.recurrent import RNN_OPS
from mcu.importer.op_attrs import GATHER_OPS, SCATTER_OPS, gather_args, scatter_args
from mcu.importer.state import ep_states
from mcu.quantization.state import share_state_qparams
from mcu.importer.decompose import decompose_composites
from mcu.importer.composites.spatial import has_int8_kernel
from mcu.importer.batch_norms import fold_batch_norms
from mcu.quantization.bias import InputMeans, correct_biases
from mcu.quantization.calibration import check_batch, check_finite
from mcu.quantization.decoder import DECODER_PRECISION, classifier_as_linear, is_decoder
from mcu.quantization.mixed import PRECISIONS, check_mixed, op_rule, precision_of
from mcu.quantization.observers import (FIXED16_QSPEC, SOFTMAX_OUT_QSPEC, TABLE_QSPEC, TANH_OUT_QSPEC, act_qspec,
                                       weight_qspec)

aten = torch.ops.aten


# Activations fused into their producer's requantization.
FUSABLE_ACTIVATIONS = {aten.relu.default, aten.relu_.default, aten.relu6.default, aten.hardtanh.default,
                       aten.hardtanh_.default, aten.clamp.default}
# Elementwise ops of up to two activations (with a scalar instead of one: a look-up table).
BINARY_OPS = {aten.add.Tensor, aten.add_.Tensor, aten.sub.Tensor, aten.sub_.Tensor, aten.mul.Tensor,
              aten.mul_.Tensor, aten.div.Tensor, aten.div_.Tensor, aten.rsub.Scalar}
MATMUL_OPS = {aten.matmul.default, aten.bmm.default}
# Transposed convs with int8 kernels (mcu.importer.composites.spatial.has_int8_kernel; the others decompose): the
# weight [C_in, C_out, K...] per channel on axis 1.
TRANSPOSED_CONV_OPS = {aten.conv_transpose2d.input, aten.conv_transpose1d.default}
# Ops whose output may take a fused activation.
ACT_PRODUCERS = WEIGHTED_OPS | BINARY_OPS | MATMUL_OPS | TRANSPOSED_CONV_OPS
# Elementwise functions of one activation, run through a look-up table; own output observer.
LUT_OPS = ELEMENTWISE_OPS
FIXED_QPARAM_OPS = {aten.sigmoid.default: SOFTMAX_OUT_QSPEC, aten.sigmoid_.default: SOFTMAX_OUT_QSPEC,
                    aten.tanh.default: TANH_OUT_QSPEC, aten.tanh_.default: TANH_OUT_QSPEC}
# One activation in, own output observer.
OWN_OUTPUT_OPS = LUT_OPS | {aten.sum.dim_IntList, aten.layer_norm.default, aten.rms_norm.default}
# Ops that only move or select values: output shares the input's qparams.
SHARED_QPARAM_OPS = {
    aten.max_pool2d.default, aten.avg_pool2d.default, aten.adaptive_avg_pool2d.default,
    aten.mean.dim, aten.flatten.using_ints, aten.view.default, aten.reshape.default,
    aten._unsafe_view.default, aten.squeeze.dim, aten.squeeze.dims, aten.unsqueeze.default,
    aten.permute.default, aten.transpose.int, aten.contiguous.default, aten.dropout.default,
    aten.clone.default, aten.pad.default, aten.constant_pad_nd.default, aten.max_pool1d.default,
    aten.avg_pool1d.default, aten.upsample_nearest2d.vec, aten.upsample_nearest1d.vec, aten.slice.Tensor,
    aten.upsample_bilinear2d.vec,  # each output a convex sum of inputs: inside the input's range
} | FUSABLE_ACTIVATIONS
SOFTMAX_OPS = {aten.softmax.int, aten._softmax.default}
# Ops that copy values unchanged (a subset of SHARED_QPARAM_OPS) and ones that rescale them by a number: in mixed
# precision they run in their input's integer precision (McuQuantizer._moved_precision).
MOVE_OPS = {aten.flatten.using_ints, aten.view.default, aten.reshape.default, aten._unsafe_view.default,
            aten.squeeze.dim, aten.squeeze.dims, aten.unsqueeze.default, aten.permute.default, aten.transpose.int,
            aten.contiguous.default, aten.dropout.default, aten.clone.default, aten.slice.Tensor,
            aten.max_pool2d.default, aten.max_pool1d.default, aten.upsample_nearest2d.vec,
            aten.upsample_nearest1d.vec}
RESCALE_OPS = {aten.mul.Tensor, aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar}


def _bias_qparams(obs_or_fqs):
    act_scale, _ = obs_or_fqs[0].calculate_qparams()
    weight_scale, _ = obs_or_fqs[1].calculate_qparams()
    scale = (act_scale * weight_scale).to(torch.float32)
    return scale, torch.zeros_like(scale, dtype=torch.int32)


def _annotate(node: Node, inputs: dict, output) -> None:
    node.meta["quantization_annotation"] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True)


def _is_float(node: Node) -> bool:
    """A node whose value is a float tensor (not, e.g., BatchNorm's integer batch counter in a training graph)."""
    val = node.meta.get("val")
    return not isinstance(val, torch.Tensor) or val.dtype.is_floating_point


VIEW_OPS = {aten.t.default, aten.permute.default, aten.transpose.int, aten.view.default, aten.reshape.default,
            aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim}


def _constant(node: Node) -> bool:
    """True when node is a parameter or buffer the model never writes, or a view of one."""
    while node.op == "call_function" and node.target in VIEW_OPS:
        node = node.args[0]
    return node.op == "get_attr"


def _is_annotated(node: Node) -> bool:
    ann = node.meta.get("quantization_annotation")
    return ann is not None and ann._annotated


def _sole_user(node: Node, targets) -> Node | None:
    """node's only consumer, if it is a call of one of targets."""
    if len(node.users) != 1:
        return None
    user = next(iter(node.users))
    return user if user.op == "call_function" and user.target in targets else None


def _fused_activation(node: Node) -> Node | None:
    """The ReLU/ReLU6 that consumes node's output, if it is the only consumer."""
    return _sole_user(node, FUSABLE_ACTIVATIONS)


# A training graph's BatchNorm (QAT): prepare_qat_pt2e folds it into the conv before it when the conv's
# output is left unquantized and the BatchNorm's (or its ReLU's) output carries the quantization.
BATCH_NORMS = {aten.batch_norm.default}


# Ops with an int8 kernel and no int16 one: float islands in a16w8 (codegen/lowering_s16.py lists what int16 runs)
NO_INT16_KERNEL = {aten.sum.dim_IntList, aten.upsample_nearest2d.vec, aten.upsample_nearest1d.vec}
INDEX_OPS = {aten.argmax.default, aten.argmin.default, aten.argsort.default, aten.argsort.stable}
RECURRENT_FNS = {"gru", "lstm", "rnn_tanh", "rnn_relu"}  # torch_fn of the nodes a cell (nn.GRUCell, ...) decomposes to


def float_island(node: Node, precision: str) -> bool:
    """An op with no integer kernel in this precision (FLOAT_ISLAND_OPS, a division of two tensors, in a16w8
    NO_INT16_KERNEL and a mean other than a spatial average): left float, as mixed= float32 layers are, so the
    importer runs it between a dequantize and a quantize."""
    if node.meta.get("mcu_float"):  # a composite's statistic (mcu.importer.decompose): one float island
        return True
    if str((node.meta.get("torch_fn") or ("", ""))[1]).rsplit(".", 1)[-1] in RECURRENT_FNS:
        return True  # a GRU / LSTM cell, decomposed by torch: its state stays float
    two = len(node.args) >= 2 and all(isinstance(a, Node) for a in node.args[:2])
    if node.target in FLOAT_ISLAND_OPS or node.target in RNN_OPS or (two and node.target in (aten.div.Tensor, aten.div_.Tensor)):
        return True
    if precision == "a16w8" and node.target in NO_INT16_KERNEL:
        return True
    if precision == "a16w8" and node.target == aten.mean.dim:  # int16 means only as a spatial average pool
        rank = len(node.args[0].meta["val"].shape)
        return not (rank == 4 and sorted(int(d) % rank for d in node.args[1]) == [2, 3])
    return False


class McuQuantizer(Quantizer):
    """Annotates an exported graph for mcu's integer kernels.

    observer picks how activation ranges are set (OBSERVERS). qat=True fake-quantizes instead, for
    torchao's prepare_qat_pt2e: train, move_exported_model_to_eval, convert_pt2e, and pass the converted
    model to mcu.compile. In QAT, prepare_qat_pt2e folds conv + BatchNorm itself; mcu's own BatchNorm
    rewrites (linear + BN, standalone BN) apply to post-training quantization only.
    precision is the run's ("int8" or "a16w8"); mixed overrides it per module (see the module docstring)."""

    def __init__(self, observer: str = "minmax", qat: bool = False, weights: str = "int8",
                 precision: str = "int8", mixed: dict | None = None, states: int = 0):
        super().__init__()
        self.states = states  # the last `states` inputs and outputs are a state and its update (mcu.importer.state)
        if precision not in PRECISIONS[:2]:
            raise McuError(f"precision={precision!r} is not one of int8, a16w8")
        self.acts = {"int8": act_qspec(observer, qat), "a16w8": act_qspec(observer, qat, bits=16)}
        self.weight = weight_qspec(qat, weights)
        self.qat = qat
        self.precision = precision
        self.mixed = check_mixed(mixed)
        self.decoder = False  # set by annotate: an int8 run of a decoder step takes mcu.quantization.decoder's defaults

    def precision_of(self, node: Node) -> str:
        """The precision of an op: that of the innermost module the `mixed` rules name, else the run's (a decoder
        step's in an int8 run: mcu.quantization.decoder)."""
        default = DECODER_PRECISION if self.decoder else self.precision
        return precision_of(node, self.mixed, default)

    def _moved_precision(self, node: Node) -> str | None:
        """The integer precision of the op an op that only moves or rescales values (MOVE_OPS, a concat of one
        tensor's copies, x * a number) reads, unless an op-family rule names it: moved where they lie and converted
        where used (a KV cache read in int8 by an int8 product stays int8 through repeat_interleave's copies)."""
        if op_rule(node, self.mixed) is not None:
            return None
        src = node.args[0] if node.args else None
        if node.target == aten.cat.default:
            ins = [a for a in node.args[0] if isinstance(a, Node)]
            src = ins[0] if len(set(ins)) == 1 else None
        elif node.target in RESCALE_OPS:
            src = src if len(node.args) == 2 and isinstance(node.args[1], (int, float)) else None
        elif node.target not in MOVE_OPS:
            src = None
        return src.meta.get("mcu_act_precision") if isinstance(src, Node) else None

    def annotate(self, model: GraphModule) -> GraphModule:
        self.decoder = self.precision == "int8" and not self.qat and is_decoder(model, self.states)
        for node in model.graph.nodes:
            if node.op == "call_function" and node.target in INDEX_OPS:  # float in, int32 indices out
                node.meta["mcu_precision"] = "float32"
                continue
            if node.op != "call_function" or _is_annotated(node) or not _is_float(node):
                continue
            precision = self._moved_precision(node) or self.precision_of(node)
            if precision != "float32" and not float_island(node, precision):
                node.meta["mcu_act_precision"] = precision
            if precision == "float32" or float_island(node, precision):
                node.meta["mcu_precision"] = "float32"
                continue
            act = self.act = self.acts[precision]
            sixteen = precision == "a16w8"
            if node.target in WEIGHTED_OPS:
                self._annotate_weighted(node, bias=not sixteen)
            elif node.target in TRANSPOSED_CONV_OPS:
                self._annotate_weighted(node, weight_axis=1)
            elif node.target in BINARY_OPS or node.target in MATMUL_OPS:
                self._annotate_binary(node)
            elif node.target in SOFTMAX_OPS:
                _annotate(node, {node.args[0]: act}, FIXED16_QSPEC if sixteen else SOFTMAX_OUT_QSPEC)
            elif node.target in FIXED_QPARAM_OPS:
                _annotate(node, {node.args[0]: act}, FIXED16_QSPEC if sixteen else FIXED_QPARAM_OPS[node.target])
            elif node.target in OWN_OUTPUT_OPS:
                _annotate(node, {node.args[0]: act}, act)
            elif node.target in GATHER_OPS:  # rows of a table by run-time indices: the output on the table's qparams
                table = gather_args(node)[0]
                spec = TABLE_QSPEC if not sixteen and _constant(table) else act
                _annotate(node, {table: spec}, SharedQuantizationSpec((table, node)))
            elif node.target in SCATTER_OPS:  # rows written into a table (a cache): values and output on its qparams
                table, _, values, _ = scatter_args(node)
                same = SharedQuantizationSpec((table, node))
                _annotate(node, {table: act, values: same}, same)
            elif node.target == aten.cat.default:
                ins = [a for a in node.args[0] if isinstance(a, Node)]
                first = SharedQuantizationSpec((ins[0], node))
                _annotate(node, {ins[0]: act, **{a: first for a in ins[1:] if a is not ins[0]}}, first)
            elif node.target in SHARED_QPARAM_OPS:
                src = node.args[0]
                if isinstance(src, Node):
                    _annotate(node, {src: act}, SharedQuantizationSpec((src, node)))
        if self.states:
            share_state_qparams(model, self.states)
        return model

    def _annotate_output(self, node: Node) -> None:
        bn = _sole_user(node, BATCH_NORMS) if self.qat else None
        if bn is not None:
            act = _fused_activation(bn)
            _annotate(bn, {}, None if act is not None else self.act)
            if act is not None:
                _annotate(act, {}, self.act)
            return
        act = _fused_activation(node)
        if act is None:
            node.meta["quantization_annotation"].output_qspec = self.act
        else:
            _annotate(act, {}, self.act)

    def _annotate_weighted(self, node: Node, bias: bool = True, weight_axis: int = 0) -> None:
        """int8: the bias becomes int32 at s_in * s_w[c]; a16w8 (bias=False): it stays float (int64 later). The
        weight's output channels lie on weight_axis (1: a transposed conv's)."""
        x, w = node.args[0], node.args[1]
        b = node.args[2] if len(node.args) > 2 else None
        weight = self.weight if weight_axis == 0 else dataclasses.replace(self.weight, ch_axis=weight_axis)
        inputs = {x: self.act, w: weight}
        if isinstance(b, Node) and bias:
            inputs[b] = DerivedQuantizationSpec(
                derived_from=[(x, node), (w, node)],
                derive_qparams_fn=_bias_qparams,
                dtype=torch.int32,
                quant_min=-(2**31) + 1,
                quant_max=2**31 - 1,
                qscheme=torch.per_channel_symmetric,
                ch_axis=0,
            )
        _annotate(node, inputs, None)
        self._annotate_output(node)

    def _has_int8_kernel(self, node: Node) -> bool:
        """A composite that runs whole in int8 (a transposed conv, bilinear upsampling) where its layer is int8."""
        return has_int8_kernel(node) and self.precision_of(node) == "int8"

    def _annotate_binary(self, node: Node) -> None:
        inputs = {a: self._read_as_is(a) for a in node.args[:2] if isinstance(a, Node)}
        rhs = node.args[1] if len(node.args) > 1 else None
        if node.target in MATMUL_OPS and self.act is self.acts["int8"] and isinstance(rhs, Node) and _constant(rhs):
            inputs[rhs] = TABLE_QSPEC  # activations x a constant: a fully connected layer (mcu.codegen.lowering_s8)
        _annotate(node, inputs, None)
        self._annotate_output(node)

    def _read_as_is(self, src: Node):
        """The spec an int16 op's input takes: its producer's own when those are fixed (a softmax's 2^-15 steps read
        by attention @ v: no requantization between them), else the run's activation spec."""
        produced = src.meta.get("quantization_annotation")
        fixed = produced is not None and produced.output_qspec is FIXED16_QSPEC
        return SharedQuantizationSpec(src) if fixed and self.act is self.acts["a16w8"] else self.act

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        model = decompose_composites(model, tables=True, whole=self._has_int8_kernel)
        if self.precision == "int8" and not self.qat and is_decoder(model, self.states):
            model = classifier_as_linear(model)
        return model if self.qat else fold_batch_norms(model)

    def validate(self, model: GraphModule) -> None:
        pass


# progress(done, total, seconds elapsed) after each calibration batch; total is None for a set without len().
Progress = Callable[[int, int | None, float], None]


def quantize(exported: torch.export.ExportedProgram, example_inputs: tuple,
             calibration: Iterable | None = None, progress: Progress | None = None,
             bias_correction: bool = True, observer: str = "minmax", weights: str = "int8",
             precision: str = "int8", mixed: dict | None = None) -> GraphModule:
    """Calibrate and convert: returns torchao's converted GraphModule (Q/DQ around float ops).

    calibration is an iterable of input tuples; None calibrates on the example inputs alone.
    progress, if given, is called after each batch (silent by default).
    """
    state = [s.init for s in ep_states(exported)]  # carried from batch to batch: calibration runs in order
    prepared = prepare_pt2e(exported.module(), McuQuantizer(observer, weights=weights, precision=precision,
                                                            mixed=mixed, states=len(state)))
    batches = [example_inputs] if calibration is None else calibration
    if not hasattr(batches, "__iter__"):
        raise McuError(f"calibration must be an iterable of input tuples (e.g. [(x,) for x in batches]), "
                       f"got a {type(batches).__name__}")
    try:
        total = len(batches)
    except TypeError:  # a generator, or a DataLoader over an IterableDataset
        total = None
    seen, start = 0, time.monotonic()
    means = InputMeans(prepared) if bias_correction else None
    with torch.no_grad():
        for batch in batches:
            batch = check_batch(batch, example_inputs, seen)
            outs = means.run(*batch, *state) if means is not None else prepared(*batch, *state)
            state = list(outs[len(outs) - len(state):]) if state else state
            check_finite(prepared, seen)
            seen += 1
            if progress is not None:
                progress(seen, total, time.monotonic() - start)
    if seen == 0:
        raise McuError("the calibration set is empty; pass at least one input tuple "
                       "(or calibration=None to calibrate on the example inputs)")
    if means is not None:
        correct_biases(prepared, means.means())
    return convert_pt2e(prepared, fold_quantize=True)


__all__ = ["McuQuantizer", "quantize"]
