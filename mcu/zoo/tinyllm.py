"""A tiny character-level language model trained on text that ships with Python (the standard library's module
docstrings), so that its accuracy on the device means something (issue #28). Seeded; two to three minutes on a CPU.

- Text: the docstrings of a fixed list of standard-library modules, ASCII only (bytes 0..127 are the vocabulary).
- Model: mcu.zoo.sequence.TinyLlamaStep (RMSNorm, RoPE, grouped-query attention, SwiGLU, tied embeddings) with
  vocab 128; trained on whole windows with `sequence_logits`, the same weights run causally over a window, then
  used one token at a time with its KV cache (the compiled form).
- Quantization-aware: the last `qat` steps train through per-row int8 weights (RowInt8, the quantizer's own grid)
  and int8-rounded attention activations (fake_int8), as a user would fine-tune for the device; the trained weights
  sit on the int8 grid, so storing them in int8 rounds nothing (without it, int8 weights alone cost 1.8 points of
  next-token agreement, more than all the int16 activations of the decoder defaults).
- `trained_tinyllm()` trains once and caches the weights under ~/.cache/mcu (keyed by the recipe); `windows()`
  gives held-out text windows for teacher-forced agreement.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.utils import parametrize

from mcu.zoo.sequence import TinyLlamaStep

MODULES = ("json", "textwrap", "string", "collections", "functools", "itertools", "pathlib", "re", "random",
           "statistics", "fractions", "decimal", "datetime", "argparse", "logging", "unittest", "typing", "heapq",
           "bisect", "shutil", "tempfile", "csv", "zipfile", "tarfile", "difflib", "pprint", "inspect", "enum")
RECIPE = dict(vocab=128, dim=64, layers=2, heads=8, kv_heads=4, hidden=172, cache=256, steps=1500, batch=32,
              window=64, lr=3e-3, seed=28, qat=500)


def corpus() -> bytes:
    """The training text: the listed modules' docstrings, ASCII, in a fixed order."""
    import importlib

    parts = []
    for name in MODULES:
        doc = importlib.import_module(name).__doc__ or ""
        parts.append(doc.encode("ascii", "ignore"))
    return b"\n\n".join(parts)


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


def fake_int8(x: torch.Tensor) -> torch.Tensor:
    """x through per-tensor affine int8 over its own range (the calibrated range's stand-in), gradients straight
    through: where the decoder defaults (mcu.quantization.decoder) keep activations int8."""
    lo, hi = x.detach().amin().clamp(max=0), x.detach().amax().clamp(min=0)
    scale = ((hi - lo) / 255).clamp_min(2 ** -20)
    zero = torch.round(-128 - lo / scale)
    return x + (((x / scale + zero).round().clamp(-128, 127) - zero) * scale - x).detach()


class RowInt8(torch.nn.Module):
    """A weight through per-row symmetric int8 (the quantizer's WEIGHT_QSPEC: scale max|w| / 127, [-127, 127]),
    gradients straight through: a parametrization while training, the snapped weight after."""

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        scale = (w.detach().abs().amax(1, keepdim=True) / 127).clamp_min(2 ** -20)
        return w + ((w / scale).round().clamp(-127, 127) * scale - w).detach()


def sequence_logits(model: TinyLlamaStep, tokens: torch.Tensor, fq=_identity) -> torch.Tensor:
    """Logits [B, T, vocab] of model run causally over token windows [B, T] (T <= its cache), with the weights and
    arithmetic of its one-token step (RoPE tables, the masked score, grouped-query attention). `fq` is applied where
    the int8 run keeps int8 activations (the attention's products and the cache): fake_int8 while training."""
    b, t = tokens.shape
    x = model.embed(tokens)
    cos, sin, mask = model.cos[:t], model.sin[:t], model.mask[:t, :t]
    for layer in model.layers:
        h = layer.norm1(x)
        q = fq(layer.rope(layer.wq(h).view(b, t, layer.heads, layer.hd).transpose(1, 2), cos, sin))
        k = fq(layer.rope(layer.wk(h).view(b, t, layer.kv_heads, layer.hd).transpose(1, 2), cos, sin))
        v = fq(layer.wv(h).view(b, t, layer.kv_heads, layer.hd).transpose(1, 2))
        group = layer.heads // layer.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = fq(fq(q @ k.transpose(-1, -2)) * layer.hd ** -0.5 + mask)
        x = x + layer.wo(fq(fq(torch.softmax(scores, -1)) @ v).transpose(1, 2).reshape(b, t, -1))
        h = layer.norm2(x)
        x = x + layer.w2(F.silu(layer.w1(h)) * layer.w3(h))
    return model.norm(x) @ model.embed.weight.t()


def _weights(model: TinyLlamaStep) -> list[torch.nn.Module]:
    """The modules whose weight the int8 run stores as per-row int8: the linear layers and the tied embedding
    (the output projection's rows)."""
    return [m for m in model.modules() if isinstance(m, torch.nn.Linear)] + [model.embed]


def train(recipe: dict = RECIPE, log=None) -> TinyLlamaStep:
    """Train the model of `recipe` on corpus() (90 % of it; the rest is held out). Its last `qat` steps are
    quantization-aware: the weights through per-row int8 (RowInt8) and the attention's int8 activations through
    fake_int8, so the model learns to keep its argmax under the int8 run's rounding; the trained weights are left on
    the int8 grid (the quantizer stores them exactly)."""
    torch.manual_seed(recipe["seed"])
    model = TinyLlamaStep(recipe["vocab"], recipe["dim"], recipe["layers"], recipe["heads"], recipe["kv_heads"],
                          recipe["hidden"], recipe["cache"])
    torch.nn.init.normal_(model.embed.weight, std=0.05)  # tied with the output: N(0, 1) would start at loss ~50
    data = torch.tensor(list(corpus()), dtype=torch.long)
    data = data[: int(0.9 * len(data))]
    g = torch.Generator().manual_seed(recipe["seed"])
    opt = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=0.01)
    w = recipe["window"]
    qat_from = recipe["steps"] - recipe.get("qat", 0)
    for step in range(recipe["steps"]):
        if step == qat_from:
            for module in _weights(model):
                parametrize.register_parametrization(module, "weight", RowInt8())
        starts = torch.randint(0, len(data) - w - 1, (recipe["batch"],), generator=g)
        x = torch.stack([data[s:s + w] for s in starts])
        y = torch.stack([data[s + 1:s + w + 1] for s in starts])
        logits = sequence_logits(model, x, fake_int8 if step >= qat_from else _identity)
        loss = F.cross_entropy(logits.reshape(-1, recipe["vocab"]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        for group in opt.param_groups:
            group["lr"] = recipe["lr"] * 0.5 * (1 + torch.cos(torch.tensor(step / recipe["steps"] * 3.14159)).item())
        if log is not None and step % 100 == 0:
            log(f"step {step}: loss {loss.item():.3f}")
    if qat_from < recipe["steps"]:
        for module in _weights(model):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
    return model.eval()


def fresh_model(model: TinyLlamaStep | None = None) -> TinyLlamaStep:
    """A TinyLlamaStep of RECIPE's shape with an empty cache (model's weights when given)."""
    r = RECIPE
    fresh = TinyLlamaStep(r["vocab"], r["dim"], r["layers"], r["heads"], r["kv_heads"], r["hidden"], r["cache"])
    if model is not None:
        fresh.load_state_dict(model.state_dict())
    return fresh.eval()


def trained_tinyllm(log=None) -> tuple[TinyLlamaStep, tuple]:
    """(the trained model, example inputs: token and position), trained once per recipe and cached."""
    key = hashlib.sha256(repr(sorted(RECIPE.items())).encode() + corpus()).hexdigest()[:16]
    cache = Path(os.environ.get("MCU_CACHE", Path.home() / ".cache" / "mcu")) / f"tinyllm-{key}.pt"
    r = RECIPE
    model = TinyLlamaStep(r["vocab"], r["dim"], r["layers"], r["heads"], r["kv_heads"], r["hidden"], r["cache"])
    if cache.is_file():
        model.load_state_dict(torch.load(cache, weights_only=True))
    else:
        model = train(log=log)
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        torch.save(model.state_dict(), tmp)
        os.replace(tmp, cache)
    return model.eval(), (torch.tensor([[10]]), torch.tensor([0]))


def windows(n: int, length: int = RECIPE["window"]) -> list[list[int]]:
    """n held-out windows of `length` characters (the last 10 % of the text)."""
    data = list(corpus())
    held = data[int(0.9 * len(data)):]
    step = max((len(held) - length) // max(n, 1), 1)
    return [held[i * step:i * step + length] for i in range(n)]
