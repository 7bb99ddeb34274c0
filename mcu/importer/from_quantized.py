"""Converted PT2E GraphModule (Q/DQ around float ops) -> mcu IR with integer tensors, in torch (NCHW) order.

- A quantize_per_tensor node defines an int8 (or, a16w8, int16) activation; its dequantize reads the same
  tensor. A quantize of another quantized tensor's dequantize is a requantization: an identity look-up table
  between int8 tensors, a `convert` node where the integer type changes (mixed precision).
- An op left float by the quantizer (meta["mcu_precision"] == "float32", mixed precision) becomes a float32
  node as frontend_float makes them: a `dequantize` node feeds it each integer input, a `quantize` node
  turns its result back into the consumer's integer tensor, and its parameters stay float32 constants.
- The float bias of an a16w8 conv/linear (the quantizer leaves it float) becomes a float32 constant; the
  int16 lowering stores it as int64.
- A frozen int8/int32 parameter behind a dequantize_per_channel becomes a constant with per-channel qparams.
- A float op (conv, add, ...) becomes one IR node whose output is the quantize node that follows it;
  a ReLU/ReLU6 between the two is recorded as the node's `act` (real-valued clamp range).
- An elementwise function of one activation (sigmoid, GELU, x * 2, ...) becomes a `lut` node whose
  attrs["fn"] = (aten overload, args with ... for the tensor, kwargs) names the float function.
- Float parameters of fallback ops (layer norm's weight and bias) become float32 constants.
"""
from __future__ import annotations

import operator

import numpy as np
import torch
from torch.fx import GraphModule, Node as FxNode
import mcu.torchao_quiet  # noqa: F401  (before any torchao import)
from torchao.quantization.pt2e import quantize_pt2e  # noqa: F401  (registers quantized_decomposed ops)

from mcu.codegen.ir import Graph, Node, QParams, Tensor, verify
from mcu.errors import QuantizationError
from mcu.importer.op_attrs import (IDENTITY_OPS, UNARY_IR_OPS, act_range, append_float_node, first_arg, fx_shape,
                                   gather_args, op_attrs, scatter_args, tensor_args)
from mcu.importer.ops import op_name, source_line

aten = torch.ops.aten
qd = torch.ops.quantized_decomposed

Q_OPS = {qd.quantize_per_tensor.default}
DQ_OPS = {qd.dequantize_per_tensor.default, qd.dequantize_per_channel.default}
FLOAT_PARAM_OPS = {aten.layer_norm.default, aten.rms_norm.default}  # gamma and beta stay float (folded at lowering)

INT_DTYPES = {torch.int8: "int8", torch.int16: "int16"}
WEIGHTED = {aten.conv2d.default, aten.conv1d.default, aten.linear.default}


def _q_dtype(n: FxNode) -> str:
    """The integer type of a quantize node's output (args: x, scale, zero point, qmin, qmax, dtype)."""
    dtype = n.args[5] if len(n.args) > 5 else n.kwargs.get("dtype", torch.int8)
    if dtype not in INT_DTYPES:
        raise QuantizationError(f"activations quantized to {dtype} at {source_line(n)}: mcu supports int8 and int16")
    return INT_DTYPES[dtype]


def _reader_line(q: FxNode) -> str:
    """The source line of the first op that reads quantize node q's value (through its dequantize), for the
    requantizations torchao inserts between ops, which have no line of their own."""
    for dq in q.users:
        for user in dq.users:
            line = source_line(user)
            if line:
                return line
    return ""


def _is_index(n: FxNode) -> bool:
    """An integer (not bool) model input: indices such as token ids or a position."""
    val = n.meta.get("val")
    return isinstance(val, torch.Tensor) and not val.is_floating_point() and val.dtype != torch.bool \
        and not val.is_complex()


def _is_float_op(n: FxNode) -> bool:
    return n.meta.get("mcu_precision") == "float32"


def import_quantized(gm: GraphModule) -> Graph:
    """Build the integer IR of a torchao-converted GraphModule: each fx node in graph order, then the graph."""
    importer = _Importer(gm)
    for n in gm.graph.nodes:
        importer.visit(n)
    return importer.graph()


class _Importer:
    """The IR built so far from one converted GraphModule, and what each of its fx nodes has become."""

    def __init__(self, gm: GraphModule):
        self.gm = gm
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.value: dict[FxNode, str] = {}  # fx node -> IR tensor holding its (quantized) value
        self.pending: dict[FxNode, tuple[FxNode, tuple | None]] = {}  # float result -> (compute node, act range)
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.floats: dict[FxNode, str] = {}  # fx node of a float op (mixed precision) -> its float32 IR tensor
        self.dequantized: dict[str, str] = {}  # integer tensor -> its float32 dequantize
        self.multi: dict[FxNode, tuple[str, ...]] = {}  # a float op with several outputs -> their float32 tensors
        # forward's parameters in order: placeholder k is the IR tensor input{k}, whichever op reads it first
        self.positions = {n: k for k, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}

    def visit(self, n: FxNode) -> None:
        """Record what fx node n becomes. Placeholders become inputs at their quantize node, parameters constants
        where they are read; a float compute op waits in `pending` for the quantize of its result."""
        if n.op == "placeholder" and _is_index(n):  # token ids, positions: int32 on the device, never quantized
            self.value[n] = self.add_input(n, "int32")
            return
        if n.op in ("placeholder", "get_attr", "call_module"):
            return
        if n.op == "output":
            self.outputs += [self.output(o) for o in n.args[0]]
            return
        t = n.target
        if t in Q_OPS:
            self.value[n] = self.quantize(n)
        elif t in DQ_OPS:
            self.value[n] = self.dequantize(n)
        elif t == operator.getitem and n.args[0] in self.multi:  # an output of a multi-output float op (an LSTM)
            self.floats[n] = self.multi[n.args[0]][n.args[1]]
        elif n.op == "call_function" and _is_float_op(n) and t not in Q_OPS | DQ_OPS:
            self.floats[n] = self.float_op(n)
        elif t == operator.getitem:
            raise QuantizationError(f"multi-output op {n.args[0].name} is not supported")
        elif t in IDENTITY_OPS:
            self.value[n] = self.value[n.args[0]]
            if n.args[0] in self.pending:
                self.pending[n] = self.pending.pop(n.args[0])
        elif act_range(n) is not None and n.args[0] in self.pending and self.pending[n.args[0]][1] is None:
            compute, _ = self.pending.pop(n.args[0])
            self.pending[n] = (compute, act_range(n))
        elif n.op == "call_function":
            self.check_params(n)
            self.pending[n] = (n, None)

    def graph(self) -> Graph:
        """The finished IR, once every float result has met its quantize."""
        if self.pending:
            n = next(iter(self.pending))
            raise QuantizationError(f"op '{op_name(n)}' at {source_line(n)} has no quantized output; "
                                    f"it is not supported by the int8 flow")
        for p, k in self.positions.items():  # an input no op reads (only export's guards) stays in its place
            if f"input{k}" not in self.tensors:
                self.add_input(p, "float32")
        inputs = sorted(self.inputs, key=lambda name: int(name.removeprefix("input")))
        return verify(Graph(self.tensors, tuple(self.nodes), tuple(inputs), tuple(self.outputs)))

    def add_input(self, p: FxNode, dtype: str, qp: QParams | None = None) -> str:
        """Model input `input{k}` for forward's k-th parameter (placeholder p), wherever the graph first reads it."""
        name = f"input{self.positions[p]}"
        self.inputs.append(name)
        self.tensors[name] = Tensor(name, fx_shape(p), dtype, qp)
        return name

    def output(self, o: FxNode) -> str:
        """The IR tensor of one model output."""
        if o in self.floats:  # a float op's result is the model's output (mixed precision)
            return self.floats[o]
        if o.op == "get_attr":  # a constant output (slice_scatter over all of its input): copied, float32
            const = self.float_const(o)
            name = f"t{len(self.tensors)}"
            self.tensors[name] = Tensor(name, self.tensors[const].shape, "float32")
            self.nodes.append(Node(f"n{len(self.nodes)}_concat", "concat", (const,), (name,), {"dim": 0},
                                   source_line(o)))
            return name
        if o not in self.value:
            raise QuantizationError(f"model output {o.name} is not quantized")
        return self.value[o]

    def const(self, n: FxNode) -> np.ndarray:
        return getattr(self.gm, n.target).detach().cpu().numpy()

    def float_const(self, n: FxNode | None) -> str | None:
        if n is None:
            return None
        name = f"c{len(self.tensors)}"
        obj = self.gm
        for part in n.target.split("."):
            obj = getattr(obj, part)
        data = np.ascontiguousarray(obj.detach().cpu().numpy(), dtype=np.float32)
        self.tensors[name] = Tensor(name, tuple(data.shape), "float32", data=data)
        return name

    def quantize(self, n: FxNode) -> str:
        """The integer tensor a quantize node defines: a model input, the convert of a float op's result, the
        output of the float compute op waiting for it, or a requantization."""
        src, scale, zp, dtype = n.args[0], float(n.args[1]), int(n.args[2]), _q_dtype(n)
        name = f"t{len(self.tensors)}"
        if src.op == "placeholder":
            return self.quantized_input(src, name, dtype, QParams.tensor(scale, zp))
        if src in self.floats:  # a float op's result -> the consumer's integer tensor
            self.tensors[name] = Tensor(name, fx_shape(src), dtype, QParams.tensor(scale, zp))
            self.nodes.append(Node(f"n{len(self.nodes)}_quantize", "quantize", (self.floats[src],), (name,), {},
                                   source_line(src)))
            return name
        if src in self.pending:
            return self.compute(src, name, dtype, QParams.tensor(scale, zp))
        if src.op == "call_function" and src.target in DQ_OPS and src.args[0] in self.value:
            return self.requantize(n, name, dtype, QParams.tensor(scale, zp))
        raise QuantizationError(f"quantize of {src.name} has no producer we can lower")

    def quantized_input(self, src: FxNode, name: str, dtype: str, qp: QParams) -> str:
        """A model input quantized: an integer input, or, when it also feeds a float op, one float32 input and a
        quantize node for the others."""
        if any(u.op == "call_function" and u.target not in Q_OPS for u in src.users):
            self.tensors[name] = Tensor(name, fx_shape(src), dtype, qp)
            self.nodes.append(Node(f"n{len(self.nodes)}_quantize", "quantize", (self.float_input(src),), (name,), {},
                                   source_line(src)))
            return name
        return self.add_input(src, dtype, qp)

    def compute(self, src: FxNode, name: str, dtype: str, qp: QParams) -> str:
        """The IR node of the float compute op whose result (src, after a fused activation if any) is quantized
        into tensor `name`."""
        compute, act = self.pending.pop(src)
        shape_in = self.tensors[self.value[first_arg(compute)]].shape
        op, attrs = op_attrs(compute, shape_in)
        if act is not None:
            attrs = {**attrs, "act": act}
        self.tensors[name] = Tensor(name, fx_shape(src), dtype, qp)
        ins = [self.value.get(a) if isinstance(a, FxNode) else None for a in compute.args
               if isinstance(a, FxNode) or a is None]
        if compute.target in WEIGHTED and len(compute.args) > 2 and isinstance(compute.args[2], FxNode) \
                and compute.args[2].op == "get_attr":
            ins[2] = self.float_const(compute.args[2])  # a16w8: the float bias
        if op in UNARY_IR_OPS:
            ins = ins[:1]
        elif op == "concat":
            ins = [self.value[a] for a in compute.args[0]]
        elif op == "gather":
            ins = [self.value.get(a) or self.floats[a] for a in gather_args(compute)[:2]]
        elif op == "scatter":
            ins = [self.value.get(a) or self.floats[a] for a in scatter_args(compute)[:3]]
        elif op == "layer_norm":
            ins = ins[:1] + [self.float_const(w) for w in (list(compute.args) + [None] * 4)[2:4]]
        elif op == "rms_norm":
            weight = compute.args[2] if len(compute.args) > 2 else compute.kwargs.get("weight")
            ins = ins[:1] + [self.float_const(weight)]
        attrs = {**attrs, "float_node": src.name}  # the float value this output quantizes (mcu debug)
        self.nodes.append(Node(f"n{len(self.nodes)}_{op}", op, tuple(ins), (name,), attrs, source_line(compute)))
        return name

    def requantize(self, n: FxNode, name: str, dtype: str, qp: QParams) -> str:
        """torchao's Q(DQ(x)) between differing qparams: an identity look-up table between int8 tensors, a convert
        where the type changes."""
        x = self.tensors[self.value[n.args[0].args[0]]]
        self.tensors[name] = Tensor(name, x.shape, dtype, qp)
        if x.dtype == dtype == "int8":
            self.nodes.append(Node(f"n{len(self.nodes)}_lut", "lut", (x.name,), (name,),
                                   {"fn": ("clone.default", (...,), ())}, _reader_line(n)))
        else:
            self.nodes.append(Node(f"n{len(self.nodes)}_convert", "convert", (x.name,), (name,), {},
                                   _reader_line(n)))
        return name

    def dequantize(self, n: FxNode) -> str:
        """A dequantize reads its source's tensor; of a frozen integer parameter, it makes that a constant."""
        src, t = n.args[0], n.target
        if src.op != "get_attr":
            return self.value[src]
        data = self.const(src)
        scale = self.const(n.args[1]) if isinstance(n.args[1], FxNode) else np.array([n.args[1]])
        name = f"c{len(self.tensors)}"
        if t == qd.dequantize_per_channel.default:
            zps = self.const(n.args[2])
            qp = QParams(tuple(float(s) for s in scale), tuple(int(z) for z in zps), int(n.args[3]))
        else:
            qp = QParams.tensor(float(n.args[1]), int(n.args[2]))
        dtype = {np.dtype(np.int8): "int8", np.dtype(np.int16): "int16", np.dtype(np.int32): "int32"}[data.dtype]
        self.tensors[name] = Tensor(name, tuple(data.shape), dtype, qp, data=data)
        return name

    def check_params(self, n: FxNode) -> None:
        """Refuse an integer op with a float parameter the quantizer left unquantized (a16w8's float bias and a
        float32-fallback op's parameters excepted)."""
        for i, a in enumerate(n.args):
            if i == 2 and n.target in WEIGHTED:
                continue  # a float bias: a16w8 (int64 in the lowering)
            if isinstance(a, FxNode) and a.op == "get_attr" and n.target not in DQ_OPS | FLOAT_PARAM_OPS:
                if self.const(a).dtype.is_floating_point if hasattr(self.const(a).dtype, "is_floating_point") \
                        else np.issubdtype(self.const(a).dtype, np.floating):
                    raise QuantizationError(
                        f"op '{op_name(n)}' at {source_line(n)} has float parameters that were not "
                        f"quantized; it is not supported by the int8 flow")

    def float_input(self, a: FxNode) -> str:
        """The float32 IR tensor a float op reads for fx node a: a float op's result, a float constant, a float32
        model input, or the dequantize of an integer tensor (made once). An index (int32: an integer model input, or
        a view of one) is read as it is: a gather's indices."""
        if a in self.floats:
            return self.floats[a]
        if a.op == "get_attr":
            return self.float_const(a)
        if a.op == "placeholder" and a not in self.value:  # a float op reads the model's input: a float32 input
            self.value[a] = self.add_input(a, "float32" if a.meta["val"].is_floating_point() else "int32")
            return self.value[a]
        if a.op == "placeholder" and self.tensors[self.value[a]].dtype == "float32":
            return self.value[a]
        src = self.value.get(a)
        if src is None:
            raise QuantizationError(f"input {a.name} of a float32 op is neither quantized nor float")
        if self.tensors[src].dtype == "int32":
            return src
        if src not in self.dequantized:
            self.dequantized[src] = f"t{len(self.tensors)}"
            self.tensors[self.dequantized[src]] = Tensor(self.dequantized[src], self.tensors[src].shape, "float32")
            self.nodes.append(Node(f"n{len(self.nodes)}_dequantize", "dequantize", (src,), (self.dequantized[src],),
                                   {}, source_line(a)))
        return self.dequantized[src]

    def float_op(self, n: FxNode) -> str:
        """One float32 IR node for an op the quantizer left float (as frontend_float builds them)."""
        if n.target in IDENTITY_OPS:
            return self.float_input(n.args[0])
        op, attrs = op_attrs(n, self.tensors[self.float_input(first_arg(n))].shape)
        ins = [None if a is None else self.float_input(a) for a in tensor_args(n, op)]
        names = append_float_node(n, op, attrs, ins, self.tensors, self.nodes)
        if isinstance(n.meta["val"], (tuple, list)):  # several outputs (an LSTM's y and c_n), read by getitems
            self.multi[n] = names
        return names[0]
