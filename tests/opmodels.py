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
