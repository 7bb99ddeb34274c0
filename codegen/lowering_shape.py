"""Lowering of data movement, any element type: transpose, reshape (alias), slice, pad, concat, nearest upsample."""
from __future__ import annotations

import numpy as np

from mcu.codegen.errors import LoweringError
from mcu.codegen.ir import Node
from mcu.codegen.lowering import RANGE, Ctx, _dims4, call_node, kernel_name
from mcu.codegen.twins.quant import quantize_multiplier
from mcu.codegen.twins.shape import CONCAT_MAX_INPUTS



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
        calls.append(call_node(step.replace(inputs=(src,)), kernel, transpose_params(shape, perm), (src,)))
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
    return call_node(node, kernel_name("slice", ctx.dtype(node)), params, (x.name,))


def _gather(ctx: Ctx, node: Node) -> Node:
    """Rows of a table (a constant or an activation) picked by run-time int32 indices along attrs["dim"]: mcu_gather
    (embedding, index_select, x[idx]); any element type, the output on the table's qparams."""
    x, idx = ctx.tensors[node.inputs[0]], ctx.tensors[node.inputs[1]]
    d = node.attrs["dim"] % len(x.shape)
    params = {"outer": int(np.prod(x.shape[:d], dtype=np.int64)), "rows": int(x.shape[d]),
              "count": int(np.prod(idx.shape, dtype=np.int64)), "inner": int(np.prod(x.shape[d + 1:], dtype=np.int64))}
    return call_node(node, kernel_name("gather", ctx.dtype(node)), params, (x.name, idx.name))


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
        return call_node(node, kernel_name("slice", dtype), {"outer": 1, "in_len": 1, "out_len": 1, "start": 0,
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
        calls.append(call_node(step.replace(inputs=(src,)), kernel_name("pad", dtype), params, (src,)))
        src = dst
    return calls[0] if len(calls) == 1 else calls


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
    return call_node(node, kernel_name("concat", ctx.dtype(node)), concat_params(ctx.tensors, node), node.inputs)


def _upsample(ctx: Ctx, node: Node) -> Node:
    x = ctx.tensors[node.inputs[0]]
    if len(x.shape) != 4:
        raise LoweringError(f"nearest upsampling of a {len(x.shape)}-d tensor at {node.source}")
    sh, sw = node.attrs["scale"]
    params = {"input": _dims4(x.shape, node.source), "scale_h": int(sh), "scale_w": int(sw)}
    return call_node(node, kernel_name("upsample_nearest", ctx.dtype(node)), params, (x.name,))
