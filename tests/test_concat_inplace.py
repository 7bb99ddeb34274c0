"""A channel concat written in place (both builds): its producers write their pixels output_pixel_stride apart
straight into the concat's buffer. The strided kernels (portable, and the int8 conv / average pool variants) equal
their contiguous twins at the strided positions and leave the gaps alone, the other variants refuse a stride, the
rule fires on inception / fire blocks exactly (host and QEMU, the DSP, scalar and Helium variants in the default
build) and stays off where it must; the tensor verifier re-derives the interleaved slices from the kernels' params."""
import dataclasses
import math

import numpy as np
import pytest
import torch
from torch import nn

import hostc
import mcu
from mcu.codegen import sharing
from mcu.codegen.ir import Call
from mcu.codegen.memory import Location, overwritable_inputs
from mcu.codegen.plan_verifier import verify_tensor_plan
from mcu.codegen.sharing import overlap_gap, raster_gap
from mcu.codegen.passes import inplace
from mcu.memory_planner import PlanError
from mcu.codegen.twins import conv, float32, pool, s16
from test_float32 import conv_case as f32_conv_case, pool_case as f32_pool_case
from mcu.codegen.kernels import KERNELS
from test_kernels_host import (conv_case as s8_conv_case, conv_params, pool_case as s8_pool_case, pool_params,
                               prepared_variant_args, rand_act, rand_bias, rand_int8, rand_offsets, rand_quant)
from test_kernels_s16_host import _conv_case as s16_conv_case, _pool_case as s16_pool_case

# ---- Kernels: a strided call writes the contiguous twin's values at the strided positions, nothing else -------------

STRIDED = {  # kernel -> (twin, twin args for a seed, output dtype)
    "mcu_conv2d_s8": (conv.conv2d_s8, lambda s: s8_conv_case(s, depthwise=False), np.int8),
    "mcu_dwconv2d_s8": (conv.dwconv2d_s8, lambda s: s8_conv_case(1000 + s, depthwise=True), np.int8),
    "mcu_maxpool2d_s8": (pool.maxpool2d_s8, lambda s: s8_pool_case(s, avg=False), np.int8),
    "mcu_avgpool2d_s8": (pool.avgpool2d_s8, lambda s: s8_pool_case(s, avg=True), np.int8),
    "mcu_conv2d_s16": (s16.conv2d_s16, lambda s: s16_conv_case(s, "conv"), np.int16),
    "mcu_dwconv2d_s16": (s16.dwconv2d_s16, lambda s: s16_conv_case(s, "dwconv"), np.int16),
    "mcu_maxpool2d_s16": (s16.maxpool2d_s16, lambda s: s16_pool_case(s, False), np.int16),
    "mcu_avgpool2d_s16": (s16.avgpool2d_s16, lambda s: s16_pool_case(s, True), np.int16),
    "mcu_conv2d_f32": (float32.conv2d_f32, lambda s: f32_conv_case(s)[0], np.float32),
    "mcu_dwconv2d_f32": (float32.dwconv2d_f32, lambda s: f32_conv_case(s, depthwise=True)[0], np.float32),
    "mcu_maxpool2d_f32": (float32.maxpool2d_f32, lambda s: f32_pool_case(s, "max")[0], np.float32),
    "mcu_avgpool2d_f32": (float32.avgpool2d_f32, lambda s: f32_pool_case(s, "avg")[0], np.float32),
}
CANARY = 0x5A


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


def _grouped_case(seed):
    """A grouped int8 conv (2 groups) from the regular case's generator."""
    p, mult, shift, x, _, bias = s8_conv_case(seed, depthwise=False)
    n, h, w, _ = p["input"]
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(n, h, w, 4), dtype=np.int8)
    c_out = p["output"][3] * 2
    filt = rng.integers(-128, 128, size=(c_out, *p["filter"][1:3], 2), dtype=np.int8)
    p = {**p, "input": (n, h, w, 4), "filter": filt.shape, "output": (*p["output"][:3], c_out)}
    return p, np.tile(mult, 2), np.tile(shift, 2), x, filt, None if bias is None else np.tile(bias, 2)


STRIDED["mcu_conv2d_grouped_s8"] = (conv.conv2d_grouped_s8, _grouped_case, np.int8)


@pytest.mark.host_c
@pytest.mark.parametrize("extra", [1, 5])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kernel", sorted(STRIDED))
def test_strided_output_is_the_contiguous_twin_at_its_pixels(lib, kernel, seed, extra):
    twin, case, dtype = STRIDED[kernel]
    args = case(seed)
    expected = np.asarray(twin(*args), dtype)  # the twin ignores the stride: the contiguous result
    n, h, w, c = args[0]["output"]
    stride, pixels = c + extra, n * h * w
    out = np.zeros(pixels * stride + 3, dtype)
    out.view(np.uint8)[:] = CANARY
    canary = out.copy()
    params = {**args[0], "output_pixel_stride": stride}
    assert hostc.call(lib, kernel, params, *args[1:], out=out) == hostc.MCU_OK
    at = (np.arange(pixels) * stride)[:, None] + np.arange(c)
    got = out[at].reshape(expected.shape)
    assert got.tobytes() == expected.tobytes(), f"{kernel}: first mismatch at {np.argwhere(got != expected)[:1]}"
    gaps = np.ones(out.size, bool)
    gaps[at.ravel()] = False
    assert out[gaps].tobytes() == canary[gaps].tobytes(), "wrote into the gaps between its pixels"


@pytest.mark.host_c
@pytest.mark.parametrize("kernel", ["mcu_conv2d_s8", "mcu_maxpool2d_s16", "mcu_avgpool2d_f32"])
def test_portable_kernels_refuse_a_stride_below_the_channels(lib, kernel):
    twin, case, dtype = STRIDED[kernel]
    args = case(1)
    c = args[0]["output"][3]
    out = np.full(1 << 12, 7, dtype)
    for stride in (-1, *range(1, c)):
        assert hostc.call(lib, kernel, {**args[0], "output_pixel_stride": stride}, *args[1:], out=out) == \
            hostc.MCU_ERR_ARG
    assert (out == 7).all()


def _variants():
    """Every variant of a strided-capable kernel's params struct that writes contiguously (not registry `strided`):
    the 3x3 depthwise variants, _s4, _inplace, conv2d_add, the int16 DSP convs."""
    for name, args in sorted(hostc.PROTOTYPES.items()):
        kind = args[0][0]
        if kind in ("mcu_conv2d_params_t", "mcu_pool2d_params_t", "mcu_conv2d_add_params_t") and (
                any(v in name for v in ("_dsp", "_fast", "_mve", "_s4", "_inplace")) or name == "mcu_conv2d_add_s8"
        ) and name not in STRIDED_VARIANTS:
            yield name


# the int8 conv, 1x1 conv and average pool variants write each pixel whole at its stride (mcu_kernels.h)
STRIDED_VARIANTS = {k.name for k in KERNELS.values() if k.strided and k.portable}
VARIANTS = list(_variants())


def _one_by_one_case(seed):
    """Portable twin arguments of a 1x1 conv without padding (any stride), which the 1x1 variants run."""
    rng = np.random.default_rng(seed)
    n, h, w = int(rng.choice([1, 2])), int(rng.integers(1, 8)), int(rng.integers(1, 8))
    sh, sw = (int(v) for v in rng.integers(1, 3, size=2))
    c_in, c_out = int(rng.integers(1, 24)), int(rng.integers(1, 11))
    in_off, out_off = rand_offsets(rng)
    params = conv_params((n, h, w, c_in), (c_out, 1, 1, c_in), (n, (h - 1) // sh + 1, (w - 1) // sw + 1, c_out),
                         (sh, sw), (0, 0), (1, 1), (in_off, out_off), rand_act(rng, out_off))
    acc_std = math.sqrt(c_in * (in_off**2 + 5500) * 5500)
    return (params, *rand_quant(rng, c_out, acc_std), rand_int8(rng, (n, h, w, c_in)),
            rng.integers(-128, 128, size=(c_out, 1, 1, c_in), dtype=np.int8), rand_bias(rng, c_out, acc_std))


def _strided_variant_call(lib, kernel, seed, stride_extra):
    """(C result, expected contiguous twin output, strided output buffer, pixel positions) of one strided call of
    a variant on the host (its portable C paths: no DSP or Helium instructions there), or None when the
    variant's prepare declines the case."""
    spec = KERNELS[kernel]
    if spec.family == "pool":
        args = s8_pool_case(seed, avg=True)
        expected, c_args = pool.avgpool2d_s8(*args), args
    else:
        args = _one_by_one_case(seed) if "1x1" in kernel else s8_conv_case(seed, depthwise=False)
        expected = conv.conv2d_s8(*args)
        c_args = prepared_variant_args(spec, *args)
        if c_args is None:
            return None
        if spec.scratch is not None:
            c_args = (*c_args, np.zeros(spec.scratch(args[0]), np.int8))
    n, h, w, c = args[0]["output"]
    stride, pixels = c + stride_extra, n * h * w
    out = np.zeros(pixels * max(stride, c) + 3, np.int8)
    out.view(np.uint8)[:] = CANARY
    rc = hostc.call(lib, kernel, {**c_args[0], "output_pixel_stride": stride}, *c_args[1:], out=out)
    return rc, np.asarray(expected, np.int8), out, (np.arange(pixels) * stride)[:, None] + np.arange(c)


HOST_STRIDED = sorted(k for k in STRIDED_VARIANTS if not k.endswith("_mve"))  # Helium: on QEMU (below)


@pytest.mark.host_c
@pytest.mark.parametrize("extra", [1, 5])
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kernel", HOST_STRIDED)
def test_strided_variant_is_the_contiguous_twin_at_its_pixels(lib, kernel, seed, extra):
    assert {"mcu_conv2d_s8_dsp", "mcu_conv2d_1x1_s8_dsp", "mcu_conv2d_s8_fast", "mcu_conv2d_1x1_s8_fast",
            "mcu_avgpool2d_s8_fast"} <= set(HOST_STRIDED)
    done = _strided_variant_call(lib, kernel, seed, extra)
    if done is None:
        pytest.skip("the variant's prepare declines these weights (select_kernels keeps another kernel)")
    rc, expected, out, at = done
    assert rc == hostc.MCU_OK
    got = out[at].reshape(expected.shape)
    assert got.tobytes() == expected.tobytes(), f"{kernel}: first mismatch at {np.argwhere(got != expected)[:1]}"
    gaps = np.ones(out.size, bool)
    gaps[at.ravel()] = False
    assert (out[gaps].view(np.uint8) == CANARY).all(), "wrote into the gaps between its pixels"


@pytest.mark.host_c
@pytest.mark.parametrize("kernel", HOST_STRIDED)
def test_strided_variants_refuse_a_stride_below_the_channels(lib, kernel):
    spec = KERNELS[kernel]
    for seed in range(20):
        done = _strided_variant_call(lib, kernel, seed, 0)
        if done is not None and done[1].shape[-1] > 1:
            break
    c = done[1].shape[-1]
    for stride in (-1, 1, c - 1):
        done = _strided_variant_call(lib, kernel, seed, stride - c)
        assert done[0] == hostc.MCU_ERR_ARG, f"{spec.name} took output_pixel_stride {stride} < C_out {c}"
        assert (done[2].view(np.uint8) == CANARY).all()


def _variant_args(kernel, stride):
    """Valid scalar params (4x4x8 -> 4x4x8, 1x1 or 3x3 'same') with `stride`, and dummy arrays for every pointer."""
    kind = hostc.PROTOTYPES[kernel][0][0]
    if kind == "mcu_pool2d_params_t":
        params = pool_params((1, 4, 4, 8), (1, 4, 4, 8), (3, 3), pad=(1, 1))
    else:
        k = 3 if "3x3" in kernel or "dwconv" in kernel else 1
        filt = (1, k, k, 8) if "dwconv" in kernel else (8, k, k, 8)
        params = conv_params((1, 4, 4, 8), filt, (1, 4, 4, 8), pad=(k // 2, k // 2))
    if kind == "mcu_conv2d_add_params_t":
        params.update(add_left_shift=20, add_input1_offset=0, add_input1_multiplier=1 << 30, add_input1_shift=1,
                      add_input2_offset=0, add_input2_multiplier=1 << 30, add_input2_shift=1, add_output_offset=0,
                      add_output_multiplier=1 << 30, add_output_shift=-19, add_act_min=-128, add_act_max=127)
    args = [{**params, "output_pixel_stride": stride}]
    for ctype, _ in hostc.PROTOTYPES[kernel][1:-1]:
        if ctype == "mcu_per_channel_quant_t":
            args += [np.full(64, 1 << 30, np.int32), np.zeros(64, np.int32)]
        else:
            args.append(np.zeros(1 << 14, hostc._DTYPES[ctype]))
    return args


@pytest.mark.host_c
@pytest.mark.parametrize("kernel", VARIANTS)
def test_variants_refuse_a_pixel_stride(lib, kernel):
    assert {"mcu_dwconv2d_3x3_s8_dsp", "mcu_conv2d_1x1_s8_inplace", "mcu_conv2d_add_s8", "mcu_conv2d_s4"} <= set(
        VARIANTS)
    out = np.zeros(1 << 12, hostc._DTYPES[hostc.PROTOTYPES[kernel][-1][0]])
    out.view(np.uint8)[:] = CANARY
    assert hostc.call(lib, kernel, *_variant_args(kernel, 8 + 4), out=out) == hostc.MCU_ERR_ARG
    assert (out.view(np.uint8) == CANARY).all(), "wrote before refusing the stride"


# ---- The rule on models -----------------------------------------------------------------------------------------------
# Inputs calibrated in [0, 6] and ReLU6 branches saturated at both ends: every branch, the pool of the input and the
# concat observe [0, 6], so the concat's inputs share its qparams (whatever mcu/quantization/quantizer.py gives aten.cat).

SCALE = 30.0


def _calib(shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    xs = [torch.clamp(torch.randn(*shape, generator=g) * SCALE, 0.0, 6.0) for _ in range(4)]
    for x in xs:
        x.view(-1)[:2] = torch.tensor([0.0, 6.0])
    return xs


def _compile(model, shape, out_dir, optimize="memory", board="mps2-an386"):
    torch.manual_seed(0)
    calib = [(x,) for x in _calib(shape)]
    return mcu.compile(model.eval(), calib[0], calibration=calib, out_dir=out_dir, optimize=optimize, board=board)


def _copy_arena(model, shape, out_dir, monkeypatch, **kw):
    """The arena with the channel rule off (the concat copies)."""
    with monkeypatch.context() as m:
        m.setattr(inplace, "is_channel_concat", lambda g, n: False)
        return _compile(model, shape, out_dir, **kw)


def _inputs(shape, seed):
    return [_calib(shape, seed)[0]]


def _assert_equal(got, want, where):
    bad = np.argwhere(got != want)
    at = tuple(bad[0]) if len(bad) else None
    assert at is None, f"first mismatch at {at}: {where} {got[at]}, reference {want[at]}"


def _exact_on_host(pkg, shape, seed=4):
    from mcu.build.host import run_host
    x = _inputs(shape, seed)
    _assert_equal(run_host(pkg, x).raw_outputs[0], pkg.reference(x)[0], "host")


def _exact_on_board(pkg, shape, seed):
    x = _inputs(shape, seed)
    _assert_equal(mcu.run(pkg, x).raw_outputs[0], pkg.reference(x)[0], "device")


def _views(pkg):
    return [n for n in pkg.graph.nodes if n.op == "alias" and n.attrs.get("view") == "concat"]


def _kernels(pkg):
    return [n.call.kernel for n in pkg.graph.nodes if n.op == "call"]


class Inception(nn.Module):
    """1x1, 3x3 and a 3x3 max pool of the input, concatenated over channels, then a 1x1 conv."""

    def __init__(self, c=8):
        super().__init__()
        self.a = nn.Conv2d(c, 8, 1)
        self.b = nn.Conv2d(c, 12, 3, padding=1)
        self.c = nn.Conv2d(8 + 12 + c, 4, 1)

    def forward(self, x):
        r6 = nn.functional.relu6
        return self.c(torch.cat([r6(self.a(x)), r6(self.b(x)), nn.functional.max_pool2d(x, 3, 1, 1)], dim=1))


class Fire(nn.Module):
    """SqueezeNet's fire module (squeeze 1x1, expand 1x1 and 3x3 concatenated), then a 1x1 conv."""

    def __init__(self, c=16, squeeze=16, expand=64, relu=nn.functional.relu6):
        super().__init__()
        self.s = nn.Conv2d(c, squeeze, 1)
        self.e1 = nn.Conv2d(squeeze, expand, 1)
        self.e3 = nn.Conv2d(squeeze, expand, 3, padding=1)
        self.c = nn.Conv2d(2 * expand, 8, 1)
        self.relu = relu

    def forward(self, x):
        y = nn.functional.relu6(self.s(x))
        return self.c(torch.cat([self.relu(self.e1(y)), self.relu(self.e3(y))], dim=1))


class ReadElsewhere(Inception):
    """The 1x1 branch is also read by another conv: its bytes cannot be a strided slice."""

    def __init__(self):
        super().__init__()
        self.d = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        r6 = nn.functional.relu6
        a = r6(self.a(x))
        return self.c(torch.cat([a, r6(self.b(x)), nn.functional.max_pool2d(x, 3, 1, 1)], dim=1)) + self.d(a)


class CatIsOutput(Inception):
    def forward(self, x):
        r6 = nn.functional.relu6
        return torch.cat([r6(self.a(x)), r6(self.b(x)), nn.functional.max_pool2d(x, 3, 1, 1)], dim=1)


class CatOfInput(Inception):
    """The graph input itself is a concat input (no producer writes it)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(8 + 8, 4, 1)

    def forward(self, x):
        return self.c(torch.cat([nn.functional.relu6(self.a(x)), x], dim=1))


INCEPTION = (1, 8, 6, 7)
FIRE = (1, 16, 8, 8)


@pytest.fixture(scope="module")
def inception(tmp_path_factory):
    return _compile(Inception(), INCEPTION, tmp_path_factory.mktemp("inception"))


@pytest.fixture(scope="module")
def fire(tmp_path_factory):
    return _compile(Fire(), FIRE, tmp_path_factory.mktemp("fire"))


def test_inception_concat_is_written_in_place(inception, tmp_path, monkeypatch):
    g, mem = inception.graph, inception.memory
    assert "mcu_concat_s8" not in _kernels(inception)
    (view,) = _views(inception)
    out = mem.locations[view.outputs[0]].index
    c_total = g.tensors[view.outputs[0]].shape[3]
    assert c_total == 28
    producers = [g.producer(t) for t in view.inputs]
    assert [p.call.kernel for p in producers] == ["mcu_conv2d_s8", "mcu_conv2d_s8", "mcu_maxpool2d_s8"]
    assert [p.call.params["output_pixel_stride"] for p in producers] == [28, 28, 28]
    assert [mem.locations[t] for t in view.inputs] == [Location("arena", out + o) for o in (0, 8, 20)]
    assert "output_pixel_stride = 28" in (inception.out_dir / "model.c").read_text()
    # the input and output are the caller's: the arena is the concat's buffer alone
    cat_bytes = g.tensors[view.outputs[0]].nbytes
    assert inception.arena_bytes == mem.lower_bound == cat_bytes
    copy = _copy_arena(Inception(), INCEPTION, tmp_path / "copy", monkeypatch)
    assert "mcu_concat_s8" in _kernels(copy)
    assert copy.arena_bytes - inception.arena_bytes == sum(g.tensors[t].nbytes for t in view.inputs)


def test_fire_concat_is_written_in_place(fire, tmp_path, monkeypatch):
    g, mem = fire.graph, fire.memory
    (view,) = _views(fire)
    assert all(g.producer(t).call.params["output_pixel_stride"] == 128 for t in view.inputs)
    # the concat's buffer is live from its first producer: the planner sees it beside the squeeze output
    first = min(i for i, n in enumerate(g.nodes) if view.inputs[0] in n.outputs or view.inputs[1] in n.outputs)
    buf = next(b for b in mem.buffers if b.name == sharing.storage_groups(g)[view.outputs[0]])
    assert buf.first == first and buf.size == g.tensors[view.outputs[0]].nbytes
    copy = _copy_arena(Fire(), FIRE, tmp_path / "copy", monkeypatch)
    assert fire.arena_bytes < copy.arena_bytes
    verify_tensor_plan(g, mem)


@pytest.mark.host_c
def test_channel_concat_in_place_is_exact(inception, fire):
    _exact_on_host(inception, INCEPTION)
    _exact_on_host(fire, FIRE)


@pytest.mark.qemu
def test_channel_concat_in_place_is_exact_on_the_board(inception):
    assert inception.board == "mps2-an386"
    _exact_on_board(inception, INCEPTION, 5)


@pytest.mark.parametrize("model, shape, why", [
    (ReadElsewhere(), INCEPTION, "a producer's output is read elsewhere"),
    (CatIsOutput(), INCEPTION, "the concat is a graph output"),
    (CatOfInput(), INCEPTION, "a concat input is the graph input"),
])
def test_channel_concat_keeps_its_copy(model, shape, why, tmp_path):
    pkg = _compile(model, shape, tmp_path)
    assert "mcu_concat_s8" in _kernels(pkg) and not _views(pkg), why
    assert not any(n.call.params.get("output_pixel_stride") for n in pkg.graph.nodes if n.op == "call")
    verify_tensor_plan(pkg.graph, pkg.memory)


# ---- The default build: the board's variants write the concat in place -------------------------------------------


class Pooled(nn.Module):
    """A 1x1 branch and a 3x3 average pool of the input, concatenated over channels, then a 1x1 conv."""

    def __init__(self, c=16):
        super().__init__()
        self.a = nn.Conv2d(c, 24, 1)
        self.c = nn.Conv2d(24 + c, 8, 1)

    def forward(self, x):
        return self.c(torch.cat([nn.functional.relu6(self.a(x)), nn.functional.avg_pool2d(x, 3, 1, 1)], dim=1))


SPEED = {  # (model, board) -> the concat producers' kernels
    ("fire", "mps2-an386"): ["mcu_conv2d_1x1_s8_dsp", "mcu_conv2d_s8_dsp"],
    ("fire", "mps2-an385"): ["mcu_conv2d_1x1_s8_fast", "mcu_conv2d_s8_fast"],
    ("fire", "mps3-an547"): ["mcu_conv2d_1x1_s8_mve", "mcu_conv2d_s8_mve"],
    ("pooled", "mps2-an386"): ["mcu_conv2d_1x1_s8_dsp", "mcu_avgpool2d_s8_dsp"],
    ("pooled", "mps3-an547"): ["mcu_conv2d_1x1_s8_mve", "mcu_avgpool2d_s8_mve"],
}
SPEED_MODELS = {"fire": (Fire, FIRE, 128), "pooled": (Pooled, FIRE, 40)}  # class, input shape, C_total


@pytest.fixture(scope="module")
def speed_builds(tmp_path_factory):
    return {(m, b): _compile(SPEED_MODELS[m][0](), SPEED_MODELS[m][1], tmp_path_factory.mktemp(f"{m}-{b}"),
                             optimize="speed", board=b) for m, b in SPEED}


@pytest.mark.parametrize("model, board", sorted(SPEED))
def test_speed_build_writes_the_concat_in_place(speed_builds, model, board, tmp_path, monkeypatch):
    pkg = speed_builds[model, board]
    cls, shape, c_total = SPEED_MODELS[model]
    g, mem = pkg.graph, pkg.memory
    (view,) = _views(pkg)
    producers = [g.producer(t) for t in view.inputs]
    assert [p.call.kernel for p in producers] == SPEED[model, board]
    assert [p.call.params["output_pixel_stride"] for p in producers] == [c_total] * 2
    out = mem.locations[view.outputs[0]].index
    first_c = g.tensors[view.inputs[0]].shape[3]
    assert [mem.locations[t] for t in view.inputs] == [Location("arena", out + o) for o in (0, first_c)]
    verify_tensor_plan(g, mem)
    copy = _copy_arena(cls(), shape, tmp_path / "copy", monkeypatch, optimize="speed", board=board)
    assert "mcu_concat_s8" in _kernels(copy)
    # the concat's 8x8xC_total buffer no longer lives beside its inputs' own buffers at the copy
    assert copy.arena_bytes - pkg.arena_bytes >= 64 * first_c


@pytest.mark.host_c
@pytest.mark.parametrize("model, board", [k for k in sorted(SPEED) if k[1] != "mps3-an547"])
def test_speed_build_concat_in_place_is_exact_on_the_host(speed_builds, model, board):
    _exact_on_host(speed_builds[model, board], SPEED_MODELS[model][1])


@pytest.mark.qemu
@pytest.mark.parametrize("model, board", sorted(SPEED))
def test_speed_build_concat_in_place_is_exact_on_the_board(speed_builds, model, board):
    _exact_on_board(speed_builds[model, board], SPEED_MODELS[model][1], 6)


def _as_call(pkg, view, **params):
    """The graph with the view turned back into its concat call (params changed as given)."""
    cat = view.replace(op="call", attrs={}, call=Call("mcu_concat_s8", {**view.attrs["params"], **params}))
    nodes = []
    for n in pkg.graph.nodes:
        if n is view:
            n = cat
        elif n.op == "call" and "output_pixel_stride" in n.call.params:
            n = n.with_call(params={k: v for k, v in n.call.params.items() if k != "output_pixel_stride"})
        nodes.append(n)
    return pkg.graph.replace(nodes=tuple(nodes)), cat


def test_channel_concat_view_needs_equal_qparams_and_strided_producers(inception):
    (view,) = _views(inception)
    g, cat = _as_call(inception, view)
    assert inplace.concat_view(g, cat)
    p = view.attrs["params"]
    g2, cat2 = _as_call(inception, view, multiplier=(p["multiplier"][0], 1 << 29, p["multiplier"][2]))
    assert not inplace.concat_view(g2, cat2)  # a requantizing input: qparams differ
    a = g.producer(cat.inputs[0])
    variant = a.with_call(kernel="mcu_dwconv2d_3x3_s8_dsp")
    g3 = g.replace(nodes=tuple(variant if n is a else n for n in g.nodes))
    assert not inplace.concat_view(g3, cat)  # a contiguous variant cannot stride its output
    assert not inplace.concat_view(g.replace(outputs=g.outputs + (cat.inputs[1],)), cat)  # a slice is an output


def test_verifier_checks_the_interleaved_slices(inception):
    g, mem = inception.graph, inception.memory
    (view,) = _views(inception)
    a, b, c = view.inputs
    verify_tensor_plan(g, mem)
    moved = dataclasses.replace(mem, locations={**mem.locations, b: Location("arena", mem.locations[b].index + 1)})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g, moved)  # one channel late: over the pool's first channel of every pixel
    prod = g.producer(b)
    for stride in (27, 29, 0):  # the kernel's params, not the plan, say where each pixel goes
        bent = prod.with_call(params={**prod.call.params, "output_pixel_stride": stride})
        with pytest.raises(PlanError):
            verify_tensor_plan(g.replace(nodes=tuple(bent if n is prod else n for n in g.nodes)), mem)
    p = view.attrs["params"]
    requant = view.replace(attrs={**view.attrs, "params": {**p, "multiplier": (p["multiplier"][0], 1 << 29,
                                                                               p["multiplier"][2])}})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g.replace(nodes=tuple(requant if n is view else n for n in g.nodes)), mem)


def test_strided_producer_never_overlaps_its_input(fire):
    """The expand convs read the squeeze output, which dies at the second: a contiguous output could slide under it
    by the raster gap; a strided one may not (raster_gap assumes contiguous pixels)."""
    g, mem = fire.graph, fire.memory
    (view,) = _views(fire)
    steps = {n.name: i for i, n in enumerate(g.nodes)}
    last = max((g.producer(t) for t in view.inputs), key=lambda n: steps[n.name])
    assert overlap_gap(last) is None
    contiguous = last.with_call(params={**last.call.params, "output_pixel_stride": 0})
    assert overlap_gap(contiguous) == raster_gap(contiguous.call.params)
    y = last.inputs[0]
    assert sum(y in n.inputs for n in g.nodes[steps[last.name] + 1:]) == 0  # y dies at the last producer
    assert not overwritable_inputs(g)[steps[last.name]]
    # y placed where the contiguous rule would allow: raster_gap above the producer's output
    at = mem.locations[last.outputs[0]].index + raster_gap(contiguous.call.params)
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g, dataclasses.replace(mem, locations={**mem.locations, y: Location("arena", at)}))


def test_debug_gathers_a_strided_producers_pixels(inception):
    from mcu.tools.debug import _gather
    (view,) = _views(inception)
    b = inception.graph.producer(view.inputs[1])
    n, h, w, c = b.call.params["output"]
    flat = np.arange((n * h * w - 1) * 28 + c)
    assert sharing.output_extent(inception.graph, b) == flat.size
    assert (_gather(flat, b) == (np.arange(n * h * w) * 28)[:, None] + np.arange(c)).all()
