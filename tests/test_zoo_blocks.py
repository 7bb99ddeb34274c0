"""The block types users bring (mcu.zoo.blocks): each compiles in int8 and float32 and runs on QEMU, device ==
reference bit for bit on the CI boards (M4, M3 soft float, M55 Helium), int8 >= 25 dB SQNR against the float
model, a16w8 >= 35 dB (on the M4), float32 within 1e-5 relative of torch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mcu
from mcu.metrics import relative_error, sqnr_db
from mcu.zoo.blocks import BLOCKS

pytestmark = pytest.mark.qemu
BOARDS = ["mps2-an386", "mps2-an385", "mps3-an547"]


def calibration(example, n: int = 16):
    g = torch.Generator().manual_seed(5)
    return [tuple(torch.randn(t.shape, generator=g) for t in example) for _ in range(n)]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    cache = {}

    def get(name, mode, board="mps2-an386"):
        if (name, mode, board) not in cache:
            model, example = BLOCKS[name]()
            out = tmp_path_factory.mktemp(f"{name}-{mode}-{board}")
            quantized = next((pkg.converted for (n, m, _), (_, _, pkg) in cache.items()
                              if (n, m) == (name, mode) and mode != "none"), None)
            if quantized is not None:  # calibrated once: the other boards take torchao's converted model
                pkg = mcu.compile(quantized, example, board=board, out_dir=out)
            else:
                pkg = mcu.compile(model, example, quantize=mode, board=board, out_dir=out,
                                  calibration=None if mode == "none" else calibration(example))
            cache[name, mode, board] = (model, example, pkg)
        return cache[name, mode, board]
    return get


def _outputs(model, example, pkg, mode):
    with torch.no_grad():
        want = model(*example).numpy()
    ref = pkg.reference(example)
    got = np.asarray(ref[0] if mode == "none" else pkg.dequantize_outputs(ref)[0], np.float32).reshape(want.shape)
    return want, got


@pytest.mark.parametrize("name", BLOCKS)
def test_block_int8_fidelity(name, compiled):
    model, example, pkg = compiled(name, "int8")
    want, got = _outputs(model, example, pkg, "int8")
    assert sqnr_db(want, got) >= 25, f"{name}: {sqnr_db(want, got):.1f} dB"


@pytest.mark.parametrize("name", BLOCKS)
def test_block_a16w8_fidelity_on_device(name, compiled):
    model, example, pkg = compiled(name, "a16w8")
    want, got = _outputs(model, example, pkg, "a16w8")
    assert sqnr_db(want, got) >= 35, f"{name}: {sqnr_db(want, got):.1f} dB"
    dev = np.asarray(mcu.run(pkg, example).outputs[0], np.float32).reshape(want.shape)
    assert np.array_equal(dev, got)


@pytest.mark.parametrize("name", BLOCKS)
def test_block_float32_equals_torch_on_device(name, compiled):
    model, example, pkg = compiled(name, "none")
    want, got = _outputs(model, example, pkg, "none")
    assert relative_error(got, want) <= 1e-5
    dev = np.asarray(mcu.run(pkg, example).outputs[0], np.float32).reshape(want.shape)
    assert np.array_equal(dev, got)


@pytest.mark.parametrize("name, board", [(n, b) for n in BLOCKS for b in BOARDS])
def test_block_int8_exact_on_board(name, board, compiled):
    model, example, pkg = compiled(name, "int8", board)
    ref = pkg.reference(example)
    dev = mcu.run(pkg, example).outputs
    assert all(np.array_equal(np.asarray(d).reshape(-1), np.asarray(r).reshape(-1))
               for d, r in zip(dev, pkg.dequantize_outputs(ref)))
