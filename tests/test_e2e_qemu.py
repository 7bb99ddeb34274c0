"""End to end on QEMU: compiled models on every board equal the numpy integer reference bit for bit."""
import numpy as np
import pytest
import torch

import mcu
from mcu.metrics import sqnr_db
from mcu.zoo.example import calibration_set, example_cnn
from tests.opmodels import OP_MODELS, make

BOARDS = ["mps2-an386", "mps2-an385", "mps3-an547"]

pytestmark = pytest.mark.qemu


def assert_equal_int(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Exact equality; on failure name the first mismatching index and both values."""
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    bad = np.argwhere(actual != expected)
    if len(bad):
        i = tuple(bad[0])
        raise AssertionError(f"{what}: {len(bad)} mismatches; first at {i}: device {actual[i]} vs "
                             f"reference {expected[i]}")


@pytest.fixture(scope="module")
def example_model():
    return example_cnn()


@pytest.mark.parametrize("board", BOARDS)
def test_example_cnn_is_exact_and_accurate(board, example_model, tmp_path):
    model, example = example_model
    pkg = mcu.compile(model, example, board=board, calibration=calibration_set(16), out_dir=tmp_path / "pkg")
    worst = float("inf")
    for seed in (1234, 7):
        x = calibration_set(1, seed=seed)[0]
        res = mcu.run(pkg, x)
        assert_equal_int(res.raw_outputs[0], pkg.reference(x)[0], f"example on {board}")
        worst = min(worst, sqnr_db(model(*x).detach().numpy(), res.outputs[0]))
        assert res.instructions > 100_000
    assert worst >= 30.0, f"SQNR {worst:.1f} dB < 30 dB"


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", sorted(OP_MODELS))
def test_single_op_models_are_exact_on_device(name, board, tmp_path):
    model, example, calib = make(name)
    pkg = mcu.compile(model, example, board=board, calibration=calib, out_dir=tmp_path / "pkg")
    g = torch.Generator().manual_seed(5)
    x = tuple(torch.randn(e.shape, generator=g) * 1.5 for e in example)  # some inputs saturate
    res = mcu.run(pkg, x)
    if not pkg.manifest["fallbacks"]:
        assert_equal_int(res.raw_outputs[0], pkg.reference(x)[0], f"{name} on {board}")
        return
    # Float32 fallback ops: tolerance 1 LSB. The C and numpy do the same IEEE single operations in the same
    # order, but a core's float library (soft float, or the FPU) is not held to be bit-identical to numpy.
    diff = np.abs(res.raw_outputs[0].astype(np.int64) - pkg.reference(x)[0].astype(np.int64))
    assert diff.max() <= 1, f"{name} on {board}: {int(diff.max())} LSB off at flat index {int(diff.argmax())}"
