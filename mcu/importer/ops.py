"""The op tables the import steps share (which aten ops export accepts, which are elementwise, composite or
float islands) and how a node names its op and the user's source line."""
from __future__ import annotations

import os
import re
from pathlib import Path

import torch
from torch.fx import GraphModule, Node


aten = torch.ops.aten

# Elementwise functions of one activation (and of a tensor and a scalar): int8 and int16 run them through a look-up
# table computed with the op itself (mcu.importer.from_quantized LUT_OPS), float32 through mcu_unary_f32 (codegen/lowering_float).
ELEMENTWISE_OPS = {
    aten.hardswish.default, aten.hardswish_.default, aten.hardsigmoid.default, aten.hardsigmoid_.default,
    aten.leaky_relu.default, aten.leaky_relu_.default, aten.gelu.default, aten.silu.default, aten.silu_.default,
    aten.elu.default, aten.elu_.default, aten.softplus.default, aten.neg.default, aten.abs.default, aten.exp.default,
    aten.log.default, aten.log1p.default, aten.expm1.default, aten.sqrt.default, aten.rsqrt.default,
    aten.reciprocal.default, aten.square.default, aten.sin.default, aten.cos.default, aten.floor.default,
    aten.ceil.default, aten.round.default, aten.trunc.default, aten.sign.default, aten.erf.default,
    aten.mish.default, aten.selu.default, aten.celu.default, aten.log_sigmoid.default, aten.hardshrink.default,
    aten.softshrink.default, aten.threshold.default, aten.rrelu.default, aten.pow.Tensor_Scalar,
    # in float32 decomposed into the above (mcu.importer.composites.arith); asin, acos, atan run mcu_unary_f32
    aten.log2.default, aten.log10.default, aten.exp2.default, aten.sinh.default, aten.cosh.default, aten.tan.default,
    aten.asinh.default, aten.acosh.default, aten.atanh.default, aten.asin.default, aten.acos.default, aten.atan.default,
}

# Ops with no integer kernel: in int8 and a16w8 models each runs as a float32 island (dequantize, the float kernel,
# quantize; mcu.quantization.quantizer marks it float32 as mixed= would), as does a division of two tensors. A
# recurrent layer over a sequence (mcu.importer.recurrent.RNN_OPS) is one too: its state stays float32 from step to step.
FLOAT_ISLAND_OPS = {aten.minimum.default, aten.maximum.default, aten.pow.Tensor_Tensor, aten.amax.default,
                    aten.argmax.default, aten.argmin.default, aten.argsort.default, aten.argsort.stable,
                    aten.amin.default, aten.prod.dim_int, aten.prod.default}

SCATTER_OPS = {aten.index_put.default, aten.index_copy.default}  # rows written at run-time indices (a KV cache)

# Ops with weights (activation, weight, bias): the quantizer gives them per-channel weights and an int32 bias,
# mcu.quantization.bias corrects their biases.
WEIGHTED_OPS = {aten.conv2d.default, aten.conv1d.default, aten.linear.default}

# Ops mcu.importer.decompose rewrites as primitives before quantization (their names, to keep mcu.importer.export import-light).
COMPOSITE_OPS = {
    aten.group_norm.default, aten.instance_norm.default, aten.rms_norm.default, aten.var.correction, aten.var.dim,
    aten.std.correction, aten.std.dim, aten.logsumexp.default, aten.log_softmax.int, aten._log_softmax.default,
    aten.linalg_vector_norm.default, aten.norm.ScalarOpt_dim, aten.clamp.Tensor, aten.clamp_min.Tensor, aten.clamp_max.Tensor,
    aten.prelu.default, aten.scaled_dot_product_attention.default, aten.cumsum.default,
    aten.conv_transpose1d.default, aten.conv_transpose2d.input, aten.upsample_bilinear2d.vec,
    aten.upsample_bicubic2d.vec, aten.where.self, aten.where.Scalar, aten.where.ScalarSelf,
    aten.where.ScalarOther, aten.masked_fill.Scalar, aten.logical_not.default,
    aten.logical_and.default, aten.logical_or.default, aten.logical_xor.default, aten.bitwise_not.default, aten.bitwise_and.Tensor,
    aten.bitwise_or.Tensor, aten.__and__.Tensor, aten.__or__.Tensor, aten.embedding.default,
    aten.index_select.default, aten.bilinear.default, aten.index.Tensor,
    aten.fmax.default, aten.fmin.default, aten.log2.default, aten.exp2.default, aten.lerp.Scalar, aten.log10.default,
    aten.sinh.default, aten.cosh.default, aten.tan.default, aten.asinh.default, aten.acosh.default, aten.atanh.default,
    aten.fmod.Tensor, aten.fmod.Scalar, aten.remainder.Tensor, aten.remainder.Scalar, aten.atan2.default,
    aten.gather.default, aten.scatter.src, aten.slice_scatter.default, aten.select_scatter.default,
    aten.diagonal.default, aten.scatter_add.default, aten.isnan.default, aten.isinf.default,
    aten.adaptive_max_pool2d.default, aten.im2col.default, aten.scatter_reduce.two, aten.as_strided.default,
    aten.masked_scatter.default, aten.embedding_bag.padding_idx, aten.embedding_bag.default,
    aten._embedding_bag.default, aten.avg_pool3d.default, aten.adaptive_avg_pool3d.default,
    aten.grid_sampler_2d.default, aten.grid_sampler.default, aten.sort.default, aten.sort.stable, aten.topk.default,
    aten.index_put.default,  # with constant indices (run-time ones: mcu_scatter)
    aten.gt.Tensor, aten.gt.Scalar, aten.lt.Tensor, aten.lt.Scalar, aten.ge.Tensor, aten.ge.Scalar, aten.le.Tensor,
    aten.le.Scalar, aten.eq.Tensor, aten.eq.Scalar, aten.ne.Tensor, aten.ne.Scalar,
    # constants (mcu.importer.decompose.CONSTANT_OPS), folded at compile time
    aten.zeros.default, aten.ones.default, aten.full.default, aten.scalar_tensor.default, aten.arange.default,
    aten.fill.Scalar, aten.empty_like.default, aten.to.dtype, aten._to_copy.default, aten.native_layer_norm.default,
    aten.native_group_norm.default, aten.any.default, aten.any.dim, aten.any.dims, aten.all.default,
    aten.all.dim, aten.all.dims,
    aten.arange.start, aten.arange.start_step, aten.zeros_like.default, aten.ones_like.default,
    aten.full_like.default,
}

# Every aten op the int8 flow accepts at export time (before quantization).
SUPPORTED_OPS = {
    aten.conv2d.default, aten.linear.default, aten.batch_norm.default,
    aten.index_put.default, aten.index_copy.default,  # rows written at run-time indices (a KV cache): scatter
    aten._native_batch_norm_legit_no_training.default,
    aten.relu.default, aten.relu_.default, aten.relu6.default, aten.hardtanh.default, aten.hardtanh_.default,
    aten.add.Tensor, aten.add_.Tensor,
    aten.max_pool2d.default, aten.avg_pool2d.default, aten.adaptive_avg_pool2d.default, aten.mean.dim,
    aten.flatten.using_ints, aten.view.default, aten.reshape.default, aten._unsafe_view.default,
    aten.squeeze.dim, aten.squeeze.dims, aten.unsqueeze.default, aten.contiguous.default,
    aten.dropout.default, aten.clone.default, aten.softmax.int, aten._softmax.default,
    aten.pad.default, aten.constant_pad_nd.default,
    # op breadth: elementwise, look-up-table activations, data movement, reductions, 1-d ops, matmul, norms
    aten.sub.Tensor, aten.sub_.Tensor, aten.mul.Tensor, aten.mul_.Tensor, aten.div.Tensor, aten.div_.Tensor,
    aten.rsub.Scalar, aten.clamp.default, aten.sigmoid.default, aten.sigmoid_.default, aten.tanh.default,
    aten.tanh_.default, aten.hardswish.default, aten.hardswish_.default, aten.hardsigmoid.default,
    aten.hardsigmoid_.default, aten.leaky_relu.default, aten.leaky_relu_.default, aten.gelu.default,
    aten.silu.default, aten.silu_.default, aten.elu.default, aten.elu_.default, aten.softplus.default,
    *ELEMENTWISE_OPS, *FLOAT_ISLAND_OPS,
    aten.cat.default, aten.permute.default, aten.transpose.int, aten.upsample_nearest2d.vec,
    aten.upsample_nearest1d.vec, aten.sum.dim_IntList, aten.conv1d.default, aten.max_pool1d.default,
    aten.avg_pool1d.default, aten.matmul.default, aten.sum.default, aten.mean.default, *COMPOSITE_OPS, aten.bmm.default, aten.layer_norm.default, aten.slice.Tensor,
}

# The nearest supported way to express an unsupported op.
ALTERNATIVES = {
    "upsample_bilinear2d": "nearest upsampling (F.interpolate mode='nearest')",
    "max_pool3d": "max_pool2d", "conv3d": "conv2d", "stack": "cat of unsqueezed tensors",
}


_FRAME_FILE = re.compile(r'File "([^"]+)"')
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def source_line(node: Node) -> str:
    """'file:line: code' of the user's frame that created the node, or '' when unknown."""
    trace = node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    torch_dir = os.path.dirname(torch.__file__)
    user = [f for f in frames if not f[0].startswith(torch_dir) and "/torchao/" not in f[0]]
    if not user:
        return ""
    file, line, _func, code = user[-1]
    return f"{file}:{line}: {code.strip()}"


def portable_path(file: str) -> str:
    """A source file as generated files name it, the same on every machine: relative to the working directory if
    it is under it, else to the folder holding its top-level package (mymodels/net.py), else its bare name."""
    path = Path(file)
    if not path.is_absolute():
        return path.as_posix()
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        pass
    top = path.parent
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    return path.relative_to(top).as_posix()


def portable_source(source: str) -> str:
    """A source_line with its file as portable_path names it: what generated files carry."""
    file, sep, rest = source.partition(":")
    return portable_path(file) + sep + rest if sep and file else source


def portable_stack_trace(trace: str) -> str:
    """A node's stack_trace with every frame's file as portable_path names it."""
    return _FRAME_FILE.sub(lambda m: f'File "{portable_path(m.group(1))}"', trace)


def op_name(node: Node) -> str:
    return str(getattr(node.target, "__name__", node.target)).split(".")[0]


def const_tensor(gm: GraphModule, n) -> torch.Tensor | None:
    """The tensor a get_attr node holds (a parameter or buffer of gm), or None for any other node."""
    if isinstance(n, Node) and n.op == "get_attr":
        obj = gm
        for part in n.target.split("."):
            obj = getattr(obj, part)
        return obj.detach()
    return None


def add_constant(gm: GraphModule, name: str, value: torch.Tensor, before: Node) -> Node:
    """Register value as a new buffer of gm (name_0, name_1, ...) and return its get_attr node, placed before `before`."""
    i = 0
    while hasattr(gm, f"{name}_{i}"):
        i += 1
    gm.register_buffer(f"{name}_{i}", value.contiguous())
    with gm.graph.inserting_before(before):
        return gm.graph.get_attr(f"{name}_{i}")
