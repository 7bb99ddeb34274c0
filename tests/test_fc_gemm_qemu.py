"""The fully connected layer over several rows (token rows: a transformer's projections and MLP, MobileViT's token
FC) equals the portable twin bit for bit: as the DSP GEMM (mcu_fully_connected_gemm_s8_dsp, the 1x1 conv's 2x2
core) on the host C compiler (its C stand-ins) and under QEMU on the M4, and as the Helium GEMM on the M55.

- One firmware per board runs every case: rows 2..33 (odd counts: a last row alone), K with tails (not a multiple
  of 4) and past one 16-step chunk of the core, N odd (a zero channel pads the last pair), 256 rows (the int16
  weight stream, geometry.dsp_wide), cycling the quantization modes (int8 clamp: the assembly; extreme offsets and
  a narrow clamp, shifts >= 0, ties: the C path) and a missing bias; then int8 clamps and even N, where the M4
  runs rows three at a time (the 3x2 core) and the rest in pairs.
- The host has no DSP assembly: it runs the 2-row core's C (pairs only).
"""
from __future__ import annotations

import numpy as np
import pytest

import hostc
from mcu.boards import load_board
from mcu.codegen.ir import verify
from mcu.codegen.kernels import KERNELS
from mcu.codegen.passes.select_kernels import select_kernels
from mcu.codegen.reference import run_reference
from mcu.codegen.target import Target
from mcu.codegen.twins import fc
from test_kernel_variants_qemu import GraphBuilder, assert_equal_int, run_on_board
from test_kernels_host import fc_params, prepared_variant_args, rand_act, rand_bias, rand_int8, rand_offsets, rand_quant

PICK = {"mps2-an386": "mcu_fully_connected_gemm_s8_dsp", "mps3-an547": "mcu_fully_connected_s8_mve"}
MODES = [("normal", "full"), ("normal", True), ("slow", False), ("ties", "full"), ("normal", False)]
# (rows, K, N): token shapes, tails and odd counts
SHAPES = [(8, 64, 64), (16, 64, 128), (32, 128, 64), (2, 37, 11), (3, 16, 5), (33, 96, 17), (9, 200, 31),
          (5, 65, 2), (7, 4, 1), (4, 1, 3), (32, 70, 33), (256, 12, 6)]
# int8 clamp and even N: the 3-row core (mcu_dsp_g3_run) for rows in threes, pairs for the rest (T % 3 == 1: the
# last 4 rows as two pairs); K from one step to several 16-step chunks, with tails
FAST = [(3, 4, 2), (4, 8, 4), (5, 64, 2), (7, 36, 10), (16, 100, 34), (32, 64, 64), (9, 200, 8), (6, 3, 6),
        (8, 129, 16), (30, 67, 20)]


def fc_cases(seed: int) -> GraphBuilder:
    g = GraphBuilder(seed)
    for i, (t, k, n) in enumerate(SHAPES):
        mode, extreme = MODES[i % len(MODES)]
        g.fc(t, k, n, bias=i % 5 != 3, extreme=extreme, mode=mode, family="fc")
    for i, (t, k, n) in enumerate(FAST):
        g.fc(t, k, n, bias=i % 4 != 1, extreme="full", family="fc")
    return g


@pytest.mark.qemu
@pytest.mark.parametrize("board", sorted(PICK))
def test_fc_over_rows_equals_portable_twin_on_device(board, tmp_path):
    portable = fc_cases(seed=4).graph()
    graph = verify(select_kernels(portable, Target.of_board(load_board(board))))
    assert {n.call.kernel for n in graph.nodes} == {PICK[board]}
    rng = np.random.default_rng(11)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    actual = run_on_board(graph, board, inputs, tmp_path)
    for node, a, e in zip(graph.nodes, actual, expected):
        p = node.call.params
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}, {p['batches']} x {p['in_features']} -> "
                               f"{p['out_features']})")


def test_fc_picks_the_gemm_over_two_rows_and_more():
    """One row stays the GEMV (no scratch); from 2 rows the DSP core runs the GEMM; Helium keeps its own."""
    g = GraphBuilder(1)
    for t in (1, 2, 32):
        g.fc(t, 64, 16)
    m4 = select_kernels(g.graph(), Target.of_board(load_board("mps2-an386")))
    assert [n.call.kernel for n in m4.nodes] == ["mcu_fully_connected_s8_dsp"] + [PICK["mps2-an386"]] * 2
    assert [len(n.outputs) for n in m4.nodes] == [1, 2, 2]
    assert [m4.tensors[n.outputs[1]].shape for n in m4.nodes[1:]] == [(24 * 16 + 8,)] * 2
    m55 = select_kernels(g.graph(), Target.of_board(load_board("mps3-an547")))
    assert {n.call.kernel for n in m55.nodes} == {PICK["mps3-an547"]}


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


@pytest.mark.host_c
@pytest.mark.parametrize("seed", range(40))
def test_fc_gemm_dsp_c_equals_twin_on_host(lib, seed):
    """The C stand-ins of the DSP instructions: any rows, K, N and quantization, in exactly its scratch."""
    rng = np.random.default_rng(seed)
    t, k, n = int(rng.integers(1, 12)), int(rng.integers(1, 90)), int(rng.integers(1, 20))
    in_off, out_off = rand_offsets(rng)
    params = fc_params(t, k, n, (in_off, out_off), rand_act(rng, out_off) if seed % 2 else (-128, 127))
    acc_std = np.sqrt(k * (in_off**2 + 5500) * 5500)
    args = (params, *rand_quant(rng, n, acc_std), rand_int8(rng, (t, k)),
            rng.integers(-128, 128, size=(n, k), dtype=np.int8), rand_bias(rng, n, acc_std) if seed % 5 else None)
    expected = fc.fully_connected_s8(*args)
    variant = KERNELS[PICK["mps2-an386"]]
    size = variant.scratch(params)
    scratch = rng.integers(-128, 128, size=size + 8, dtype=np.int8)
    canary = scratch[size:].copy()
    out = np.zeros(expected.size, np.int8)
    assert hostc.call(lib, variant.name, *prepared_variant_args(variant, *args), scratch, out=out) == hostc.MCU_OK
    assert_equal_int(out.reshape(expected.shape), expected, f"{variant.name} {t} x {k} -> {n}")
    assert (scratch[size:] == canary).all(), "wrote past its scratch"
