"""The decoder kernels: mcu_conv_transpose2d_s8 (gather form, the true MACs) and mcu_upsample_bilinear_s8 (4 taps an
output, per-axis tables) equal their twins bit for bit on the host C compiler and on QEMU (M4, M55); the twins agree
with PyTorch's float ops (transposed conv: within 1 LSB of the exactly requantized sum; bilinear: within 1 LSB of
dequantize -> F.interpolate -> quantize); nn.ConvTranspose2d / nn.ConvTranspose1d / F.interpolate(mode="bilinear")
models compile to these kernels and the device equals the reference."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hostc
import mcu
from mcu.codegen.twins import conv, shape
from mcu.codegen.twins.quant import quantize_multiplier, requantize
from test_kernels_host import conv_params, rand_act, rand_bias, rand_int8, rand_offsets, rand_quant

BOARDS = ["mps2-an386", "mps3-an547"]


def assert_equal_int(actual, expected, what: str) -> None:
    bad = np.argwhere(actual != expected)
    if len(bad):
        i = tuple(int(v) for v in bad[0])
        raise AssertionError(f"{what}: {len(bad)} of {actual.size} differ; first at {i}: C {actual[i]}, "
                             f"twin {expected[i]}")


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


def convt_case(seed: int):
    """Random geometry: windows 1..5, strides 1..3, padding < window, output_padding < stride, odd sizes, channels
    1..19, batch 1..2, and the quantization modes of the conv tests."""
    rng = np.random.default_rng(seed)
    kh, kw = (int(v) for v in rng.integers(1, 6, 2))
    sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    pt, pl = int(rng.integers(0, kh)), int(rng.integers(0, kw))
    oph, opw = int(rng.integers(0, sh)), int(rng.integers(0, sw))
    n, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 10))
    c_in, c_out = int(rng.integers(1, 20)), int(rng.integers(1, 20))
    oh, ow = (h - 1) * sh - 2 * pt + kh + oph, (w - 1) * sw - 2 * pl + kw + opw
    if oh < 1 or ow < 1:
        return convt_case(seed + 1000)
    offs = rand_offsets(rng)
    params = conv_params((n, h, w, c_in), (c_out, kh, kw, c_in), (n, oh, ow, c_out), (sh, sw), (pt, pl), (1, 1),
                         offs, rand_act(rng, offs[1]))
    acc_std = math.sqrt(max(kh * kw // (sh * sw), 1) * c_in * (offs[0] ** 2 + 5500) * 5500)
    mult, shift = rand_quant(rng, c_out, acc_std)
    x, wt = rand_int8(rng, (n, h, w, c_in)), rng.integers(-127, 128, (c_out, kh, kw, c_in), dtype=np.int8)
    return params, mult, shift, x, wt, rand_bias(rng, c_out, acc_std)


@pytest.mark.host_c
@pytest.mark.parametrize("kernel", ["mcu_conv_transpose2d_s8", "mcu_conv_transpose2d_s8_dsp"])
def test_conv_transpose_c_equals_twin_on_host(lib, kernel):
    """60 random geometries (odd sizes, output_padding, padding past the input, strides over the window); the DSP
    variant through its C stand-ins of SXTAB16 and SMLAD (the Helium one runs on QEMU below)."""
    for seed in range(60):
        params, mult, shift, x, wt, bias = convt_case(seed)
        expected = conv.conv_transpose2d_s8(params, mult, shift, x, wt, bias)
        out = np.empty(expected.size, np.int8)
        assert hostc.call(lib, kernel, params, mult, shift, x, wt, bias, out=out) == hostc.MCU_OK
        assert_equal_int(out.reshape(expected.shape), expected, f"{kernel} seed {seed} {params}")


@pytest.mark.host_c
def test_conv_transpose_refuses_dilation(lib):
    params, mult, shift, x, wt, bias = convt_case(0)
    out = np.zeros(int(np.prod(params["output"])), np.int8)
    status = hostc.call(lib, "mcu_conv_transpose2d_s8", {**params, "dilation_h": 2}, mult, shift, x, wt, bias, out=out)
    assert status == hostc.MCU_ERR_ARG and not out.any()


def test_conv_transpose_twin_equals_torch():
    """The twin's sums are torch's conv_transpose2d of the offset input (float64, exact): after the same
    requantization, within 1 LSB of rounding the exact real product (0 LSB measured on these cases)."""
    worst = 0
    for seed in range(30):
        params, mult, shift, x, wt, bias = convt_case(seed)
        p = params
        xt = torch.tensor(x.astype(np.float64) + p["input_offset"]).permute(0, 3, 1, 2)
        wtt = torch.tensor(wt.astype(np.float64)).permute(3, 0, 1, 2)  # OHWI -> torch's [C_in, C_out, KH, KW]
        op = (p["output"][1] - ((p["input"][1] - 1) * p["stride_h"] - 2 * p["pad_top"] + p["filter"][1]),
              p["output"][2] - ((p["input"][2] - 1) * p["stride_w"] - 2 * p["pad_left"] + p["filter"][2]))
        acc = F.conv_transpose2d(xt, wtt, None if bias is None else torch.tensor(bias, dtype=torch.float64),
                                 (p["stride_h"], p["stride_w"]), (p["pad_top"], p["pad_left"]), op)
        acc = acc.permute(0, 2, 3, 1).numpy().astype(np.int64)
        if np.abs(acc).max() >= 2**31:
            continue
        want = np.clip(requantize(acc, mult.astype(np.int64), shift.astype(np.int64)) + p["output_offset"],
                       p["act_min"], p["act_max"])
        got = conv.conv_transpose2d_s8(params, mult, shift, x, wt, bias).astype(np.int64)
        worst = max(worst, int(np.abs(got - want).max()))
    assert worst == 0


BILINEAR = [  # (H, W, C, output size or None, scale or None, align_corners)
    (16, 16, 16, None, 2.0, False), (7, 5, 3, None, 2.0, True), (5, 9, 8, (11, 4), None, False),
    (6, 6, 5, (13, 17), None, True), (9, 7, 4, None, 1.5, False), (8, 8, 2, None, 0.5, False),
    (1, 4, 3, None, 3.0, False), (4, 1, 7, (9, 1), None, True), (3, 3, 1, None, 2.5, True),
]


def bilinear_params(x_shape, out_shape, in_q, out_q, act=(-128, 127)):
    mult, sh = quantize_multiplier(in_q[0] / out_q[0] / 2.0 ** (2 * shape.BILINEAR_BITS))
    return {"input": tuple(x_shape), "output": tuple(out_shape), "input_offset": -in_q[1],
            "output_offset": out_q[1], "multiplier": mult, "shift": sh, "act_min": act[0], "act_max": act[1]}


def bilinear_case(case, seed: int, same_q: bool = True):
    h, w, c, size, scale, align = case
    rng = np.random.default_rng(seed)
    x = torch.tensor(rand_int8(rng, (2, c, h, w)).astype(np.float32))
    ref = F.interpolate(x, size=size, scale_factor=scale, mode="bilinear", align_corners=align)
    oh, ow = ref.shape[2:]
    y_taps = shape.bilinear_taps(h, oh, align, scale)
    x_taps = shape.bilinear_taps(w, ow, align, scale)
    in_q = (0.03, int(rng.integers(-20, 20)))
    out_q = in_q if same_q else (0.045, int(rng.integers(-20, 20)))
    act = rand_act(rng, out_q[1]) if not same_q or seed % 2 else (-128, 127)  # equal scales with a clamp too
    params = bilinear_params((2, h, w, c), (2, oh, ow, c), in_q, out_q, act)
    return params, y_taps, x_taps, x.permute(0, 2, 3, 1).numpy().astype(np.int8), in_q, out_q


@pytest.mark.host_c
def test_bilinear_c_equals_twin_on_host(lib):
    """Every resampling on equal and on other output qparams, with and without a clamp."""
    for i, case in enumerate(BILINEAR):
        for same in (True, False):
            params, ty, tx, x, _, _ = bilinear_case(case, i, same)
            expected = shape.upsample_bilinear_s8(params, ty, tx, x)
            out = np.empty(expected.size, np.int8)
            status = hostc.call(lib, "mcu_upsample_bilinear_s8", params, ty.reshape(-1), tx.reshape(-1), x, out=out)
            assert status == hostc.MCU_OK
            assert_equal_int(out.reshape(expected.shape), expected, f"{case} same qparams {same}")


def test_bilinear_twin_within_one_lsb_of_torch():
    """Quantized reference: dequantize, torch's bilinear in float32, quantize (round half to even) on the output's
    qparams: the twin is within 1 LSB (an input of 2^-11-exact weights, rounded once)."""
    worst = 0
    for i, case in enumerate(BILINEAR):
        for same in (True, False):
            params, ty, tx, x, in_q, out_q = bilinear_case(case, i, same)
            h, w, c, size, scale, align = case
            real = (torch.tensor(x.astype(np.float32)) - in_q[1]) * in_q[0]
            ref = F.interpolate(real.permute(0, 3, 1, 2), size=size, scale_factor=scale, mode="bilinear",
                                align_corners=align).permute(0, 2, 3, 1).numpy()
            want = np.clip(np.round(ref / out_q[0]) + out_q[1], params["act_min"], params["act_max"])
            got = shape.upsample_bilinear_s8(params, ty, tx, x).astype(np.int64)
            worst = max(worst, int(np.abs(got - want).max()))
    assert worst <= 1


def test_bilinear_taps_are_torchs_weights():
    """The tables' indices and weights are torch's own (its op run on one-hot rows), the weights to 2^-12."""
    for n_in, n_out, align, scale in [(16, 32, False, 2.0), (7, 14, True, 2.0), (5, 11, False, None),
                                      (9, 13, False, 1.5), (6, 13, True, None), (8, 4, False, 0.5)]:
        eye = torch.eye(n_in)[:, None, None, :]
        m = F.interpolate(eye, size=(1, n_out), scale_factor=None, mode="bilinear", align_corners=align) \
            if scale is None else F.interpolate(eye, scale_factor=(1.0, scale), mode="bilinear", align_corners=align)
        m = m[:, 0, 0, :].T.numpy()  # [out, in]
        taps = shape.bilinear_taps(n_in, n_out, align, scale).astype(np.int64)
        ours = np.zeros_like(m)
        for o, (i0, i1, w1) in enumerate(taps):
            ours[o, i0] += 1 - w1 / 2048
            ours[o, i1] += w1 / 2048
        assert np.abs(ours - m).max() <= 2.0**-12 + 1e-6, (n_in, n_out, align, scale)


class Decoder(nn.Module):
    """Transposed convs of several geometries (1-d too) and bilinear resamplings, in parallel branches."""

    def __init__(self):
        super().__init__()
        self.t1 = nn.ConvTranspose2d(6, 5, 2, 2)
        self.t2 = nn.ConvTranspose2d(6, 7, 3, 2, 1, output_padding=1)
        self.t3 = nn.Sequential(nn.ConvTranspose2d(6, 4, (3, 5), (3, 2), (1, 2), output_padding=(2, 1)),
                                nn.BatchNorm2d(4), nn.ReLU())
        self.t4 = nn.ConvTranspose2d(6, 3, 4, 1, 2, bias=False)
        self.t5 = nn.ConvTranspose1d(6, 5, 3, 2, 1, output_padding=1)

    def forward(self, x):
        a = self.t1(x)
        b = F.interpolate(self.t2(x), scale_factor=1.5, mode="bilinear")
        c = self.t3(x)
        d = F.interpolate(self.t4(x), size=(11, 6), mode="bilinear", align_corners=True)
        e = self.t5(x.flatten(2))
        f = F.interpolate(x, scale_factor=2, mode="bilinear")
        return a, b, c, d, e, f


def _compiled(board: str, tmp_path):
    torch.manual_seed(3)
    model = Decoder().eval()
    with torch.no_grad():
        model.t3[1].running_mean.uniform_(-0.5, 0.5)
        model.t3[1].running_var.uniform_(0.5, 2.0)
    x = torch.randn(1, 6, 5, 7)
    g = torch.Generator().manual_seed(1)
    calib = [(torch.randn(x.shape, generator=g),) for _ in range(8)]
    pkg = mcu.compile(model, (x,), board=board, calibration=calib, out_dir=tmp_path / board, force=True)
    return model, pkg, x


def test_decoder_lowers_to_the_new_kernels(tmp_path):
    model, pkg, x = _compiled("mps2-an386", tmp_path)
    kernels = [n.call.kernel for n in pkg.graph.nodes if n.call is not None]
    assert kernels.count("mcu_conv_transpose2d_s8_dsp") == 5 and kernels.count("mcu_upsample_bilinear_s8") == 3
    assert not {"mcu_mul_s8", "mcu_upsample_nearest_s8", "mcu_fully_connected_s8"} & set(kernels)  # no zero-stuffing
    with torch.no_grad():
        want = [w.numpy() for w in model(x)]
    got = pkg.dequantize_outputs(pkg.reference((x,)))
    for g, w in zip(got, want):
        err = np.abs(g.reshape(w.shape) - w).max()
        assert err < 0.05 * np.abs(w).max() + 0.02, err


@pytest.mark.qemu
@pytest.mark.parametrize("board", BOARDS)
def test_decoder_device_equals_reference(board, tmp_path):
    """The M4 runs the DSP transposed conv and the portable bilinear, the M55 both Helium variants."""
    _, pkg, x = _compiled(board, tmp_path)
    kernels = {n.call.kernel for n in pkg.graph.nodes if n.call is not None}
    assert {"mps2-an386": {"mcu_conv_transpose2d_s8_dsp", "mcu_upsample_bilinear_s8"},
            "mps3-an547": {"mcu_conv_transpose2d_s8_mve", "mcu_upsample_bilinear_s8_mve"}}[board] <= kernels
    res = mcu.run(pkg, (x,))
    for i, (d, r) in enumerate(zip(res.raw_outputs, pkg.reference((x,)))):
        assert_equal_int(np.asarray(d).reshape(r.shape), r, f"output {i} on {board}")


def kernel_graph(seed: int):
    """Independent portable calls (12 transposed convs of convt_case's geometries, the 9 resamplings with other
    output qparams and a clamp), each from its own graph input to its own output."""
    from calls import call
    from mcu.codegen.ir import Graph, QParams, Tensor, verify
    tensors, nodes, inputs, outputs = {}, [], [], []

    def io(name, shape_):
        tensors[name] = Tensor(name, tuple(shape_), "int8", QParams.tensor(0.05, 0), layout="NHWC")
        return name

    def const(name, data, dtype):
        tensors[name] = Tensor(name, tuple(data.shape), dtype, data=data)
        return name

    for i in range(12):
        params, mult, shift, _, wt, bias = convt_case(seed + i)
        x, y = io(f"x{i}", params["input"]), io(f"y{i}", params["output"])
        b = None if bias is None else const(f"b{i}", bias, "int32")
        q = (const(f"m{i}", mult, "int32"), const(f"s{i}", shift, "int32"))
        nodes.append(call(f"t{i}", "mcu_conv_transpose2d_s8", (x, const(f"w{i}", wt, "int8"), b), y, params, q))
        inputs.append(x), outputs.append(y)
    for i, case in enumerate(BILINEAR):
        params, ty, tx, _, _, _ = bilinear_case(case, seed + i, same_q=i % 3 != 0)
        x, y = io(f"bx{i}", params["input"]), io(f"by{i}", params["output"])
        tables = (const(f"ty{i}", ty.reshape(-1), "int16"), const(f"tx{i}", tx.reshape(-1), "int16"))
        nodes.append(call(f"u{i}", "mcu_upsample_bilinear_s8", (*tables, x), y, params))
        inputs.append(x), outputs.append(y)
    return verify(Graph(tensors, tuple(nodes), tuple(inputs), tuple(outputs)))


@pytest.mark.qemu
@pytest.mark.parametrize("board", BOARDS)
def test_kernels_equal_twins_on_device(board, tmp_path):
    """Every kernel call on QEMU (the board's variants: the DSP transposed conv on the M4, both Helium ones on the
    M55) equals the portable twin; random int8 inputs with the extremes."""
    from mcu.boards import load_board
    from mcu.codegen.passes.select_kernels import select_kernels
    from mcu.codegen.reference import run_reference
    from mcu.codegen.target import Target
    from test_kernel_variants_qemu import run_on_board
    graph = select_kernels(kernel_graph(seed=40), Target.of_board(load_board(board)))
    want = {"mps2-an386": {"mcu_conv_transpose2d_s8_dsp", "mcu_upsample_bilinear_s8"},
            "mps3-an547": {"mcu_conv_transpose2d_s8_mve", "mcu_upsample_bilinear_s8_mve"}}[board]
    assert {n.call.kernel for n in graph.nodes} == want
    rng = np.random.default_rng(2)
    inputs = [rand_int8(rng, graph.tensors[t].shape) for t in graph.inputs]
    for node, a, e in zip(graph.nodes, run_on_board(graph, board, inputs, tmp_path), run_reference(graph, inputs)):
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}, {node.call.params})")
