"""Deep depthwise networks, the kind post-training quantization finds hard (issue 16). Each function returns
(model, example_inputs) with seeded weights:

- mobilenet_v2: MobileNetV2 at width 0.35 on 3x64x64 (17 inverted residuals, ReLU6, linear bottlenecks);
- mnasnet_se: an MnasNet-A1-like network at width 0.5 on 3x64x64 (MBConv with 3x3 and 5x5 depthwise convs,
  squeeze-excite with a sigmoid gate, ReLU).

Their BatchNorm statistics are randomized the way training leaves them, not measured to be well-scaled: after
the statistics are measured on seeded inputs (as in mcu.zoo.mlperf_tiny), each channel's scale is multiplied by a
log-normal factor (sigma CHANNEL_SPREAD), so the channels of one tensor span a wide range, as in trained
depthwise networks, which is what a per-tensor activation scale pays for. A residual branch's last BatchNorm is
scaled by RESIDUAL_GAIN, as training leaves residual branches small next to their skip path.

Why not wilder: a benchmark of quantization needs a float network whose output does not amplify tiny noise
(`conditioning` measures it). With CHANNEL_SPREAD = 1 and undamped residuals, a 1e-4 relative perturbation of the
float weights alone already drops the output to 16.8 dB SQNR (MobileNetV2): such a network measures chaos, not
the quantizer. As built here, 1e-3 relative weight noise leaves 48.9 dB (MobileNetV2) and 43.6 dB (MnasNet) on
the 10 held-out inputs of tests/test_deep_nets.py.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mcu.zoo.mlperf_tiny import _init

CHANNEL_SPREAD = 0.5  # sigma of log(per-channel BatchNorm scale factor)
RESIDUAL_GAIN = 0.3  # scale of a residual branch's last BatchNorm
INPUT_SHAPE = (1, 3, 64, 64)


def _divisible(c: float, by: int = 8) -> int:
    return max(by, int(c + by / 2) // by * by)


def _cbn(cin, cout, k=1, stride=1, groups=1, act: type[nn.Module] | None = nn.ReLU6):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([act()] if act else []))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand, k=3, act=nn.ReLU6, se=False):
        super().__init__()
        hidden = cin * expand
        layers = [_cbn(cin, hidden, act=act)] if expand != 1 else []
        layers += [_cbn(hidden, hidden, k, stride, hidden, act)]
        if se:
            layers += [SqueezeExcite(hidden)]
        layers += [_cbn(hidden, cout, act=None)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, _divisible(c / r), 1), nn.Conv2d(_divisible(c / r), c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(x, 1)))))


class _Net(nn.Module):
    def __init__(self, features: nn.Sequential, c: int, classes: int = 10):
        super().__init__()
        self.features, self.classifier = features, nn.Linear(c, classes)

    def forward(self, x):
        return self.classifier(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


def _spread(model: nn.Module, seed: int) -> nn.Module:
    """Multiply each BatchNorm channel's scale and shift by exp(N(0, CHANNEL_SPREAD^2)), so the channels of a
    tensor stop sharing one range; then damp each residual branch by RESIDUAL_GAIN."""
    g = torch.Generator().manual_seed(seed + 7)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                f = torch.exp(CHANNEL_SPREAD * torch.randn(m.num_features, generator=g))
                m.weight.mul_(f)
                m.bias.mul_(f)
        for m in model.modules():
            if isinstance(m, InvertedResidual) and m.residual:
                bn = m.conv[-1][1]
                bn.weight.mul_(RESIDUAL_GAIN)
                bn.bias.mul_(RESIDUAL_GAIN)
    return model


def _build(model: nn.Module, seed: int):
    model = _spread(_init(model, seed, INPUT_SHAPE), seed)
    return model, (torch.randn(INPUT_SHAPE, generator=torch.Generator().manual_seed(seed + 100)),)


# (expansion, channels, repeats, first stride) of MobileNetV2 (Sandler et al. 2018, table 2)
MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]


def mobilenet_v2(width: float = 0.35):
    c = _divisible(32 * width)
    layers = [_cbn(3, c, 3, 2)]
    for t, ch, n, s in MOBILENET_V2:
        out = _divisible(ch * width)
        for i in range(n):
            layers.append(InvertedResidual(c, out, s if i == 0 else 1, t))
            c = out
    layers.append(_cbn(c, 1280, 1))
    return _build(_Net(nn.Sequential(*layers), 1280), 21)


# (expansion, channels, repeats, first stride, kernel, squeeze-excite) of MnasNet-A1 (Tan et al. 2019, figure 7)
MNASNET_A1 = [(6, 24, 2, 2, 3, False), (3, 40, 3, 2, 5, True), (6, 80, 4, 2, 3, False), (6, 112, 2, 1, 3, True),
              (6, 160, 3, 2, 5, True), (6, 320, 1, 1, 3, False)]


def mnasnet_se(width: float = 0.5):
    c = _divisible(32 * width)
    layers = [_cbn(3, c, 3, 2, act=nn.ReLU), InvertedResidual(c, _divisible(16 * width), 1, 1, act=nn.ReLU)]
    c = _divisible(16 * width)
    for t, ch, n, s, k, se in MNASNET_A1:
        out = _divisible(ch * width)
        for i in range(n):
            layers.append(InvertedResidual(c, out, s if i == 0 else 1, t, k, nn.ReLU, se))
            c = out
    layers.append(_cbn(c, 1280, 1, act=nn.ReLU))
    return _build(_Net(nn.Sequential(*layers), 1280), 22)


DEEP = {"mobilenet_v2": mobilenet_v2, "mnasnet_se": mnasnet_se}


def calibration_set(n: int = 16, seed: int = 0) -> list[tuple[torch.Tensor]]:
    """n seeded standard-normal inputs shaped like the example input."""
    g = torch.Generator().manual_seed(2000 + seed)
    return [(torch.randn(INPUT_SHAPE, generator=g),) for _ in range(n)]


def conditioning(model: nn.Module, inputs, relative: float = 1e-3, seed: int = 0) -> float:
    """SQNR (dB) of the float model's outputs when every parameter gets Gaussian noise of `relative` times its
    tensor's mean magnitude: how much the network itself amplifies small errors. The model is not modified."""
    import copy

    from mcu.metrics import sqnr_db
    noisy, g = copy.deepcopy(model), torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in noisy.parameters():
            p.add_(relative * p.abs().mean() * torch.randn(p.shape, generator=g))
        return sqnr_db([model(*x).numpy() for x in inputs], [noisy(*x).numpy() for x in inputs])
