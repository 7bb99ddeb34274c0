"""The deep depthwise test networks (issue 16): well-conditioned floats, and what int8 PTQ reaches by default."""
from __future__ import annotations

import pytest
import torch

from mcu.importer.export import export
from mcu.metrics import sqnr_db
from mcu.quantization.quantizer import quantize
from mcu.zoo import deep


@pytest.mark.parametrize("name, conditioning, int8_db", [("mobilenet_v2", 48.9, 31.3), ("mnasnet_se", 43.6, 21.4)])
def test_deep_network_conditioning_and_default_int8_sqnr(name, conditioning, int8_db):
    model, example = deep.DEEP[name]()
    held_out = deep.calibration_set(10, seed=50)
    # 1e-3 relative noise on every float weight: the network itself must not amplify it into the quantizer's range
    assert deep.conditioning(model, held_out) == pytest.approx(conditioning, abs=0.05)
    with torch.no_grad():
        want = [model(*x).numpy() for x in held_out]
        q = quantize(export(model, example), example, deep.calibration_set(16))
        got = [q(*x).numpy() for x in held_out]
    # torchao's converted model, default options. torch's float kernels round differently per CPU (ISA dispatch),
    # which moves the calibrated ranges: measured 31.3 / 21.4 dB on one Xeon, 31.0 / 22.4 on another, 31.0 with
    # AVX2 forced; a real regression of the quantizer costs more than the 1.5 dB allowed here.
    assert sqnr_db(want, got) == pytest.approx(int8_db, abs=1.5)
