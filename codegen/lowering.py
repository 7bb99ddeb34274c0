"""Lowering is data: each (IR op, element type) maps to a parameter builder that names its C kernel.

- INT8 below is the table; codegen/lowering_s16.py (int16 activations) and codegen/lowering_float.py
  (float32) are INT8's builders that hold for every integer type plus their own overrides, and
  codegen/passes/lower.py is the one pass that dispatches on (op, element type). The builders here that
  serve int8 and int16 alike name their kernel by the element type (`kernel_name`) and clamp to its range.
- A kernel's facts (source, params struct, twin, scratch, variants, aliasing) live in its registry entry,
  codegen/kernels/<family>.py; a lowered node names the kernel only.

A lowered node has op "call" and attrs:
- kernel: the C function name (its registry entry: codegen/kernels);
- params: the C parameter struct's field values (a dict the twin takes as is);
- quant: (multiplier tensor, shift tensor) for per-channel kernels, else None.
node.inputs are the kernel's array arguments in C order (None for a NULL pointer), then the output;
node.outputs is the output, then any scratch the kernel takes (codegen/passes/inplace.py), which the C
receives right before the output.
Reshapes stay as op "alias": no code, the planner gives their output the input's storage.
A lowering may return several calls: an op without an int8 kernel (layer norm) runs as dequantize ->
float32 kernel -> quantize, with float temporaries planned like any tensor and attrs["fallback"] naming
the op on the float call (emit lists them in manifest["fallbacks"]).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from mcu.codegen.ir import Graph, Node, QParams, Tensor
from mcu.codegen.kernels import KERNELS
from mcu.codegen.twins.activation import lut_table, softmax_exp_table, unary_function
from mcu.codegen.errors import LoweringError
from mcu.codegen.twins.quant import quantize_multiplier, quantize_multipliers
from mcu.codegen.twins.shape import CONCAT_MAX_INPUTS


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
    return node.replace(op="call", inputs=tuple(inputs), attrs={
        "kernel": kernel, "params": params, "quant": quant, "float_node": node.attrs.get("float_node")})


_call = call_node


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


def _axis_runs(shape, perm) -> list[list[int]]:
    """The output's axes (as input axes, size-1 axes dropped) in runs that stay adjacent and in order."""
    runs: list[list[int]] = []
    for d in (d for d in perm if shape[d] != 1):
        if runs and runs[-1][-1] + 1 == d and all(shape[i] == 1 for i in range(runs[-1][-1] + 1, d)):
            runs[-1].append(d)
        else:
            runs.append([d])
    return runs


def transpose_steps(shape, perm) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """A transpose as [(input shape, perm)] steps of at most 4 axis groups each: the whole one when it has 4
    or fewer, else one move per axis brought to its place (a move is at most 4 groups: before, the axis, the
    block it jumps, after)."""
    shape, perm = tuple(int(d) for d in shape), tuple(int(p) for p in perm)
    if len(_axis_runs(shape, perm)) <= 4:
        return [(shape, perm)]
    steps, order = [], list(range(len(perm)))  # order[i]: the original axis now at position i
    for i, want in enumerate(perm):
        j = order.index(want)
        if j != i:
            step = tuple(range(i)) + (j,) + tuple(range(i, j)) + tuple(range(j + 1, len(perm)))
            steps.append((shape, step))
            shape = tuple(shape[k] for k in step)
            order = [order[k] for k in step]
    return steps


def transpose_params(shape, perm) -> dict:
    """A transpose of any rank as the 4-d one the kernels take: size-1 dims dropped, input axes that stay
    adjacent and in order in the output merged (a channel shuffle's 5-d [N, G, C/G, H, W] -> [N, C/G, G, H, W]
    is the 4-d [N, G, C/G, H*W] -> [N, C/G, G, H*W]), leading 1s added."""
    runs = _axis_runs(shape, perm)
    runs_in = sorted(runs, key=lambda r: r[0])
    dims = [int(np.prod([shape[d] for d in r])) for r in runs_in]
    out_perm = [runs_in.index(r) for r in runs]
    if len(dims) > 4:
        raise LoweringError(f"a transpose of {len(shape)}-d {tuple(shape)} by {tuple(perm)} moves {len(dims)} "
                            f"groups of axes; the kernels move at most 4 (reshape it to fewer dims first)")
    pad = 4 - len(dims)
    return {"in_dims": (1,) * pad + tuple(dims), "perm": tuple(range(pad)) + tuple(p + pad for p in out_perm)}


def _conv(ctx: Ctx, node: Node) -> Node:
    """int8 and int16: the int16 conv takes any groups; int8 has its own grouped kernel."""
    t, dtype = ctx.tensors, ctx.dtype(node)
    x, w, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    reals = x.qparams.s * np.asarray(w.qparams.scale, dtype=np.float64) / out.qparams.s
    params = {**conv_geometry(x, w, out, node.attrs), "input_offset": -x.qparams.zp,
              "output_offset": out.qparams.zp, "act_min": lo, "act_max": hi}
    op = "dwconv2d" if node.op == "depthwise_conv2d" else "conv2d"
    if op == "conv2d" and node.attrs.get("groups", 1) > 1 and dtype == "int8":
        op = "conv2d_grouped"
    return _call(node, kernel_name(op, dtype), params, (x.name, w.name, ctx.bias(node, x, w)),
                 ctx.per_channel(node, reals))


def _linear(ctx: Ctx, node: Node) -> Node:
    t, dtype = ctx.tensors, ctx.dtype(node)
    x, w, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    reals = x.qparams.s * np.asarray(w.qparams.scale, dtype=np.float64) / out.qparams.s
    params = {"batches": int(np.prod(x.shape[:-1])), "in_features": int(x.shape[-1]),
              "out_features": int(w.shape[0]), "input_offset": -x.qparams.zp, "output_offset": out.qparams.zp,
              "act_min": lo, "act_max": hi}
    return _call(node, kernel_name("fully_connected", dtype), params, (x.name, w.name, ctx.bias(node, x, w)),
                 ctx.per_channel(node, reals))


def _pool(ctx: Ctx, node: Node) -> Node:
    t, dtype = ctx.tensors, ctx.dtype(node)
    x, out = t[node.inputs[0]], t[node.outputs[0]]
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    params = {**pool_geometry(x, out, node), "zero_point": x.qparams.zp, "act_min": lo, "act_max": hi}
    kernel = kernel_name("maxpool2d" if node.op == "max_pool2d" else "avgpool2d", dtype)
    return _call(node, kernel, params, (x.name,))


ADD_LEFT_SHIFT = {"int8": 20, "int16": 15}  # int16 inputs << 15 keep 16 bits of headroom (TFLite's 16x8 add)


def _add(ctx: Ctx, node: Node) -> Node:
    """Same shapes: mcu_add (TFLite's add encoding); int8 broadcasts and subtracts through _add_broadcast."""
    t, dtype = ctx.tensors, ctx.dtype(node)
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    if a.shape != b.shape or node.op == "sub":
        if dtype == "int8":
            return _add_broadcast(ctx, node)
        raise LoweringError(f"an int16 {node.op} of {list(a.shape)} and {list(b.shape)} at {node.source}: a16w8 "
                            f"adds tensors of one shape (no broadcasting or subtraction yet); keep this op int8 "
                            f"with mixed=")
    left_shift = ADD_LEFT_SHIFT[dtype]
    twice_max = 2 * max(a.qparams.s, b.qparams.s)
    m1, s1 = quantize_multiplier(a.qparams.s / twice_max)
    m2, s2 = quantize_multiplier(b.qparams.s / twice_max)
    mo, so = quantize_multiplier(twice_max / ((1 << left_shift) * out.qparams.s))
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    params = {"size": int(np.prod(a.shape)), "left_shift": left_shift,
              "input1_offset": -a.qparams.zp, "input1_multiplier": m1, "input1_shift": s1,
              "input2_offset": -b.qparams.zp, "input2_multiplier": m2, "input2_shift": s2,
              "output_offset": out.qparams.zp, "output_multiplier": mo, "output_shift": so,
              "act_min": lo, "act_max": hi}
    return _call(node, kernel_name("add", dtype), params, (a.name, b.name))


def _softmax(ctx: Ctx, node: Node) -> Node:
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    if node.attrs["dim"] != len(x.shape) - 1:
        raise LoweringError(f"softmax over dim {node.attrs['dim']} at {node.source}: only the last dim "
                            f"is supported")
    table = ctx.const(f"{node.name}_exp", softmax_exp_table(x.qparams.s), "uint16")
    params = {"rows": int(np.prod(x.shape[:-1])), "cols": int(x.shape[-1])}
    return _call(node, "mcu_softmax_s8", params, (table, x.name))


def _transpose(ctx: Ctx, node: Node) -> Node | list[Node]:
    """One mcu_transpose call, or a chain of them when the permutation moves more than 4 groups of axes (a
    pixel shuffle's 6-d view)."""
    x = ctx.tensors[node.inputs[0]]
    kernel = kernel_name("transpose", ctx.dtype(node))
    steps = transpose_steps(x.shape, node.attrs["perm"])
    calls, src = [], x.name
    for i, (shape, perm) in enumerate(steps):
        last = i == len(steps) - 1
        out = node.outputs[0] if last else ctx.temp(f"{node.name}_step{i}", [shape[p] for p in perm], x.dtype)
        if not last:
            ctx.tensors[out] = x.replace(name=out, shape=tuple(shape[p] for p in perm))
        step = node if last else node.replace(name=f"{node.name}_step{i}", outputs=(out,))
        calls.append(_call(step.replace(inputs=(src,)), kernel, transpose_params(shape, perm), (src,)))
        src = out
    return calls[0] if len(calls) == 1 else calls


def _alias(ctx: Ctx, node: Node) -> Node:
    return node.replace(op="alias")


def _slice(ctx: Ctx, node: Node) -> Node:
    """Keep indices start, start + step, ... of one dim (any rank, any element type): mcu_slice."""
    x, out, a = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]], node.attrs
    d = a["dim"]
    shape_in, shape_out = x.shape or (1,), out.shape or (1,)  # a 0-d tensor's copy: one element
    params = {"outer": int(np.prod(shape_in[:d], dtype=np.int64)), "in_len": int(shape_in[d]),
              "out_len": int(shape_out[d]), "start": int(a["start"]), "step": int(a["step"]),
              "inner": int(np.prod(shape_in[d + 1:], dtype=np.int64))}
    return _call(node, kernel_name("slice", ctx.dtype(node)), params, (x.name,))


def pad_widths(rank: int, pads) -> list[tuple[int, int]]:
    """(before, after) per dim from F.pad's list (last dim first: left, right, top, bottom, ...)."""
    widths = [(0, 0)] * rank
    for i in range(len(pads) // 2):
        widths[rank - 1 - i] = (int(pads[2 * i]), int(pads[2 * i + 1]))
    return widths


def _pad(ctx: Ctx, node: Node) -> Node | list[Node]:
    """A constant pad that no conv absorbed: one mcu_pad call per padded dim, chained through temporaries
    (the value quantized with the output's qparams in int8/int16)."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    dtype = ctx.dtype(node)
    widths = node.attrs.get("widths") or pad_widths(len(x.shape), node.attrs["pads"])
    if any(b < 0 or a < 0 for b, a in widths):
        raise LoweringError(f"pad at {node.source} crops (negative pads {node.attrs.get('pads')}); slice instead")
    value = float(node.attrs.get("value", 0.0))
    qvalue = 0
    if dtype in RANGE:
        qp = out.qparams
        qvalue = int(np.clip(np.round(value / qp.scale[0]) + qp.zp, *RANGE[dtype]))
    steps = [(d, b, a) for d, (b, a) in enumerate(widths) if b or a]
    if not steps:
        return _call(node, kernel_name("slice", dtype), {"outer": 1, "in_len": 1, "out_len": 1, "start": 0,
                                                          "step": 1, "inner": int(np.prod(x.shape or (1,)))},
                     (x.name,))
    calls, src, shape = [], x.name, list(x.shape)
    for i, (d, before, after) in enumerate(steps):
        params = {"outer": int(np.prod(shape[:d], dtype=np.int64)), "in_len": int(shape[d]), "before": before,
                  "after": after, "inner": int(np.prod(shape[d + 1:], dtype=np.int64)), "value": qvalue,
                  "value_f32": value}
        shape[d] += before + after
        last = i == len(steps) - 1
        dst = node.outputs[0] if last else f"{node.name}_step{i}"
        if not last:
            ctx.tensors[dst] = x.replace(name=dst, shape=tuple(shape))
        step = node if last else node.replace(name=f"{node.name}_step{i}", outputs=(dst,))
        calls.append(_call(step.replace(inputs=(src,)), kernel_name("pad", dtype), params, (src,)))
        src = dst
    return calls[0] if len(calls) == 1 else calls


# ---- op breadth ---------------------------------------------------------------------------------------------

def _dims4(shape, source: str) -> tuple[int, int, int, int]:
    """A shape of rank <= 4 as 4 dims, padded with leading 1s (numpy broadcasting alignment)."""
    if len(shape) > 4:
        raise LoweringError(f"a {len(shape)}-d tensor at {source}: the kernels take at most 4 dims")
    return (1,) * (4 - len(shape)) + tuple(int(d) for d in shape)


def _add_broadcast(ctx: Ctx, node: Node) -> Node:
    t = ctx.tensors
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    left_shift = 20
    twice_max = 2 * max(a.qparams.s, b.qparams.s)
    m1, s1 = quantize_multiplier(a.qparams.s / twice_max)
    m2, s2 = quantize_multiplier(b.qparams.s / twice_max)
    mo, so = quantize_multiplier(twice_max / ((1 << left_shift) * out.qparams.s))
    lo, hi = act_range(out.qparams, node.attrs.get("act"))
    params = {"input1": _dims4(a.shape, node.source), "input2": _dims4(b.shape, node.source),
              "output": _dims4(out.shape, node.source), "subtract": int(node.op == "sub"), "left_shift": left_shift,
              "input1_offset": -a.qparams.zp, "input1_multiplier": m1, "input1_shift": s1,
              "input2_offset": -b.qparams.zp, "input2_multiplier": m2, "input2_shift": s2,
              "output_offset": out.qparams.zp, "output_multiplier": mo, "output_shift": so,
              "act_min": lo, "act_max": hi}
    return _call(node, "mcu_add_broadcast_s8", params, (a.name, b.name))


def _mul(ctx: Ctx, node: Node) -> Node:
    """Broadcasting product, int8 or int16 (a squeeze-excite gate x * gate)."""
    t, dtype = ctx.tensors, ctx.dtype(node)
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    mult, shift = quantize_multiplier(a.qparams.s * b.qparams.s / out.qparams.s)
    lo, hi = act_range(out.qparams, node.attrs.get("act"), dtype)
    params = {"input1": _dims4(a.shape, node.source), "input2": _dims4(b.shape, node.source),
              "output": _dims4(out.shape, node.source), "input1_offset": -a.qparams.zp,
              "input2_offset": -b.qparams.zp, "output_offset": out.qparams.zp, "output_multiplier": mult,
              "output_shift": shift, "act_min": lo, "act_max": hi}
    return _call(node, kernel_name("mul", dtype), params, (a.name, b.name))


def _lut(ctx: Ctx, node: Node) -> Node:
    """Any int8 -> int8 elementwise function: the table is torch's Q/DQ result for each of the 256 inputs."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    if node.op == "clamp":
        lo_r, hi_r = node.attrs["act"]
        bounds = [None if abs(v) == float("inf") else v for v in (lo_r, hi_r)]
        fn = unary_function(("clamp.default", (..., *bounds), ()))
    else:
        fn = unary_function(node.attrs["fn"])
    table = lut_table(fn, x.qparams.s, x.qparams.zp, out.qparams.s, out.qparams.zp)
    lo, hi = act_range(out.qparams, node.attrs.get("act"))
    table = ctx.const(f"{node.name}_table", np.clip(table, lo, hi).astype(np.int8), "int8")
    return _call(node, "mcu_lut_s8", {"size": int(np.prod(x.shape))}, (table, x.name))


def _requant(s_in: float, zp_in: int, s_out: float, zp_out: int) -> tuple[int, int, int]:
    """(input_offset, multiplier, shift) of one concat input; equal qparams give the exact copy encoding."""
    if s_in == s_out and zp_in == zp_out:
        return -zp_in, 1 << 30, 1
    mult, shift = quantize_multiplier(s_in / s_out)
    return -zp_in, mult, shift


def concat_params(tensors: dict, node: Node) -> dict:
    """mcu_concat_params_t of a concat node (int8 and int16 alike): rows of `outer`, each input's slice size and
    its requantization onto the output."""
    ins, out, dim = [tensors[i] for i in node.inputs], tensors[node.outputs[0]], node.attrs["dim"]
    if len(ins) > CONCAT_MAX_INPUTS:
        raise LoweringError(f"concat of {len(ins)} inputs at {node.source} was not split (decompose pass)")
    quant = [_requant(x.qparams.s, x.qparams.zp, out.qparams.s, out.qparams.zp) for x in ins]
    return {"num_inputs": len(ins), "outer": int(np.prod(out.shape[:dim], dtype=np.int64)),
            "sizes": tuple(int(np.prod(x.shape[dim:], dtype=np.int64)) for x in ins),
            "input_offset": tuple(q[0] for q in quant), "multiplier": tuple(q[1] for q in quant),
            "shift": tuple(q[2] for q in quant), "output_offset": out.qparams.zp}


def _concat(ctx: Ctx, node: Node) -> Node:
    return _call(node, kernel_name("concat", ctx.dtype(node)), concat_params(ctx.tensors, node), node.inputs)


def _upsample(ctx: Ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    if len(x.shape) != 4:
        raise LoweringError(f"nearest upsampling of a {len(x.shape)}-d tensor at {node.source}")
    sh, sw = node.attrs["scale"]
    return _call(node, kernel_name("upsample_nearest", ctx.dtype(node)), {"input": _dims4(x.shape, node.source), "scale_h": int(sh),
                                                   "scale_w": int(sw)}, (x.name,))


def _reduce(ctx: Ctx, node: Node) -> Node:
    """mean / sum over any dims: one sum kernel whose multiplier carries the scales (and 1 / count)."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    dims_in = _dims4(x.shape, node.source)
    pad = 4 - len(x.shape)
    axes = {d + pad for d in node.attrs["dims"]}
    dims_out = tuple(1 if i in axes else d for i, d in enumerate(dims_in))
    count = int(np.prod([dims_in[i] for i in axes], dtype=np.int64))
    real = x.qparams.s / out.qparams.s / (count if node.op == "mean" else 1)
    mult, shift = quantize_multiplier(real)
    params = {"input": dims_in, "output": dims_out, "input_offset": -x.qparams.zp,
              "output_offset": out.qparams.zp, "multiplier": mult, "shift": shift}
    return _call(node, "mcu_reduce_sum_s8", params, (x.name,))


def matmul_dims(a: Tensor, b: Tensor, node: Node) -> dict:
    """batches, lhs_batches, rhs_batches, m, k, n of a matmul's params (int8 and float32 alike): 1-d operands
    as torch promotes them; batch dims broadcast only when all 1."""
    sa = (1, *a.shape) if len(a.shape) == 1 else a.shape
    sb = (*b.shape, 1) if len(b.shape) == 1 else b.shape
    batch_out = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    batches = int(np.prod(batch_out, dtype=np.int64))
    for name, s in (("first", sa), ("second", sb)):
        full = (1,) * (len(batch_out) - len(s[:-2])) + tuple(s[:-2])
        if int(np.prod(s[:-2], dtype=np.int64)) != 1 and full != batch_out:
            raise LoweringError(f"matmul at {node.source}: the {name} operand's batch dims {tuple(s[:-2])} must "
                                f"equal the result's {batch_out} or be all 1")
    return {"batches": batches, "lhs_batches": int(np.prod(sa[:-2], dtype=np.int64)),
            "rhs_batches": int(np.prod(sb[:-2], dtype=np.int64)), "m": int(sa[-2]), "k": int(sa[-1]), "n": int(sb[-1])}


def _matmul(ctx: Ctx, node: Node) -> Node:
    t = ctx.tensors
    a, b, out = t[node.inputs[0]], t[node.inputs[1]], t[node.outputs[0]]
    mult, shift = quantize_multiplier(a.qparams.s * b.qparams.s / out.qparams.s)
    lo, hi = act_range(out.qparams, node.attrs.get("act"))
    params = {**matmul_dims(a, b, node), "lhs_offset": -a.qparams.zp, "rhs_offset": -b.qparams.zp,
              "output_offset": out.qparams.zp, "output_multiplier": mult, "output_shift": shift,
              "act_min": lo, "act_max": hi}
    return _call(node, "mcu_matmul_s8", params, (a.name, b.name))


def f32(v: float) -> float:
    """v rounded to float32 (the C parameter's value), as a Python float."""
    return float(np.float32(v))


# Entry into and exit from float32, per integer type: fallbacks (layer norm) and mixed precision (mixed=).
FLOAT_CONVERTS = {"int8": ("mcu_dequantize_s8_f32", "mcu_quantize_f32_s8"),
                  "int16": ("mcu_dequantize_s16_f32", "mcu_quantize_f32_s16")}


def dequantize_call(node: Node, x: Tensor) -> Node:
    """`node` (its output the float32 tensor) as the dequantize of integer tensor x."""
    params = {"size": int(np.prod(x.shape)), "scale": f32(x.qparams.s), "zero_point": x.qparams.zp}
    return _call(node, FLOAT_CONVERTS[x.dtype][0], params, (x.name,))


def quantize_call(node: Node, src: str, out: Tensor) -> Node:
    """`node` (its output the integer tensor out) as the quantize of float32 tensor src."""
    params = {"size": int(np.prod(out.shape)), "inv_scale": f32(1.0 / out.qparams.s), "zero_point": out.qparams.zp}
    return _call(node, FLOAT_CONVERTS[out.dtype][1], params, (src,))


def layer_norm(ctx: Ctx, node: Node) -> list[Node]:
    """Float fallback (int8 and int16 alike): dequantize -> mcu_layer_norm_f32 -> quantize."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    size = int(np.prod(x.shape))
    cols = int(np.prod(x.shape[len(x.shape) - node.attrs["normalized"]:]))
    xf = ctx.temp(f"{node.name}_in_f32", x.shape, "float32")
    yf = ctx.temp(f"{node.name}_out_f32", x.shape, "float32")
    dq = dequantize_call(node.replace(name=f"{node.name}_dequantize", outputs=(xf,)), x)
    ln = _call(node.replace(outputs=(yf,)), "mcu_layer_norm_f32",
               {"rows": size // cols, "cols": cols, "eps": f32(node.attrs["eps"])}, (xf, *node.inputs[1:3]))
    q = quantize_call(node.replace(name=f"{node.name}_quantize"), yf, out)
    return [dq, ln.replace(attrs={**ln.attrs, "fallback": "layer_norm"}), q]


# op -> builder, for int8 activations; INTEGER: those that serve int16 as they are (codegen/lowering_s16.py)
INT8: dict[str, Callable[[Ctx, Node], Node | list[Node]]] = {
    "conv2d": _conv, "depthwise_conv2d": _conv, "linear": _linear,
    "max_pool2d": _pool, "avg_pool2d": _pool, "add": _add, "softmax": _softmax,
    "transpose": _transpose, "reshape": _alias, "slice": _slice, "pad": _pad,
    "sub": _add, "mul": _mul, "lut": _lut, "clamp": _lut, "concat": _concat, "upsample_nearest": _upsample,
    "mean": _reduce, "sum": _reduce, "matmul": _matmul, "layer_norm": layer_norm,
}
INTEGER = ("conv2d", "depthwise_conv2d", "linear", "max_pool2d", "avg_pool2d", "add", "mul", "transpose",
           "reshape", "slice", "concat", "layer_norm", "pad")
