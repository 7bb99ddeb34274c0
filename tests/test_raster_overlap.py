"""Raster kernels, portable and optimized, with their output overlapping their dying input (issue 14, item 2).

A `raster` kernel (codegen/kernels) may write its output starting `raster_gap(params, raster_block)` bytes below
its input (codegen/sharing.py): the planner uses that gap, the verifier re-derives it. Here every int8 raster kernel
the host builds (portable, scalar `_fast`, and the DSP ones on their C path) runs on seeded random geometry with
its input at exactly that gap above its output in one buffer, and must give the portable twin's result bit for
bit. The DSP assembly and Helium loop orders run on QEMU (test_kernel_variants_qemu.py, overlapping chains).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

import hostc
import mcu
from mcu.codegen.kernels import KERNELS
from mcu.codegen.sharing import overlap_gap, raster_gap
from test_kernels_host import (assert_equal_int, conv_params, pool_case, prepared_variant_args, rand_act,
                               rand_bias, rand_int8, rand_offsets, rand_quant)

HOST = frozenset({"dsp"})  # features the host build emulates (Helium kernels only compute on the target)
# int8 kernels end in _s8 or hold _s8_; the conv fused with its residual add is tested in test_kernels_host.py
RASTER = sorted(k.name for k in KERNELS.values()
                if k.raster and "_s8_" in k.name + "_" and k.name != "mcu_conv2d_add_s8")
ON_HOST = [k for k in RASTER if KERNELS[k].requires <= HOST]


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


def conv_geometry(rng, kernel: str):
    """(params, taps, filter shape) the kernel runs: 1x1, depthwise 3x3, or any window; C_out often > C_in (the
    output outruns the input: a large gap)."""
    spec = KERNELS[kernel]
    base = spec.portable or kernel
    while True:
        n, h, w = int(rng.choice([1, 2])), int(rng.integers(1, 9)), int(rng.integers(1, 9))
        if "1x1" in kernel:
            kh = kw = 1
        elif "3x3" in kernel or "dwconv" in base and rng.random() < 0.5 and "dsp_line" not in kernel:
            kh = kw = 3
        elif kernel == "mcu_dwconv2d_s8_dsp_line":  # its windows: 5x5, 7x7
            kh = kw = int(rng.choice([5, 7]))
        else:
            kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        sh, sw = (int(v) for v in rng.integers(1, 3, size=2))
        dh, dw = (1, 1) if "1x1" in kernel or rng.random() < 0.6 else tuple(int(v) for v in rng.integers(1, 3, 2))
        eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
        pt, pl = (0, 0) if "1x1" in kernel else (int(rng.integers(0, eh)), int(rng.integers(0, ew)))
        oh, ow = (h + 2 * pt - eh) // sh + 1, (w + 2 * pl - ew) // sw + 1
        if oh < 1 or ow < 1:
            continue
        c_in = int(rng.integers(1, 10))
        depthwise = "dwconv" in base
        c_out = c_in if depthwise else int(rng.integers(1, 3 * c_in + 2))
        filt = (1, kh, kw, c_out) if depthwise else (c_out, kh, kw, c_in)
        in_off, out_off = rand_offsets(rng)
        params = conv_params((n, h, w, c_in), filt, (n, oh, ow, c_out), (sh, sw), (pt, pl), (dh, dw),
                             (in_off, out_off), rand_act(rng, out_off))
        if spec.applies(params):
            return params, kh * kw * (1 if depthwise else c_in), filt


def conv_args(rng, kernel: str):
    params, taps, filt = conv_geometry(rng, kernel)
    acc_std = math.sqrt(taps * (params["input_offset"] ** 2 + 5500) * 5500)
    c_out = params["output"][3]
    return (params, *rand_quant(rng, c_out, acc_std), rand_int8(rng, params["input"]),
            rng.integers(-128, 128, size=filt, dtype=np.int8), rand_bias(rng, c_out, acc_std))


@pytest.mark.host_c
@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("kernel", ON_HOST)
def test_raster_kernel_overlapping_its_input_at_the_gap(lib, kernel, seed):
    spec = KERNELS[kernel]
    base = KERNELS[spec.portable or kernel]
    rng = np.random.default_rng(seed)
    pool = "pool" in kernel
    for draw in range(50):  # a variant's prepare may decline the constants: draw again
        args = pool_case(seed * 100 + draw, "avg" in kernel) if pool else conv_args(rng, kernel)
        c_args = args if pool or not spec.prepare else prepared_variant_args(spec, *args)
        if c_args is not None:
            break
    params = args[0]
    at = 1 if pool else 3  # the input among the twin's (and the C kernel's) arguments
    x = args[at]
    expected = base.twin(*args)
    gap = raster_gap(params, spec.raster_block, spec.raster_first)
    buf = np.full(gap + max(x.size, expected.size) + 8, 0x5A, np.int8)
    buf[gap:gap + x.size] = x.ravel()
    call = [*c_args[:at], buf[gap:gap + x.size].reshape(x.shape), *c_args[at + 1:]]
    if spec.scratch is not None:
        call.append(np.full(max(1, spec.scratch(params)), 0x33, np.int8))
    out = buf[:expected.size]
    assert hostc.call(lib, kernel, *call, out=out) == hostc.MCU_OK
    assert_equal_int(out.reshape(expected.shape), expected)


def test_every_int8_raster_kernel_is_covered():
    """The kernels above are every raster kernel of int8 (their names end in _s8 or hold _s8_), and the ones not run
    here are exactly the Helium ones, which run overlapped on QEMU."""
    assert {"mcu_conv2d_s8_dsp", "mcu_conv2d_1x1_s8_dsp", "mcu_dwconv2d_3x3_s8_dsp", "mcu_conv2d_s8_fast",
            "mcu_conv2d_1x1_s8_fast", "mcu_dwconv2d_3x3_s8_fast", "mcu_avgpool2d_s8_fast"} <= set(ON_HOST)
    assert set(RASTER) - set(ON_HOST) == {"mcu_conv2d_1x1_s8_mve", "mcu_conv2d_s8_mve", "mcu_dwconv2d_3x3_s8_mve",
                                          "mcu_dwconv2d_s8_mve", "mcu_avgpool2d_s8_mve"}


def test_raster_block_gaps_by_hand():
    """KWS's 25x5x64 depthwise 3x3 'same': one pixel at a time the output may start W + 2 pixels below the input
    (the pixel written, and its window's corner a row and a pixel back); one row at a time, two rows. A 64 -> 128 1x1
    over 7 pixels: pixel by pixel, the last pixel's end (7 * 128) over its input (6 * 64); in blocks of 3, the
    second block's end (768) over its first input byte (192)."""
    dw = conv_params((1, 25, 5, 64), (1, 3, 3, 64), (1, 25, 5, 64), pad=(1, 1))
    assert raster_gap(dw) == 7 * 64
    assert raster_gap(dw, "row") == 2 * 5 * 64
    pw = conv_params((1, 1, 7, 64), (128, 1, 1, 64), (1, 1, 7, 128))
    # blocks [0,3) [3,6) [6,7): written 384, 768, 896; first byte read 0, 192, 384
    assert raster_gap(pw, 3) == 768 - 192
    assert raster_gap(pw, 1) == 7 * 128 - 6 * 64
    # read first (pairs): pair [0,2) written 256 before pair [2,4) reads from 128, ..., pair [4,6) 768 before
    # [6,7) reads from 384; the last pair meets no later read. KWS's 64 -> 64 1x1 then needs no gap at all.
    assert raster_gap(pw, 2, first=True) == 768 - 384
    assert raster_gap(conv_params((1, 25, 5, 64), (64, 1, 1, 64), (1, 25, 5, 64)), 2, first=True) == 0
    assert raster_gap(conv_params((1, 1, 1, 8), (8, 1, 1, 8), (1, 1, 1, 8)), 2, first=True) == 0  # one pixel


# ---- raster_copy: the read-first gap (copying blocks) only where it lowers the arena --------------------------------

def _plan_on_m3(model, shape, tmp_path):
    torch.manual_seed(0)
    calib = [(torch.randn(*shape),) for _ in range(2)]
    pkg = mcu.compile(model.eval(), calib[0], calibration=calib, out_dir=tmp_path, board="mps2-an385")
    (node,) = [n for n in pkg.graph.nodes if n.op == "call" and n.call.kernel == "mcu_conv2d_1x1_s8_fast"]
    mem = pkg.memory
    return pkg, node, mem.locations[node.inputs[0]].index - mem.locations[node.outputs[0]].index


def test_copy_gap_is_taken_only_where_it_lowers_the_arena(tmp_path):
    """A scalar 1x1 (64 -> 64) reads a pixel, in place or copied to scratch, before writing it: its read-first gap
    is 0, its plain gap one output pixel. At the peak (a 1x1 between two depthwise convs that keep the scratch
    below) the planner takes gap 0 and reaches the liveness bound; away from the peak it keeps the plain gap, so the
    kernel copies nothing."""
    class AtPeak(nn.Module):  # KWS's shape: the 1x1's input and output are the largest tensors, side by side
        def __init__(self):
            super().__init__()
            self.dw1, self.pw, self.dw2 = (nn.Conv2d(64, 64, 3, padding=1, groups=64), nn.Conv2d(64, 64, 1),
                                           nn.Conv2d(64, 64, 3, padding=1, groups=64))
            self.first, self.fc = nn.Conv2d(1, 64, 3, padding=1), nn.Linear(64, 4)

        def forward(self, x):
            y = self.dw2(torch.relu(self.pw(torch.relu(self.dw1(torch.relu(self.first(x)))))))
            return self.fc(y.mean((2, 3)))

    class OffPeak(nn.Module):  # the peak is the 16x16x64 map before the pool; the 1x1 runs on 8x8 after it
        def __init__(self):
            super().__init__()
            self.first, self.pw, self.fc = nn.Conv2d(8, 64, 3, padding=1), nn.Conv2d(64, 64, 1), nn.Linear(64, 4)

        def forward(self, x):
            y = self.pw(nn.functional.max_pool2d(torch.relu(self.first(x)), 2))
            return self.fc(torch.relu(y).mean((2, 3)))

    pkg, node, gap = _plan_on_m3(AtPeak(), (1, 1, 12, 5), tmp_path / "at")
    assert overlap_gap(node) == 0 and overlap_gap(node, copy=False) == 64
    assert gap == 0 and pkg.arena_bytes == pkg.memory.lower_bound
    pkg, node, gap = _plan_on_m3(OffPeak(), (1, 8, 16, 16), tmp_path / "off")
    assert gap >= 64 or gap <= -pkg.graph.tensors[node.outputs[0]].nbytes  # plain gap, or apart: no copies
