"""The example CNN: small, and using every op of the foundation flow once or more."""
from __future__ import annotations

import torch
from torch import nn


def _bn(c: int, g: torch.Generator) -> nn.BatchNorm2d:
    """BatchNorm with non-trivial statistics, so folding is exercised."""
    bn = nn.BatchNorm2d(c)
    with torch.no_grad():
        bn.weight.copy_(0.5 + torch.rand(c, generator=g))
        bn.bias.copy_(0.2 * torch.randn(c, generator=g))
        bn.running_mean.copy_(0.1 * torch.randn(c, generator=g))
        bn.running_var.copy_(0.5 + torch.rand(c, generator=g))
    return bn


class ExampleCNN(nn.Module):
    """conv-BN-ReLU, depthwise-BN-ReLU6, pointwise, residual add, max/avg pool, global pool, linear, softmax."""

    def __init__(self, g: torch.Generator, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), _bn(16, g), nn.ReLU())
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False), _bn(16, g), nn.ReLU6())
        self.pw = nn.Sequential(nn.Conv2d(16, 16, 1, bias=False), _bn(16, g))
        self.pool = nn.MaxPool2d(2)
        self.conv = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU())
        self.avg = nn.AvgPool2d(2)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.pw(self.dw(x))  # residual add
        x = self.pool(x)
        x = self.avg(self.conv(x))
        x = torch.mean(x, dim=(2, 3))
        x = torch.flatten(x, 1)
        return torch.softmax(self.fc(x), dim=-1)


def example_cnn(seed: int = 0):
    """(model, example_inputs): the example CNN on a [1, 3, 32, 32] input."""
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # the biases torch initialises itself: seeded too, the caller's RNG untouched
        torch.manual_seed(seed)
        model = ExampleCNN(g).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=g) * (2.0 / p[0].numel()) ** 0.5)
        model.fc.weight.mul_(0.5)  # logits of a few units, as a trained classifier's are
    return model, (torch.randn(1, 3, 32, 32, generator=g),)


def calibration_set(n: int = 16, seed: int = 1, shape=(1, 3, 32, 32)):
    """n seeded input tuples drawn like the example input."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(shape, generator=g),) for _ in range(n)]
