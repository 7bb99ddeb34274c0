"""The int8 matmul of two activations on the GEMM cores (mcu_matmul_gemm_s8_dsp: the convs' 2x2 DSP core,
mcu_matmul_gemm_s8_mve: the Helium core, the rhs packed at run time into scratch) equals the portable twin bit for
bit: on the host C compiler (the DSP instructions' C stand-ins) and under QEMU on the M4 and M55; the M3 (no DSP)
keeps the portable kernel.

- One firmware per board runs every case: q @ k^T (rhs transposed) and attn @ v, grouped-query heads (rhs_group),
  a broadcast lhs or rhs, odd rows (the last alone), taps with tails (k % 4, k % 16), odd columns (a zero channel),
  columns past one packed block (4 KB of stream), many 16-step chunks, extreme offsets, a narrow clamp and
  shifts >= -1 (the cores' C paths) beside int8 clamps (the assembly).
"""
from __future__ import annotations

import numpy as np
import pytest

import hostc
from mcu.boards import load_board
from mcu.codegen.ir import Graph, QParams, Tensor, verify
from mcu.codegen.kernels import KERNELS
from mcu.codegen.passes.select_kernels import as_variant, select_kernels
from mcu.codegen.reference import run_reference
from mcu.codegen.target import Target
from mcu.codegen.twins import fc
from calls import call
from test_kernel_variants_qemu import assert_equal_int, run_on_board

PICK = {"mps2-an386": "mcu_matmul_gemm_s8_dsp", "mps3-an547": "mcu_matmul_gemm_s8_mve", "mps2-an385": "mcu_matmul_s8"}
# (batches, lhs_batches, rhs_batches, group, m, k, n, transposed)
SHAPES = [(4, 4, 4, 1, 16, 8, 16, 1), (4, 4, 4, 1, 16, 16, 8, 0), (8, 8, 4, 2, 9, 16, 24, 1),
          (8, 8, 2, 4, 7, 24, 16, 0), (3, 1, 3, 1, 5, 37, 11, 1), (3, 3, 1, 1, 6, 13, 7, 0),
          (2, 2, 2, 1, 33, 64, 40, 0),
          (1, 1, 1, 1, 12, 64, 70, 1), (2, 2, 1, 1, 4, 300, 9, 1), (1, 1, 1, 1, 5, 70, 33, 0), (2, 2, 2, 1, 3, 1, 5, 0),
          (2, 2, 2, 1, 8, 4, 1, 1), (6, 6, 3, 2, 2, 131, 6, 0), (1, 1, 1, 1, 64, 32, 64, 1),
          (1, 1, 1, 1, 7, 64, 70, 0)]
MODES = ["full", "full", "extreme", "slow", "ties", "full", "relu"]


def matmul_graph(seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    tensors, nodes = {}, []
    for i, (b, lb, rb, g, m, k, n, tr) in enumerate(SHAPES):
        mode = MODES[i % len(MODES)]
        q = QParams.tensor(0.05, 0)
        a, w, y = f"a{i}", f"b{i}", f"y{i}"
        tensors[a] = Tensor(a, (lb, m, k), "int8", q)
        tensors[w] = Tensor(w, (rb, n, k) if tr else (rb, k, n), "int8", q)
        tensors[y] = Tensor(y, (b, m, n), "int8", q)
        oa, ob = (int(rng.choice([-127, 128])), int(rng.choice([-127, 128]))) if mode == "extreme" else \
            (int(rng.integers(-127, 129)), int(rng.integers(-127, 129)))
        zo = int(rng.integers(-128, 128))
        lo, hi = (-128, 127) if mode in ("full", "slow", "ties") else (max(-128, zo - 40), min(127, zo + 30)) \
            if mode == "extreme" else (zo, 127)
        if mode == "slow":
            mult, shift = int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(-1, 2))
        elif mode == "ties":
            mult, shift = 1 << 30, int(rng.integers(-3, 0))
        else:
            mult = int(rng.integers(1 << 30, 1 << 31))
            shift = -int(np.ceil(np.log2(np.sqrt(k) * 150 * 150 / 40)))
        params = {"batches": b, "lhs_batches": lb, "rhs_batches": rb, "m": m, "k": k, "n": n, "lhs_offset": oa,
                  "rhs_offset": ob, "output_offset": zo, "output_multiplier": mult, "output_shift": shift,
                  "act_min": lo, "act_max": hi, "rhs_group": g, "rhs_transposed": tr}
        nodes.append(call(f"n{i}", "mcu_matmul_s8", (a, w), y, params))
    inputs = tuple(t for nd in nodes for t in nd.inputs)
    return verify(Graph(tensors, tuple(nodes), inputs, tuple(nd.outputs[0] for nd in nodes)))


def inputs_of(graph: Graph, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    # small values too, so the ties and slow modes land inside int8
    return [(rng.integers(-128, 128, graph.tensors[t].shape) // (1 if j % 3 else 16)).astype(np.int8)
            for j, t in enumerate(graph.inputs)]


def on_board(graph: Graph, board: str) -> Graph:
    """Every call as the board's GEMM variant, also where the registry would keep the row-pair kernel (few rows or
    taps on the M55), so each case tests it; the M3 as the registry picks (the portable kernel)."""
    if board == "mps2-an385":
        return verify(select_kernels(graph, Target.of_board(load_board(board))))
    tensors = dict(graph.tensors)
    nodes = tuple(as_variant(n, KERNELS[PICK[board]], tensors) for n in graph.nodes)
    return verify(graph.replace(nodes=nodes, tensors=tensors))


@pytest.mark.qemu
@pytest.mark.parametrize("board", sorted(PICK))
def test_matmul_gemm_equals_portable_twin_on_device(board, tmp_path):
    graph = on_board(matmul_graph(5), board)
    assert {n.call.kernel for n in graph.nodes} == {PICK[board]}
    inputs = inputs_of(graph, 6)
    expected = run_reference(graph, inputs)
    actual = run_on_board(graph, board, inputs, tmp_path)
    for node, a, e in zip(graph.nodes, actual, expected):
        p = node.call.params
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}, {p['batches']} x {p['m']} x {p['k']} x {p['n']}, "
                               f"transposed {p['rhs_transposed']}, group {p['rhs_group']})")


def matmul16_graph(seed: int) -> Graph:
    """SHAPES as mcu_matmul_s16 calls (int16 activations, offsets 0), the decode step's two products and a k past
    8191 rows of a gathered column's offsets beside them; random, tie and narrow requantizations."""
    rng = np.random.default_rng(seed)
    tensors, nodes = {}, []
    shapes = [*SHAPES, (8, 8, 4, 2, 1, 8, 256, 1), (8, 8, 4, 2, 1, 256, 8, 0), (1, 1, 1, 1, 1, 9, 8200, 0)]
    for i, (b, lb, rb, g, m, k, n, tr) in enumerate(shapes):
        q = QParams.tensor(0.05, 0)
        a, w, y = f"a{i}", f"b{i}", f"y{i}"
        tensors[a] = Tensor(a, (lb, m, k), "int16", q)
        tensors[w] = Tensor(w, (rb, n, k) if tr else (rb, k, n), "int16", q)
        tensors[y] = Tensor(y, (b, m, n), "int16", q)
        mult = 1 << 30 if i % 4 == 1 else int(rng.integers(1 << 30, 1 << 31))
        shift = -int(np.ceil(np.log2(np.sqrt(k) * 20000.0 * 20000.0 / 8000)))
        lo, hi = (-32768, 32767) if i % 3 else (-3000, 2000)
        params = {"batches": b, "lhs_batches": lb, "rhs_batches": rb, "m": m, "k": k, "n": n, "lhs_offset": 0,
                  "rhs_offset": 0, "output_offset": 0, "output_multiplier": mult, "output_shift": shift,
                  "act_min": lo, "act_max": hi, "rhs_group": g, "rhs_transposed": tr}
        nodes.append(call(f"n{i}", "mcu_matmul_s16", (a, w), y, params))
    inputs = tuple(t for nd in nodes for t in nd.inputs)
    return verify(Graph(tensors, tuple(nodes), inputs, tuple(nd.outputs[0] for nd in nodes)))


@pytest.mark.qemu
@pytest.mark.parametrize("board, kernel", [("mps3-an547", "mcu_matmul_s16_mve"),
                                           ("mps2-an386", "mcu_matmul_s16_dsp")])
def test_matmul_s16_equals_portable_twin_on_device(board, kernel, tmp_path):
    """a16w8 attention's products: the Helium variant on the M55, the DSP variant (SMLALD) on the M4."""
    graph = verify(select_kernels(matmul16_graph(7), Target.of_board(load_board(board))))
    assert {n.call.kernel for n in graph.nodes} == {kernel}
    rng = np.random.default_rng(8)
    inputs = [rng.integers(-32768, 32768, graph.tensors[t].shape).astype(np.int16) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    actual = run_on_board(graph, board, inputs, tmp_path)
    for node, a, e in zip(graph.nodes, actual, expected):
        p = node.call.params
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}, {p['batches']} x {p['m']} x {p['k']} x {p['n']}, "
                               f"transposed {p['rhs_transposed']}, group {p['rhs_group']})")


def test_matmul_picks_the_gemm_where_rows_share_the_rhs():
    """M4: from 2 rows per rhs batch (a decode step's grouped heads too); M55: 8 rows with 16 taps, or 4 with 32 taps
    and 16 columns, else the row-pair kernel (decode steps); M3: the portable kernel."""
    def params(b, rb, g, m, k, n, tr):
        return {"batches": b, "lhs_batches": b, "rhs_batches": rb, "m": m, "k": k, "n": n, "lhs_offset": 0,
                "rhs_offset": 0, "output_offset": 0, "output_multiplier": 1 << 30, "output_shift": -8,
                "act_min": -128, "act_max": 127, "rhs_group": g, "rhs_transposed": tr}
    decode_qk, decode_av = params(8, 4, 2, 1, 8, 256, 1), params(8, 4, 2, 1, 256, 8, 0)  # tinyllama_step
    prefill, one_row = params(4, 4, 1, 32, 16, 32, 1), params(4, 4, 1, 1, 64, 64, 1)
    narrow = params(4, 4, 1, 64, 2, 16, 0)
    cases = [decode_qk, decode_av, prefill, one_row, narrow, params(4, 4, 1, 4, 32, 64, 1)]
    want = {"mps2-an386": ["mcu_matmul_gemm_s8_dsp"] * 3 + ["mcu_matmul_s8_dsp"] + ["mcu_matmul_gemm_s8_dsp"] * 2,
            "mps3-an547": ["mcu_matmul_s8_mve"] * 2 + ["mcu_matmul_gemm_s8_mve"] + ["mcu_matmul_s8_mve"] * 2
            + ["mcu_matmul_gemm_s8_mve"], "mps2-an385": ["mcu_matmul_s8"] * 6}
    tensors = {}
    for i, p in enumerate(cases):
        tensors[f"a{i}"] = Tensor(f"a{i}", (p["batches"], p["m"], p["k"]), "int8", QParams.tensor(0.05, 0))
        tensors[f"b{i}"] = Tensor(f"b{i}", (p["rhs_batches"], p["k"] * p["n"]), "int8", QParams.tensor(0.05, 0))
        tensors[f"y{i}"] = Tensor(f"y{i}", (p["batches"], p["m"], p["n"]), "int8", QParams.tensor(0.05, 0))
    nodes = tuple(call(f"n{i}", "mcu_matmul_s8", (f"a{i}", f"b{i}"), f"y{i}", p) for i, p in enumerate(cases))
    graph = Graph(tensors, nodes, tuple(t for n in nodes for t in n.inputs), tuple(n.outputs[0] for n in nodes))
    for board, kernels in want.items():
        picked = select_kernels(graph, Target.of_board(load_board(board)))
        assert [n.call.kernel for n in picked.nodes] == kernels, board


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


@pytest.mark.host_c
@pytest.mark.parametrize("seed", range(40))
def test_matmul_gemm_dsp_c_equals_twin_on_host(lib, seed):
    """The C stand-ins of the DSP instructions: any shape, layout, group and quantization, in exactly its scratch."""
    rng = np.random.default_rng(seed)
    b0, g = int(rng.integers(1, 4)), int(rng.choice([1, 1, 2, 3]))
    b, rb = b0 * g, b0 if g > 1 or rng.random() < 0.7 else 1
    lb = b if rng.random() < 0.7 else 1
    m, k, n, tr = int(rng.integers(1, 12)), int(rng.integers(1, 90)), int(rng.integers(1, 80)), int(rng.integers(0, 2))
    zo = int(rng.integers(-128, 128))
    params = {"batches": b, "lhs_batches": lb, "rhs_batches": rb, "m": m, "k": k, "n": n,
              "lhs_offset": int(rng.integers(-127, 129)), "rhs_offset": int(rng.integers(-127, 129)),
              "output_offset": zo, "output_multiplier": int(rng.integers(1 << 30, 1 << 31)),
              "output_shift": int(rng.integers(-20, 2)) if seed % 3 else -int(np.log2(k * 200)),
              "act_min": -128 if seed % 2 else zo, "act_max": 127, "rhs_group": g if rb > 1 else 1,
              "rhs_transposed": tr}
    lhs = rng.integers(-128, 128, (lb, m, k)).astype(np.int8)
    rhs = rng.integers(-128, 128, (rb, n, k) if tr else (rb, k, n)).astype(np.int8)
    expected = fc.matmul_s8(params, lhs, rhs)
    variant = KERNELS[PICK["mps2-an386"]]
    size = variant.scratch(params)
    scratch = rng.integers(-128, 128, size=size + 8, dtype=np.int8)
    canary = scratch[size:].copy()
    out = np.zeros(expected.size, np.int8)
    assert hostc.call(lib, variant.name, params, lhs, rhs, scratch, out=out) == hostc.MCU_OK
    assert_equal_int(out.reshape(expected.shape), expected, f"{variant.name} {params}")
    assert (scratch[size:] == canary).all(), "wrote past its scratch"
