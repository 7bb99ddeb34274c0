"""Composite ops through their primitives (mcu.importer.decompose): norms, variance, logsumexp, log_softmax, vector norms,
clamp by tensors, PReLU, attention, GRU and LSTM, pixel and channel shuffles, tile/expand/repeat.

Each case compiles for mps2-an386 (Cortex-M4) and runs on QEMU:
- float32: device == reference bit for bit, and within 1e-5 relative of torch;
- int8: device == reference bit for bit, and >= 25 dB SQNR against torch's float model (seeded weights and
  inputs, calibrated on 8 random batches plus the input); a16w8 the same at >= 35 dB.
A norm's statistic is one float island (one dequantize into it, one quantize out), not a requantize per primitive.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import mcu
from mcu.metrics import relative_error, sqnr_db

pytestmark = pytest.mark.qemu


class Fn(nn.Module):
    def __init__(self, f, m: nn.Module | None = None):
        super().__init__()
        self.f, self.m = f, m

    def forward(self, x):
        return self.f(x) if self.m is None else self.f(self.m, x)


def _affine(m: nn.Module) -> nn.Module:
    for p in m.parameters():
        nn.init.normal_(p)
    return m


CASES = {
    "group_norm": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), _affine(nn.GroupNorm(2, 4))), (1, 3, 6, 6)),
    "instance_norm": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), _affine(nn.InstanceNorm2d(4, affine=True))),
                      (1, 3, 6, 6)),
    "rms_norm": (lambda: nn.Sequential(nn.Linear(8, 8), _affine(nn.RMSNorm(8))), (1, 3, 8)),
    "var": (lambda: nn.Sequential(nn.Linear(5, 5), Fn(lambda x: x.var(1, keepdim=True))), (2, 5)),
    "std": (lambda: nn.Sequential(nn.Linear(5, 5), Fn(lambda x: x.std(1))), (2, 5)),
    "logsumexp": (lambda: nn.Sequential(nn.Linear(5, 5), Fn(lambda x: x.logsumexp(1))), (2, 5)),
    "log_softmax": (lambda: nn.Sequential(nn.Linear(5, 5), nn.LogSoftmax(-1)), (2, 5)),
    "softmin": (lambda: nn.Sequential(nn.Linear(5, 5), nn.Softmin(-1)), (2, 5)),
    "normalize": (lambda: nn.Sequential(nn.Linear(5, 5), Fn(lambda x: F.normalize(x, dim=1))), (2, 5)),
    "amax_amin_prod": (lambda: Fn(lambda x: x.amax(1) + x.amin(1) - x.prod(1) * 0.1), (2, 3, 4)),
    "clamp_tensor": (lambda: Fn(lambda x: torch.clamp(x, x * 0.5 - 0.2, x * 0.5 + 0.3)), (2, 5)),
    "prelu": (lambda: nn.Sequential(nn.Conv1d(3, 3, 1), nn.PReLU(3), nn.PReLU()), (1, 3, 4)),
    "sdpa": (lambda: Fn(lambda x: F.scaled_dot_product_attention(x, x * 0.5, x)), (1, 2, 4, 8)),
    "sdpa_causal": (lambda: Fn(lambda x: F.scaled_dot_product_attention(x, x * 0.5, x, is_causal=True)),
                    (1, 2, 4, 8)),
    "multihead_attention": (lambda: Fn(lambda m, x: m(x, x, x, need_weights=False)[0],
                                       nn.MultiheadAttention(8, 2, batch_first=True)), (1, 3, 8)),
    "glu": (lambda: nn.Sequential(nn.Linear(6, 6), nn.GLU(-1)), (2, 6)),
    "pixel_shuffle": (lambda: nn.Sequential(nn.Conv2d(2, 8, 1), nn.PixelShuffle(2)), (1, 2, 3, 3)),
    "pixel_unshuffle": (lambda: nn.Sequential(nn.Conv2d(2, 2, 1), nn.PixelUnshuffle(2)), (1, 2, 4, 4)),
    "channel_shuffle": (lambda: nn.Sequential(nn.Conv2d(2, 4, 1), nn.ChannelShuffle(2)), (1, 2, 2, 2)),
    "unflatten_movedim": (lambda: Fn(lambda x: (x * 2).unflatten(1, (2, 3)).movedim(1, 0)), (2, 6)),
    "tile_expand_repeat": (lambda: Fn(lambda x: torch.cat([(x * 2).tile(2), x[:, :1].expand(2, 12),
                                                           x.repeat(1, 2)], 0)), (2, 6)),
    "roll_flip_stack": (lambda: Fn(lambda x: torch.stack([(x * 2).roll((1, -1), (0, 2)), x.flip((0, 2)),
                                                           x.roll(3)], 1)), (2, 3, 4)),
    "pad_reflect_replicate_circular": (lambda: Fn(lambda x: F.pad(F.pad(F.pad(x * 2, (1, 2, 2, 1), mode="reflect"),
                                                                     (2, 0, 1, 1), mode="replicate"),
                                                               (1, 1, 1, 0), mode="circular")), (1, 2, 4, 5)),
    "constant_pad": (lambda: Fn(lambda x: F.max_pool2d(F.pad(x * 2, (1, 2, 0, 1, 1, 0), value=0.5), 2)), (1, 2, 4, 5)),
    "cumsum": (lambda: nn.Sequential(nn.Linear(5, 5), Fn(lambda x: x.cumsum(1) + x.cumsum(0))), (2, 5)),
    "cosine_similarity": (lambda: nn.Sequential(nn.Linear(5, 6), Fn(lambda x: F.cosine_similarity(x[:, :3], x[:, 3:], 1))),
                          (2, 5)),
    "conv_transpose2d": (lambda: nn.Sequential(nn.Conv2d(2, 4, 1), nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1,
                                                                                      output_padding=1)), (1, 2, 4, 4)),
    "conv_transpose2d_grouped": (lambda: nn.Sequential(nn.Conv2d(2, 4, 1), nn.ConvTranspose2d(4, 6, (3, 2), groups=2,
                                                                                              padding=(2, 0))), (1, 2, 4, 4)),
    "conv_transpose1d": (lambda: nn.Sequential(nn.Conv1d(2, 4, 1), nn.ConvTranspose1d(4, 3, 4, stride=2, padding=1)),
                         (1, 2, 6)),
    "bilinear_bicubic_uneven_nearest": (lambda: nn.Sequential(nn.Conv2d(2, 3, 1), Fn(lambda x: torch.cat([
        F.interpolate(x, scale_factor=(1.6, 2), mode="bilinear"), F.interpolate(x, size=(8, 8), mode="bilinear",
                                                                         align_corners=True),
        F.interpolate(x, size=(8, 8), mode="bicubic"), F.interpolate(x, size=(8, 8), mode="nearest")], 1))),
                                        (1, 2, 5, 4)),
    "adaptive_pool_uneven": (lambda: nn.Sequential(nn.Conv2d(2, 3, 1), nn.AdaptiveAvgPool2d((3, 5))), (1, 2, 8, 8)),
    "where_comparisons": (lambda: nn.Sequential(nn.Linear(6, 6), Fn(
        lambda x: torch.where((x > 0.1) & ~(x >= 0.8) | (x == x[:, :1]), x * 2, -x).masked_fill(x < -0.5, 0.25)
        + (x != 0.3) * 0.5)), (2, 6)),
    "gru": (lambda: Fn(lambda m, x: m(x)[0], nn.GRU(4, 6, batch_first=True)), (1, 3, 4)),
    "lstm_2_layers": (lambda: Fn(lambda m, x: m(x)[0], nn.LSTM(4, 6, num_layers=2)), (3, 1, 4)),
}


def _run(name: str, mode: str, tmp_path):
    make, shape = CASES[name]
    torch.manual_seed(1)
    model = make().eval()
    x = torch.randn(shape)
    calib = None if mode == "none" else [(torch.randn(shape),) for _ in range(8)] + [(x,)]
    pkg = mcu.compile(model, (x,), quantize=mode, calibration=calib, out_dir=tmp_path / "pkg", board="mps2-an386")
    with torch.no_grad():
        want = model(x).numpy()
    ref = pkg.reference((x,))
    got = np.asarray(ref[0] if mode == "none" else pkg.dequantize_outputs(ref)[0], np.float32).reshape(want.shape)
    dev = np.asarray(mcu.run(pkg, (x,)).outputs[0], np.float32).reshape(want.shape)
    return pkg, want, got, dev


@pytest.mark.parametrize("name", CASES)
def test_float32_composite_equals_torch(name, tmp_path):
    _, want, got, dev = _run(name, "none", tmp_path)
    assert np.array_equal(dev, got), f"{name}: device != reference"
    assert relative_error(got, want) <= 1e-5, f"{name}: relative error {relative_error(got, want):.2e}"


@pytest.mark.parametrize("name", CASES)
def test_int8_composite_within_25_db(name, tmp_path):
    _, want, got, dev = _run(name, "int8", tmp_path)
    assert np.array_equal(dev, got), f"{name}: device != reference"
    assert sqnr_db(want, got) >= 25, f"{name}: SQNR {sqnr_db(want, got):.1f} dB"


@pytest.mark.parametrize("name", CASES)
def test_a16w8_composite_within_35_db(name, tmp_path):
    """a16w8 runs everything int8 does: int16 kernels where they exist, float islands for the rest (matmul,
    sums, upsampling, non-spatial means)."""
    _, want, got, dev = _run(name, "a16w8", tmp_path)
    assert np.array_equal(dev, got), f"{name}: device != reference"
    assert sqnr_db(want, got) >= 35, f"{name}: SQNR {sqnr_db(want, got):.1f} dB"


def test_group_norm_statistic_is_one_float_island(tmp_path):
    pkg, *_ = _run("group_norm", "int8", tmp_path)
    kernels = [op["kernel"] for op in pkg.manifest["ops"]]
    assert kernels.count("mcu_dequantize_s8_f32") == 1 and kernels.count("mcu_quantize_f32_s8") == 1, kernels
    assert kernels[-1].startswith("mcu_dwconv2d") or "dwconv" in kernels[-1], kernels  # the affine: int8


def test_gru_state_in_and_out_streams(tmp_path):
    """A streaming keyword spotter carries the GRU state between calls: (x, h) -> (y, h')."""
    class Streaming(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(4, 6, batch_first=True)

        def forward(self, x, h):
            y, h = self.gru(x, h)
            return y, h

    torch.manual_seed(0)
    model = Streaming().eval()
    x, h = torch.randn(1, 3, 4), torch.zeros(1, 1, 6)
    pkg = mcu.compile(model, (x, h), quantize="none", out_dir=tmp_path / "pkg", board="mps2-an386")
    for _ in range(2):  # two chunks, the state carried by the caller
        with torch.no_grad():
            want_y, want_h = (t.numpy() for t in model(x, h))
        ref = pkg.reference((x, h))
        dev = mcu.run(pkg, (x, h)).outputs
        assert all(np.array_equal(np.asarray(d).reshape(-1), np.asarray(r).reshape(-1)) for d, r in zip(dev, ref))
        assert relative_error(np.asarray(ref[0]).reshape(want_y.shape), want_y) <= 1e-5
        assert relative_error(np.asarray(ref[1]).reshape(want_h.shape), want_h) <= 1e-5
        x, h = torch.randn(1, 3, 4), torch.from_numpy(np.asarray(ref[1], np.float32).reshape(1, 1, 6))


def test_every_composite_op_is_accepted_and_decomposed():
    from mcu.importer.decompose import COMPOSITES, CONSTANT_OPS
    from mcu.importer.ops import COMPOSITE_OPS, SUPPORTED_OPS
    assert set(COMPOSITES) | CONSTANT_OPS == COMPOSITE_OPS
    assert COMPOSITE_OPS <= SUPPORTED_OPS
