"""Views a user's attention and ghost blocks take of a tensor: split, chunk, unbind, narrow, a channel slice and
select all become mcu_slice (mcu.importer.rewrites.views_as_slices); eval-mode dropout vanishes; a training-mode BatchNorm
is refused. C == twin for the slice kernels; device == reference on QEMU in int8 and float32."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hostc
import mcu
from mcu.codegen.twins.shape import slice_s8
from mcu.errors import UnsupportedOpError
from mcu.metrics import relative_error, sqnr_db


class Pieces(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc, self.drop = nn.Conv2d(3, 12, 3, padding=1), nn.Linear(8, 6), nn.Dropout(0.2)

    def forward(self, x):
        y = self.drop(torch.relu(self.conv(x)))  # [1, 12, 8, 8]
        a, b, c = y.split(4, dim=1)
        q, k = y.chunk(2, dim=-1)
        u = y.flatten(2).unbind(1)[3]
        return a + b + c, y[:, :6] + y[:, 6:], q - k, self.fc(u.reshape(1, 8, 8)), y.narrow(2, 2, 4), y.select(1, 5)


@pytest.fixture(scope="module")
def lib():
    return hostc.build([hostc.KERNELS / "shape" / "mcu_slice_s8.c", hostc.KERNELS / "s16" / "mcu_slice_s16.c",
                        hostc.KERNELS / "float" / "mcu_slice_f32.c"])


@pytest.mark.host_c
def test_slice_kernels_equal_their_twin(lib):
    rng = np.random.default_rng(3)
    for kernel, dtype in (("mcu_slice_s8", np.int8), ("mcu_slice_s16", np.int16), ("mcu_slice_f32", np.float32)):
        for _ in range(60):
            outer, in_len, inner = (int(v) for v in rng.integers(1, 7, 3))
            step = int(rng.integers(1, 4))
            start = int(rng.integers(0, in_len))
            out_len = int(rng.integers(1, (in_len - 1 - start) // step + 2))
            p = {"outer": outer, "in_len": in_len, "out_len": out_len, "start": start, "step": step, "inner": inner}
            x = rng.integers(-100, 100, outer * in_len * inner).astype(dtype)
            out = np.zeros(outer * out_len * inner, dtype)
            assert hostc.call(lib, kernel, p, x, out=out) == hostc.MCU_OK
            want = slice_s8(p, x).reshape(-1)
            assert np.array_equal(out, want), (kernel, p)
            assert np.array_equal(want, x.reshape(outer, in_len, inner)[:, start::step][:, :out_len].reshape(-1))
    p = {"outer": 1, "in_len": 4, "out_len": 2, "start": 1, "step": 3, "inner": 1}  # index 4 is past the end
    assert hostc.call(lib, "mcu_slice_s8", p, np.zeros(4, np.int8), out=np.zeros(2, np.int8)) == hostc.MCU_ERR_SHAPE
    with pytest.raises(ValueError):
        slice_s8(p, np.zeros(4, np.int8))


def test_views_become_slices_and_dropout_vanishes(tmp_path):
    model, x = Pieces().eval(), torch.randn(1, 3, 8, 8)
    pkg = mcu.compile(model, (x,), quantize="none", out_dir=tmp_path / "p")
    kernels = [op["kernel"] for op in pkg.manifest["ops"]]
    # split 3 + channel slices 2 + chunk 2 + unbind 1 + narrow 1 + select 1
    assert kernels.count("mcu_slice_f32") == 10, kernels
    assert not [op for op in pkg.manifest["ops"] if "dropout" in op["name"]]
    assert model.training is False and isinstance(model.drop, nn.Dropout)  # the user's model is untouched


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_views_run_exact_on_the_device(quantize, tmp_path):
    torch.manual_seed(0)
    model, x = Pieces().eval(), torch.randn(1, 3, 8, 8)
    calib = None if quantize == "none" else [(torch.randn(1, 3, 8, 8),) for _ in range(8)]
    pkg = mcu.compile(model, (x,), quantize=quantize, calibration=calib, out_dir=tmp_path / "p")
    res = mcu.run(pkg, (x,))
    for got, ref in zip(res.raw_outputs, pkg.reference((x,))):
        assert np.array_equal(got, ref)
    with torch.no_grad():
        want = [o.numpy() for o in model(x)]
    for got, w in zip(res.outputs, want):
        got = got.reshape(w.shape)
        if quantize == "none":
            assert relative_error(got, w) <= 1e-5
        else:
            assert sqnr_db(w, got) >= 25


def test_training_mode_batch_norm_is_refused_with_the_fix(tmp_path):
    class TrainBN(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.zeros(4))
            self.register_buffer("var", torch.ones(4))

        def forward(self, x):
            return F.batch_norm(x, self.mean, self.var, training=True)

    with pytest.raises(UnsupportedOpError, match=r"batch_norm in training mode at .*test_views.py:\d+.*training=False"):
        mcu.compile(TrainBN(), (torch.randn(2, 4, 3, 3),), quantize="none", out_dir=tmp_path / "p")


@pytest.mark.parametrize("op", ["split", "split_with_sizes", "chunk", "unbind", "narrow", "select"])
@pytest.mark.parametrize("mode", ["float32", "int8"])
def test_opinfo_samples_of_the_view_ops_pass(op, mode, tmp_path):
    """PyTorch's own first float32 sample of each view op (op_db), through scripts/opinfo_coverage.py's check."""
    pytest.importorskip("expecttest", reason="op_db imports only with expecttest (the test extras)")
    import importlib.util
    import pathlib

    from torch.testing._internal.common_methods_invocations import op_db
    path = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "opinfo_coverage.py"
    spec = importlib.util.spec_from_file_location("opinfo_coverage", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    info = next(i for i in op_db if i.name == op)
    ok, why = script.check(info, mode, None, str(tmp_path))
    assert ok, why
