"""The int16-activation DSP variants (mcu_conv2d_s16_dsp, mcu_dwconv2d_s16_dsp, mcu_fully_connected_s16_dsp on int8
weights and mcu_fully_connected_s16_dsp_wide on int16 ones) equal their portable twins bit for bit.

- Host tier: the C stand-ins (no DSP extension) on the host compiler, fed the prepared constants select_kernels
  builds (pack_taps_s16, prepare_s16_dw_dsp's layout) and a garbage-filled scratch, against the numpy twins on
  the portable arguments: random shapes (padding, stride, dilation, odd channels, K tails, batch 2, K past the
  int32 chunk), requantization on both of mcu_s16_rq's paths, int64 biases past int32, narrow clamps.
- QEMU tier: small torch models compiled with quantize="a16w8" for mps2-an386 (Cortex-M4, DSP): the variants are
  picked, and the device equals the integer reference (which runs the portable twins on unprepared constants).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

import hostc
import mcu
from mcu.codegen.kernels.packing import pack_quads_s8_sxtb16, pack_taps_s16
from mcu.codegen.twins import s16
from test_kernels_host import assert_equal_int, fc_params
from test_kernels_s16_host import conv16, _conv_case, _rand16, _rand_act, _rand_bias, _rand_quant


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


def _garbage(nbytes: int, dtype=np.int8, shape=None) -> np.ndarray:
    rng = np.random.default_rng(1)
    return rng.integers(-128, 128, size=shape if shape is not None else nbytes).astype(dtype)


def _dw_pack(filt: np.ndarray) -> np.ndarray:
    """[1, KH, KW, C] -> [C2/2][KH*KW][2] int16 bytes (select_kernels.prepare_s16_dw_dsp)."""
    taps = np.ascontiguousarray(filt.reshape(-1, filt.shape[3]).T).astype(np.int16)
    c2 = -(-taps.shape[0] // 2) * 2
    w = np.zeros((c2, taps.shape[1]), np.int16)
    w[:taps.shape[0]] = taps
    return np.ascontiguousarray(w.reshape(-1, 2, taps.shape[1]).transpose(0, 2, 1)).astype("<i2").reshape(-1).view(np.int8)


def _run(lib, kernel, twin, args, packed, scratch):
    expected = twin(*args)
    out = _garbage(0, expected.dtype, expected.shape)
    params, mult, shift, x, _, bias = args
    call_args = (params, mult, shift, x, packed, bias) + ((scratch,) if scratch is not None else ())
    status = hostc.call(lib, kernel, *call_args, out=out)
    assert status == hostc.MCU_OK, f"{kernel} returned {status}"
    assert_equal_int(out, expected)


# the fully connected layer's two weight layouts: int8 quads for SXTB16, int16 (widened by the flash budget)
FC_FORMS = {"mcu_fully_connected_s16_dsp": pack_quads_s8_sxtb16,
            "mcu_fully_connected_s16_dsp_wide": lambda w: pack_taps_s16(w, 4)}


def _conv_case_g1(seed):
    """_conv_case with groups 1 (the variant's domain): re-drawn until the case has one group."""
    for s in range(seed * 1000, seed * 1000 + 1000):
        args = _conv_case(s, "conv")
        if args[0]["filter"][3] == args[0]["input"][3]:
            return args
    raise AssertionError("no groups-1 case")


@pytest.mark.parametrize("seed", range(30))
def test_conv_dsp_host(lib, seed):
    args = _conv_case_g1(seed)
    p, filt = args[0], args[4]
    packed = pack_taps_s16(filt.reshape(filt.shape[0], -1), 2)
    _run(lib, "mcu_conv2d_s16_dsp", s16.conv2d_s16, args, packed, _garbage(s16.conv2d_s16_dsp_scratch_bytes(p)))


@pytest.mark.parametrize("seed", range(30))
def test_dwconv_dsp_host(lib, seed):
    for s in range(seed * 1000, seed * 1000 + 1000):
        args = _conv_case(s, "dwconv")
        if args[0]["output"][3] == args[0]["input"][3]:
            break
    _run(lib, "mcu_dwconv2d_s16_dsp", s16.dwconv2d_s16, args, _dw_pack(args[4]), None)


@pytest.mark.parametrize("kernel", FC_FORMS)
@pytest.mark.parametrize("seed", range(20))
def test_fc_dsp_host(lib, seed, kernel):
    rng = np.random.default_rng(seed)
    b, k, n = rng.integers(1, 4), rng.choice([rng.integers(1, 80), 1500]), rng.integers(1, 17)
    std = math.sqrt(k) * 18900 * 73
    args = (fc_params(b, k, n, act=_rand_act(rng)), *_rand_quant(rng, n, std), _rand16(rng, (b, k)),
            rng.integers(-128, 128, size=(n, k)).astype(np.int8), _rand_bias(rng, n, std))
    _run(lib, kernel, s16.fully_connected_s16, args, FC_FORMS[kernel](args[4]),
         _garbage(s16.fully_connected_s16_dsp_scratch_bytes(args[0])))


def test_extremes_and_long_windows_host(lib):
    """All inputs -32768 and weights -128 (each product 2^22) over windows past one int32 chunk (508 taps): the
    chunked int32 sums must not wrap; shifts -1..2 take mcu_requantize64's other branch."""
    rng = np.random.default_rng(7)
    for k, shift in ((511, -31), (1020, -20), (1500, 1), (9, -1), (600, 0)):
        p = fc_params(2, k, 5, act=(-32768, 32767))
        mult = np.full(5, (1 << 31) - 1, np.int32)
        sh = np.full(5, shift, np.int32)
        x = np.full((2, k), -32768, np.int16)
        x[1, ::3] = 32767
        w = np.full((5, k), -128, np.int8)
        w[2] = rng.integers(-128, 128, size=k)
        bias = np.array([0, 1 << 40, -(1 << 45), 5, -7], np.int64)
        for kernel, pack in FC_FORMS.items():
            _run(lib, kernel, s16.fully_connected_s16, (p, mult, sh, x, w, bias), pack(w),
                 _garbage(s16.fully_connected_s16_dsp_scratch_bytes(p)))


def test_conv_long_window_host(lib):
    """A 3x3 window over 61 channels (K = 549, past one int32 chunk) at the int16 and int8 extremes."""
    rng = np.random.default_rng(3)
    p = conv16((2, 4, 3, 61), (3, 3, 3, 61), (2, 4, 3, 3), pad=(1, 1))
    x = np.full((2, 4, 3, 61), -32768, np.int16)
    x[1] = _rand16(rng, (4, 3, 61))
    w = np.full((3, 3, 3, 61), -128, np.int8)
    w[1] = rng.integers(-128, 128, size=(3, 3, 61))
    args = (p, np.full(3, (1 << 31) - 1, np.int32), np.array([-31, -12, 0], np.int32), x, w,
            np.array([1 << 41, -3, 0], np.int64))
    _run(lib, "mcu_conv2d_s16_dsp", s16.conv2d_s16, args, pack_taps_s16(w.reshape(3, -1), 2),
         _garbage(s16.conv2d_s16_dsp_scratch_bytes(p)))


def test_null_scratch_and_groups_rejected(lib):
    args = _conv_case_g1(0)
    p, filt = args[0], args[4]
    out = np.zeros(p["output"], np.int16)
    packed = pack_taps_s16(filt.reshape(filt.shape[0], -1), 2)
    assert hostc.call(lib, "mcu_conv2d_s16_dsp", p, args[1], args[2], args[3], packed, args[5], None,
                      out=out) == hostc.MCU_ERR_ARG


# ---- QEMU: compiled a16w8 models on the Cortex-M4 ----------------------------------------------------------

class Convs(nn.Module):
    """Padding, stride, dilation, odd channel counts, K not a multiple of 4, 1x1, depthwise, a 5x5 depthwise
    with dilation, linear layers with odd features."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 7, (3, 2), stride=(2, 1), padding=(1, 1))          # K = 18, odd C_out
        self.c2 = nn.Conv2d(7, 9, 3, padding=2, dilation=2)                         # K = 63
        self.dw = nn.Conv2d(9, 9, 3, padding=1, groups=9)                           # odd channels
        self.pw = nn.Conv2d(9, 6, 1)                                                # 1x1, K = 9
        self.dw5 = nn.Conv2d(6, 6, 5, stride=2, padding=4, dilation=2, groups=6)    # even channels, stride 2
        self.c3 = nn.Conv2d(6, 5, 1, stride=2)                                      # strided 1x1
        self.fc1 = nn.Linear(5 * 2 * 2, 13)
        self.fc2 = nn.Linear(13, 3)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        x = self.pw(torch.relu(self.dw(x)))
        x = self.c3(torch.relu(self.dw5(x)))
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


class Batched(nn.Module):
    """Batch 3: a 1x1 conv over an odd pixel count and a linear over 3 rows."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(4, 10, 1)
        self.dw = nn.Conv2d(10, 10, 3, groups=10)
        self.fc = nn.Linear(10, 6)

    def forward(self, x):
        x = self.dw(torch.relu(self.c(x)))
        return self.fc(x.mean(dim=(2, 3)))


class Long(nn.Module):
    """Windows past one int32 chunk (508 taps): a 3x3 conv over 60 channels (K = 540), a linear with K = 600."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(60, 5, 3, padding=1)
        self.dw = nn.Conv2d(5, 5, 3, padding=1, groups=5)
        self.fc1 = nn.Linear(80, 600)
        self.fc2 = nn.Linear(600, 3)

    def forward(self, x):
        x = self.dw(torch.relu(self.c(x)))
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


@pytest.mark.qemu
@pytest.mark.parametrize("model, shape", [(Convs, (1, 3, 9, 7)), (Batched, (3, 4, 5, 3)), (Long, (1, 60, 4, 4))],
                         ids=["convs", "batched", "long"])
def test_a16w8_dsp_variants_on_m4(tmp_path, model, shape):
    torch.manual_seed(0)
    net = model().eval()
    g = torch.Generator().manual_seed(1)
    calib = [(torch.randn(*shape, generator=g),) for _ in range(8)]
    pkg = mcu.compile(net, calib[0], calibration=calib, quantize="a16w8", board="mps2-an386", out_dir=tmp_path / "p")
    model_c = (tmp_path / "p" / "model.c").read_text()
    # the fully connected layer stores int8 weights, int16 where the default flash budget pays (3 rows: 21 / 16
    # instructions a weight saved per extra byte; one row: 7 / 16, below MIN_WIDEN_GAIN)
    fc = "mcu_fully_connected_s16_dsp_wide" if shape[0] == 3 else "mcu_fully_connected_s16_dsp"
    for kernel in ("mcu_conv2d_s16_dsp", "mcu_dwconv2d_s16_dsp", fc):
        assert kernel + "(" in model_c, f"{kernel} not picked"
    for x in calib[:3]:
        got, want = mcu.run(pkg, x).raw_outputs[0], pkg.reference(x)[0]
        bad = np.flatnonzero(np.asarray(got).ravel() != np.asarray(want).ravel())
        assert bad.size == 0, f"first mismatch at {bad[0]}: device {got.ravel()[bad[0]]}, reference {want.ravel()[bad[0]]}"
