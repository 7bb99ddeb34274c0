"""Numpy twins of runtime_c/kernels/float: the float32 kernels of quantize="none", with the C's arithmetic.

- Every operation is float32 and in the C's order, so host numpy and a Cortex-M (FPU or soft float) round
  identically: a sum is accumulated from 0.0 one term at a time in the kernel's order, vectorized across
  output elements only (never numpy's pairwise sum), and nothing is fused into a multiply-add.
- Taps outside the input read 0.0 here where the C skips them: adding +-0.0 leaves a float sum's value as
  it is, so the results compare equal.
- The scalar math (exp, log, sqrt, ...) is codegen/twins/fmath.py.
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.twins.fc import _matmul_rhs
from mcu.codegen.twins.fmath import (F32, acos_f32, asin_f32, atan_f32, ceil_f32, erf_f32, exp_f32, floor_f32,
                                    log_f32, rint_f32, sincos_f32, sqrt_f32, tanh_f32, trunc_f32)


def _dims_ok(*dims) -> None:
    for d in dims:
        if len(d) != 4 or min(d) < 1:
            raise ValueError(f"dims must be 4 positive ints, got {d}")


def _act(p: dict, v: np.ndarray) -> np.ndarray:
    lo, hi = F32(p["act_min"]), F32(p["act_max"])
    if not lo <= hi:
        raise ValueError(f"bad activation range [{lo}, {hi}]")
    v = np.where(v < lo, lo, v)
    return np.where(v > hi, hi, v).astype(F32)


def _padded(x: np.ndarray, dims, pad_top: int, pad_left: int, rows: int, cols: int) -> np.ndarray:
    """x [N, H, W, C] inside zeros of at least [N, rows, cols, C], its corner at (pad_top, pad_left)."""
    n, h, w, c = dims
    out = np.zeros((n, max(rows, pad_top + h), max(cols, pad_left + w), c), F32)
    out[:, pad_top:pad_top + h, pad_left:pad_left + w, :] = np.asarray(x, F32).reshape(n, h, w, c)
    return out


def _taps(p: dict, x: np.ndarray, kh: int, kw: int):
    """Yield (ky, kx, view [N, H_out, W_out, C]) of the zero-padded input at each tap, ky then kx."""
    _, oh, ow, _ = p["output"]
    sh, sw, dh, dw = p["stride_h"], p["stride_w"], p.get("dilation_h", 1), p.get("dilation_w", 1)
    xp = _padded(x, p["input"], p["pad_top"], p["pad_left"], (oh - 1) * sh + (kh - 1) * dh + 1,
                 (ow - 1) * sw + (kw - 1) * dw + 1)
    for ky in range(kh):
        for kx in range(kw):
            yield ky, kx, xp[:, ky * dh:ky * dh + (oh - 1) * sh + 1:sh, kx * dw:kx * dw + (ow - 1) * sw + 1:sw, :]


def _conv_check(p: dict) -> None:
    _dims_ok(p["input"], p["filter"], p["output"])
    if min(p["stride_h"], p["stride_w"], p["dilation_h"], p["dilation_w"]) < 1 or min(p["pad_top"], p["pad_left"]) < 0:
        raise ValueError("strides and dilations must be >= 1, pads >= 0")


def _finish(p: dict, acc: np.ndarray, bias) -> np.ndarray:
    if bias is not None:
        acc = acc + np.asarray(bias, F32).reshape(-1)
    return _act(p, acc)


def conv2d_f32(params: dict, input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_conv2d_f32 (regular or grouped); returns float32 of shape params["output"]."""
    p = params
    _conv_check(p)
    (n, _, _, c_in), (c_out, kh, kw, c_group), out = p["input"], p["filter"], p["output"]
    if out[0] != n or out[3] != c_out or c_in % c_group or c_out % (c_in // c_group):
        raise ValueError(f"conv dims disagree: {p['input']} {p['filter']} {p['output']}")
    w = np.asarray(filter, F32).reshape(c_out, kh, kw, c_group)
    groups = c_in // c_group
    first = (np.arange(c_out) // (c_out // groups)) * c_group  # each output channel's first input channel
    acc = np.zeros(tuple(out), F32)
    for ky, kx, win in _taps(p, input, kh, kw):
        for ci in range(c_group):
            x = win[..., ci:ci + 1] if groups == 1 else win[..., first + ci]
            acc = acc + x * w[:, ky, kx, ci]
    return _finish(p, acc, bias)


def dwconv2d_f32(params: dict, input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_dwconv2d_f32; returns float32 of shape params["output"]."""
    p = params
    _conv_check(p)
    (n, _, _, c_in), (one, kh, kw, c_out), out = p["input"], p["filter"], p["output"]
    if out[0] != n or one != 1 or out[3] != c_out or c_out % c_in:
        raise ValueError(f"depthwise dims disagree: {p['input']} {p['filter']} {p['output']}")
    w = np.asarray(filter, F32).reshape(kh, kw, c_out)
    src = np.arange(c_out) // (c_out // c_in)
    acc = np.zeros(tuple(out), F32)
    for ky, kx, win in _taps(p, input, kh, kw):
        acc = acc + win[..., src] * w[ky, kx]
    return _finish(p, acc, bias)


def fully_connected_f32(params: dict, input: np.ndarray, weights: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """Twin of mcu_fully_connected_f32; returns float32 [batches, out_features]."""
    b, k, n = params["batches"], params["in_features"], params["out_features"]
    if min(b, k, n) < 1:
        raise ValueError(f"batches, in_features, out_features must be >= 1: {b}, {k}, {n}")
    x = np.asarray(input, F32).reshape(b, k)
    w = np.asarray(weights, F32).reshape(n, k)
    acc = np.zeros((b, n), F32)
    for i in range(k):
        acc = acc + x[:, i:i + 1] * w[:, i]
    return _finish(params, acc, bias)


def _pool_check(p: dict) -> None:
    _dims_ok(p["input"], p["output"])
    if min(p["kernel_h"], p["kernel_w"], p["stride_h"], p["stride_w"]) < 1 or min(p["pad_top"], p["pad_left"]) < 0 \
            or p["divisor"] < 0:
        raise ValueError("kernel and stride must be >= 1, pads and divisor >= 0")
    (n, h, w, c), (on, oh, ow, oc) = p["input"], p["output"]
    if on != n or oc != c:
        raise ValueError(f"pool dims disagree: input {p['input']} output {p['output']}")
    if (p["pad_top"] >= p["kernel_h"] or p["pad_left"] >= p["kernel_w"]
            or (oh - 1) * p["stride_h"] - p["pad_top"] >= h or (ow - 1) * p["stride_w"] - p["pad_left"] >= w):
        raise ValueError("a pooling window lies entirely in the padding")


def _valid(p: dict) -> np.ndarray:
    """1.0 where a tap is inside the input, per (ky, kx): [KH, KW, H_out, W_out, 1]."""
    _, h, w, _ = p["input"]
    ones = {**p, "input": (1, h, w, 1), "output": (1, *p["output"][1:3], 1)}
    taps = {(ky, kx): v[0] for ky, kx, v in _taps(ones, np.ones((1, h, w, 1), F32), p["kernel_h"], p["kernel_w"])}
    return np.array([[taps[ky, kx] for kx in range(p["kernel_w"])] for ky in range(p["kernel_h"])])


def maxpool2d_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_maxpool2d_f32; returns float32 of shape params["output"]."""
    p = params
    _pool_check(p)
    valid = _valid(p)
    best = np.full(tuple(p["output"]), -np.inf, F32)
    for ky, kx, win in _taps(p, input, p["kernel_h"], p["kernel_w"]):
        best = np.where((valid[ky, kx] > 0) & (win > best), win, best)
    return _act(p, best)


def avgpool2d_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_avgpool2d_f32; returns float32 of shape params["output"]."""
    p = params
    _pool_check(p)
    acc = np.zeros(tuple(p["output"]), F32)
    for _, _, win in _taps(p, input, p["kernel_h"], p["kernel_w"]):
        acc = acc + win
    d = F32(p["divisor"]) if p["divisor"] > 0 else _valid(p).sum(axis=(0, 1)).astype(F32)
    return _act(p, acc / d)


def _operands(p: dict, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _dims_ok(p["input1"], p["input2"], p["output"])
    for d in (p["input1"], p["input2"]):
        if any(i not in (o, 1) for i, o in zip(d, p["output"])):
            raise ValueError(f"dims {d} do not broadcast to {p['output']}")
    return np.asarray(a, F32).reshape(p["input1"]), np.asarray(b, F32).reshape(p["input2"])


def add_f32(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_add_f32 (add, or subtract when params["subtract"])."""
    if params["subtract"] not in (0, 1):
        raise ValueError(f"subtract must be 0 or 1, got {params['subtract']}")
    a, b = _operands(params, input1, input2)
    v = a - b if params["subtract"] else a + b
    return _act(params, np.broadcast_to(v, tuple(params["output"])))


def mul_f32(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_mul_f32."""
    a, b = _operands(params, input1, input2)
    return _act(params, np.broadcast_to(a * b, tuple(params["output"])))


def clamp_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_clamp_f32."""
    x = np.asarray(input, F32)
    if params["size"] < 1 or x.size != params["size"]:
        raise ValueError(f"input must hold size = {params['size']} >= 1 values, got {x.size}")
    return _act(params, x)


def transpose_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_transpose_f32."""
    dims, perm = tuple(params["in_dims"]), tuple(params["perm"])
    if len(dims) != 4 or min(dims) < 1 or sorted(perm) != [0, 1, 2, 3]:
        raise ValueError(f"in_dims must be 4 positive ints and perm a permutation of 0..3, got {dims}, {perm}")
    return np.ascontiguousarray(np.asarray(input, F32).reshape(dims).transpose(perm))


REDUCE_OPS = {"sum": 0, "max": 1, "min": 2, "prod": 3}  # MCU_REDUCE_* in mcu_kernels.h


def reduce_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_reduce_f32: the box of each output element summed (or maxed, minned, multiplied) in row-major
    order; a sum then divided."""
    dims, out = tuple(params["input"]), tuple(params["output"])
    _dims_ok(dims, out)
    if any(o not in (d, 1) for d, o in zip(dims, out)) or not params["divisor"] > 0:
        raise ValueError(f"output dims {out} must equal the input's {dims} or be 1; divisor > 0")
    axes = [i for i, (d, o) in enumerate(zip(dims, out)) if o != d]
    x = np.asarray(input, F32).reshape(dims)
    kept = tuple(d for i, d in enumerate(dims) if i not in axes)
    box = np.moveaxis(x, axes, list(range(4 - len(axes), 4))).reshape(*kept, -1)
    op = int(params.get("op", 0))
    if op == REDUCE_OPS["sum"]:
        acc = np.zeros(box.shape[:-1], F32)
        for i in range(box.shape[-1]):
            acc = acc + box[..., i]
        return (acc / F32(params["divisor"])).reshape(out)
    if op == REDUCE_OPS["prod"]:
        acc = np.ones(box.shape[:-1], F32)
        for i in range(box.shape[-1]):
            acc = acc * box[..., i]
        return acc.reshape(out)
    if op not in (REDUCE_OPS["max"], REDUCE_OPS["min"]):
        raise ValueError(f"reduce op {op} is not one of {REDUCE_OPS}")
    with np.errstate(invalid="ignore"):
        acc = (np.max if op == REDUCE_OPS["max"] else np.min)(box, axis=-1)  # NaN propagates, as in C
    return acc.astype(F32).reshape(out)


def softmax_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_softmax_f32 (rows x cols)."""
    rows, cols = params["rows"], params["cols"]
    x = np.asarray(input, F32)
    if rows < 1 or cols < 1 or x.size != rows * cols:
        raise ValueError(f"input must hold rows x cols = {rows} x {cols} >= 1 values, got {x.size}")
    x = x.reshape(rows, cols)
    m = x[:, 0]
    for i in range(1, cols):  # NaN never wins, as the C's `in[i] > max`
        m = np.where(x[:, i] > m, x[:, i], m)
    e = exp_f32(x - m[:, None])
    s = np.zeros(rows, F32)
    for i in range(cols):
        s = s + e[:, i]
    return (e / s[:, None]).astype(F32)


# ---- mcu_unary_f32, operation by operation ------------------------------------------------------------------

def _sigmoid(x):
    return F32(1) / (F32(1) + exp_f32(-x))


def _softplus(x):
    a = np.where(x < 0, -x, x)
    return np.where(x > 0, x, F32(0)) + log_f32(F32(1) + exp_f32(-a))


def _clip6(t):
    return np.where(t < 0, F32(0), np.where(t > 6, F32(6), t))


UNARY = {  # MCU_UNARY_* (mcu_kernels.h order) -> f(x, a, b, c)
    "abs": lambda x, a, b, c: (x.view(np.uint32) & np.uint32(0x7FFFFFFF)).view(F32),
    "neg": lambda x, a, b, c: -x,
    "exp": lambda x, a, b, c: exp_f32(x),
    "log": lambda x, a, b, c: log_f32(x),
    "sqrt": lambda x, a, b, c: sqrt_f32(x),
    "rsqrt": lambda x, a, b, c: F32(1) / sqrt_f32(x),
    "reciprocal": lambda x, a, b, c: F32(1) / x,
    "square": lambda x, a, b, c: x * x,
    "sin": lambda x, a, b, c: sincos_f32(x, False),
    "cos": lambda x, a, b, c: sincos_f32(x, True),
    "sigmoid": lambda x, a, b, c: _sigmoid(x),
    "tanh": lambda x, a, b, c: tanh_f32(x),
    "floor": lambda x, a, b, c: floor_f32(x),
    "ceil": lambda x, a, b, c: ceil_f32(x),
    "round": lambda x, a, b, c: rint_f32(x),
    "trunc": lambda x, a, b, c: trunc_f32(x),
    "sign": lambda x, a, b, c: np.where(x > 0, F32(1), np.where(x < 0, F32(-1), x)),
    "erf": lambda x, a, b, c: erf_f32(x),
    "leaky_relu": lambda x, a, b, c: np.where(x > 0, x, x * a),
    "elu": lambda x, a, b, c: np.where(x > 0, x * b, (exp_f32(x * c) - F32(1)) * a * b),
    "hardswish": lambda x, a, b, c: x * _clip6(x + F32(3)) / F32(6),
    "hardsigmoid": lambda x, a, b, c: _clip6(x + F32(3)) / F32(6),
    "silu": lambda x, a, b, c: x * _sigmoid(x),
    "mish": lambda x, a, b, c: x * tanh_f32(_softplus(x)),
    "softplus": lambda x, a, b, c: np.where(x * a > b, x, _softplus(x * a) / a),
    "gelu": lambda x, a, b, c: F32(0.5) * x * (F32(1) + erf_f32(x * F32(0.707106781))),
    "gelu_tanh": lambda x, a, b, c: F32(0.5) * x * (F32(1) + tanh_f32(
        F32(0.797884561) * (x + F32(0.044715) * x * x * x))),
    "hardshrink": lambda x, a, b, c: np.where((x > a) | (x < -a), x, F32(0)),
    "softshrink": lambda x, a, b, c: np.where(x > a, x - a, np.where(x < -a, x + a, F32(0))),
    "threshold": lambda x, a, b, c: np.where(x > a, x, b),
    "log_sigmoid": lambda x, a, b, c: -_softplus(-x),
    "affine": lambda x, a, b, c: x * a + b,
    "div": lambda x, a, b, c: x / a,
    "pow": lambda x, a, b, c: exp_f32(a * log_f32(x)),
    "log1p": lambda x, a, b, c: log_f32(F32(1) + x),
    "expm1": lambda x, a, b, c: exp_f32(x) - F32(1),
    "atan": lambda x, a, b, c: atan_f32(x),
    "asin": lambda x, a, b, c: asin_f32(x),
    "acos": lambda x, a, b, c: acos_f32(x),
}
UNARY_OPS = tuple(UNARY)  # the op codes, in the C enum's order


def unary_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_unary_f32: UNARY[op] on every element, with the scalars a, b, c as float32."""
    p = params
    x = np.asarray(input, F32).reshape(-1)
    if p["size"] < 1 or x.size != p["size"] or not 0 <= p["op"] < len(UNARY_OPS):
        raise ValueError(f"bad unary params {p} for {x.size} values")
    a, b, c = (F32(p[k]) for k in ("a", "b", "c"))
    with np.errstate(all="ignore"):
        return np.asarray(UNARY[UNARY_OPS[p["op"]]](x, a, b, c), F32).reshape(-1)


def concat_f32(params: dict, *inputs: np.ndarray) -> np.ndarray:
    """Twin of mcu_concat_f32: input i holds outer * sizes[i] values; returns float32 [outer, sum(sizes)]."""
    n, outer, sizes = params["num_inputs"], params["outer"], params["sizes"]
    if not 1 <= n <= 8 or len(inputs) != n or outer < 1 or min(sizes[:n]) < 1:
        raise ValueError(f"bad concat params {params} for {len(inputs)} inputs")
    return np.concatenate([np.asarray(x, F32).reshape(outer, s) for x, s in zip(inputs, sizes)], axis=1)


BINARY_OPS = ("div", "minimum", "maximum", "pow")  # MCU_BINARY_*, in the C enum's order


def binary_f32(params: dict, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """Twin of mcu_binary_f32."""
    if not 0 <= params["op"] < len(BINARY_OPS):
        raise ValueError(f"op must be in [0, {len(BINARY_OPS)}), got {params['op']}")
    a, b = _operands(params, input1, input2)
    a, b = np.broadcast_arrays(a, b)
    op = BINARY_OPS[params["op"]]
    with np.errstate(all="ignore"):
        if op == "div":
            v = a / b
        elif op == "minimum":
            v = np.where((a < b) | np.isnan(a), a, b)
        elif op == "maximum":
            v = np.where((a > b) | np.isnan(a), a, b)
        else:
            v = exp_f32(b * log_f32(a))
    return _act(params, np.broadcast_to(v.astype(F32), tuple(params["output"])))


def matmul_f32(params: dict, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Twin of mcu_matmul_f32: the sums from 0 in t order, float32 throughout."""
    p = params
    b, m, k, n = p["batches"], p["m"], p["k"], p["n"]
    if min(b, m, k, n) < 1 or p["lhs_batches"] not in (b, 1):
        raise ValueError(f"bad matmul params {p}")
    a = np.broadcast_to(np.asarray(lhs, F32).reshape(p["lhs_batches"], m, k), (b, m, k))
    c = np.broadcast_to(_matmul_rhs(p, rhs, F32), (b, k, n))
    acc = np.zeros((b, m, n), F32)
    for t in range(k):
        acc = acc + a[:, :, t, None] * c[:, None, t, :]
    return _act(p, acc)


def argsort_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_argsort_f32: int32 [outer, len, inner] indices sorting each line along len, stably; NaN last
    ascending, first descending."""
    p = params
    if min(p["outer"], p["len"], p["inner"]) < 1 or p["descending"] not in (0, 1):
        raise ValueError(f"bad argsort params {p}")
    x = np.asarray(input, F32).reshape(p["outer"], p["len"], p["inner"])
    nan = np.isnan(x)
    if p["descending"]:  # a stable descending order: larger first, NaN first, ties in index order
        key = np.where(nan, -np.inf, -x.astype(np.float64))
        nan_rank = np.where(nan, 0, 1)
    else:
        key = np.where(nan, np.inf, x.astype(np.float64))
        nan_rank = np.where(nan, 1, 0)
    out = np.empty(x.shape, np.int32)
    for o in range(x.shape[0]):
        for i in range(x.shape[2]):
            out[o, :, i] = np.lexsort((key[o, :, i], nan_rank[o, :, i])).astype(np.int32)
    return out


def arg_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_arg_f32: int32 [outer, inner] indices of the first max (op 0) or min (op 1) along len; NaN wins."""
    p = params
    if min(p["outer"], p["len"], p["inner"]) < 1 or p["op"] not in (0, 1):
        raise ValueError(f"bad arg params {p}")
    x = np.asarray(input, F32).reshape(p["outer"], p["len"], p["inner"])
    nan = np.isnan(x)
    key = np.where(nan, np.inf, x) if p["op"] == 0 else np.where(nan, -np.inf, x)
    best = np.argmax(key, axis=1) if p["op"] == 0 else np.argmin(key, axis=1)
    first_nan = np.where(nan.any(axis=1), np.argmax(nan, axis=1), best)
    return first_nan.astype(np.int32)
