"""The int8 C kernels built with the host gcc equal their numpy twins bit for bit; hand-computed cases pin the twins."""
from __future__ import annotations

import ctypes
import itertools
import math
import re
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest

import hostc
from mcu.codegen.twins import activation, conv, elementwise, fc, pool, quant, shape
from calls import call

TWINS = {
    "mcu_conv2d_s8": conv.conv2d_s8,
    "mcu_dwconv2d_s8": conv.dwconv2d_s8,
    "mcu_fully_connected_s8": fc.fully_connected_s8,
    "mcu_maxpool2d_s8": pool.maxpool2d_s8,
    "mcu_avgpool2d_s8": pool.avgpool2d_s8,
    "mcu_add_s8": elementwise.add_s8,
    "mcu_softmax_s8": activation.softmax_s8,
    "mcu_transpose_s8": shape.transpose_s8,
}
Q30 = 1 << 30
I32_MIN, I32_MAX = quant.INT32_MIN, quant.INT32_MAX


def assert_equal_int(actual, expected) -> None:
    """Exact integer equality; on failure name the first mismatching index and both values."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    bad = np.argwhere(actual.astype(np.int64) != expected.astype(np.int64))
    if len(bad):
        idx = tuple(int(i) for i in bad[0])
        raise AssertionError(f"{len(bad)} of {actual.size} values differ; first at index {idx}: "
                             f"actual {actual[idx]}, expected {expected[idx]}")


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


def run_c(lib, kernel, *args):
    """Run the C kernel on the twin's arguments into a garbage-filled buffer shaped like the twin's result."""
    expected = TWINS[kernel](*args)
    out = np.random.default_rng(0).integers(-128, 128, size=expected.shape, dtype=np.int8)
    status = hostc.call(lib, kernel, *args, out=out)
    assert status == hostc.MCU_OK, f"{kernel} returned {status}"
    return out, expected


# ---- Parameter dicts (keys are the C field names) --------------------------------------------------------------

def conv_params(inp, filt, out, stride=(1, 1), pad=(0, 0), dilation=(1, 1), offsets=(0, 0), act=(-128, 127)):
    return {"input": tuple(inp), "filter": tuple(filt), "output": tuple(out),
            "stride_h": stride[0], "stride_w": stride[1], "pad_top": pad[0], "pad_left": pad[1],
            "dilation_h": dilation[0], "dilation_w": dilation[1],
            "input_offset": offsets[0], "output_offset": offsets[1], "act_min": act[0], "act_max": act[1]}


def fc_params(batches, k, n, offsets=(0, 0), act=(-128, 127)):
    return {"batches": batches, "in_features": k, "out_features": n, "input_offset": offsets[0],
            "output_offset": offsets[1], "act_min": act[0], "act_max": act[1]}


def pool_params(inp, out, kernel, stride=(1, 1), pad=(0, 0), zero_point=0, divisor=0, act=(-128, 127)):
    return {"input": tuple(inp), "output": tuple(out), "kernel_h": kernel[0], "kernel_w": kernel[1],
            "stride_h": stride[0], "stride_w": stride[1], "pad_top": pad[0], "pad_left": pad[1],
            "zero_point": zero_point, "divisor": divisor, "act_min": act[0], "act_max": act[1]}


def add_params(size, in1=(0, Q30, 1), in2=(0, Q30, 1), out=(0, Q30, -19), left_shift=20, act=(-128, 127)):
    """inN / out are (offset, multiplier, shift); the defaults make add exact: out = in1 + in2."""
    p = {"size": size, "left_shift": left_shift, "act_min": act[0], "act_max": act[1]}
    for name, (off, mult, sh) in (("input1", in1), ("input2", in2), ("output", out)):
        p.update({f"{name}_offset": off, f"{name}_multiplier": mult, f"{name}_shift": sh})
    return p


def i8(values, shape=None):
    a = np.array(values, dtype=np.int8)
    return a if shape is None else a.reshape(shape)


def q(mults, shifts):
    return np.array(mults, np.int32), np.array(shifts, np.int32)


# ---- Hand-computed cases: they pin the twins (and, through the C test, the C) ------------------------------------

def _hand_cases():
    one = q([Q30], [1])  # real multiplier 1.0
    half = q([Q30], [0])  # real multiplier 0.5
    ramp = i8(range(25), (1, 5, 5, 1))
    softmax_table = np.zeros(256, np.uint16)
    softmax_table[:2] = [65535, 32768]
    boundary_table = np.zeros(256, np.uint16)
    boundary_table[:2] = [65408, 128]  # s = 65536: (128 << 8) + s / 2 is exactly s
    odd_table = np.zeros(256, np.uint16)
    odd_table[:2] = [65409, 128]  # s = 65537 (odd): (128 << 8) + s / 2 is s - 1, with s / 2 rounded down
    yield ("conv 1x1 halves acc; SRDHM ties round up (7.5 -> 8, -7.5 -> -7)", "mcu_conv2d_s8",
           (conv_params((1, 1, 4, 1), (1, 1, 1, 1), (1, 1, 4, 1)), *half, i8([15, -15, 3, -1], (1, 1, 4, 1)),
            i8([1], (1, 1, 1, 1)), None), [8, -7, 2, 0])
    yield ("conv 3x3 pad 1: padding adds 0, not input_offset", "mcu_conv2d_s8",
           (conv_params((1, 3, 3, 1), (1, 3, 3, 1), (1, 3, 3, 1), pad=(1, 1), offsets=(1, -10)), *one,
            i8(np.zeros((1, 3, 3, 1))), i8(np.ones((1, 3, 3, 1))), None), [[-6, -4, -6], [-4, -1, -4], [-6, -4, -6]])
    yield ("conv 2x2 dilation 2 stride 2 + bias, halved", "mcu_conv2d_s8",
           (conv_params((1, 5, 5, 1), (1, 2, 2, 1), (1, 2, 2, 1), stride=(2, 2), dilation=(2, 2)), *half,
            ramp, i8(np.ones((1, 2, 2, 1))), np.array([1], np.int32)), [[13, 17], [33, 37]])
    yield ("conv per-channel shifts; one rounding, ties up: -2.5 -> -2", "mcu_conv2d_s8",
           (conv_params((1, 1, 1, 2), (2, 1, 1, 2), (1, 1, 1, 2)), *q([Q30, Q30], [1, -1]),
            i8([10, 20], (1, 1, 1, 2)), i8([1, 1, 1, -1], (2, 1, 1, 2)), None), [30, -2])
    yield ("conv relu clamp at output_offset", "mcu_conv2d_s8",
           (conv_params((1, 1, 3, 1), (1, 1, 1, 1), (1, 1, 3, 1), offsets=(0, 5), act=(5, 12)), *one,
            i8([-7, 3, 100], (1, 1, 3, 1)), i8([1], (1, 1, 1, 1)), None), [5, 8, 12])
    yield ("dwconv ch_mult 2", "mcu_dwconv2d_s8",
           (conv_params((1, 1, 1, 2), (1, 1, 1, 4), (1, 1, 1, 4)), *q([Q30] * 4, [1] * 4),
            i8([3, -4], (1, 1, 1, 2)), i8([1, 2, 3, -1], (1, 1, 1, 4)), None), [3, 6, -12, 4])
    yield ("dwconv 3x3 pad 1 counts valid taps", "mcu_dwconv2d_s8",
           (conv_params((1, 2, 2, 1), (1, 3, 3, 1), (1, 2, 2, 1), pad=(1, 1), offsets=(2, 0)), *one,
            i8(np.zeros((1, 2, 2, 1))), i8(np.ones((1, 3, 3, 1))), None), [[8, 8], [8, 8]])
    yield ("fc with offsets, bias and batch 2", "mcu_fully_connected_s8",
           (fc_params(2, 3, 2, offsets=(1, 3)), *q([Q30, Q30], [1, 1]), i8([[1, 2, 3], [-128, 127, 0]]),
            i8([[1, 0, -1], [2, 2, 2]]), np.array([10, -20], np.int32)), [[11, 1], [-115, -13]])
    yield ("maxpool: padding never wins over negatives", "mcu_maxpool2d_s8",
           (pool_params((1, 2, 2, 1), (1, 3, 3, 1), (2, 2), pad=(1, 1)), i8([[-100, -90], [-80, -120]], (1, 2, 2, 1))),
           [[-100, -90, -90], [-80, -80, -90], [-80, -80, -120]])
    yield ("avgpool rounds half away from zero, per batch", "mcu_avgpool2d_s8",
           (pool_params((2, 1, 2, 1), (2, 1, 1, 1), (1, 2)), i8([1, 2, -1, -2], (2, 1, 2, 1))), [2, -2])
    yield ("avgpool zero point, ties", "mcu_avgpool2d_s8",
           (pool_params((1, 1, 4, 1), (1, 1, 2, 1), (1, 2), stride=(1, 2), zero_point=10), i8([11, 12, 7, 8], (1, 1, 4, 1))),
           [12, 7])
    yield ("avgpool divisor 0 divides by valid taps", "mcu_avgpool2d_s8",
           (pool_params((1, 3, 3, 1), (1, 3, 3, 1), (3, 3), pad=(1, 1)), i8(np.full((1, 3, 3, 1), 9))), np.full((3, 3), 9))
    yield ("avgpool divisor 9 counts padding (count_include_pad)", "mcu_avgpool2d_s8",
           (pool_params((1, 3, 3, 1), (1, 3, 3, 1), (3, 3), pad=(1, 1), divisor=9), i8(np.full((1, 3, 3, 1), 9))),
           [[4, 6, 4], [6, 9, 6], [4, 6, 4]])
    yield ("avgpool divisor 4: 5/4 -> 1, -6/4 -> -2", "mcu_avgpool2d_s8",
           (pool_params((1, 1, 4, 1), (1, 1, 2, 1), (1, 2), stride=(1, 2), divisor=4), i8([2, 3, -3, -3], (1, 1, 4, 1))),
           [1, -2])
    yield ("add is exact with unit multipliers, saturates", "mcu_add_s8",
           (add_params(3, in1=(1, Q30, 1), in2=(-1, Q30, 1)), i8([1, 2, 127]), i8([3, -4, 127])), [4, -2, 127])
    yield ("add halves the sum, ties up: 1.5 -> 2, -1.5 -> -1", "mcu_add_s8",
           (add_params(4, out=(0, Q30, -20)), i8([1, -1, 100, -128]), i8([2, -2, 100, -128])), [2, -1, 100, -128])
    for off, values, expected in ((128, [127, -128], [1, 0]), (-127, [-128, 127], [-1, 0])):
        yield (f"add saturates the int32 sum of the rescaled inputs (offset {off})", "mcu_add_s8",
               (add_params(2, in1=(off, I32_MAX, 1), in2=(off, I32_MAX, 1), out=(0, Q30, -30), left_shift=23),
                i8(values), i8(values)), expected)
    yield ("softmax of an all-equal row is 1/4", "mcu_softmax_s8",
           ({"rows": 1, "cols": 4}, activation.softmax_exp_table(0.1), i8([7, 7, 7, 7])), [-64] * 4)
    yield ("softmax two values, table 65535 / 32768", "mcu_softmax_s8",
           ({"rows": 2, "cols": 2}, softmax_table, i8([[5, 4], [127, -128]])), [[43, -43], [127, -128]])
    yield ("softmax rounding term s / 2 lands exactly on a boundary", "mcu_softmax_s8",
           ({"rows": 1, "cols": 2}, boundary_table, i8([5, 4])), [127, -127])
    yield ("softmax rounding term s / 2 rounds down for odd s", "mcu_softmax_s8",
           ({"rows": 1, "cols": 2}, odd_table, i8([5, 4])), [127, -128])
    yield ("softmax of one column saturates at 127", "mcu_softmax_s8",
           ({"rows": 3, "cols": 1}, softmax_table, i8([[-128], [0], [127]])), [[127]] * 3)
    yield ("transpose of a 2x3 matrix", "mcu_transpose_s8",
           ({"in_dims": (1, 1, 2, 3), "perm": (0, 1, 3, 2)}, i8(range(6))), [[[[0, 3], [1, 4], [2, 5]]]])


HAND_CASES = list(_hand_cases())
HAND_IDS = [c[0] for c in HAND_CASES]


@pytest.mark.parametrize("case", HAND_CASES, ids=HAND_IDS)
def test_twin_hand_computed(case):
    _, kernel, args, expected = case
    got = TWINS[kernel](*args)
    assert_equal_int(got, np.asarray(expected).reshape(got.shape))


@pytest.mark.host_c
@pytest.mark.parametrize("case", HAND_CASES, ids=HAND_IDS)
def test_c_hand_computed(lib, case):
    _, kernel, args, expected = case
    out, _ = run_c(lib, kernel, *args)
    assert_equal_int(out, np.asarray(expected).reshape(out.shape))


def test_softmax_exp_table_clips_entry_zero():
    t = activation.softmax_exp_table(math.log(2))
    assert t.dtype == np.uint16 and t.shape == (256,)
    assert_equal_int(t[[0, 1, 2, 16, 20, 255]], [65535, 32768, 16384, 1, 0, 0])


# ---- Random cases: C == twin ------------------------------------------------------------------------------------

def rand_int8(rng, shape):
    r = rng.random()
    if r < 0.08:
        return np.full(shape, -128 if r < 0.04 else 127, np.int8)
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def rand_offsets(rng):
    """(input_offset, output_offset): each at one of its extremes 30% of the time."""
    r = rng.random(2)
    inp = (-127 if r[0] < 0.15 else 128) if r[0] < 0.3 else int(rng.integers(-127, 129))
    out = (-128 if r[1] < 0.15 else 127) if r[1] < 0.3 else int(rng.integers(-64, 64))
    return inp, out


def rand_act(rng, output_offset):
    r = rng.random()
    if r < 0.5:
        return -128, 127
    if r < 0.75:
        return output_offset, 127  # relu
    lo, hi = output_offset - int(rng.integers(0, 40)), output_offset + int(rng.integers(0, 40))  # relu6-like band
    return max(lo, -128), min(hi, 127)


def rand_quant(rng, channels, acc_std):
    """Per-channel (multiplier, shift) mapping acc_std to roughly +-30, jittered, with some extreme channels."""
    mult = rng.integers(Q30, 1 << 31, size=channels).astype(np.int32)
    base = round(math.log2(30.0 / (0.75 * acc_std)))
    shift = np.clip(base + rng.integers(-2, 2, size=channels), -31, 30)
    for c in range(channels):
        r = rng.random()
        if r < 0.05:
            mult[c] = 0
        elif r < 0.1:
            shift[c] = int(rng.choice([-31, -30, 1, 2, 3, 30]))
    return mult, shift.astype(np.int32)


def rand_bias(rng, channels, acc_std):
    """None, a bias on the scale of the accumulator, or (rarely) a huge one that saturates."""
    r = rng.random()
    if r < 0.2:
        return None
    scale = 1 << 24 if r < 0.3 else int(acc_std)
    return rng.integers(-scale, scale + 1, size=channels).astype(np.int32)


CONV_KERNELS = [(1, 1), (3, 3), (5, 3), (3, 5), (1, 3), (2, 2), (5, 5)]


def conv_case(seed, depthwise):
    rng = np.random.default_rng(seed)
    while True:
        n, h, w = int(rng.choice([1, 2])), int(rng.integers(1, 10)), int(rng.integers(1, 10))
        kh, kw = CONV_KERNELS[rng.integers(len(CONV_KERNELS))]
        sh, sw, dh, dw = (int(v) for v in rng.integers(1, 3, size=4))
        eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
        pt, pb, pl, pr = (int(rng.integers(0, e)) for e in (eh, eh, ew, ew))
        oh, ow = (h + pt + pb - eh) // sh + 1, (w + pl + pr - ew) // sw + 1
        if oh >= 1 and ow >= 1:
            break
    c_in = int(rng.integers(1, 6))
    c_out = c_in * int(rng.integers(1, 4)) if depthwise else int(rng.integers(1, 7))
    filt_dims = (1, kh, kw, c_out) if depthwise else (c_out, kh, kw, c_in)
    in_off, out_off = rand_offsets(rng)
    params = conv_params((n, h, w, c_in), filt_dims, (n, oh, ow, c_out), (sh, sw), (pt, pl), (dh, dw),
                         (in_off, out_off), rand_act(rng, out_off))
    taps = kh * kw * (1 if depthwise else c_in)
    acc_std = math.sqrt(taps * (in_off**2 + 5500) * 5500)
    return (params, *rand_quant(rng, c_out, acc_std), rand_int8(rng, (n, h, w, c_in)),
            rng.integers(-128, 128, size=filt_dims, dtype=np.int8), rand_bias(rng, c_out, acc_std))


def fc_case(seed):
    rng = np.random.default_rng(seed)
    b, k, n = int(rng.integers(1, 5)), int(rng.integers(1, 65)), int(rng.integers(1, 21))
    in_off, out_off = rand_offsets(rng)
    params = fc_params(b, k, n, (in_off, out_off), rand_act(rng, out_off))
    acc_std = math.sqrt(k * (in_off**2 + 5500) * 5500)
    return (params, *rand_quant(rng, n, acc_std), rand_int8(rng, (b, k)),
            rng.integers(-128, 128, size=(n, k), dtype=np.int8), rand_bias(rng, n, acc_std))


def pool_case(seed, avg):
    rng = np.random.default_rng(seed)
    n, h, w, c = int(rng.choice([1, 2])), int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 6))
    kh, kw = int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    pt, pb, pl, pr = (int(rng.integers(0, k)) for k in (kh, kh, kw, kw))
    oh, ow = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    zp = [-128, 127, int(rng.integers(-128, 128))][rng.integers(3)] if avg else 0
    divisor = [0, 0, kh * kw, int(rng.integers(1, 20))][rng.integers(4)] if avg else 0
    params = pool_params((n, h, w, c), (n, oh, ow, c), (kh, kw), (sh, sw), (pt, pl), zp, divisor, rand_act(rng, zp))
    return params, rand_int8(rng, (n, h, w, c))


def add_case(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 300))
    in1, in2 = rand_offsets(rng)[0], rand_offsets(rng)[0]
    out_off = rand_offsets(rng)[1]
    if rng.random() < 0.7:  # TFLite's encoding of real scales
        s1, s2 = np.exp(rng.uniform(-6, 0, size=2))
        so = max(s1, s2) * np.exp(rng.uniform(0, 2))
        twice_max = 2 * max(s1, s2)
        m1, sh1 = quant.quantize_multiplier(s1 / twice_max)
        m2, sh2 = quant.quantize_multiplier(s2 / twice_max)
        mo, sho = quant.quantize_multiplier(twice_max / ((1 << 20) * so))
        left_shift = 20
    else:  # raw encodings, including positive shifts that saturate and a saturating sum
        m1, m2, mo = (int(v) for v in rng.integers(Q30, 1 << 31, size=3))
        sh1, sh2, sho = (int(v) for v in rng.integers(-31, 4, size=3))
        left_shift = int(rng.integers(0, 24))
    params = add_params(size, (in1, m1, sh1), (in2, m2, sh2), (out_off, mo, sho), left_shift, rand_act(rng, out_off))
    return params, rand_int8(rng, size), rand_int8(rng, size)


def softmax_case(seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 300))
    kind = seed % 4
    if kind == 0:
        x = rng.integers(-128, 128, size=(rows, cols), dtype=np.int8)
    elif kind == 1:  # all equal per row
        x = np.repeat(rng.integers(-128, 128, size=(rows, 1), dtype=np.int8), cols, axis=1)
    elif kind == 2:  # huge spread: only the extremes
        x = rng.choice(np.array([-128, 127], np.int8), size=(rows, cols))
    else:  # a narrow band
        x = (rng.integers(-3, 4, size=(rows, cols)) + int(rng.integers(-100, 100))).astype(np.int8)
    table = activation.softmax_exp_table(float(np.exp(rng.uniform(np.log(1e-3), 0))))
    return {"rows": rows, "cols": cols}, table, x


SEEDS = range(40)


@pytest.mark.host_c
@pytest.mark.parametrize("seed", SEEDS)
def test_conv2d_matches_twin(lib, seed):
    assert_equal_int(*run_c(lib, "mcu_conv2d_s8", *conv_case(seed, depthwise=False)))


@pytest.mark.host_c
@pytest.mark.parametrize("seed", SEEDS)
def test_dwconv2d_matches_twin(lib, seed):
    assert_equal_int(*run_c(lib, "mcu_dwconv2d_s8", *conv_case(1000 + seed, depthwise=True)))


@pytest.mark.host_c
@pytest.mark.parametrize("seed", SEEDS)
def test_fully_connected_matches_twin(lib, seed):
    assert_equal_int(*run_c(lib, "mcu_fully_connected_s8", *fc_case(seed)))


@pytest.mark.host_c
@pytest.mark.parametrize("seed", SEEDS)
def test_maxpool2d_matches_twin(lib, seed):
    assert_equal_int(*run_c(lib, "mcu_maxpool2d_s8", *pool_case(seed, avg=False)))


@pytest.mark.host_c
@pytest.mark.parametrize("seed", SEEDS)
def test_avgpool2d_matches_twin(lib, seed):
    assert_equal_int(*run_c(lib, "mcu_avgpool2d_s8", *pool_case(seed, avg=True)))


@pytest.mark.host_c
@pytest.mark.parametrize("seed", SEEDS)
def test_add_matches_twin(lib, seed):
    assert_equal_int(*run_c(lib, "mcu_add_s8", *add_case(seed)))


@pytest.mark.host_c
@pytest.mark.parametrize("seed", SEEDS)
def test_softmax_matches_twin(lib, seed):
    assert_equal_int(*run_c(lib, "mcu_softmax_s8", *softmax_case(seed)))


@pytest.mark.host_c
@pytest.mark.parametrize("perm", list(itertools.permutations(range(4))), ids=lambda p: "".join(map(str, p)))
def test_transpose_matches_twin_all_perms(lib, perm):
    rng = np.random.default_rng(sum(p * 4**i for i, p in enumerate(perm)))
    for dims in [(2, 3, 4, 5), tuple(int(d) for d in rng.integers(1, 6, size=4)), (1, 1, 3, 2)]:
        params = {"in_dims": dims, "perm": perm}
        assert_equal_int(*run_c(lib, "mcu_transpose_s8", params, rand_int8(rng, dims)))


@pytest.mark.host_c
def test_every_shift_through_fc(lib):
    """Channels with every shift in [-31, 4] and multipliers at the ends of the Q31 range."""
    rng = np.random.default_rng(7)
    shifts = np.arange(-31, 5, dtype=np.int32)
    for mult in (np.full(shifts.size, Q30, np.int32), np.full(shifts.size, I32_MAX, np.int32),
                 rng.integers(Q30, 1 << 31, size=shifts.size).astype(np.int32)):
        params = fc_params(3, 16, shifts.size, offsets=(128, -128))
        args = (params, mult, shifts, rand_int8(rng, (3, 16)), rng.integers(-128, 128, (shifts.size, 16), dtype=np.int8),
                rng.integers(-(1 << 20), 1 << 20, shifts.size).astype(np.int32))
        assert_equal_int(*run_c(lib, "mcu_fully_connected_s8", *args))


@pytest.mark.host_c
def test_softmax_longest_row_does_not_overflow(lib):
    """cols = 65535 equal values: the uint32 sum reaches 65535^2, its largest possible value."""
    params = {"rows": 1, "cols": 65535}
    out, expected = run_c(lib, "mcu_softmax_s8", params, activation.softmax_exp_table(0.05), np.zeros(65535, np.int8))
    assert_equal_int(out, expected)
    assert (expected == -128).all()


@pytest.mark.host_c
@pytest.mark.parametrize("which", ["input1", "input2"])
def test_add_in_place(lib, which):
    params, in1, in2 = add_case(3)
    expected = elementwise.add_s8(params, in1, in2)
    buf = (in1 if which == "input1" else in2).copy()
    args = (params, buf, in2) if which == "input1" else (params, in1, buf)
    assert hostc.call(lib, "mcu_add_s8", *args, out=buf) == hostc.MCU_OK
    assert_equal_int(buf, expected)


# ---- In-place variants (optimize="memory"): C == the portable twin, in place, below the input, or apart ------------

def inplace_case(seed, pointwise):
    """A geometry the in-place kernel runs: depthwise 'same' (stride 1, any kernel, pad, dilation), or 1x1 with
    C_out <= C_in and any stride."""
    rng = np.random.default_rng(seed)
    n, h, w = int(rng.choice([1, 2])), int(rng.integers(1, 10)), int(rng.integers(1, 10))
    in_off, out_off = rand_offsets(rng)
    if pointwise:
        c_in = int(rng.integers(1, 9))
        c_out = int(rng.integers(1, c_in + 1))
        sh, sw = (int(v) for v in rng.integers(1, 4, size=2))
        params = conv_params((n, h, w, c_in), (c_out, 1, 1, c_in), (n, (h - 1) // sh + 1, (w - 1) // sw + 1, c_out),
                             (sh, sw), (0, 0), (1, 1), (in_off, out_off), rand_act(rng, out_off))
        taps, filt = c_in, (c_out, 1, 1, c_in)
    else:
        c_in = c_out = int(rng.integers(1, 9))
        kh, kw = CONV_KERNELS[rng.integers(len(CONV_KERNELS))]
        dh, dw = (int(v) for v in rng.integers(1, 3, size=2))
        pt, pl = int(rng.integers(0, (kh - 1) * dh + 1)), int(rng.integers(0, (kw - 1) * dw + 1))
        params = conv_params((n, h, w, c_in), (1, kh, kw, c_in), (n, h, w, c_in), (1, 1), (pt, pl), (dh, dw),
                             (in_off, out_off), rand_act(rng, out_off))
        taps, filt = kh * kw, (1, kh, kw, c_in)
    acc_std = math.sqrt(taps * (in_off**2 + 5500) * 5500)
    return (params, *rand_quant(rng, c_out, acc_std), rand_int8(rng, (n, h, w, c_in)),
            rng.integers(-128, 128, size=filt, dtype=np.int8), rand_bias(rng, c_out, acc_std))


INPLACE = {"mcu_dwconv2d_s8_inplace": (conv.dwconv2d_s8, conv.dwconv2d_s8_inplace_scratch_bytes, False),
           "mcu_conv2d_1x1_s8_inplace": (conv.conv2d_s8, conv.conv2d_1x1_s8_inplace_scratch_bytes, True)}


@pytest.mark.host_c
@pytest.mark.parametrize("where", ["in place", "below", "apart"])
@pytest.mark.parametrize("kernel", sorted(INPLACE))
@pytest.mark.parametrize("seed", range(12))
def test_inplace_kernel_matches_the_portable_twin(lib, kernel, where, seed):
    """Output == input, output 0..C*W bytes below the input (overlapping it), or apart: the portable result."""
    portable, scratch_bytes, pointwise = INPLACE[kernel]
    params, mult, shift, x, filt, bias = inplace_case(seed + (100 if pointwise else 0), pointwise)
    expected = portable(params, mult, shift, x, filt, bias)
    assert getattr(conv, kernel.removeprefix("mcu_"))(params, mult, shift, x, filt, bias,
                                                      np.zeros(scratch_bytes(params), np.int8)).tolist() == expected.tolist()
    call_overlapped(lib, kernel, (params, mult, shift, x, filt, bias), scratch_bytes(params), expected, where,
                    np.random.default_rng(seed))


def call_overlapped(lib, kernel, args, scratch_bytes, expected, where, rng):
    """Call `kernel` on C arguments args (params, mult, shift, x, filter, bias) with scratch_bytes of scratch (garbage,
    8 canaries after it), its output over its input ("in place"), 1..W*C + 1 bytes below it ("below"), or apart:
    the result is `expected` and nothing is written past the scratch."""
    params, x = args[0], args[3]
    gap = {"in place": 0, "below": int(rng.integers(1, params["input"][2] * params["input"][3] + 2)),
           "apart": x.size + 3}[where]
    buf = rng.integers(-128, 128, size=gap + max(x.size, expected.size) + 5, dtype=np.int8)
    buf[gap:gap + x.size] = x.reshape(-1)
    scratch = rng.integers(-128, 128, size=scratch_bytes + 8, dtype=np.int8)
    canary = scratch[-8:].copy()
    out = buf[:expected.size] if where != "apart" else np.empty(expected.size, np.int8)
    status = hostc.call(lib, kernel, *args[:3], buf[gap:gap + x.size], *args[4:], scratch, out=out)
    assert status == hostc.MCU_OK
    assert_equal_int(out.reshape(expected.shape), expected)
    assert (scratch[-8:] == canary).all(), "wrote past its scratch"


@pytest.mark.host_c
@pytest.mark.parametrize("where", ["in place", "below", "apart"])
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kernel", ["mcu_dwconv2d_3x3_s8_dsp", "mcu_dwconv2d_3x3_s8_fast"])
def test_depthwise_3x3_runs_in_place(lib, kernel, where, seed):
    """The 3x3 depthwise variants on the in-place geometry (3x3 'same', stride 1, any padding split and dilation),
    the output over the input, 0..C*W bytes below it, or apart: the portable result (their ring of output rows in
    the scratch after the padding; the DSP one's C path: the QEMU overlap test runs its assembly and the
    Helium one)."""
    from mcu.codegen.kernels import KERNELS
    rng = np.random.default_rng(seed)
    n, h, w, c = int(rng.choice([1, 2])), int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 14))
    dh, dw = (int(v) for v in rng.integers(1, 3, size=2))
    in_off, out_off = rand_offsets(rng)
    params = conv_params((n, h, w, c), (1, 3, 3, c), (n, h, w, c), (1, 1),
                         (int(rng.integers(0, 2 * dh + 1)), int(rng.integers(0, 2 * dw + 1))), (dh, dw),
                         (in_off, out_off), rand_act(rng, out_off) if seed % 3 else (-128, 127))
    acc_std = math.sqrt(9 * (in_off**2 + 5500) * 5500)
    mult, shift = rand_quant(rng, c, acc_std)
    x, filt, bias = rand_int8(rng, (n, h, w, c)), rng.integers(-128, 128, (1, 3, 3, c), dtype=np.int8), \
        rand_bias(rng, c, acc_std)
    expected = conv.dwconv2d_s8(params, mult, shift, x, filt, bias)
    variant = KERNELS[kernel]
    assert variant.overwrites(params)
    call_overlapped(lib, kernel, prepared_variant_args(variant, params, mult, shift, x, filt, bias),
                    variant.scratch(params), expected, where, rng)


SCRATCH_WRAPPER = """
#include <stdint.h>
#include "mcu/mcu_kernels.h"
int32_t t_dw(const mcu_conv2d_params_t *p) { return mcu_dwconv2d_s8_inplace_scratch_bytes(p); }
int32_t t_pw(const mcu_conv2d_params_t *p) { return mcu_conv2d_1x1_s8_inplace_scratch_bytes(p); }
"""


@pytest.mark.host_c
def test_inplace_scratch_bytes_c_equals_twin():
    lib = hostc.build_source(SCRATCH_WRAPPER, "inplace_scratch")
    for seed in range(20):
        for fn, twin, pointwise in (("t_dw", conv.dwconv2d_s8_inplace_scratch_bytes, False),
                                    ("t_pw", conv.conv2d_1x1_s8_inplace_scratch_bytes, True)):
            params = inplace_case(seed, pointwise)[0]
            getattr(lib, fn).restype = ctypes.c_int32
            assert getattr(lib, fn)(ctypes.byref(hostc.struct("mcu_conv2d_params_t", params))) == twin(params)
    # KWS's 3x3 'same' depthwise on 25x5x64: the ring holds W + 1 = 6 pixels
    kws = conv_params((1, 25, 5, 64), (1, 3, 3, 64), (1, 25, 5, 64), pad=(1, 1))
    assert conv.dwconv2d_s8_inplace_scratch_bytes(kws) == 6 * 64


def _inplace_bad_cases():
    ARG, SHAPE = hostc.MCU_ERR_ARG, hostc.MCU_ERR_SHAPE
    dw = inplace_case(3, pointwise=False)
    dw = ({**dw[0], "input": (1, 4, 5, 3), "output": (1, 4, 5, 3), "filter": (1, 3, 3, 3), "pad_top": 1,
           "pad_left": 1}, dw[1][:1].repeat(3), dw[2][:1].repeat(3), rand_int8(np.random.default_rng(0), (1, 4, 5, 3)),
          np.ones((1, 3, 3, 3), np.int8), None)
    pw = inplace_case(4, pointwise=True)
    pw = ({**pw[0], "input": (1, 4, 5, 6), "output": (1, 4, 5, 4), "filter": (4, 1, 1, 6), "stride_h": 1,
           "stride_w": 1}, pw[1][:1].repeat(4), pw[2][:1].repeat(4), rand_int8(np.random.default_rng(1), (1, 4, 5, 6)),
          np.ones((4, 1, 1, 6), np.int8), None)

    def with_params(base, **changes):
        return ({**base[0], **changes}, *base[1:])

    for kernel, base in (("mcu_dwconv2d_s8_inplace", dw), ("mcu_conv2d_1x1_s8_inplace", pw)):
        yield f"{kernel} NULL params", kernel, (None, *base[1:]), ARG
        yield f"{kernel} NULL input", kernel, (*base[:3], None, *base[4:]), ARG
        yield f"{kernel} stride_w=0", kernel, with_params(base, stride_w=0), ARG
        yield f"{kernel} act_min > act_max", kernel, with_params(base, act_min=10, act_max=9), ARG
        yield f"{kernel} shift 31", kernel, (base[0], base[1], np.full_like(base[2], 31), *base[3:]), ARG
    p = dw[0]
    yield "dw in place: stride 2", "mcu_dwconv2d_s8_inplace", with_params(dw, stride_h=2, output=(1, 2, 5, 3)), SHAPE
    yield "dw in place: output dims != input dims", "mcu_dwconv2d_s8_inplace", with_params(dw, output=(1, 4, 4, 3)), SHAPE
    yield "dw in place: channel multiplier 2", "mcu_dwconv2d_s8_inplace", \
        (with_params(dw, output=(1, 4, 5, 6), filter=(1, 3, 3, 6))[0], dw[1][:1].repeat(6), dw[2][:1].repeat(6),
         dw[3], np.ones((1, 3, 3, 6), np.int8), None), SHAPE
    yield "dw in place: filter.n != 1", "mcu_dwconv2d_s8_inplace", with_params(dw, filter=(2, *p["filter"][1:])), SHAPE
    yield "1x1 in place: C_out > C_in", "mcu_conv2d_1x1_s8_inplace", \
        (with_params(pw, input=(1, 4, 5, 3), filter=(4, 1, 1, 3))[0], *pw[1:3], pw[3][..., :3].copy(),
         np.ones((4, 1, 1, 3), np.int8), None), SHAPE
    yield "1x1 in place: 3x3 filter", "mcu_conv2d_1x1_s8_inplace", \
        (with_params(pw, filter=(4, 3, 3, 6))[0], *pw[1:4], np.ones((4, 3, 3, 6), np.int8), None), SHAPE
    yield "1x1 in place: padding", "mcu_conv2d_1x1_s8_inplace", with_params(pw, pad_left=1), SHAPE
    yield "1x1 in place: output past the input", "mcu_conv2d_1x1_s8_inplace", with_params(pw, output=(1, 5, 5, 4)), SHAPE


INPLACE_BAD = list(_inplace_bad_cases())


@pytest.mark.host_c
@pytest.mark.parametrize("case", INPLACE_BAD, ids=[c[0] for c in INPLACE_BAD])
def test_inplace_kernels_reject_bad_arguments_before_writing(lib, case):
    _, kernel, args, status = case
    scratch = np.full(256, 0x5A, np.int8)
    out = np.full(1 << 12, 0x5A, np.int8)
    assert hostc.call(lib, kernel, *args, scratch, out=out) == status
    assert (out == 0x5A).all() and (scratch == 0x5A).all(), "wrote before rejecting its arguments"
    if all(a is not None for a in args[:1] + args[3:5]):
        with pytest.raises(ValueError):
            getattr(conv, kernel.removeprefix("mcu_"))(*args, scratch)


@pytest.mark.host_c
@pytest.mark.parametrize("kernel", sorted(INPLACE))
def test_inplace_kernels_reject_null_scratch_and_output(lib, kernel):
    args = inplace_case(5, INPLACE[kernel][2])
    out = np.zeros(1 << 12, np.int8)
    assert hostc.call(lib, kernel, *args, None, out=out) == hostc.MCU_ERR_ARG
    assert hostc.call(lib, kernel, *args, np.zeros(64, np.int8), out=None) == hostc.MCU_ERR_ARG
    with pytest.raises(ValueError, match="scratch"):
        getattr(conv, kernel.removeprefix("mcu_"))(*args, None)


# ---- Variants with planned scratch (mcu_kernels.h, "Scratch of the variants") --------------------------------------

def _scratch_variants():
    from mcu.codegen.kernels import KERNELS
    # _mve kernels only compute on the target; the int16 variants and the matmuls (activations x activations) have
    # their own tests (tests/test_s16_variants.py, tests/test_matmul_gemm_qemu.py, tests/test_kernels_ops_host.py)
    return {v.name: (v.portable, v) for v in KERNELS.values()
            if v.portable and v.mode == "speed" and v.scratch is not None and v.requires <= {"dsp", "int4"}
            and not v.portable.endswith("_s16") and not v.portable.startswith("mcu_matmul")}


SCRATCH_VARIANTS = _scratch_variants()


def _scratch_wrapper() -> str:
    lines = ["#include <stdint.h>", '#include "mcu/mcu_kernels.h"']
    for kernel, (_, v) in sorted(SCRATCH_VARIANTS.items()):
        lines.append(f"int32_t t_{kernel}(const {v.params_type} *p) {{ return {kernel}_scratch_bytes(p); }}")
    return "\n".join(lines) + "\n"


def _scratch_twin(kernel: str):
    return getattr(fc if "fully_connected" in kernel else conv, f"{kernel.removeprefix('mcu_')}_scratch_bytes")


def test_scratch_variants_are_the_dsp_fast_and_int4_window_kernels():
    """The fully connected variants read their input row in place (the DSP one widens it in the loop), bar the DSP
    GEMM over several rows, which widens three rows (or a pair) as the 1x1 conv does a pixel pair."""
    assert sorted(SCRATCH_VARIANTS) == ["mcu_conv2d_1x1_s8_dsp", "mcu_conv2d_1x1_s8_fast", "mcu_conv2d_s4",
                                        "mcu_conv2d_s8_dsp", "mcu_conv2d_s8_fast", "mcu_dwconv2d_3x3_s8_dsp",
                                        "mcu_dwconv2d_3x3_s8_dsp_wide", "mcu_dwconv2d_3x3_s8_fast",
                                        "mcu_dwconv2d_s8_dsp", "mcu_dwconv2d_s8_dsp_ring",
                                        "mcu_fully_connected_gemm_s8_dsp"]
    for kernel, (_, v) in SCRATCH_VARIANTS.items():
        assert v.scratch is _scratch_twin(kernel), kernel


@pytest.mark.host_c
def test_variant_scratch_bytes_c_equals_twin():
    lib = hostc.build_source(_scratch_wrapper(), "variant_scratch")
    rng = np.random.default_rng(5)
    for i in range(200):
        kh, kw = (int(v) for v in rng.integers(1, 12, 2))
        c_in = int(rng.choice([1, 3, 4, 5, 16, 40, 130, 1100]))
        params = conv_params((1, 20, 20, c_in), (8, kh, kw, c_in), (1, 4, 4, 8), pad=(i % 2, i % 3))
        if i % 4 == 0:  # the depthwise in-place geometry: stride 1, output dims == input dims
            params = conv_params((1, 6, 7, c_in), (1, 3, 3, c_in), (1, 6, 7, c_in), pad=(i % 3, i % 2))
        fcp = fc_params(1 + i % 5, c_in, 8)
        for kernel, (_, v) in SCRATCH_VARIANTS.items():
            fn = getattr(lib, f"t_{kernel}")
            fn.restype = ctypes.c_int32
            pk = fcp if v.params_type == "mcu_fc_params_t" else params
            assert fn(ctypes.byref(hostc.struct(v.params_type, pk))) == _scratch_twin(kernel)(pk), (kernel, pk)
    # hand-computed: the DSP conv widens an RGB 3x3 window whole (27 taps -> 28) and gathers it whole (28 bytes);
    # a 3x3x160 window row by row (480 taps a row) through 128-byte pieces; the 1x1 pair
    rgb = conv_params((1, 8, 8, 3), (8, 3, 3, 3), (1, 8, 8, 8), pad=(1, 1))
    wide = conv_params((1, 8, 8, 160), (8, 3, 3, 160), (1, 8, 8, 8), pad=(1, 1))
    assert conv.conv2d_s8_dsp_scratch_bytes(rgb) == 4 * (28 + 2) + 2 * 28
    assert conv.conv2d_s8_dsp_scratch_bytes(wide) == 4 * (1440 + 2) + 2 * 128
    assert conv.conv2d_s8_fast_scratch_bytes(wide) == conv.conv2d_s4_scratch_bytes(wide) == 1440
    # the any-window DSP depthwise: 5 pair rows of 23 + 2 * 2 + 1 = 28 columns (a 5x5 'same' row of 24 pixels), 16
    # bytes each; dilated 2: 23 + 8 + 1 = 32 columns, a multiple of 4 (its residues)
    dw5 = conv_params((1, 24, 24, 64), (1, 5, 5, 64), (1, 24, 24, 64), pad=(2, 2))
    assert conv.dwconv2d_s8_dsp_scratch_bytes(dw5) == 16 * 5 * 28
    assert conv.dwconv2d_s8_dsp_scratch_bytes({**dw5, "dilation_w": 2}) == 16 * 5 * 32
    assert conv.conv2d_s4_scratch_bytes(conv_params((1, 8, 8, 160), (8, 1, 1, 160), (1, 8, 8, 8))) == 0
    # the ring depthwise: KWS's 25x5 runs along its 25 rows: two rings of 3 lines of 25 + 3 (+ 1) int16, aligned
    kws = conv_params((1, 25, 5, 64), (1, 3, 3, 64), (1, 25, 5, 64), pad=(1, 1))
    assert conv.dwconv2d_s8_dsp_ring_scratch_bytes(kws) == 2 * 3 * 28 * 2 + 3
    assert conv.conv2d_1x1_s8_dsp_scratch_bytes(conv_params((1, 2, 2, 13), (8, 1, 1, 13), (1, 2, 2, 8))) == 16 * 4 + 8
    assert fc.fully_connected_gemm_s8_dsp_scratch_bytes(fc_params(32, 13, 8)) == 24 * 4 + 8
    # KWS's depthwise: a pixel of padding, then a ring of 2 output rows of 5 pixels (it runs in place)
    assert conv.dwconv2d_3x3_s8_dsp_scratch_bytes(conv_params((1, 25, 5, 64), (1, 3, 3, 64), (1, 25, 5, 64),
                                                              pad=(1, 1))) == 64 + 2 * 5 * 64


def prepared_variant_args(variant, params, mult, shift, x, w, bias) -> tuple:
    """The variant's C arguments (without scratch) for portable twin arguments, prepared as select_kernels does;
    None when its prepare declines the constants (select_kernels then keeps another kernel)."""
    from mcu.codegen.ir import Tensor
    tensors = {"w": Tensor("w", tuple(w.shape), "int8", data=w), "m": Tensor("m", tuple(mult.shape), "int32", data=mult),
               "s": Tensor("s", tuple(shift.shape), "int32", data=shift)}
    if bias is not None:
        tensors["b"] = Tensor("b", tuple(bias.shape), "int32", data=bias)
    node = call("n0", variant.name, ("x", "w", "b" if bias is not None else None), "y", params, ("m", "s"))
    prepared = variant.prepare(node, tensors)
    if prepared is None:
        return None
    node, new = prepared
    tensors.update(new)
    q = node.call.quant
    return (params, tensors[q[0]].data, tensors[q[1]].data, x,
            *[None if t is None else tensors[t].data for t in node.inputs[1:]])


def large_window_case(kernel: str, seed: int):
    """Portable twin arguments with a window of more than 1024 taps (the stack bound before scratch came from the
    arena) for the variant, weights in [-7, 7] so that every variant's prepare takes them (int4, the scalar GEMM's
    split)."""
    rng = np.random.default_rng(seed)
    in_off, out_off = rand_offsets(rng)
    act = rand_act(rng, out_off)
    if "fully_connected" in kernel:  # 5 rows (2 pairs and a last row alone) of 1100
        params = fc_params(5, 1100, 7, (in_off, out_off), act)
        taps, xs, ws, c_out = 1100, (5, 1100), (7, 1100), 7
    elif "dwconv" in kernel:
        c = 1100
        params = conv_params((1, 4, 5, c), (1, 3, 3, c), (1, 4, 5, c), pad=(1, 1), offsets=(in_off, out_off), act=act)
        taps, xs, ws, c_out = 9, (1, 4, 5, c), (1, 3, 3, c), c
    elif "1x1" in kernel:
        params = conv_params((1, 3, 3, 1100), (5, 1, 1, 1100), (1, 2, 2, 5), stride=(2, 2), offsets=(in_off, out_off),
                             act=act)
        taps, xs, ws, c_out = 1100, (1, 3, 3, 1100), (5, 1, 1, 1100), 5
    else:  # 3x3 over 150 channels (1350 taps, rows of 450 gathered in pieces at the border), stride 2, dilation 2
        params = conv_params((1, 7, 6, 150), (5, 3, 3, 150), (1, 4, 3, 5), stride=(2, 2), pad=(2, 1), dilation=(2, 1),
                             offsets=(in_off, out_off), act=act)
        taps, xs, ws, c_out = 1350, (1, 7, 6, 150), (5, 3, 3, 150), 5
    acc_std = math.sqrt(taps * (in_off**2 + 5500) * 16)
    return (params, *rand_quant(rng, c_out, acc_std), rand_int8(rng, xs), rng.integers(-7, 8, ws, dtype=np.int8),
            rand_bias(rng, c_out, acc_std))


@pytest.mark.host_c
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kernel", sorted(SCRATCH_VARIANTS))
def test_variant_with_large_window_matches_portable_in_exact_scratch(lib, kernel, seed):
    """More than 1024 taps (channels, for depthwise): the portable result, in exactly the planned scratch (garbage on
    entry, canaries after it untouched); a NULL scratch is MCU_ERR_ARG before anything is written."""
    variant = SCRATCH_VARIANTS[kernel][1]
    args = large_window_case(kernel, seed)
    twin = fc.fully_connected_s8 if "fully_connected" in kernel else conv.dwconv2d_s8 if "dwconv" in kernel else \
        conv.conv2d_s8
    expected = twin(*args)
    c_args = prepared_variant_args(variant, *args)
    rng = np.random.default_rng(seed)
    size = variant.scratch(args[0])
    scratch = rng.integers(-128, 128, size=size + 8, dtype=np.int8)
    canary = scratch[size:].copy()
    out = np.full(expected.size, 0x5A, np.int8)
    assert hostc.call(lib, kernel, *c_args, None, out=out) == hostc.MCU_ERR_ARG
    assert (out == 0x5A).all(), "wrote before rejecting a NULL scratch"
    assert hostc.call(lib, kernel, *c_args, scratch, out=out) == hostc.MCU_OK
    assert_equal_int(out.reshape(expected.shape), expected)
    assert (scratch[size:] == canary).all(), "wrote past its scratch"


def test_twins_reject_int32_overflow():
    params = fc_params(1, 1, 1)
    with pytest.raises(OverflowError):
        fc.fully_connected_s8(params, *q([Q30], [0]), i8([[100]]), i8([[100]]), np.array([I32_MAX], np.int32))


# ---- Argument checking --------------------------------------------------------------------------------------------

def _bad_cases():
    """(name, kernel, twin args, expected C status); ARG cases with a NULL pointer are C-only."""
    ARG, SHAPE = hostc.MCU_ERR_ARG, hostc.MCU_ERR_SHAPE
    conv_base = conv_case(1, depthwise=False)
    dw_base = next(c for c in map(lambda s: conv_case(s, depthwise=True), itertools.count(2)) if c[0]["input"][3] > 1)
    fc_base = fc_case(1)
    pool_base = pool_case(1, avg=True)
    add_base = add_case(1)
    sm_base = softmax_case(1)
    tr_base = ({"in_dims": (1, 2, 3, 4), "perm": (0, 2, 1, 3)}, i8(np.zeros(24)))

    def with_params(base, **changes):
        return ({**base[0], **changes}, *base[1:])

    def with_arg(base, i, value):
        return tuple(value if j == i else a for j, a in enumerate(base))

    for kernel, base in (("mcu_conv2d_s8", conv_base), ("mcu_dwconv2d_s8", dw_base)):
        p = base[0]
        n, h, w, c = p["input"]
        for i, name in ((0, "params"), (3, "input"), (4, "filter")):
            yield f"{kernel} NULL {name}", kernel, with_arg(base, i, None), ARG
        yield f"{kernel} NULL quant", kernel, with_arg(with_arg(base, 1, None), 2, None), ARG
        yield f"{kernel} NULL multiplier", kernel, with_arg(base, 1, None), ARG
        for field, value in (("stride_h", 0), ("stride_w", -1), ("dilation_h", 0), ("dilation_w", 0),
                             ("pad_top", -1), ("pad_left", -2), ("input_offset", 129), ("input_offset", -128),
                             ("output_offset", 128), ("act_min", 10), ("act_max", 128), ("input", (n, h, 0, c))):
            changes = {field: value}
            if field == "act_min":
                changes["act_max"] = 9
            yield f"{kernel} {field}={value}", kernel, with_params(base, **changes), ARG
        yield f"{kernel} shift 31", kernel, with_arg(base, 2, np.full_like(base[2], 31)), ARG
        yield f"{kernel} negative multiplier", kernel, with_arg(base, 1, np.full_like(base[1], -1)), ARG
        yield f"{kernel} batch mismatch", kernel, with_params(base, output=(n + 1, *p["output"][1:])), SHAPE
    p = conv_base[0]
    yield "conv output.c != filter.n", "mcu_conv2d_s8", with_params(conv_base, output=(*p["output"][:3], p["output"][3] + 1)), SHAPE
    yield "conv filter.c != input.c", "mcu_conv2d_s8", with_params(conv_base, filter=(*p["filter"][:3], p["filter"][3] + 1)), SHAPE
    p = dw_base[0]
    c_in = p["input"][3]
    bad_c = (*p["output"][:3], c_in * 2 + 1)
    yield "dwconv output.c % input.c", "mcu_dwconv2d_s8", with_params(dw_base, output=bad_c, filter=(1, *p["filter"][1:3], bad_c[3])), SHAPE
    yield "dwconv filter.n != 1", "mcu_dwconv2d_s8", with_params(dw_base, filter=(2, *p["filter"][1:])), SHAPE
    yield "dwconv filter.c != output.c", "mcu_dwconv2d_s8", with_params(dw_base, filter=(*p["filter"][:3], p["filter"][3] + c_in)), SHAPE

    for i, name in ((0, "params"), (3, "input"), (4, "weights")):
        yield f"fc NULL {name}", "mcu_fully_connected_s8", with_arg(fc_base, i, None), ARG
    yield "fc NULL shift", "mcu_fully_connected_s8", with_arg(fc_base, 2, None), ARG
    for field, value in (("batches", 0), ("in_features", 0), ("out_features", -1), ("input_offset", -128),
                         ("output_offset", -129), ("act_max", 200)):
        yield f"fc {field}={value}", "mcu_fully_connected_s8", with_params(fc_base, **{field: value}), ARG
    yield "fc shift -32", "mcu_fully_connected_s8", with_arg(fc_base, 2, np.full_like(fc_base[2], -32)), ARG

    p = pool_base[0]
    n, h, w, c = p["input"]
    for kernel in ("mcu_maxpool2d_s8", "mcu_avgpool2d_s8"):
        yield f"{kernel} NULL params", kernel, (None, pool_base[1]), ARG
        yield f"{kernel} NULL input", kernel, (p, None), ARG
        for field, value in (("kernel_h", 0), ("stride_w", 0), ("pad_top", -1), ("act_min", -129),
                             ("output", (n, 0, 1, c))):
            yield f"{kernel} {field}={value}", kernel, with_params(pool_base, **{field: value}), ARG
        yield f"{kernel} channel mismatch", kernel, with_params(pool_base, output=(*p["output"][:3], c + 1)), SHAPE
        yield f"{kernel} batch mismatch", kernel, with_params(pool_base, output=(n + 1, *p["output"][1:])), SHAPE
        yield f"{kernel} window in top padding", kernel, with_params(pool_base, pad_top=p["kernel_h"]), SHAPE
        yield f"{kernel} window past the bottom", kernel, with_params(pool_base, output=(n, h + p["pad_top"] + 1, p["output"][2], c), stride_h=1), SHAPE
        yield f"{kernel} window past the right", kernel, with_params(pool_base, output=(n, p["output"][1], w + p["pad_left"] + 1, c), stride_w=1), SHAPE
    yield "avgpool divisor -1", "mcu_avgpool2d_s8", with_params(pool_base, divisor=-1), ARG
    yield "avgpool zero_point 128", "mcu_avgpool2d_s8", with_params(pool_base, zero_point=128), ARG

    for i, name in ((0, "params"), (1, "input1"), (2, "input2")):
        yield f"add NULL {name}", "mcu_add_s8", with_arg(add_base, i, None), ARG
    for field, value in (("size", 0), ("left_shift", 24), ("left_shift", -1), ("input2_offset", -128),
                         ("input1_shift", 31), ("output_shift", -32), ("output_multiplier", -5), ("act_min", 100)):
        changes = {field: value, **({"act_max": 50} if field == "act_min" else {})}
        yield f"add {field}={value}", "mcu_add_s8", with_params(add_base, **changes), ARG

    for i, name in ((0, "params"), (1, "exp_table"), (2, "input")):
        yield f"softmax NULL {name}", "mcu_softmax_s8", with_arg(sm_base, i, None), ARG
    for field, value in (("rows", 0), ("cols", 0), ("cols", 65536)):
        yield f"softmax {field}={value}", "mcu_softmax_s8", with_params(sm_base, **{field: value}), ARG
    yield "softmax exp_table[0] == 0", "mcu_softmax_s8", with_arg(sm_base, 1, np.zeros(256, np.uint16)), ARG

    for i, name in ((0, "params"), (1, "input")):
        yield f"transpose NULL {name}", "mcu_transpose_s8", with_arg(tr_base, i, None), ARG
    for perm in ((0, 1, 2, 2), (0, 1, 2, 4), (-1, 0, 1, 2)):
        yield f"transpose perm {perm}", "mcu_transpose_s8", with_params(tr_base, perm=perm), ARG
    yield "transpose zero dim", "mcu_transpose_s8", with_params(tr_base, in_dims=(1, 0, 3, 4)), ARG


BAD_CASES = list(_bad_cases())


@pytest.mark.host_c
@pytest.mark.parametrize("case", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_c_rejects_bad_arguments_before_writing(lib, case):
    _, kernel, args, status = case
    out = np.full(1 << 12, 0x5A, np.int8)
    assert hostc.call(lib, kernel, *args, out=out) == status
    assert (out == 0x5A).all(), "a kernel wrote its output before rejecting its arguments"


@pytest.mark.host_c
@pytest.mark.parametrize("kernel", sorted(TWINS))
def test_c_rejects_null_output(lib, kernel):
    case = next(c for c in HAND_CASES if c[1] == kernel)
    assert hostc.call(lib, kernel, *case[2], out=None) == hostc.MCU_ERR_ARG


@pytest.mark.parametrize("case", [c for c in BAD_CASES if all(a is not None for a in c[2])], ids=lambda c: c[0])
def test_twin_rejects_bad_arguments(case):
    _, kernel, args, _ = case
    with pytest.raises(ValueError):
        TWINS[kernel](*args)


# ---- mcu_quant.h == codegen/twins/quant.py -------------------------------------------------------------------------

QUANT_WRAPPER = """
#include <stdint.h>
#include "mcu/mcu_quant.h"
void t_requantize(const int32_t *acc, const int32_t *m, const int32_t *s, int32_t *out, int32_t n)
{ for (int32_t i = 0; i < n; ++i) out[i] = mcu_requantize(acc[i], m[i], s[i]); }
"""


@pytest.fixture(scope="module")
def quant_c():
    lib = hostc.build_source(QUANT_WRAPPER, "quant_wrapper")

    def run(name, *columns):
        cols = [np.ascontiguousarray(np.broadcast_arrays(*columns)[i], dtype=np.int32) for i in range(len(columns))]
        out = np.empty_like(cols[0])
        getattr(lib, name)(*(c.ctypes.data for c in cols), out.ctypes.data, len(out))
        return out

    lib.t_requantize.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int32]
    lib.t_requantize.restype = None
    return run


def exact_requantize(acc: int, m: int, shift: int) -> int:
    """The definition, in rationals: acc * 2^shift saturated to int32 for shift > 0, times m / 2^31, times
    2^shift for shift < 0, rounded once with ties up."""
    x = min(max(acc * 2 ** max(shift, 0), I32_MIN), I32_MAX)
    return math.floor(Fraction(x * m, 2 ** (31 - min(shift, 0))) + Fraction(1, 2))


REQUANT_EDGES = [  # (acc, multiplier, shift, expected): one rounding, ties up (-2.5 -> -2, 2.5 -> 3)
    (I32_MAX, I32_MAX, 30, I32_MAX - 1), (I32_MIN, Q30, 30, -Q30), (I32_MIN, I32_MAX, 1, I32_MIN + 1),
    (5, Q30, 0, 3), (-5, Q30, 0, -2), (-6, Q30, -1, -1), (-10, Q30, -1, -2), (100, Q30, 1, 100), (1, Q30, 2, 2),
    (-3, Q30, -1, -1), (3, Q30, -1, 1), (-1, Q30, 0, 0), (1, Q30, 0, 1), (-1, Q30, -1, 0),
    (I32_MAX, I32_MAX, -31, 1), (I32_MIN, I32_MAX, -31, -1), (Q30, Q30, -31, 0), (12345, 0, 5, 0),
]


def test_quant_twin_edges():
    for acc, m, s, want in REQUANT_EDGES:
        assert exact_requantize(acc, m, s) == want, (acc, m, s)
        assert int(quant.requantize(acc, m, s)) == want, (acc, m, s)


@pytest.mark.host_c
def test_quant_c_edges(quant_c):
    acc, m, s, want = map(np.array, zip(*REQUANT_EDGES))
    assert_equal_int(quant_c("t_requantize", acc, m, s), want)


@pytest.mark.host_c
def test_quant_c_matches_twin_for_every_shift(quant_c):
    rng = np.random.default_rng(3)
    full = rng.integers(I32_MIN, I32_MAX, size=300, endpoint=True)
    small = rng.integers(-3000, 3000, size=300)
    ties = (2 * rng.integers(-1000, 1000, size=100) + 1) << rng.integers(0, 20, size=100)  # odd * 2^k
    accs = np.concatenate([full, small, ties, [I32_MIN, I32_MIN + 1, -1, 0, 1, I32_MAX]])
    mults = np.concatenate([rng.integers(Q30, 1 << 31, size=accs.size - 3), [0, Q30, I32_MAX]])
    rng.shuffle(mults)
    for shift in range(-31, 31):
        got = quant_c("t_requantize", accs, mults, shift)
        assert_equal_int(got, quant.requantize(accs, mults, shift))
        some = range(0, accs.size, 37)
        assert [int(got[i]) for i in some] == [exact_requantize(int(accs[i]), int(mults[i]), shift) for i in some]


# ---- Build hygiene ------------------------------------------------------------------------------------------------

ALLOWED_SYSTEM_HEADERS = {"stdint.h", "stddef.h", "string.h"}


@pytest.mark.parametrize("src", hostc.kernel_sources(), ids=lambda p: p.name)
def test_kernel_file_layout(src):
    """One-line purpose comment first, freestanding includes only, no double, no float outside *_f32* kernels."""
    text = src.read_text()
    assert re.match(r"/\* [^\n]+ \*/\n", text), f"{src.name} must open with a one-line comment"
    assert set(re.findall(r"#include <([^>]+)>", text)) <= ALLOWED_SYSTEM_HEADERS
    assert all(h.startswith("mcu/") for h in re.findall(r'#include "([^"]+)"', text))
    assert not re.search(r"\b(double|malloc|printf)\b", text)
    if "_f32" not in src.stem:
        assert not re.search(r"\bfloat\b", text), f"{src.name}: float in an integer kernel"


@pytest.mark.host_c
def test_each_kernel_defines_one_function_and_needs_no_libc(tmp_path):
    """Each .c compiles alone (-ffreestanding, warnings are errors), exports exactly the function it is named
    after (a shared core: only mcu_* functions, and some kernel links it), and links against nothing but
    memcpy/memset and the shared cores its registry entry links."""
    if shutil.which("nm") is None:
        pytest.skip("nm not found")
    from mcu.codegen.kernels import KERNELS

    def symbols(src):
        obj = tmp_path / f"{src.stem}.o"
        subprocess.run([hostc.CC, "-std=c99", "-O2", "-ffreestanding", "-c", *hostc.WARNINGS, f"-I{hostc.INCLUDE}",
                        str(src), "-o", str(obj)], check=True, capture_output=True, text=True)
        defined = subprocess.run(["nm", "-g", "--defined-only", str(obj)], capture_output=True, text=True).stdout
        undefined = subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True).stdout
        return [line.split()[-1] for line in defined.splitlines()], {line.split()[-1] for line in undefined.splitlines()}

    linked = {s for k in KERNELS.values() for s in k.links}
    exports = {}
    for src in hostc.kernel_sources():
        key = src.relative_to(hostc.KERNELS).with_suffix("").as_posix()
        defined, undefined = symbols(src)
        exports[key] = (defined, undefined)
        if key.startswith("shared/"):
            assert key in linked, f"{key}: no kernel's registry entry links it"
            assert all(name.startswith("mcu_") for name in defined), (key, defined)
        else:
            assert defined == [src.stem]
    for k in KERNELS.values():
        allowed = {"memcpy", "memset"} | {name for s in k.links for name in exports[s][0]}
        assert exports[k.path][1] <= allowed, (k.path, exports[k.path][1] - allowed)
    assert linked <= exports.keys()


@pytest.mark.host_c
@pytest.mark.parametrize("cpu", ["cortex-m0plus", "cortex-m4", "cortex-m55"])
def test_kernels_compile_warning_free_for_cortex_m(tmp_path, cpu):
    cc = shutil.which("arm-none-eabi-gcc")
    if cc is None:
        pytest.skip("arm-none-eabi-gcc not found")
    for src in hostc.kernel_sources():
        res = subprocess.run([cc, f"-mcpu={cpu}", "-mthumb", "-std=c99", "-O2", "-ffreestanding", "-c", *hostc.WARNINGS,
                              f"-I{hostc.INCLUDE}", str(src), "-o", str(tmp_path / f"{src.stem}.o")],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr


@pytest.mark.host_c
def test_ctypes_struct_layout_matches_c():
    code = "#include <stddef.h>\n#include \"mcu/mcu_kernels.h\"\n" + "".join(
        f"size_t size_{name}(void) {{ return sizeof({name}); }}\n" for name in hostc.STRUCTS)
    lib = hostc.build_source(code, "struct_sizes")
    for name, cls in hostc.STRUCTS.items():
        fn = getattr(lib, f"size_{name}")
        fn.restype = ctypes.c_size_t
        assert fn() == ctypes.sizeof(cls), name


# ---- Conv fused with its residual add (optimize="memory", codegen/passes/fuse_add.py) -----------------------------

@pytest.mark.host_c
@pytest.mark.parametrize("where", ["on the residual", "apart"])
@pytest.mark.parametrize("seed", range(16))
def test_conv2d_add_equals_the_conv_twin_then_the_add_twin(lib, where, seed):
    """mcu_conv2d_add_s8 == mcu_conv2d_s8's twin then mcu_add_s8's (y as input1), with the output over the residual
    (the kernel reads residual[i] before it writes output[i]) or in its own buffer."""
    params, mult, shift, x, filt, bias = conv_case(seed, depthwise=False)
    size = int(np.prod(params["output"]))
    add, _, r = add_case(seed + 500)
    add = {**add, "size": size}
    r = np.random.default_rng(seed).integers(-128, 128, size=params["output"], dtype=np.int8)
    fused = conv.conv2d_add_params(params, add)
    expected = elementwise.add_s8(add, conv.conv2d_s8(params, mult, shift, x, filt, bias), r)
    assert_equal_int(conv.conv2d_add_s8(fused, mult, shift, x, filt, bias, r), expected)
    out = r.copy() if where == "on the residual" else np.full(r.shape, 77, np.int8)
    status = hostc.call(lib, "mcu_conv2d_add_s8", fused, mult, shift, x, filt, bias, out if where != "apart" else r,
                        out=out)
    assert status == hostc.MCU_OK
    assert_equal_int(out, expected)


@pytest.mark.host_c
def test_conv2d_add_rejects_bad_add_params(lib):
    params, mult, shift, x, filt, bias = conv_case(1, depthwise=False)
    add = {**add_case(2)[0], "size": int(np.prod(params["output"]))}
    r = np.zeros(params["output"], np.int8)
    out = np.full(r.shape, 5, np.int8)
    for key, value in (("add_left_shift", 24), ("add_input2_offset", 129), ("add_output_shift", 31),
                       ("add_act_min", 10), ("add_input1_multiplier", -1)):
        bad = {**conv.conv2d_add_params(params, add), key: value}
        if key == "add_act_min":
            bad["add_act_max"] = 9
        assert hostc.call(lib, "mcu_conv2d_add_s8", bad, mult, shift, x, filt, bias, r, out=out) == hostc.MCU_ERR_ARG
        assert (out == 5).all(), "wrote its output on bad arguments"
