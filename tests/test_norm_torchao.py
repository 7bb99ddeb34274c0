"""Integer layer norm and RMS norm (aten's, hand-written, transformers') against torchao's converted model, which
runs the norm in float between Q/DQ: int8 equal, a16w8 within 1 LSB, at the norm's output."""
from __future__ import annotations

import pytest
import torch
from torch import nn

import mcu
from mcu.metrics import lsb_error
from test_norm_e2e import HandRMSNorm, HFRMSNorm


class LinearNorm(nn.Module):
    def __init__(self, norm: nn.Module):
        super().__init__()
        self.fc, self.norm = nn.Linear(16, 32), norm
        for p in norm.parameters():
            nn.init.uniform_(p, -1.5, 1.5)

    def forward(self, x):
        return self.norm(self.fc(x))


NORMS = {"layer_norm": lambda: nn.LayerNorm(32), "rms_norm": lambda: nn.RMSNorm(32),
         "hand_rms_norm": lambda: HandRMSNorm(32), "hf_rms_norm": lambda: HFRMSNorm(32)}


@pytest.mark.parametrize("name, mode", [(n, "int8") for n in NORMS] + [("layer_norm", "a16w8"), ("rms_norm", "a16w8")])
def test_norm_within_one_lsb_of_torchao(name, mode, tmp_path):
    """The norm's output (the model's) against torchao's converted model, which runs it in float between Q/DQ."""
    torch.manual_seed(4)
    model = LinearNorm(NORMS[name]()).eval()
    g = torch.Generator().manual_seed(6)
    xs = [(torch.randn(3, 16, generator=g) * 2,) for _ in range(12)]
    pkg = mcu.compile(model, xs[0], quantize=mode, calibration=xs[:8], board="mps2-an386", out_dir=tmp_path / "p")
    kernels = [n.call.kernel for n in pkg.graph.nodes if n.call]
    assert len(kernels) == 2 and "norm" in kernels[1] and not kernels[1].endswith("_f32"), kernels
    spec = pkg.manifest["outputs"][0]
    worst = max(lsb_error(pkg.reference(x)[0], pkg.torchao_reference(x)[0], spec["scale"], spec["zero_point"]).max()
                for x in xs)
    assert worst <= (0 if mode == "int8" else 1), worst
