"""Edge-model ops beyond the zoo, end to end: each model compiles in float32 and int8, runs on QEMU equal to the
numpy reference bit for bit, and stays within the stated tolerance of torch (float32: 1e-5 relative; int8: SQNR)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.codegen.kernels import KERNELS
from mcu.metrics import relative_error, sqnr_db


class Attention(nn.Module):
    """Single-head attention with the matmul forms users write: @, mm, addmm, t()."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)
        self.register_buffer("w", torch.randn(8, 6))
        self.register_buffer("bias", torch.randn(6))

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        y = torch.softmax(q @ k.transpose(1, 2) / 8 ** 0.5, dim=-1) @ v
        return y, torch.addmm(self.bias, y[0], self.w), torch.mm(y[0], y[0].t())


class ChannelShuffle(nn.Module):
    """ShuffleNet's unit: a 5-d view, a transpose of two of its axes, contiguous, a view back."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = self.conv(x)
        n, c, h, w = y.shape
        return y.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w) + y


CASES = {"attention": (Attention, (1, 5, 8), 25.0), "channel_shuffle": (ChannelShuffle, (1, 8, 4, 4), 30.0)}


def check(name: str, quantize: str, tmp_path) -> mcu.Package:
    cls, shape, min_sqnr = CASES[name]
    torch.manual_seed(0)
    model, x = cls().eval(), torch.randn(shape)
    calib = None if quantize == "none" else [(x,)] + [(torch.randn(shape),) for _ in range(15)]
    pkg = mcu.compile(model, (x,), quantize=quantize, calibration=calib, out_dir=tmp_path / "p")
    res = mcu.run(pkg, (x,))
    with torch.no_grad():
        out = model(x)
    want = [w.numpy() for w in (out if isinstance(out, tuple) else (out,))]
    for got, ref in zip(res.raw_outputs, pkg.reference((x,))):
        assert np.array_equal(got, ref)
    for got, w in zip(res.outputs, want):
        got = got.reshape(w.shape)
        if quantize == "none":
            assert relative_error(got, w) <= 1e-5
        else:
            assert sqnr_db(w, got) >= min_sqnr
    return pkg


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_attention_matmul_forms(quantize, tmp_path):
    pkg = check("attention", quantize, tmp_path)
    kernels = {op["kernel"] for op in pkg.manifest["ops"]}
    want = "mcu_matmul_f32" if quantize == "none" else "mcu_matmul_s8"  # or one of its variants
    assert any((KERNELS[k].portable or k) == want for k in kernels if k in KERNELS), kernels


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_channel_shuffle_5d_transpose_compiles_and_runs(quantize, tmp_path):
    check("channel_shuffle", quantize, tmp_path)


def test_params_that_c_cannot_take_are_a_compiler_error_not_a_c_error():
    """emit checks every params struct against mcu_kernels.h: the class of bug that once wrote a 5-element array
    into a 4-element field and left the user with a model.c that did not compile."""
    from mcu.codegen.cheader import check_params, structs
    from mcu.codegen.ir import IRError
    assert structs()["mcu_transpose_params_t"] == {"in_dims": ("int32_t", 4), "perm": ("int32_t", 4)}
    check_params("mcu_transpose_params_t", {"in_dims": (1, 2, 3, 4), "perm": (0, 1, 2, 3)}, "n0")
    with pytest.raises(IRError, match=r"n0: mcu_transpose_params_t.in_dims is an array of 4"):
        check_params("mcu_transpose_params_t", {"in_dims": (1, 2, 3, 4, 5), "perm": (0, 1, 2, 3)}, "n0")
    with pytest.raises(IRError, match="has no field 'stride'"):
        check_params("mcu_transpose_params_t", {"stride": 1}, "n0")
    with pytest.raises(IRError, match=r"mcu_pool2d_params_t.input \(mcu_dims_t\) takes 4 values"):
        check_params("mcu_pool2d_params_t", {"input": (1, 2, 3)}, "n0")


@pytest.mark.parametrize("shape, perm", [((1, 2, 4, 4, 4), (0, 2, 1, 3, 4)), ((2, 3, 4), (2, 0, 1)),
                                         ((2, 1, 3, 1, 5, 6), (4, 5, 0, 2, 1, 3)), ((7,), (0,))])
def test_transposes_of_any_rank_merge_to_four_dims(shape, perm):
    from mcu.codegen.lowering_shape import transpose_params
    p = transpose_params(shape, perm)
    x = np.arange(int(np.prod(shape))).reshape(shape)
    assert len(p["in_dims"]) == 4
    assert np.array_equal(x.reshape(p["in_dims"]).transpose(p["perm"]).reshape(-1), x.transpose(perm).reshape(-1))


def test_scons_refuses_a_package_compiled_for_another_board(tmp_path):
    """scons board=mps2-an385 model=<a package for mps2-an386> must not build the M4's DSP kernels for the M3."""
    import subprocess
    import sys
    from pathlib import Path

    from mcu.zoo import example_cnn
    model, example = example_cnn()
    pkg = mcu.compile(model, example, board="mps2-an386", out_dir=tmp_path / "pkg")
    scons = Path(mcu.__file__).resolve().parent / "build" / "firmware.scons"
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-f", str(scons), "board=mps2-an385",
                        f"model={pkg.out_dir}", f"build={tmp_path / 'build'}"], capture_output=True, text=True,
                       cwd=tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "compiled for mps2-an386, not mps2-an385" in out, out
    assert not (tmp_path / "build" / "fw.elf").exists()
