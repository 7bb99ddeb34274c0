"""The MLPerf Tiny v1.x reference models in PyTorch, with seeded random weights and non-trivial
BatchNorm statistics (so folding is exercised). Each function returns (model, example_inputs)."""
from __future__ import annotations

import torch
from torch import nn


BN_SHIFT = 1.0  # BatchNorm shift in units of its scale: most units active, as in a trained network


def _init(model: nn.Module, seed: int, input_shape) -> nn.Module:
    """He-normal weights, small biases, random BatchNorm affine parameters, and BatchNorm running
    statistics measured on seeded random inputs, as training leaves them (so every BatchNorm is
    far from identity, yet activations keep the well-scaled ranges of a trained network)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / fan_in) ** 0.5)
                if m.bias is not None:
                    m.bias.copy_(0.05 * torch.randn(m.bias.shape, generator=g))
            elif isinstance(m, nn.MultiheadAttention) and m.in_proj_weight is not None:
                m.in_proj_weight.copy_(torch.randn(m.in_proj_weight.shape, generator=g) * m.embed_dim ** -0.5)
            elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                c = m.num_features
                m.weight.copy_(0.6 + 0.8 * torch.rand(c, generator=g))
                m.bias.copy_(m.weight * (BN_SHIFT + 0.1 * torch.randn(c, generator=g)))
                m.reset_running_stats()
                m.momentum = None  # cumulative average over the batches below
    model.train()
    with torch.no_grad():
        for _ in range(8):
            model(torch.randn((32,) + tuple(input_shape[1:]), generator=g))
    return model.eval()


def _conv_bn_relu(cin, cout, k, stride=1, padding=0, groups=1):
    return [nn.Conv2d(cin, cout, k, stride, padding, groups=groups, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


class DSCNN(nn.Module):
    """KWS: DS-CNN-S on [1, 1, 49, 10] MFCC features, 12 classes."""

    def __init__(self):
        super().__init__()
        layers = [nn.ZeroPad2d((1, 1, 4, 5)), *_conv_bn_relu(1, 64, (10, 4), stride=2)]  # TF 'same', stride 2
        for _ in range(4):
            layers += _conv_bn_relu(64, 64, 3, padding=1, groups=64) + _conv_bn_relu(64, 64, 1)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d((25, 5))
        self.fc = nn.Linear(64, 12)

    def forward(self, x):
        x = self.pool(self.features(x))
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=-1)


class MobileNetV1(nn.Module):
    """VWW: MobileNetV1 alpha=0.25 on [1, 3, 96, 96], 2 classes."""

    BLOCKS = [(8, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2)] + \
        [(128, 128, 1)] * 5 + [(128, 256, 2), (256, 256, 1)]

    def __init__(self):
        super().__init__()
        layers = _conv_bn_relu(3, 8, 3, stride=2, padding=1)
        for cin, cout, s in self.BLOCKS:
            layers += _conv_bn_relu(cin, cin, 3, stride=s, padding=1, groups=cin) + _conv_bn_relu(cin, cout, 1)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(256, 2)

    def forward(self, x):
        x = self.pool(self.features(x))
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=-1)


class ResidualBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Sequential(*_conv_bn_relu(cin, cout, 3, stride, 1))
        self.conv2 = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = nn.Conv2d(cin, cout, 1, stride) if (stride != 1 or cin != cout) else nn.Identity()
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv2(self.conv1(x)) + self.shortcut(x))


class ResNet8(nn.Module):
    """IC: ResNet-8 on [1, 3, 32, 32] (CIFAR-10), 10 classes."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(*_conv_bn_relu(3, 16, 3, padding=1))
        self.stages = nn.Sequential(ResidualBlock(16, 16, 1), ResidualBlock(16, 32, 2), ResidualBlock(32, 64, 2))
        self.pool = nn.AvgPool2d(8)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool(self.stages(self.stem(x)))
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=-1)


class FCAutoencoder(nn.Module):
    """AD: the fully connected autoencoder on [1, 640] (5 frames x 128 mel bins)."""

    WIDTHS = [640, 128, 128, 128, 128, 8, 128, 128, 128, 128]

    def __init__(self):
        super().__init__()
        layers = []
        for cin, cout in zip(self.WIDTHS, self.WIDTHS[1:]):
            layers += [nn.Linear(cin, cout), nn.BatchNorm1d(cout), nn.ReLU()]
        layers.append(nn.Linear(128, 640))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


INPUT_SHAPES = {"kws": (1, 1, 49, 10), "vww": (1, 3, 96, 96), "ic": (1, 3, 32, 32), "ad": (1, 640)}
_MODELS = {"kws": (DSCNN, 11), "vww": (MobileNetV1, 12), "ic": (ResNet8, 13), "ad": (FCAutoencoder, 14)}


def _build(name: str):
    cls, seed = _MODELS[name]
    model = _init(cls(), seed, INPUT_SHAPES[name])
    return model, (torch.randn(INPUT_SHAPES[name], generator=torch.Generator().manual_seed(seed + 100)),)


def kws():
    return _build("kws")


def vww():
    return _build("vww")


def ic():
    return _build("ic")


def ad():
    return _build("ad")


MODELS = {"kws": kws, "vww": vww, "ic": ic, "ad": ad}


def calibration_set(name: str, n: int = 16, seed: int = 0) -> list[tuple[torch.Tensor]]:
    """n seeded input tuples drawn like the example input (standard normal)."""
    g = torch.Generator().manual_seed(1000 + seed)
    return [(torch.randn(INPUT_SHAPES[name], generator=g),) for _ in range(n)]


def macs(model: nn.Module, example_inputs) -> int:
    """Multiply-accumulates of one inference of the float model (conv and linear layers)."""
    total = 0

    def hook(m, inp, out):
        nonlocal total
        if isinstance(m, nn.Conv2d):
            total += out.numel() * m.weight[0].numel()
        elif isinstance(m, nn.Linear):
            total += out.numel() * m.in_features

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model(*example_inputs)
    for h in handles:
        h.remove()
    return total
