"""Lowering's shared parts: the call node, the constants a builder makes (Ctx), the params' geometry and ranges.

- Lowering is data: each (IR op, element type) maps to a parameter builder that names its C kernel.
  codegen/lowering_s8.py holds INT8, the table, and the compute builders; codegen/lowering_shape.py the
  data-movement builders (transpose, slice, pad, concat, upsample) of every element type;
  codegen/lowering_s16.py (int16 activations) and codegen/lowering_float.py (float32) are INT8's builders
  that hold for every integer type plus their own overrides, and codegen/passes/lower.py is the one pass
  that dispatches on (op, element type).
- A kernel's facts (source, params struct, twin, scratch, variants, aliasing) live in its registry entry,
  codegen/kernels/<family>.py; a lowered node names the kernel only.

A lowered node has op "call" and its `Call` (codegen/ir.py), built here by `call_node`:
- kernel: the C function name (its registry entry: codegen/kernels);
- params: the C parameter struct's field values (a dict the twin takes as is);
- quant: (multiplier tensor, shift tensor) for per-channel kernels, else None.
node.inputs are the kernel's array arguments in C order (None for a NULL pointer), then the output;
node.outputs is the output, then any scratch the kernel takes (codegen/passes/inplace.py), which the C
receives right before the output.
Reshapes stay as op "alias": no code, the planner gives their output the input's storage.
A lowering may return several calls: an op without an integer kernel would run as dequantize -> float32
kernel -> quantize, with float temporaries planned like any tensor and the Call's fallback naming the op on
the float call (emit lists them in manifest["fallbacks"]); no op needs one today (layer norm and RMS norm
have integer kernels, codegen/kernels/norm.py).
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import Call, Graph, Node, QParams, Tensor
from mcu.codegen.kernels import KERNELS
from mcu.codegen.errors import LoweringError
from mcu.codegen.twins.quant import quantize_multipliers


SUFFIX = {"int8": "s8", "int16": "s16", "float32": "f32"}
RANGE = {"int8": (-128, 127), "int16": (-32768, 32767)}


def kernel_name(op: str, dtype: str) -> str:
    """mcu_<op>_<s8|s16|f32>: the portable kernel of `op` for tensors of `dtype`."""
    return f"mcu_{op}_{SUFFIX[dtype]}"


def act_range(qp: QParams, act: tuple[float, float] | None, dtype: str = "int8") -> tuple[int, int]:
    """The clamp [act_min, act_max] of a fused real-valued activation range, inside the output type's range."""
    lo, hi = RANGE[dtype]
    if act is not None:
        if act[0] != float("-inf"):
            lo = max(lo, qp.zp + int(round(act[0] / qp.s)))
        if act[1] != float("inf"):
            hi = min(hi, qp.zp + int(round(act[1] / qp.s)))
    return lo, hi


def _dims(shape) -> tuple[int, int, int, int]:
    """NHWC dims of a 4-d shape; a 2-d [B, K] is (B, 1, 1, K)."""
    if len(shape) == 4:
        return tuple(int(d) for d in shape)
    return (int(np.prod(shape[:-1])), 1, 1, int(shape[-1]))


class Ctx:
    """Collects the constants a lowering creates (multipliers, shifts, tables)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.tensors = dict(graph.tensors)

    def const(self, name: str, data: np.ndarray, dtype: str) -> str:
        self.tensors[name] = Tensor(name, tuple(data.shape), dtype, data=data)
        return name

    def temp(self, name: str, shape, dtype: str) -> str:
        """A new intermediate tensor (planned in the arena)."""
        self.tensors[name] = Tensor(name, tuple(shape), dtype)
        return name

    def per_channel(self, node: Node, reals: np.ndarray) -> tuple[str, str]:
        mult, shift = quantize_multipliers(reals)
        return (self.const(f"{node.name}_mult", mult, "int32"), self.const(f"{node.name}_shift", shift, "int32"))

    def dtype(self, node: Node) -> str:
        """The element type a node computes in: its output's."""
        return self.tensors[node.outputs[0]].dtype

    def bias(self, node: Node, x: Tensor, w: Tensor) -> str | None:
        """The bias input of a conv or linear in its kernel's form: int8's int32 constant as it is; for int16
        activations the float bias (a16w8 leaves it float) as int64 at s_in * s_w[c], rounded half to even
        as torch rounds."""
        bias = node.inputs[2] if len(node.inputs) > 2 else None
        if bias is None or self.dtype(node) != "int16":
            return bias
        b = self.tensors[bias]
        if b.dtype != "float32":
            raise LoweringError(f"an int16 {node.op} at {node.source} has a {b.dtype} bias; a16w8 keeps biases float")
        q = np.round(b.data.astype(np.float64) / (x.qparams.s * np.asarray(w.qparams.scale, np.float64)))
        if np.abs(q).max(initial=0) >= 2.0**62:
            raise LoweringError(f"the bias of {node.op} at {node.source} does not fit int64 at scale s_in * s_w")
        return self.const(f"{node.name}_bias64", q.astype(np.int64), "int64")


def call_node(node: Node, kernel: str, params: dict, inputs, quant=None) -> Node:
    """`node` as a call of C kernel `kernel` (a registry entry) with these params, array inputs and quant."""
    if kernel not in KERNELS:
        raise KeyError(f"{kernel} is not in the kernel registry (codegen/kernels)")
    return node.replace(op="call", inputs=tuple(inputs), attrs={},
                        call=Call(kernel, params, quant, node.attrs.get("float_node")))


def conv_geometry(x, w, out, a: dict) -> dict:
    """The window geometry of a conv's params struct (int8 and float32 alike)."""
    return {"input": _dims(x.shape), "filter": _dims(w.shape), "output": _dims(out.shape),
            "stride_h": a["stride"][0], "stride_w": a["stride"][1], "pad_top": a["padding"][0],
            "pad_left": a["padding"][1], "dilation_h": a["dilation"][0], "dilation_w": a["dilation"][1]}


def pool_geometry(x, out, node: Node) -> dict:
    """The window geometry of a pool's params struct, with the average's divisor (0: the valid taps)."""
    a = node.attrs
    divisor = 0
    if node.op == "avg_pool2d":
        divisor = a["divisor_override"] or (a["kernel"][0] * a["kernel"][1] if a["count_include_pad"] else 0)
    return {"input": _dims(x.shape), "output": _dims(out.shape), "kernel_h": a["kernel"][0],
            "kernel_w": a["kernel"][1], "stride_h": a["stride"][0], "stride_w": a["stride"][1],
            "pad_top": a["padding"][0], "pad_left": a["padding"][1], "divisor": divisor}


def _dims4(shape, source: str) -> tuple[int, int, int, int]:
    """A shape of rank <= 4 as 4 dims, padded with leading 1s (numpy broadcasting alignment)."""
    if len(shape) > 4:
        raise LoweringError(f"a {len(shape)}-d tensor at {source}: the kernels take at most 4 dims")
    return (1,) * (4 - len(shape)) + tuple(int(d) for d in shape)


def matmul_dims(a: Tensor, b: Tensor, node: Node) -> dict:
    """batches, lhs_batches, rhs_batches, m, k, n, rhs_group, rhs_transposed of a matmul's params (int8 and float32
    alike): 1-d operands as torch promotes them; batch dims broadcast only when all 1. attrs["rhs_transposed"]: b is
    stored [.., N, K]; attrs["rhs_group"] = g: b's batch r serves output batches r * g .. r * g + g - 1
    (codegen/passes/fold_matmul_operands.py)."""
    transposed, group = bool(node.attrs.get("rhs_transposed")), int(node.attrs.get("rhs_group", 1))
    sa = (1, *a.shape) if len(a.shape) == 1 else a.shape
    sb = (*b.shape, 1) if len(b.shape) == 1 else b.shape
    if transposed:
        sb = (*sb[:-2], sb[-1], sb[-2])
    if group > 1:
        sb = (sb[0] * group, *sb[1:])
    batch_out = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    batches = int(np.prod(batch_out, dtype=np.int64))
    for name, s in (("first", sa), ("second", sb)):
        full = (1,) * (len(batch_out) - len(s[:-2])) + tuple(s[:-2])
        if int(np.prod(s[:-2], dtype=np.int64)) != 1 and full != batch_out:
            raise LoweringError(f"matmul at {node.source}: the {name} operand's batch dims {tuple(s[:-2])} must "
                                f"equal the result's {batch_out} or be all 1")
    rhs_batches = int(np.prod(sb[:-2], dtype=np.int64))
    if rhs_batches > 1:
        rhs_batches //= group
    return {"batches": batches, "lhs_batches": int(np.prod(sa[:-2], dtype=np.int64)),
            "rhs_batches": rhs_batches, "m": int(sa[-2]), "k": int(sa[-1]), "n": int(sb[-1]),
            "rhs_group": group if rhs_batches > 1 else 1, "rhs_transposed": int(transposed)}


def f32(v: float) -> float:
    """v rounded to float32 (the C parameter's value), as a Python float."""
    return float(np.float32(v))


# Entry into and exit from float32, per integer type: mixed precision (mixed=) and any float fallback.
FLOAT_CONVERTS = {"int8": ("mcu_dequantize_s8_f32", "mcu_quantize_f32_s8"),
                  "int16": ("mcu_dequantize_s16_f32", "mcu_quantize_f32_s16")}


def dequantize_call(node: Node, x: Tensor) -> Node:
    """`node` (its output the float32 tensor) as the dequantize of integer tensor x."""
    params = {"size": int(np.prod(x.shape)), "scale": f32(x.qparams.s), "zero_point": x.qparams.zp}
    return call_node(node, FLOAT_CONVERTS[x.dtype][0], params, (x.name,))


def quantize_call(node: Node, src: str, out: Tensor) -> Node:
    """`node` (its output the integer tensor out) as the quantize of float32 tensor src."""
    params = {"size": int(np.prod(out.shape)), "inv_scale": f32(1.0 / out.qparams.s), "zero_point": out.qparams.zp}
    return call_node(node, FLOAT_CONVERTS[out.dtype][1], params, (src,))
