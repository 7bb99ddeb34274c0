"""The block types users bring, as compact networks of our own (seeded weights, BatchNorm statistics measured
on seeded inputs, as in mcu.zoo.mlperf_tiny). Each function returns (model, example_inputs):

- mbv3: inverted residuals with squeeze-excite and hardswish (MobileNetV3);
- ghost: ghost modules, a cheap depthwise op and a channel slice (GhostNet);
- shuffle: ShuffleNetV2 units: channel split, branch, cat, channel shuffle;
- mobilevit: a MobileViT block: local conv, unfold to patches, a transformer layer, fold back, fuse;
- linear_attention: a linear-attention block (elu + 1 feature map, normalised by the key sum);
- gru_kws: a GRU keyword spotter on MFCC frames;
- convt_decoder: a tiny decoder of transposed convs.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mcu.zoo.mlperf_tiny import _init


def _cbn(cin, cout, k=1, stride=1, groups=1, act: type[nn.Module] | None = nn.ReLU):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([act()] if act else []))


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, c // r, 1), nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class InvertedResidualSE(nn.Module):
    def __init__(self, cin, cexp, cout, stride=1):
        super().__init__()
        self.block = nn.Sequential(_cbn(cin, cexp, act=nn.Hardswish), _cbn(cexp, cexp, 3, stride, cexp, nn.Hardswish),
                                   SqueezeExcite(cexp), _cbn(cexp, cout, act=None))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class _Net(nn.Module):
    def __init__(self, stem, body, c, classes=10):
        super().__init__()
        self.stem, self.body, self.head = stem, body, nn.Linear(c, classes)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.body(self.stem(x)), 1).flatten(1))


def _build(model: nn.Module, shape, seed: int):
    model = _init(model, seed, shape)
    return model, (torch.randn(shape, generator=torch.Generator().manual_seed(seed + 100)),)


def mbv3():
    body = nn.Sequential(InvertedResidualSE(16, 48, 16), InvertedResidualSE(16, 64, 24, stride=2),
                         InvertedResidualSE(24, 72, 24))
    return _build(_Net(_cbn(3, 16, 3, 2, act=nn.Hardswish), body, 24), (1, 3, 32, 32), 11)


class GhostModule(nn.Module):
    def __init__(self, cin, cout, relu=True):
        super().__init__()
        half = (cout + 1) // 2
        self.cout = cout
        self.primary = _cbn(cin, half, act=nn.ReLU if relu else None)
        self.cheap = _cbn(half, half, 3, groups=half, act=nn.ReLU if relu else None)

    def forward(self, x):
        p = self.primary(x)
        return torch.cat([p, self.cheap(p)], 1)[:, :self.cout]


class GhostBottleneck(nn.Module):
    def __init__(self, c, cmid):
        super().__init__()
        self.ghost1, self.ghost2 = GhostModule(c, cmid), GhostModule(cmid, c, relu=False)

    def forward(self, x):
        return x + self.ghost2(self.ghost1(x))


def ghost():
    body = nn.Sequential(GhostBottleneck(16, 30), _cbn(16, 24, 3, 2), GhostBottleneck(24, 46))
    return _build(_Net(_cbn(3, 16, 3, 2), body, 24), (1, 3, 32, 32), 12)


class ShuffleUnit(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c // 2
        self.branch = nn.Sequential(_cbn(h, h), _cbn(h, h, 3, groups=h, act=None), _cbn(h, h))

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return F.channel_shuffle(torch.cat([a, self.branch(b)], 1), 2)


def shuffle():
    body = nn.Sequential(ShuffleUnit(24), ShuffleUnit(24), _cbn(24, 32, 3, 2), ShuffleUnit(32))
    return _build(_Net(_cbn(3, 24, 3, 2), body, 32), (1, 3, 32, 32), 13)


class MobileViTBlock(nn.Module):
    def __init__(self, c, d, patch=2, heads=2):
        super().__init__()
        self.p = patch
        self.local = nn.Sequential(_cbn(c, c, 3, act=nn.SiLU), nn.Conv2d(c, d, 1, bias=False))
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.proj = _cbn(d, c, act=nn.SiLU)
        self.fuse = _cbn(2 * c, c, 3, act=nn.SiLU)

    def forward(self, x):
        n, _, h, w = x.shape
        p = self.p
        y = self.local(x)
        d = y.shape[1]
        # unfold: [N, d, H, W] -> [N * p * p, (H / p) * (W / p), d] (each pixel of a patch attends its peers)
        t = y.reshape(n, d, h // p, p, w // p, p).permute(0, 3, 5, 2, 4, 1).reshape(n * p * p, -1, d)
        q = self.norm1(t)
        t = t + self.attn(q, q, q, need_weights=False)[0]
        t = t + self.ffn(self.norm2(t))
        # fold back
        y = t.reshape(n, p, p, h // p, w // p, d).permute(0, 5, 3, 1, 4, 2).reshape(n, d, h, w)
        return self.fuse(torch.cat([x, self.proj(y)], 1))


def mobilevit():
    body = nn.Sequential(_cbn(16, 24, 3, 2, act=nn.SiLU), MobileViTBlock(24, 32))
    return _build(_Net(_cbn(3, 16, 3, 2, act=nn.SiLU), body, 24), (1, 3, 32, 32), 14)


class LinearAttention(nn.Module):
    """out = phi(q) (phi(k)^T v) / (phi(q) . sum phi(k)), phi = elu + 1 (Katharopoulos et al. 2020)."""

    def __init__(self, d):
        super().__init__()
        self.qkv, self.out, self.norm = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)

    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = k.transpose(1, 2) @ v                          # [B, d, d]
        z = q @ k.sum(1, keepdim=True).transpose(1, 2)      # [B, L, 1]
        return x + self.out((q @ kv) / z)


class TokenClassifier(nn.Module):
    def __init__(self, features, d, classes=8):
        super().__init__()
        self.embed, self.block, self.head = nn.Linear(features, d), LinearAttention(d), nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.block(self.embed(x)).mean(1))


def linear_attention():
    return _build(TokenClassifier(12, 32), (1, 16, 12), 15)


class GruKws(nn.Module):
    """MFCC frames [N, 10, 49] -> a conv front end -> GRU -> the last step's 12 keyword logits."""

    def __init__(self):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(10, 32, 3, padding=1), nn.BatchNorm1d(32), nn.ReLU())
        self.gru = nn.GRU(32, 48, batch_first=True)
        self.head = nn.Linear(48, 12)

    def forward(self, x):
        y, _ = self.gru(self.front(x).transpose(1, 2))
        return self.head(y[:, -1])


def gru_kws():
    torch.manual_seed(16)  # nn.GRU's own init draws from the global generator
    return _build(GruKws(), (1, 10, 49), 16)


class ConvTDecoder(nn.Module):
    def __init__(self, latent=16):
        super().__init__()
        self.fc = nn.Linear(latent, 16 * 4 * 4)
        self.up = nn.Sequential(nn.ConvTranspose2d(16, 8, 4, 2, 1), nn.BatchNorm2d(8), nn.ReLU(),
                                nn.ConvTranspose2d(8, 1, 4, 2, 1), nn.Sigmoid())

    def forward(self, z):
        return self.up(F.relu(self.fc(z)).reshape(-1, 16, 4, 4))


def convt_decoder():
    torch.manual_seed(17)
    return _build(ConvTDecoder(), (1, 16), 17)


BLOCKS = {"mbv3": mbv3, "ghost": ghost, "shuffle": shuffle, "mobilevit": mobilevit,
          "linear_attention": linear_attention, "gru_kws": gru_kws, "convt_decoder": convt_decoder}
