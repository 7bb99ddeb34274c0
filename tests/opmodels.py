"""Single-op (or few-op) torch models covering each kernel and lowering, shared by the tests."""
from __future__ import annotations

import torch
from torch import nn
import torch.nn.functional as F


class Seq(nn.Module):
    def __init__(self, *layers, fn=None):
        super().__init__()
        self.layers = nn.Sequential(*layers)
        self.fn = fn

    def forward(self, x):
        x = self.layers(x)
        return self.fn(x) if self.fn else x


class Add(nn.Module):
    """Two model inputs added: the add kernel alone."""
    def __init__(self, relu: bool):
        super().__init__()
        self.relu = relu

    def forward(self, x, y):
        z = x + y
        return F.relu(z) if self.relu else z


class FlattenLinear(nn.Module):
    """A flatten of a spatial NCHW tensor: needs the NHWC -> NCHW transpose."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 5 * 6, 7)

    def forward(self, x):
        return self.fc(torch.flatten(self.conv(x), 1))


class Mean(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return self.conv(x).mean(dim=(2, 3))


class PoolRelu(nn.Module):
    """A ReLU after a pool: fused into the pool's output clamp."""
    def forward(self, x):
        return F.relu(F.max_pool2d(x, 2))


class Fn(nn.Module):
    """forward(*inputs) = fn(*inputs): a parameter-free op model."""
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def _activations(x):
    """Every look-up-table activation side by side (an 8-input concat)."""
    return torch.cat([F.hardswish(x), F.hardsigmoid(x), torch.sigmoid(x), torch.tanh(x), F.leaky_relu(x, 0.1),
                      F.gelu(x), F.silu(x), F.elu(x)], 1)


def _scalar_arith(x):
    """Elementwise functions with a scalar, and clamps that cannot fuse (model input, shared input)."""
    return torch.cat([x * 2.0, x + 1.0, 1.0 - x, x / 3.0, -x, x.abs(), x.clamp(-0.5, 0.5), F.relu6(x)], 1)


class Conv1dNet(nn.Module):
    """conv1d -> relu -> max_pool1d -> grouped conv1d -> avg_pool1d: 1-d ops on [N, C, 1, L] views."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 6, 3, padding=1)
        self.c2 = nn.Conv1d(6, 4, 3, stride=2, groups=2)

    def forward(self, x):
        return F.avg_pool1d(self.c2(F.max_pool1d(F.relu(self.c1(x)), 2)), 3)


class PermuteLinear(nn.Module):
    """A channels-last MLP on a 4-d tensor (ConvNeXt style): permute, linear, GELU, linear, permute back."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 12), nn.Linear(12, 6)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x.permute(0, 2, 3, 1)))).permute(0, 3, 1, 2)


class LayerNormNet(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.ln = nn.LayerNorm(dims)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)


def _conv(*a, **k):
    return Seq(nn.Conv2d(*a, **k))


# name -> (model factory, input shape)
OP_MODELS = {
    "conv3x3": (lambda: Seq(nn.Conv2d(3, 8, 3, padding=1)), (1, 3, 9, 9)),
    "conv3x3_relu": (lambda: Seq(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()), (1, 3, 9, 9)),
    "conv_bn_relu6": (lambda: Seq(nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU6()), (1, 4, 10, 10)),
    "conv5x3_s21_d2": (lambda: Seq(nn.Conv2d(3, 6, (5, 3), stride=(2, 1), padding=(2, 1), dilation=(1, 2))),
                       (1, 3, 11, 8)),
    "conv1x1": (lambda: Seq(nn.Conv2d(8, 16, 1)), (1, 8, 6, 6)),
    "conv_batch2": (lambda: Seq(nn.Conv2d(3, 4, 3)), (2, 3, 6, 6)),
    "dwconv3x3_s2": (lambda: Seq(nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), nn.ReLU()), (1, 8, 9, 9)),
    "dwconv_mult2": (lambda: Seq(nn.Conv2d(4, 8, 3, padding=1, groups=4)), (1, 4, 7, 7)),
    "linear": (lambda: Seq(nn.Linear(20, 12)), (1, 20)),
    "linear_relu_batch3": (lambda: Seq(nn.Linear(16, 10), nn.ReLU()), (3, 16)),
    "add": (lambda: Add(False), [(1, 4, 6, 6), (1, 4, 6, 6)]),
    "add_relu": (lambda: Add(True), [(1, 4, 6, 6), (1, 4, 6, 6)]),
    "maxpool3x3_s2_p1": (lambda: Seq(nn.MaxPool2d(3, 2, padding=1)), (1, 3, 9, 9)),
    "maxpool_relu": (PoolRelu, (1, 3, 8, 8)),
    "avgpool2x2": (lambda: Seq(nn.AvgPool2d(2)), (1, 3, 8, 8)),
    "avgpool3x3_p1_exclude_pad": (lambda: Seq(nn.AvgPool2d(3, 1, 1, count_include_pad=False)),
                                  (1, 3, 7, 7)),
    "avgpool3x3_p1_include_pad": (lambda: Seq(nn.AvgPool2d(3, 2, 1)), (1, 3, 7, 7)),
    "adaptive_avgpool": (lambda: Seq(nn.AdaptiveAvgPool2d(1), fn=lambda x: x.flatten(1)),
                         (1, 3, 6, 6)),
    "mean_hw": (Mean, (1, 3, 7, 7)),
    "flatten_linear": (FlattenLinear, (1, 3, 5, 6)),
    "softmax": (lambda: Seq(nn.Linear(16, 10), fn=lambda x: torch.softmax(x, -1)), (2, 16)),
    # op breadth
    "concat_channels": (lambda: Fn(lambda x, y: torch.cat([x, y], 1)), [(1, 4, 5, 5), (1, 3, 5, 5)]),
    "concat_w_3in": (lambda: Fn(lambda x, y: torch.cat([x, y, x], 3)), [(1, 2, 4, 3), (1, 2, 4, 5)]),
    "mul_sigmoid_gate": (lambda: Fn(lambda x, y: x * torch.sigmoid(y)), [(1, 4, 5, 5), (1, 4, 1, 1)]),
    "add_broadcast_relu": (lambda: Fn(lambda x, y: F.relu(x + y)), [(1, 4, 5, 5), (1, 1, 5, 5)]),
    "sub_broadcast_rank1": (lambda: Fn(lambda x, y: x - y), [(1, 4, 3, 5), (5,)]),
    "activations_lut": (lambda: Fn(_activations), (1, 2, 3, 4)),
    "scalar_arith_clamp": (lambda: Fn(_scalar_arith), (1, 2, 3, 4)),
    "conv_clamp_fused": (lambda: Seq(nn.Conv2d(3, 4, 3), fn=lambda x: x.clamp(-0.5, 1.0)), (1, 3, 6, 6)),
    "upsample_nearest": (lambda: Seq(nn.Upsample(scale_factor=(2, 3))), (1, 3, 4, 5)),
    "mean_channels": (lambda: Fn(lambda x: x.mean(1)), (1, 5, 4, 3)),
    "sum_3d": (lambda: Fn(lambda x: x.sum(1)), (2, 3, 7)),
    "conv1d_pool1d": (Conv1dNet, (1, 4, 24)),
    "conv_groups2": (lambda: Seq(nn.Conv2d(4, 6, 3, padding=1, groups=2)), (1, 4, 6, 6)),
    "linear_3d": (lambda: Seq(nn.Linear(8, 5)), (2, 3, 8)),
    "bmm": (lambda: Fn(torch.bmm), [(2, 3, 4), (2, 4, 5)]),
    "matmul_qk_4d": (lambda: Fn(lambda q, k: q @ k.transpose(-1, -2)), [(1, 2, 3, 8), (1, 2, 5, 8)]),
    "permute_linear": (PermuteLinear, (1, 6, 3, 4)),
    "transpose_hw": (lambda: Fn(lambda x: x.transpose(2, 3)), (1, 3, 4, 5)),
    "layer_norm_3d": (lambda: LayerNormNet(8), (2, 5, 8)),
    "layer_norm_4d": (lambda: LayerNormNet((4, 6)), (1, 3, 4, 6)),
}


# Share of 1-LSB differences against torchao allowed beyond the default 2%, with the reason.
TIE_SHARE = {
    # concat requantizes x / 3 by ~1/6 with one integer rounding; torchao rounds the float product, where
    # exact real ties ((q - zp) a multiple of 3) land on either side of .5 by float error
    "scalar_arith_clamp": 0.05,
}


def make(name: str, seed: int = 0):
    """(model, example_inputs, calibration) for OP_MODELS[name], seeded, BatchNorm stats non-trivial."""
    factory, shape = OP_MODELS[name]
    torch.manual_seed(seed)
    model = factory().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.3, 0.3)
    shapes = shape if isinstance(shape, list) else [shape]
    g = torch.Generator().manual_seed(seed + 1)
    calib = [tuple(torch.randn(s, generator=g) * (i + 1) for i, s in enumerate(shapes)) for _ in range(8)]
    return model, calib[0], calib


# Held-out ops of issue 25 (recurrent cells, grouped-query attention, autocast regions, small Core ATen ops).
class GruCellStep(nn.Module):
    """nn.GRUCell with its state threaded by hand: (x, h) -> h'."""
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(6, 8)

    def forward(self, x, h):
        return self.cell(x, h)


class LstmCellStep(nn.Module):
    """nn.LSTMCell: (x, h, c) -> (h', c')."""
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(6, 8)

    def forward(self, x, h, c):
        return self.cell(x, (h, c))


class GroupedQueryAttention(nn.Module):
    """Four query heads over two key/value heads, repeated with repeat_interleave as llama-style models do."""
    def __init__(self):
        super().__init__()
        self.q, self.kv = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, 4, 4).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, 8).transpose(1, 2).chunk(2, dim=-1)
        k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, 16)


class AutocastRegion(nn.Module):
    """timm's autocast-disabled block: a no-op region (a wrap_with_autocast higher-order op once exported)."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        with torch.autocast("cpu", enabled=False):
            y = torch.sigmoid(self.fc(x.float()))
        return y * x


class SmallArith(nn.Module):
    """addcmul, addcdiv, true_divide, fmax, fmin, log2, exp2, lerp (scalar and tensor weight): one output each."""
    def forward(self, x, y):
        pos = y.abs() + 1
        return (torch.addcmul(x, x, y, value=0.5), torch.addcdiv(x, y, pos, value=0.5), torch.true_divide(x, pos),
                torch.fmax(x, y), torch.fmin(x, y), torch.log2(pos), torch.exp2(x * 0.5), torch.lerp(x, y, 0.3),
                torch.lerp(x, y, torch.sigmoid(y)))


class MaxPoolsUnfold(nn.Module):
    """adaptive_max_pool1d and 2d (sizes that divide and that do not) and F.unfold (im2col), after a conv."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 1)

    def forward(self, x):
        y = self.conv(x)
        return (F.adaptive_max_pool2d(y, (3, 2)), F.adaptive_max_pool2d(y, (4, 3)),
                F.adaptive_max_pool1d(y.flatten(2), 5), F.unfold(y, 3, padding=1, stride=2),
                F.unfold(y, (2, 3), dilation=(2, 1)))


class ConstantIndex(nn.Module):
    """x[idx] with a constant index: a buffer, a tensor made in forward (lift_fresh_copy), along a later dim.
    (A boolean mask x[mask] has a data-dependent size: torch.export and mcu refuse it.)"""
    def __init__(self):
        super().__init__()
        self.register_buffer("idx", torch.tensor([2, 0, 3, 3]))

    def forward(self, x):
        return x[self.idx] * 2, x[torch.tensor([4, 1])], x[:, torch.tensor([7, 0, 5])] + 1


class CoreElementwise(nn.Module):
    """Core ATen ops decomposed in float32 (one look-up table each in int8): log10, sinh, cosh, asinh, acosh, and
    fmod / remainder (by a tensor and a scalar), x + full_like(x, 2), isnan, isinf."""
    def forward(self, x, y):
        pos = y.abs() + 1.5
        return (torch.log10(pos), torch.sinh(x * 0.5), torch.cosh(x * 0.5), torch.asinh(x), torch.acosh(pos),
                torch.fmod(x * 3, pos), torch.remainder(x * 3, pos), torch.fmod(x * 3, 1.25),
                x + torch.full_like(x, 2.0), x + torch.isnan(x) + torch.isinf(x * 1e30))


class ConstantGatherScatter(nn.Module):
    """gather, scatter (of a tensor), slice_scatter with a step, select_scatter, scatter_add (a repeated index) and
    diagonal, all with constant indices."""
    def __init__(self):
        super().__init__()
        self.register_buffer("idx", torch.tensor([[3, 0, 1], [2, 2, 0]]))

    def forward(self, x, y):
        return (torch.gather(x, 1, self.idx) * 2, torch.scatter(x, 1, self.idx, y[:, :3]) + 1,
                torch.slice_scatter(x, y[:, :2], 1, 1, 5, 2) - 1, torch.select_scatter(x, y[:, 0], 1, 2) * 3,
                torch.scatter_add(x, 1, self.idx, y[:, :3]), torch.diagonal(x, 1) + 1)


class CoreLogicAndNorms(nn.Module):
    """Logical ops on any floats (x != 0 is True), logical_xor, any/all over a dim, fill and .float() / .to(),
    and native_layer_norm's three outputs (the normalized tensor, its mean and rstd), where with scalar branches."""
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.linspace(0.5, 1.5, 8))
        self.register_buffer("b", torch.linspace(-0.2, 0.2, 8))

    def forward(self, x, y):
        z = torch.relu(y)  # zeros and positives: the truth of each element differs
        logic = (torch.logical_and(x, z).float() + torch.logical_or(z, x * 0).float()
                 + torch.logical_xor(z, x).float() + torch.logical_not(z).float())
        reduced = torch.any(z, 1, keepdim=True).float() + torch.all(z + 0.5, 1, keepdim=True).float()
        filled = x + torch.fill(torch.empty_like(x), 0.75) + torch.arange(8).float()
        norm, mean, rstd = torch.ops.aten.native_layer_norm.default(x, [8], self.w, self.b, 1e-5)
        picked = torch.where(x > 0.2, 1.5, -2.0) + torch.where(y < 0, x, 0.0) + torch.where(x > 1, 3.0, y)
        return logic, reduced * x, filled.to(torch.float32), norm, mean, rstd, picked
