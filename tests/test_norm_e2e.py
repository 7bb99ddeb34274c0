"""Norms and softmax without a float island, end to end in int8 and a16w8: nn.LayerNorm, nn.RMSNorm and the
hand-written llama RMSNorm each become one integer kernel call (no dequantize, quantize or mcu_layer_norm_f32), a
softmax over a dim other than the last runs as permutes around the integer softmax, and the device equals the
reference bit for bit (the M4, and the norms on the M55)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.metrics import sqnr_db

pytestmark = pytest.mark.qemu


class HandRMSNorm(nn.Module):
    """llama's RMSNorm as it is written by hand."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class HFRMSNorm(nn.Module):
    """transformers' LlamaRMSNorm: float32 casts around the statistic, the weight on the left."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.variance_epsilon, self.weight = eps, nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.ln, self.fc2 = nn.Linear(16, 24), nn.LayerNorm(24), nn.Linear(24, 24)
        self.rms, self.hand, self.fc3 = nn.RMSNorm(24), HandRMSNorm(24), nn.Linear(24, 8)
        for norm in (self.ln, self.rms):
            for p in norm.parameters():
                nn.init.uniform_(p, 0.5, 1.5)

    def forward(self, x):
        return self.fc3(self.hand(self.rms(self.fc2(self.ln(self.fc1(x))))))


@pytest.fixture(scope="module")
def block():
    torch.manual_seed(5)
    return Block().eval()


@pytest.mark.parametrize("mode, board", [("int8", "mps2-an386"), ("int8", "mps3-an547"), ("a16w8", "mps2-an386")])
def test_norms_are_integer_and_the_device_equals_the_reference(block, mode, board, tmp_path):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 5, 16, generator=g)
    calib = [(torch.randn(1, 5, 16, generator=g),) for _ in range(8)] + [(x,)]
    pkg = mcu.compile(block, (x,), quantize=mode, calibration=calib, board=board, out_dir=tmp_path / "p")
    kernels = [n.call.portable for n in pkg.graph.nodes if n.call]
    sfx = "s8" if mode == "int8" else "s16"
    assert kernels.count(f"mcu_layer_norm_{sfx}") == 1 and kernels.count(f"mcu_rms_norm_{sfx}") == 2, kernels
    assert not any("quantize" in k or k.endswith("_f32") for k in kernels), kernels
    assert not pkg.manifest["fallbacks"]
    ref = pkg.reference((x,))
    dev = mcu.run(pkg, (x,))
    np.testing.assert_array_equal(dev.raw_outputs[0], ref[0])
    with torch.no_grad():
        want = block(x).numpy()
    got = np.asarray(pkg.dequantize_outputs(ref)[0], np.float32).reshape(want.shape)
    assert sqnr_db(want, got) >= (25 if mode == "int8" else 35), sqnr_db(want, got)


class SoftmaxOverTokens(nn.Module):
    """softmax over dim 1 of [B, L, D] (not the last dim): permuted to the last, the integer softmax, permuted back."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(torch.softmax(self.fc1(x), 1))


@pytest.mark.parametrize("mode", ["int8", "a16w8"])
def test_softmax_over_a_middle_dim_is_integer(mode, tmp_path):
    torch.manual_seed(2)
    model = SoftmaxOverTokens().eval()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 6, 8, generator=g)
    calib = [(torch.randn(2, 6, 8, generator=g),) for _ in range(8)] + [(x,)]
    pkg = mcu.compile(model, (x,), quantize=mode, calibration=calib, board="mps2-an386", out_dir=tmp_path / "p")
    kernels = [n.call.portable for n in pkg.graph.nodes if n.call]
    sfx = "s8" if mode == "int8" else "s16"
    assert f"mcu_softmax_{sfx}" in kernels and kernels.count(f"mcu_transpose_{sfx}") == 2, kernels
    assert not any("quantize" in k or k.endswith("_f32") for k in kernels), kernels
    ref = pkg.reference((x,))
    np.testing.assert_array_equal(mcu.run(pkg, (x,)).raw_outputs[0], ref[0])
    with torch.no_grad():
        want = model(x).numpy()
    got = np.asarray(pkg.dequantize_outputs(ref)[0], np.float32).reshape(want.shape)
    assert sqnr_db(want, got) >= (25 if mode == "int8" else 35), sqnr_db(want, got)


class RmsBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.norm, self.out = nn.Linear(16, 16), nn.RMSNorm(16, eps=1e-5), nn.Linear(16, 4)

    def forward(self, x):
        return self.out(self.norm(self.fc(x)))


def test_an_rms_norm_left_float_is_a_float_island_on_the_device(tmp_path):
    """mixed={"norm": "float32"} (what target_sqnr may pick): mcu_layer_norm_f32 without the mean, device ==
    reference, the int8 rest around it."""
    torch.manual_seed(0)
    model = RmsBlock().eval()
    with torch.no_grad():
        model.norm.weight.uniform_(0.5, 1.5)
    calib = [(torch.randn(1, 16),) for _ in range(16)]
    pkg = mcu.compile(model, calib[0], calibration=calib, mixed={"norm": "float32"}, out_dir=tmp_path / "p")
    kernels = [op["kernel"] for op in pkg.manifest["ops"]]
    assert kernels[1:4] == ["mcu_dequantize_s8_f32", "mcu_layer_norm_f32", "mcu_quantize_f32_s8"], kernels
    with torch.no_grad():
        want = np.concatenate([model(*x).numpy() for x in calib])
    got = np.concatenate([pkg.dequantize_outputs(pkg.reference(x))[0] for x in calib])
    assert sqnr_db(want, got) >= 35
    np.testing.assert_array_equal(mcu.run(pkg, calib[1]).raw_outputs[0], pkg.reference(calib[1])[0])
