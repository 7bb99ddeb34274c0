"""Transposed convs and resampling (bilinear, bicubic, uneven nearest and adaptive pools) as convs and linears;
adaptive max pools as max pools or per-bin maxima, im2col as a one-hot conv; 3-d average pools (separable: one
linear layer per axis) and grid sampling with a constant grid (one linear layer per batch element)."""
from __future__ import annotations

import torch
from torch.fx import Node

aten = torch.ops.aten


def _conv_transpose(b, n):
    """conv_transpose1d/2d as a conv: the input zero-stuffed (nearest upsample times a 0/1 mask, a float island
    in int8), padded by dilation * (k - 1) - padding (+ output_padding at the end), convolved with the weight
    flipped and its in/out channels swapped per group. 1-d runs as 2-d on [N, C, 1, L]."""
    x, weight, bias = n.args[0], n.args[1], b.arg(2, "bias")
    one_d = n.target == aten.conv_transpose1d.default
    k = 1 if one_d else 2
    stride, padding, out_pad = (list(b.arg(i, nm, [d] * k)) for i, nm, d in
                                ((3, "stride", 1), (4, "padding", 0), (5, "output_padding", 0)))
    groups, dilation = int(b.arg(6, "groups", 1)), list(b.arg(7, "dilation", [1] * k))
    w = b.tensor(weight)
    if w is None:
        raise b.refuse("a transposed conv with a computed weight", "make the weight an nn.Parameter")
    if len(b.shape(x)) != (3 if one_d else 4):
        raise b.refuse("an unbatched transposed conv", "pass a batched input ([N, C, L] or [N, C, H, W])")
    if one_d:
        stride, padding, out_pad, dilation = [1] + stride, [0] + padding, [0] + out_pad, [1] + dilation
        x = b(aten.unsqueeze.default, x, 2)
        w = w.unsqueeze(2)
    shape = b.shape(x)
    cin, cout_g = w.shape[:2]
    wc = w.reshape(groups, cin // groups, cout_g, *w.shape[2:]).transpose(1, 2)
    wc = wc.reshape(groups * cout_g, cin // groups, *w.shape[2:]).flip(-1, -2)
    if stride != [1, 1]:
        up = b(aten.upsample_nearest2d.vec, x, [shape[2] * stride[0], shape[3] * stride[1]], None)
        mask = torch.zeros(1, 1, shape[2] * stride[0], shape[3] * stride[1])
        mask[..., ::stride[0], ::stride[1]] = 1.0
        b.island = "conv_transpose"
        x = b(aten.mul.Tensor, up, b.const("_mcu_stuff_mask", mask))
        b.island = None
    pads = []
    for i in (1, 0):  # W then H, as constant_pad_nd lists them
        edge = dilation[i] * (wc.shape[2 + i] - 1) - padding[i]
        pads += [edge, edge + out_pad[i] - (stride[i] - 1)]
    if any(p > 0 for p in pads):
        x = b(aten.constant_pad_nd.default, x, [max(p, 0) for p in pads], 0.0)
    for i, (before, after) in ((3, pads[:2]), (2, pads[2:])):
        if before < 0 or after < 0:
            size = b.shape(x)[i]
            x = b(aten.slice.Tensor, x, i, max(-before, 0), size - max(-after, 0))
    bias_node = None if bias is None else b.const("_mcu_convt_bias", b.tensor(bias))
    y = b(aten.conv2d.default, x, b.const("_mcu_convt_weight", wc), bias_node, [1, 1], [0, 0], dilation, groups)
    return b(aten.squeeze.dims, y, [2]) if one_d else y


def has_int8_kernel(n: Node) -> bool:
    """A batched transposed conv the int8 kernel runs (groups 1, dilation 1, a constant weight;
    mcu_conv_transpose2d_s8), or a 4-d bilinear upsampling (mcu_upsample_bilinear_s8): the int8 flow keeps these
    whole."""
    if n.op != "call_function":
        return False
    if n.target in (aten.conv_transpose2d.input, aten.conv_transpose1d.default):
        a = list(n.args) + [None] * 8
        groups, dilation = a[6] if a[6] is not None else 1, a[7] if a[7] is not None else 1
        dilation = dilation if isinstance(dilation, (list, tuple)) else [dilation]
        rank = 4 if n.target == aten.conv_transpose2d.input else 3  # batched
        return int(groups) == 1 and all(int(d) == 1 for d in dilation) and isinstance(a[1], Node) \
            and a[1].op == "get_attr" and len(n.args[0].meta["val"].shape) == rank
    if n.target == aten.upsample_bilinear2d.vec:
        shape = n.args[0].meta["val"].shape
        return len(shape) == 4 and max(shape[2:]) < 2**15 and max(n.meta["val"].shape[2:]) < 2**15
    return False


def _axis_matrix(n: Node, shape: list[int], axis: int) -> torch.Tensor:
    """The [out, in] matrix of the op along one spatial axis (2 or 3 of [N, C, H, W]; a 1-d op's L is axis 3):
    the op itself run on one-hot images that are constant along the other axis, so its own index and weight
    rules (scale factors, align_corners) give the weights."""
    size = shape[axis]
    eye = torch.eye(size)
    if n.target in ONE_D_RESAMPLES:
        probe = eye[:, None, :].contiguous()
        with torch.no_grad():
            return n.target(probe, *n.args[1:], **n.kwargs)[:, 0, :].T.contiguous()
    other = shape[5 - axis]
    probe = (eye[:, None, None, :].expand(size, 1, other, size) if axis == 3
             else eye[:, None, :, None].expand(size, 1, size, other)).contiguous()
    args = [probe] + list(n.args[1:])
    with torch.no_grad():
        out = n.target(*args, **n.kwargs)
    return (out[:, 0, 0, :] if axis == 3 else out[:, 0, :, 0]).T.contiguous()  # [out, in]


def resample(b, n):
    """Bilinear / bicubic upsampling, nearest by a non-integer factor, an adaptive average pool whose sizes do
    not divide: separable, so two linear layers with constant weights (one per spatial axis, skipped where the
    axis keeps its size and the matrix is the identity), run over W then over H (transposed to last)."""
    x = n.args[0]
    shape = b.shape(x)
    one_d = n.target in ONE_D_RESAMPLES
    if len(shape) != (3 if one_d else 4) and not (len(shape) == 3 and n.target == aten.adaptive_avg_pool2d.default):
        raise b.refuse(f"{n.target.__name__} of a {len(shape)}-d tensor", "pass [N, C, L] or [N, C, H, W]")
    unbatched = len(shape) == 3 and not one_d
    if one_d:
        shape = [shape[0], shape[1], 1, shape[2]]
    y = x
    if unbatched:  # [C, H, W]
        shape = [1] + shape
    for axis in ((3,) if one_d else (3, 2)):
        m = _axis_matrix(n, shape, axis)
        if m.shape[0] == m.shape[1] and torch.equal(m, torch.eye(m.shape[0])):
            continue
        if axis == 2:
            y = b(aten.transpose.int, y, -2, -1)
        y = b(aten.linear.default, y, b.const("_mcu_resample", m))
        if axis == 2:
            y = b(aten.transpose.int, y, -2, -1)
    return y


ONE_D_RESAMPLES = {aten.upsample_nearest1d.vec}


def _values_only(b, n, out):
    """Point n's values output (getitem 0) at `out`; a use of its indices output is refused."""
    for user in list(n.users):
        if user.args[1] != 0 and user.users:
            raise b.refuse(f"{n.target.__name__}'s indices output", "use only the pooled values (return_indices=False)")
        user.replace_all_uses_with(out)
        user.graph.erase_node(user)
    return out


def _adaptive_max_pool2d(b, n):
    """adaptive_max_pool2d (values): one max_pool2d where the sizes divide; else, as max is separable, per axis
    one amax over each bin (start floor(i * in / out), end ceil((i + 1) * in / out)) and a cat."""
    x, size = n.args[0], b.shape(n.args[0])[-2:]
    out = [s if o is None else int(o) for s, o in zip(size, n.args[1])]
    if all(s % o == 0 for s, o in zip(size, out)):
        k = [s // o for s, o in zip(size, out)]
        y = b(aten.max_pool2d.default, x, k, k)
        return _values_only(b, n, y)
    y = x
    for axis, (s, o) in ((-1, (size[1], out[1])), (-2, (size[0], out[0]))):
        if s == o:
            continue
        bins = [(i * s // o, -(-(i + 1) * s // o)) for i in range(o)]
        parts = [b(aten.amax.default, b(aten.slice.Tensor, y, axis, lo, hi), [axis], True) for lo, hi in bins]
        y = b(aten.cat.default, parts, axis)
    return _values_only(b, n, y)


def _im2col(b, n):
    """im2col (F.unfold): a conv2d with a one-hot weight (output channel c * kh * kw + i * kw + j reads input
    channel c at kernel tap (i, j); exact in int8 too), then [N, C * kh * kw, L]."""
    x, kernel, dilation, padding, stride = n.args[:5]
    shape = b.shape(x)
    c, (kh, kw) = shape[-3], kernel
    w = torch.zeros(c * kh * kw, c, kh, kw)
    for ch in range(c):
        for i in range(kh):
            for j in range(kw):
                w[ch * kh * kw + i * kw + j, ch, i, j] = 1.0
    y = b(aten.conv2d.default, x, b.const("_mcu_im2col", w), None, list(stride), list(padding), list(dilation))
    return b(aten.reshape.default, y, b.shape(n))


def _along(b, y, axis: int, m: torch.Tensor):
    """y with its axis mapped by the [out, in] matrix m: y viewed as [before, in, after], a linear layer over
    the axis (moved last), back to y's rank."""
    shape = b.shape(y)
    axis %= len(shape)
    before = int(torch.tensor(shape[:axis]).prod()) if axis else 1
    after = int(torch.tensor(shape[axis + 1:]).prod()) if axis + 1 < len(shape) else 1
    t = b(aten.reshape.default, y, [before, shape[axis], after] if after > 1 else [before, shape[axis]])
    if after > 1:
        t = b(aten.transpose.int, t, 1, 2)
    t = b(aten.linear.default, t, b.const("_mcu_pool_axis", m))
    if after > 1:
        t = b(aten.transpose.int, t, 1, 2)
    return b(aten.reshape.default, t, shape[:axis] + [m.shape[0]] + shape[axis + 1:])


def _pool3d(b, n):
    """avg_pool3d and adaptive_avg_pool3d over [N, C, D, H, W] or [C, D, H, W]: both are separable (the window's
    divisor is the product of its per-axis counts, padded or not), so per axis (W, H, D) one linear layer whose
    [out, in] matrix is the 1-d pool of an identity, skipped where it is the identity."""
    x = n.args[0]
    shape = b.shape(x)
    if len(shape) not in (4, 5):
        raise b.refuse(f"{n.target.__name__} of a {len(shape)}-d tensor", "pass [N, C, D, H, W] or [C, D, H, W]")
    if n.target == aten.adaptive_avg_pool3d.default:
        out = [s if o is None else int(o) for s, o in zip(shape[-3:], n.args[1])]
        mats = [torch.nn.functional.adaptive_avg_pool1d(torch.eye(s)[:, None, :], o)[:, 0, :].T
                for s, o in zip(shape[-3:], out)]
    else:
        k = list(n.args[1])
        stride = list(b.arg(2, "stride", None) or k)
        padding, ceil, include = list(b.arg(3, "padding", [0] * 3)), b.arg(4, "ceil_mode", False), b.arg(
            5, "count_include_pad", True)
        if b.arg(6, "divisor_override") is not None:
            raise b.refuse("avg_pool3d with divisor_override", "drop divisor_override (or scale the pool after it)")
        k, stride, padding = ([v[0]] * 3 if len(v) == 1 else v for v in (k, stride, padding))
        mats = [torch.nn.functional.avg_pool1d(torch.eye(s)[:, None, :], k_, s_, p_, ceil, include)[:, 0, :].T
                for s, k_, s_, p_ in zip(shape[-3:], k, stride, padding)]
    y = x
    for axis, m in zip((-1, -2, -3), reversed(mats)):
        if not (m.shape[0] == m.shape[1] and torch.equal(m, torch.eye(m.shape[0]))):
            y = _along(b, y, axis, m.contiguous())
    return y


def _grid_sampler_2d(b, n):
    """grid_sampler_2d(x, grid, mode, padding_mode, align_corners) with a constant grid: per batch element a
    linear map of the H * W pixels, its [out, in] matrix torch's own sampling of one-hot images (every mode and
    padding mode); each channel's pixels through it, the batch elements concatenated."""
    x, grid = n.args[:2]
    g = b.tensor(grid)
    if g is None:
        raise b.refuse("grid_sampler_2d with a grid computed by the model", "make the grid a constant (a buffer)")
    nb, c, h, w = b.shape(x)
    ho, wo = g.shape[1:3]
    probe = torch.eye(h * w).reshape(h * w, 1, h, w)
    parts = []
    for i in range(nb):
        with torch.no_grad():
            m = n.target(probe, g[i:i + 1].expand(h * w, ho, wo, 2).contiguous(), *n.args[2:])
        xi = b(aten.reshape.default, b(aten.slice.Tensor, x, 0, i, i + 1), [c, h * w])
        yi = b(aten.linear.default, xi, b.const("_mcu_grid_sample", m.reshape(h * w, ho * wo).T.contiguous()))
        parts.append(b(aten.reshape.default, yi, [1, c, ho, wo]))
    return parts[0] if nb == 1 else b(aten.cat.default, parts, 0)


DECOMPOSITIONS = {
    aten.conv_transpose1d.default: _conv_transpose, aten.conv_transpose2d.input: _conv_transpose,
    aten.upsample_bilinear2d.vec: resample, aten.upsample_bicubic2d.vec: resample,
    aten.adaptive_max_pool2d.default: _adaptive_max_pool2d, aten.im2col.default: _im2col,
    aten.avg_pool3d.default: _pool3d, aten.adaptive_avg_pool3d.default: _pool3d,
    aten.grid_sampler_2d.default: _grid_sampler_2d, aten.grid_sampler.default: _grid_sampler_2d,
}
