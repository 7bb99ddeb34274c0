"""Sequence and language models of our own (seeded weights): streaming ones keep their state in buffers, the way
torch.export expresses state, so the compiled model keeps it in its state region between calls. Each function
returns (model, example_inputs); `sequence_calibration(name, n)` gives n inputs run in order.

- kws_stream: a keyword spotter fed one 10-feature MFCC frame per call: a per-frame front end, a GRU cell whose
  hidden state is kept, 12 keyword logits every frame; KwsSequence is the same model over a whole utterance;
- lid: language identification over byte ids: embedding, a conv1d, ReLU, mean over time, 8 languages;
- bwe: a bandwidth-estimation-like regressor: 8 network features per call, an LSTM cell whose h and c are kept,
  one estimate per call;
- tinyllama_step: a llama-style decoder step (RMSNorm, RoPE, grouped-query attention, SwiGLU, tied embeddings): one
  token id and its position in, next-token logits out, a KV cache of CACHE positions per layer kept as state.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

FRAMES, MFCC = 49, 10


def _seeded(model: nn.Module, seed: int) -> nn.Module:
    """Weights drawn from a seeded generator (uniform +-1/sqrt(fan_in), PyTorch's default scale), eval mode."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            fan_in = p.shape[1] if p.dim() > 1 else p.shape[0]
            if isinstance(model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model, nn.Embedding):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            else:
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * fan_in ** -0.5)
    return model.eval()


class KwsStream(nn.Module):
    """One MFCC frame [1, 10] per call -> 12 keyword logits; the GRU state h [1, 48] kept between calls."""

    def __init__(self):
        super().__init__()
        self.front = nn.Linear(MFCC, 32)
        self.cell = nn.GRUCell(32, 48)
        self.head = nn.Linear(48, 12)
        self.register_buffer("h", torch.zeros(1, 48))

    def forward(self, frame):
        h = self.cell(torch.relu(self.front(frame)), self.h)
        self.h.copy_(h)
        return self.head(h)


class KwsSequence(nn.Module):
    """KwsStream's weights over a whole utterance [1, 10, 49]: the logits after the last frame."""

    def __init__(self, stream: KwsStream):
        super().__init__()
        self.front, self.cell, self.head = stream.front, stream.cell, stream.head

    def forward(self, x):
        h = torch.zeros(1, self.cell.hidden_size)
        for t in range(x.shape[-1]):
            h = self.cell(torch.relu(self.front(x[:, :, t])), h)
        return self.head(h)


def kws_stream():
    model = _seeded(KwsStream(), 21)
    return model, (torch.randn(1, MFCC, generator=torch.Generator().manual_seed(121)),)


class Lid(nn.Module):
    """Byte ids [1, 64] -> 8 language logits: embedding 256 x 32, conv1d 32 -> 64 (k 3), ReLU, mean, linear."""

    def __init__(self, vocab=256, dim=32, classes=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.conv = nn.Conv1d(dim, 64, 3, padding=1)
        self.head = nn.Linear(64, classes)

    def forward(self, tokens):
        x = self.embed(tokens).transpose(1, 2)
        return self.head(torch.relu(self.conv(x)).mean(-1))


def lid():
    model = _seeded(Lid(), 22)
    return model, (torch.randint(0, 256, (1, 64), generator=torch.Generator().manual_seed(122)),)


class Bwe(nn.Module):
    """8 network features per call -> one bandwidth estimate; the LSTM's h and c [1, 32] kept between calls."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(8, 32)
        self.head = nn.Linear(32, 1)
        self.register_buffer("h", torch.zeros(1, 32))
        self.register_buffer("c", torch.zeros(1, 32))

    def forward(self, features):
        h, c = self.cell(features, (self.h, self.c))
        self.h.copy_(h)
        self.c.copy_(c)
        return self.head(h)


def bwe():
    model = _seeded(Bwe(), 23)
    return model, (torch.randn(1, 8, generator=torch.Generator().manual_seed(123)),)


CACHE = 256  # positions of tinyllama_step's KV cache (issue #28: a 256-position cache)
MASKED = -30.0  # a masked score: exp(-30) is 1e-13 of a kept one, and the range stays small enough for int8


class DecoderLayer(nn.Module):
    """One llama block at one position: attention over the cache (its rows written at `pos`), then SwiGLU."""

    def __init__(self, dim: int, heads: int, kv_heads: int, hidden: int, cache: int = CACHE):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.norm1, self.norm2 = nn.RMSNorm(dim, eps=1e-5), nn.RMSNorm(dim, eps=1e-5)
        self.wq, self.wk = nn.Linear(dim, dim, bias=False), nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wv, self.wo = nn.Linear(dim, kv_heads * self.hd, bias=False), nn.Linear(dim, dim, bias=False)
        self.w1, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.register_buffer("k_cache", torch.zeros(kv_heads, cache, self.hd))  # 3-d: heads, positions, dims
        self.register_buffer("v_cache", torch.zeros(kv_heads, cache, self.hd))

    def rope(self, x, cos, sin):
        a, b = x[..., : self.hd // 2], x[..., self.hd // 2:]
        return x * cos + torch.cat([-b, a], -1) * sin

    def forward(self, x, pos, cos, sin, mask):
        h = self.norm1(x)
        q = self.rope(self.wq(h).view(self.heads, 1, self.hd), cos, sin)
        k = self.rope(self.wk(h).view(self.kv_heads, 1, self.hd), cos, sin)
        v = self.wv(h).view(self.kv_heads, 1, self.hd)
        self.k_cache[:, pos] = k
        self.v_cache[:, pos] = v
        group = self.heads // self.kv_heads
        keys = self.k_cache.repeat_interleave(group, dim=0)
        values = self.v_cache.repeat_interleave(group, dim=0)
        scores = q @ keys.transpose(-1, -2) * self.hd ** -0.5 + mask
        attn = (torch.softmax(scores, -1) @ values).reshape(1, 1, -1)
        x = x + self.wo(attn)
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class TinyLlamaStep(nn.Module):
    """A token id [1, 1] and its position [1] -> logits [1, 1, vocab]; each layer's KV cache kept as state."""

    def __init__(self, vocab=512, dim=64, layers=2, heads=8, kv_heads=4, hidden=172, cache=CACHE):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(DecoderLayer(dim, heads, kv_heads, hidden, cache) for _ in range(layers))
        self.norm = nn.RMSNorm(dim, eps=1e-5)
        hd = dim // heads
        angles = torch.arange(cache)[:, None] * 10000.0 ** (-torch.arange(0, hd, 2) / hd)
        self.register_buffer("cos", torch.cat([angles.cos(), angles.cos()], -1))  # [cache, hd]
        self.register_buffer("sin", torch.cat([angles.sin(), angles.sin()], -1))
        self.register_buffer("mask", torch.full((cache, cache), MASKED).triu(1))  # row p: 0 up to p

    def forward(self, token, pos):
        x = self.embed(token)
        cos, sin, mask = self.cos[pos], self.sin[pos], self.mask[pos]
        for layer in self.layers:
            x = layer(x, pos, cos, sin, mask)
        return self.norm(x) @ self.embed.weight.t()


def tinyllama_step():
    model = _seeded(TinyLlamaStep(), 24)
    return model, (torch.tensor([[1]]), torch.tensor([0]))


SEQUENCE = {"kws_stream": kws_stream, "lid": lid, "bwe": bwe, "tinyllama_step": tinyllama_step}


def sequence_calibration(name: str, n: int = 64, seed: int = 0) -> list[tuple[torch.Tensor]]:
    """n seeded inputs for model `name`, drawn like its example input (run in order for the streaming ones: a
    smooth random walk for bwe's features, token ids for lid)."""
    g = torch.Generator().manual_seed(2000 + seed)
    if name == "lid":
        return [(torch.randint(0, 256, (1, 64), generator=g),) for _ in range(n)]
    if name == "tinyllama_step":  # a stream of tokens at positions 0, 1, ... (wrapping at the cache's end)
        return [(torch.randint(0, 512, (1, 1), generator=g), torch.tensor([k % CACHE])) for k in range(n)]
    if name == "bwe":
        walk = torch.cumsum(0.3 * torch.randn(n, 1, 8, generator=g), 0)
        return [(walk[k],) for k in range(n)]
    return [(torch.randn(1, MFCC, generator=g),) for _ in range(n)]
