"""Float ExportedProgram (no quantize/dequantize nodes) -> mcu IR with float32 tensors, in torch (NCHW) order.

The import of quantize="none": the model compiled as it is.
- BatchNorms are folded first (mcu.importer.batch_norms.fold_batch_norms: into the conv2d / linear before them, else into
  a depthwise 1x1 conv), as the int8 flow's quantizer transform does.
- Placeholders become float32 graph inputs; frozen parameters and buffers become float32 constants (flash).
- Every compute node becomes one IR node with the op and attrs the int8 importer gives it (mcu.importer.op_attrs);
  a ReLU / ReLU6 stays a `clamp` node, which the fuse_clamp pass folds into its producer.
- An op without a float32 kernel raises UnsupportedOpError naming it, its source line and the supported ops.
"""
from __future__ import annotations

import operator

import numpy as np
import torch
from torch.fx import Node as FxNode

from mcu.importer.op_attrs import IDENTITY_OPS, append_float_node, first_arg, fx_shape, op_attrs, tensor_args
from mcu.errors import QuantizationError
from mcu.codegen.ir import Graph, Node, Tensor, verify
from mcu.errors import UnsupportedOpError
from mcu.importer.ops import op_name, source_line
from mcu.importer.decompose import decompose_composites
from mcu.importer.batch_norms import fold_batch_norms

# IR ops (as mcu.importer.op_attrs names them) with a float32 lowering (codegen/lowering_float.py, after the passes
# rewrite 1-d ops, adaptive pools, global means and pads onto these kernels).
FLOAT_OPS = ("conv2d", "conv1d", "linear", "add", "sub", "mul", "max_pool2d", "avg_pool2d", "max_pool1d",
             "avg_pool1d", "adaptive_avg_pool2d", "mean", "sum", "amax", "amin", "prod", "reshape", "slice", "pad", "softmax", "clamp", "permute", "lut", "concat", "layer_norm",
             "div", "minimum", "maximum", "pow", "matmul", "upsample_nearest", "upsample_nearest1d", "argmax", "argmin",
             "gather", "scatter", "argsort", "rnn", "lstm")


def _unsupported(n: FxNode, why: str = "") -> UnsupportedOpError:
    where = source_line(n) or "(no source line recorded)"
    return UnsupportedOpError(f"op '{op_name(n)}' at {where} has no float32 kernel{why}; quantize='none' supports "
                              f"{', '.join(FLOAT_OPS)} (and BatchNorm, folded); compile with quantize='int8' "
                              f"for the others")


def _output(o: FxNode, value: dict, tensors: dict, nodes: list) -> str:
    """The IR tensor of one model output; a constant one (slice_scatter over all of its input, x * 0) copied from
    the weights into the output by a one-input concat."""
    name = value[o]
    if tensors[name].is_const:
        const = tensors[name]
        name = f"t{len(tensors)}"
        tensors[name] = Tensor(name, const.shape, "float32")
        nodes.append(Node(f"n{len(nodes)}_concat", "concat", (const.name,), (name,), {"dim": 0}, source_line(o)))
    return name


def _compute(n: FxNode, value: dict, tensors: dict, nodes: list):
    """Append the IR node of compute node n (its output tensors into `tensors`); return its output's name, or the
    tuple of them for a multi-output op (an LSTM's y and c_n, read by getitems)."""
    shape_in = tensors[value[first_arg(n)]].shape
    try:
        op, attrs = op_attrs(n, shape_in)
    except QuantizationError as exc:
        raise _unsupported(n, f" ({exc})") from None
    if op not in FLOAT_OPS:
        raise _unsupported(n)
    names = append_float_node(n, op, attrs, [None if a is None else value[a] for a in tensor_args(n, op)], tensors,
                              nodes)
    return names if isinstance(n.meta["val"], (tuple, list)) else names[0]


def import_float(ep: torch.export.ExportedProgram) -> Graph:
    """Build the float32 IR of an exported float model."""
    gm = fold_batch_norms(decompose_composites(ep.module()), multi_output=True)
    tensors: dict[str, Tensor] = {}
    nodes: list[Node] = []
    value: dict[FxNode, str] = {}
    inputs: list[str] = []
    outputs: list[str] = []

    def const(n: FxNode) -> str:
        obj = gm
        for part in n.target.split("."):
            obj = getattr(obj, part)
        if not obj.is_floating_point():
            raise _unsupported(next(iter(n.users)), f" (its constant {n.target} is {obj.dtype}, not float)")
        data = np.ascontiguousarray(obj.detach().cpu().numpy(), dtype=np.float32)
        name = f"c{len(tensors)}"
        tensors[name] = Tensor(name, tuple(data.shape), "float32", data=data)
        return name

    for n in gm.graph.nodes:
        if n.op == "placeholder":
            val = n.meta.get("val")
            if not isinstance(val, torch.Tensor) or val.dtype == torch.bool or val.is_complex():
                raise UnsupportedOpError(f"model input {n.name} is {getattr(val, 'dtype', type(val).__name__)}; "
                                         f"mcu compiles float and integer (index) inputs")
            name = f"input{len(inputs)}"
            inputs.append(name)
            tensors[name] = Tensor(name, fx_shape(n), "float32" if val.is_floating_point() else "int32")
            value[n] = name
        elif n.op == "get_attr":
            if n.users:
                value[n] = const(n)
        elif n.op == "call_module":
            continue  # torch.export's input guards (_guards_fn), as the int8 importer skips them
        elif n.op == "output":
            outputs.extend(_output(o, value, tensors, nodes) for o in n.args[0])
        elif n.target in IDENTITY_OPS:
            value[n] = value[n.args[0]]
        elif n.target == operator.getitem and isinstance(value.get(n.args[0]), tuple):  # an LSTM's y or c_n
            value[n] = value[n.args[0]][n.args[1]]
        elif n.op == "call_function":
            value[n] = _compute(n, value, tensors, nodes)
        else:
            raise _unsupported(n)
    return verify(Graph(tensors, tuple(nodes), tuple(inputs), tuple(outputs)))
