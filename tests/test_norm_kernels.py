"""The integer layer norm and RMS norm kernels (mcu_layer_norm_s8/_s16, mcu_rms_norm_s8/_s16) against their numpy
twins (mcu.codegen.twins.norm): the C equals the twin bit for bit on the host and under QEMU (M4, M55), and the twin
is within 1 LSB of the float reference (torch's layer_norm / rms_norm of the dequantized input, quantized with the
output's qparams): at most 0.51 LSB before rounding (measured 0.501 int8, 0.506 int16)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import hostc
from calls import call
from mcu.boards import load_board
from mcu.build.firmware import build_firmware
from mcu.codegen.emit import emit
from mcu.codegen.ir import Graph, QParams, Tensor, verify
from mcu.codegen.memory import plan_graph
from mcu.codegen.reference import run_reference
from mcu.codegen.twins import norm
from mcu.qemu.runner import run_firmware
from mcu.codegen.passes.select_kernels import select_kernels
from mcu.codegen.target import Target

KINDS = [(kind, dt) for kind in ("layer_norm", "rms_norm") for dt in ("s8", "s16")]
RANGE = {"s8": (-128, 127, np.int8), "s16": (-32768, 32767, np.int16)}


def case(rng: np.random.Generator, kind: str, dt: str, cols: int | None = None):
    """(params, x, weight, bias, float reference in output LSBs): a random row set, scales, gamma, beta and eps."""
    lo, hi, dtype = RANGE[dt]
    cols = cols or int(rng.choice([1, 2, 3, 8, 16, 33, 64, 100, 256, 768]))
    rows = int(rng.integers(1, 5))
    s_in = float(10 ** rng.uniform(-3, 0))
    zp_in = int(rng.integers(-20, 20)) if dt == "s8" else 0
    if rng.random() < 0.5:
        xq = rng.integers(lo, hi + 1, (rows, cols))
    else:
        spread = rng.uniform(1, 60 if dt == "s8" else 8000)
        xq = np.clip(np.round(rng.normal(0, spread, (rows, cols))) + zp_in, lo, hi)
    xq = xq.astype(dtype)
    gamma = rng.uniform(-2, 2, cols) if rng.random() < 0.7 else None
    beta = rng.uniform(-1, 1, cols) if kind == "layer_norm" and rng.random() < 0.7 else None
    eps = float(rng.choice([1e-5, 1e-6, 1e-2]))
    x = torch.from_numpy((xq.astype(np.float64) - zp_in) * s_in)
    g = None if gamma is None else torch.from_numpy(gamma)
    if kind == "layer_norm":
        ref = torch.nn.functional.layer_norm(x, (cols,), g, None if beta is None else torch.from_numpy(beta), eps)
    else:
        ref = torch.nn.functional.rms_norm(x, (cols,), g, eps)
    ref = ref.numpy()
    s_out = (np.abs(ref).max() + 1e-3) / hi * rng.uniform(0.5, 1.2)
    zp_out = int(rng.integers(-10, 10)) if dt == "s8" else 0
    params, w, b = norm.norm_constants(rows, cols, eps, s_in, zp_in, s_out, zp_out, gamma, beta, lo, hi, dtype)
    return params, xq, w, b, np.clip(ref / s_out + zp_out, lo, hi)


@pytest.fixture(scope="module")
def lib():
    return hostc.build(sorted((hostc.KERNELS / "norm").glob("*.c")))


@pytest.mark.host_c
@pytest.mark.parametrize("kind, dt", KINDS)
def test_c_equals_twin_and_twin_is_within_one_lsb(lib, kind, dt):
    rng = np.random.default_rng(len(kind) * 7 + len(dt))
    twin = getattr(norm, f"{kind}_{dt}")
    worst = 0.0
    for _ in range(150):
        params, x, w, b, ref = case(rng, kind, dt)
        want = twin(params, x, w, b)
        out = np.empty_like(x)
        assert hostc.call(lib, f"mcu_{kind}_{dt}", params, x, w, b, out=out) == hostc.MCU_OK
        bad = np.flatnonzero(out != want)
        assert not len(bad), f"{params}: first mismatch at {bad[0]}: C {out.flat[bad[0]]}, twin {want.flat[bad[0]]}"
        worst = max(worst, float(np.abs(want - ref).max()))
    assert worst <= 0.51, worst


@pytest.mark.host_c
@pytest.mark.parametrize("kind, dt", KINDS)
def test_in_place_and_bad_arguments(lib, kind, dt):
    params, x, w, b, _ = case(np.random.default_rng(3), kind, dt, cols=24)
    want = getattr(norm, f"{kind}_{dt}")(params, x, w, b)
    buf = x.copy()
    assert hostc.call(lib, f"mcu_{kind}_{dt}", params, buf, w, b, out=buf) == hostc.MCU_OK
    np.testing.assert_array_equal(buf, want)
    out = np.empty_like(x)
    max_cols = {"s8": 65536, "s16": 16384}[dt]
    for field, value in (("rows", 0), ("cols", 0), ("cols", max_cols + 1), ("shift", 31), ("shift", 63), ("eps", 0),
                         ("var_shift", 1), ("var_shift", 62), ("act_min", params["act_max"] + 1)):
        assert hostc.call(lib, f"mcu_{kind}_{dt}", {**params, field: value}, x, w, b, out=out) == hostc.MCU_ERR_ARG
        with pytest.raises(ValueError):
            getattr(norm, f"{kind}_{dt}")({**params, field: value}, x, w, b)


def test_constant_rows_and_huge_spread_stay_exact():
    """A constant row (variance 0: every output is beta) and full-range rows at the column limits."""
    for dt in ("s8", "s16"):
        lo, hi, dtype = RANGE[dt]
        x = np.full((1, 8), 5, dtype)
        params, w, b = norm.norm_constants(1, 8, 1e-5, 0.1, 0, 0.02, 0, None, np.full(8, 0.5), lo, hi, dtype)
        np.testing.assert_array_equal(getattr(norm, f"layer_norm_{dt}")(params, x, w, b), np.full((1, 8), 25))
        cols = norm.MAX_COLS[dtype]
        x = np.where(np.arange(cols) % 2, hi, lo).astype(dtype).reshape(1, cols)
        params, w, b = norm.norm_constants(1, cols, 1e-5, 1.0, 0, 1.5 / hi, 0, None, None, lo, hi, dtype)
        y = getattr(norm, f"layer_norm_{dt}")(params, x, w, b)
        assert abs(int(y[0, 1]) - round(1.0 / (1.5 / hi))) <= 1


# ---- under QEMU: one firmware of independent norm calls per board --------------------------------------------

def norm_graph(seed: int) -> tuple[Graph, list[np.ndarray]]:
    """Every kind 3 times, and int8 layer norms for the Helium variant: whole quads and tails, long rows, rows whose
    variance puts the row's shift on either side of 0, a constant row."""
    rng = np.random.default_rng(seed)
    tensors, nodes, inputs, outputs, data = {}, [], [], [], []
    extra = [("layer_norm", "s8", c) for c in (4, 5, 31, 64, 257, 768)]
    for i, (kind, dt, *cols) in enumerate([*KINDS * 3, *extra]):
        params, x, w, b, _ = case(rng, kind, dt, cols=cols[0] if cols else int(rng.choice([1, 7, 16, 48, 130])))
        if cols and cols[0] == 5:
            x[0] = 9  # a constant row
        dtype = "int8" if dt == "s8" else "int16"
        xn, yn, wn, bn = f"x{i}", f"y{i}", f"w{i}", f"b{i}"
        tensors[xn] = Tensor(xn, x.shape, dtype, QParams.tensor(0.1, 0))
        tensors[yn] = Tensor(yn, x.shape, dtype, QParams.tensor(0.1, 0))
        tensors[wn] = Tensor(wn, w.shape, "int32", data=w)
        tensors[bn] = Tensor(bn, b.shape, "int64", data=b)
        nodes.append(call(f"n{i}", f"mcu_{kind}_{dt}", (xn, wn, bn), yn, params))
        inputs.append(xn)
        outputs.append(yn)
        data.append(x)
    return verify(Graph(tensors, tuple(nodes), tuple(inputs), tuple(outputs))), data


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_device_equals_twin(board, tmp_path):
    graph, data = norm_graph(seed=5)
    expected = run_reference(graph, data)
    graph = select_kernels(graph, Target.of_board(load_board(board)))
    want = {"mps3-an547": "mcu_layer_norm_s8_mve"}.get(board, "mcu_layer_norm_s8")
    assert all(n.call.kernel == want for n in graph.nodes if n.call.portable == "mcu_layer_norm_s8")
    graph, mem = plan_graph(graph)
    texts, manifest = emit(graph, mem, board=board)
    for name, text in {**texts, "manifest.json": manifest.to_json()}.items():
        (tmp_path / name).write_text(text)
    elf = build_firmware(board, tmp_path, tmp_path / "build")
    res = run_firmware(elf, load_board(board), b"".join(x.tobytes() for x in data), timeout=60)
    assert res.status == 0, res.status
    pos = 0
    for name, want, node in zip(graph.outputs, expected, graph.nodes):
        t = graph.tensors[name]
        got = np.frombuffer(res.output_bytes[pos:pos + t.nbytes], want.dtype).reshape(want.shape)
        pos += t.nbytes
        bad = np.argwhere(got != want)
        assert not len(bad), f"{node.call.kernel} {node.call.params}: first at {bad[0]}: {got[tuple(bad[0])]} " \
                             f"vs {want[tuple(bad[0])]}"
