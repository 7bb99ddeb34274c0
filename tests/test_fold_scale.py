"""fold_scale: a positive number multiplying an integer matmul's output joins the matmul's requantization (one
rounding, no table pass), for a product of two activations and for one with a constant (a fully connected layer);
a negative number, or a float matmul, keeps its own op. The result stays within 1 LSB of torchao's Q/DQ model."""
from __future__ import annotations

import pytest
import torch
from torch import nn

import mcu
from mcu import metrics


class Scaled(nn.Module):
    def __init__(self, c: float, const: bool):
        super().__init__()
        self.c, self.const = c, const
        self.register_buffer("w", torch.randn(8, 6, generator=torch.Generator().manual_seed(3)))

    def forward(self, x, y):
        return (x @ (self.w if self.const else y.transpose(-1, -2))) * self.c


@pytest.mark.parametrize("c, const, folded", [(0.35, False, True), (0.5, True, True), (-0.5, False, False)])
def test_a_scale_after_a_matmul_joins_its_requantization(c, const, folded, tmp_path):
    g = torch.Generator().manual_seed(1)
    example = (torch.randn(1, 4, 8, generator=g), torch.randn(1, 6, 8, generator=g))
    calib = [(torch.randn(1, 4, 8, generator=g), torch.randn(1, 6, 8, generator=g)) for _ in range(8)]
    pkg = mcu.compile(Scaled(c, const).eval(), example, calibration=calib, out_dir=tmp_path / "pkg")
    kernels = [n.call.kernel for n in pkg.graph.nodes if n.op == "call"]
    assert any(k.startswith("mcu_lut") for k in kernels) != folded, kernels
    spec = pkg.manifest["outputs"][0]
    for x in calib[:4]:
        err = metrics.lsb_error(pkg.reference(x)[0], pkg.torchao_reference(x)[0], spec["scale"], spec["zero_point"])
        assert err.max() <= 1 and (err > 0).mean() <= 0.1, (err.max(), (err > 0).mean())
