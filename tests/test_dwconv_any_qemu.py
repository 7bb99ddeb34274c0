"""The any-window depthwise variants (mcu_dwconv2d_s8_dsp, mcu_dwconv2d_s8_mve) equal the portable twin bit for
bit: on the host C compiler (the DSP one through its C stand-ins) and under QEMU on the M4 (DSP) and M55 (Helium).

- One firmware per board runs every case: windows 3, 5, 7 (and 1x3, 5x3, 2x9: more than 4 pairs of taps a row),
  stride 1 and 2 (and 3, 4), dilation 1 and 2, channels 8, 13, 64, with and without padding, cycling the
  quantization modes (int8 clamp, extreme offsets and a narrow clamp, shifts >= 0, ties) and a missing bias.
- The 3x3 windows would take the 3x3 variants; the test hides those so that the new ones run them too.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

import hostc
from mcu.boards import load_board
from mcu.codegen import kernels as registry
from mcu.codegen.ir import verify
from mcu.codegen.kernels.geometry import dwp_fits, is_dw
from mcu.codegen.passes.select_kernels import select_kernels
from mcu.codegen.reference import run_reference
from mcu.codegen.target import Target
from mcu.codegen.twins import conv
from mcu.codegen.memory import plan_graph
from test_kernel_variants_qemu import (GraphBuilder, assert_equal_int, assert_exact_at_the_gap, chained,
                                       placed_at_the_gap, run_on_board)
from test_kernels_host import (conv_params, prepared_variant_args, rand_act, rand_bias, rand_int8, rand_offsets,
                               rand_quant)

VARIANT = {"mps2-an386": "mcu_dwconv2d_s8_dsp", "mps3-an547": "mcu_dwconv2d_s8_mve"}
MODES = [("normal", "full"), ("normal", True), ("slow", False), ("ties", "full"), ("normal", False)]


def dw_cases(seed: int) -> GraphBuilder:
    g = GraphBuilder(seed)
    combos = itertools.product((3, 5, 7), (1, 2), (1, 2), (False, True))
    for i, (k, s, d, padded) in enumerate(combos):
        c = (8, 13, 64)[i % 3]
        span = (k - 1) * d + 1
        pad = (k // 2 * d,) * 2 if padded else (0, 0)
        h, w = span + 1 - (pad[0] if padded else 0) + s, span + 4 * s + 1   # >= 5 output columns unpadded
        mode, extreme = MODES[i % len(MODES)]
        g.conv(1, max(h, 1), w, c, c, kernel=(k, k), stride=(s, s), pad=pad, dil=(d, d), depthwise=True,
               mode=mode, extreme=extreme, bias=i % 7 != 3, family="dw")
    g.conv(2, 6, 9, 13, 13, kernel=(1, 3), pad=(0, 1), depthwise=True, extreme="full", family="dw")  # batch 2
    g.conv(1, 9, 12, 16, 16, kernel=(5, 3), stride=(2, 1), pad=(2, 1), pad_end=(1, 0), depthwise=True,
           family="dw")
    g.conv(1, 4, 4, 8, 8, kernel=(5, 5), pad=(2, 2), depthwise=True, family="dw")   # no inside pixel
    g.conv(1, 6, 14, 8, 8, kernel=(2, 9), pad=(1, 4), depthwise=True, extreme="full", family="dw")  # 5 pairs a row
    g.conv(1, 11, 13, 12, 12, kernel=(3, 3), stride=(3, 3), pad=(1, 1), depthwise=True, extreme="full",
           family="dw")                                                          # stride 3: every residue
    g.conv(1, 13, 14, 8, 8, kernel=(3, 3), stride=(4, 4), pad=(2, 2), dil=(2, 2), depthwise=True, extreme="full",
           family="dw")                                                          # stride 4, dilation 2: residue 0
    return g


def random_cases(seed: int) -> GraphBuilder:
    """Seeded random geometry: windows 1..7 by 1..7, strides 1..3, dilations 1..2, padding before and after (as
    TF's 'same' pads more after), channels 1..70, batch 1..2, every quantization mode."""
    g = GraphBuilder(seed)
    rng = np.random.default_rng(seed)
    while len(g.nodes) < 24:
        kh, kw = (int(v) for v in rng.integers(1, 8, 2))
        s, d = tuple(int(v) for v in rng.integers(1, 4, 2)), tuple(int(v) for v in rng.integers(1, 3, 2))
        pad = (int(rng.integers(0, kh)), int(rng.integers(0, kw)))
        end = (int(rng.integers(0, kh)), int(rng.integers(0, kw)))
        h, w = int(rng.integers(1, 16)), int(rng.integers(1, 16))
        if h + pad[0] + end[0] < d[0] * (kh - 1) + 1 or w + pad[1] + end[1] < d[1] * (kw - 1) + 1:
            continue
        mode, extreme = MODES[len(g.nodes) % len(MODES)]
        c = int(rng.integers(1, 71))
        g.conv(int(rng.integers(1, 3)), h, w, c, c, kernel=(kh, kw), stride=s, pad=pad, pad_end=end, dil=d,
               depthwise=True, mode=mode, extreme=extreme, bias=bool(rng.random() < 0.8), family="dw")
    return g


@pytest.fixture
def without_3x3_variants(monkeypatch):
    """The registry with the 3x3 depthwise variants (and the 5x5/7x7 tap-pair DSP one, the planar Helium one)
    declining every call and the any-window Helium one taking all (strided 3x3 too), so the any-window ones run
    every window."""
    for name in ("mcu_dwconv2d_3x3_s8_mve", "mcu_dwconv2d_3x3_s8_dsp", "mcu_dwconv2d_3x3_s8_dsp_wide",
                 "mcu_dwconv2d_s8_dsp_ring", "mcu_dwconv2d_s8_dsp_line",
                 "mcu_dwconv2d_3x3_s8_fast", "mcu_dwconv2d_s8_mve_planar"):
        monkeypatch.setitem(registry.KERNELS, name,
                            dataclasses.replace(registry.KERNELS[name], applies=lambda p: False))
    monkeypatch.setitem(registry.KERNELS, "mcu_dwconv2d_s8_mve",
                        dataclasses.replace(registry.KERNELS["mcu_dwconv2d_s8_mve"], applies=is_dw))


@pytest.mark.qemu
@pytest.mark.parametrize("board", sorted(VARIANT))
@pytest.mark.parametrize("cases", [dw_cases, random_cases], ids=["grid", "random"])
def test_any_window_depthwise_equals_portable_twin_on_device(board, cases, without_3x3_variants, tmp_path):
    portable = cases(seed=5).graph()
    graph = verify(select_kernels(portable, Target.of_board(load_board(board))))
    assert {n.call.kernel for n in graph.nodes} == {VARIANT[board]}
    rng = np.random.default_rng(11)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    actual = run_on_board(graph, board, inputs, tmp_path)
    for node, a, e in zip(graph.nodes, actual, expected):
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}, filter {node.call.params['filter']}, stride "
                               f"{node.call.params['stride_h']}, dilation {node.call.params['dilation_h']})")


def planar_cases(seed: int) -> GraphBuilder:
    """mcu_dwconv2d_s8_mve_planar's own paths: the 3x3 assembly rows at stride 1 and 2 (phases 64 entries apart,
    and past 64), 5x5 and 7x7, dilation 2, channel counts 12 and 20, narrow images both ways (lanes down the
    columns), 'valid' and one-sided padding, batch 2, every quant mode (shifts >= 0 run in C)."""
    g = GraphBuilder(seed)
    combos = [(3, 1, 1), (3, 2, 1), (5, 1, 1), (5, 2, 1), (7, 1, 1), (7, 2, 1), (3, 1, 2), (5, 2, 2)]
    for i, (k, s, d) in enumerate(combos):
        mode, extreme = MODES[i % len(MODES)]
        pad = (k // 2 * d,) * 2
        g.conv(1, 11, 13, (12, 20)[i % 2], (12, 20)[i % 2], kernel=(k, k), stride=(s, s), pad=pad, dil=(d, d),
               depthwise=True, mode=mode, extreme=extreme, bias=i != 3, family="dw")
        g.conv(1, 25, 5, 20, 20, kernel=(k, k), stride=(s, s), pad=pad, dil=(d, d), depthwise=True,
               mode=MODES[(i + 2) % len(MODES)][0], extreme=MODES[(i + 2) % len(MODES)][1], family="dw")
    g.conv(1, 4, 27, 12, 12, kernel=(3, 3), pad=(1, 1), depthwise=True, family="dw")      # lanes along rows
    g.conv(2, 7, 9, 8, 8, kernel=(3, 3), pad=(1, 1), depthwise=True, extreme="full", family="dw")  # batch 2
    g.conv(1, 9, 140, 8, 8, kernel=(3, 3), stride=(2, 2), pad=(1, 1), depthwise=True, family="dw")  # 70 lanes
    g.conv(1, 8, 10, 12, 12, kernel=(3, 3), depthwise=True, extreme=True, family="dw")     # 'valid'
    g.conv(1, 9, 9, 12, 12, kernel=(3, 3), pad=(2, 0), pad_end=(0, 2), depthwise=True, family="dw")
    g.conv(1, 70, 33, 8, 8, kernel=(3, 3), pad=(1, 1), depthwise=True, extreme="full", family="dw")  # 2 bands
    return g


@pytest.fixture
def planar_everywhere(monkeypatch):
    """The registry with mcu_dwconv2d_s8_mve_planar taking every call it can run (its C paths too)."""
    monkeypatch.setitem(registry.KERNELS, "mcu_dwconv2d_s8_mve_planar",
                        dataclasses.replace(registry.KERNELS["mcu_dwconv2d_s8_mve_planar"], applies=dwp_fits))


@pytest.mark.qemu
def test_planar_depthwise_equals_portable_twin_on_m55(planar_everywhere, tmp_path):
    portable = planar_cases(seed=7).graph()
    graph = verify(select_kernels(portable, Target.of_board(load_board("mps3-an547"))))
    assert {n.call.kernel for n in graph.nodes} == {"mcu_dwconv2d_s8_mve_planar"}
    rng = np.random.default_rng(11)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    actual = run_on_board(graph, "mps3-an547", inputs, tmp_path)
    for node, a, e in zip(graph.nodes, actual, expected):
        p = node.call.params
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}, input {p['input']}, filter {p['filter']}, "
                               f"stride {p['stride_h']}, dilation {p['dilation_h']})")


@pytest.mark.qemu
def test_planar_depthwise_in_place_on_m55(tmp_path):
    """mcu_dwconv2d_s8_mve_planar's output takes its dying input's bytes exactly where the dims agree (one band;
    bands whose shared rows move with them; lanes down the columns; a channel with a shift >= 0 in C), and the
    result is the portable twin's; a strided one gets its own buffer."""
    g = GraphBuilder(9)
    g.conv(1, 25, 5, 64, 64, pad=(1, 1), depthwise=True, extreme="full", family="dw")      # KWS's, lanes down
    g.conv(1, 40, 44, 8, 8, pad=(1, 1), depthwise=True, extreme=True, family="dw")          # bands of 30 rows
    g.conv(1, 12, 12, 20, 20, pad=(1, 1), depthwise=True, mode="slow", family="dw")         # shifts >= 0
    g.conv(1, 20, 24, 8, 8, stride=(2, 2), pad=(1, 1), depthwise=True, family="dw")
    graph = verify(select_kernels(chained(g.graph()), Target.of_board(load_board("mps3-an547"))))
    calls = [n for n in graph.nodes if n.call.kernel.startswith("mcu_dwconv2d")]
    assert [n.call.kernel for n in calls] == ["mcu_dwconv2d_s8_mve_planar"] * 3 + ["mcu_dwconv2d_3x3_s8_mve"]
    graph, mem = plan_graph(graph)
    same = [mem.locations[n.inputs[0]] == mem.locations[n.outputs[0]] for n in calls]
    assert same == [True, True, True, False]
    assert_exact_at_the_gap(graph, mem, {n.name: 0 for n in calls}, "mps3-an547", tmp_path, seed=4)


def strided_3x3_cases(seed: int) -> GraphBuilder:
    """mcu_dwconv2d_3x3_s8_mve (pixel by pixel through the any-window kernel's tap loops): more than 16 channels
    (a table of its own per pixel; whole 16-channel passes in one run), channel tails, dilation, stride 2 one way
    only, batch 2, every quant mode."""
    g = GraphBuilder(seed)
    for args, kw in [((1, 10, 9, 40, 40), dict(stride=(2, 2), pad=(1, 1))),
                     ((1, 9, 11, 20, 20), dict(stride=(2, 2), pad=(2, 2), dil=(2, 2))),
                     ((1, 8, 7, 33, 33), dict(stride=(2, 1), pad=(1, 1))),
                     ((2, 6, 6, 24, 24), dict(stride=(2, 2), pad=(1, 1))),
                     ((1, 9, 9, 12, 12), dict(stride=(2, 2), pad=(1, 1))),
                     ((1, 10, 9, 32, 32), dict(stride=(2, 2), pad=(1, 1))),            # whole 16-channel passes:
                     ((1, 9, 11, 48, 48), dict(stride=(2, 2), pad=(2, 2), dil=(2, 2)))]:  # a pixel in one run
        for extreme in ("full", True, False):
            g.conv(*args, depthwise=True, extreme=extreme, family="dw", **kw)
    return g


@pytest.mark.qemu
def test_strided_3x3_mve_equals_portable_twin_on_m55(tmp_path):
    portable = strided_3x3_cases(seed=5).graph()
    graph = verify(select_kernels(portable, Target.of_board(load_board("mps3-an547"))))
    assert {n.call.kernel for n in graph.nodes} == {"mcu_dwconv2d_3x3_s8_mve"}
    rng = np.random.default_rng(11)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    actual = run_on_board(graph, "mps3-an547", inputs, tmp_path)
    for node, a, e in zip(graph.nodes, actual, expected):
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}, C {node.call.params['input'][3]})")


def overlap_cases(seed: int) -> GraphBuilder:
    """'same' windows at stride 1 (the in-place geometry: Helium runs there in place, through its ring of rows),
    strided and dilated ones; channel tails; fast mode and a narrow clamp."""
    g = GraphBuilder(seed)
    g.conv(1, 9, 11, 8, 8, kernel=(5, 5), pad=(2, 2), depthwise=True, extreme="full", family="dw")
    g.conv(1, 8, 9, 13, 13, kernel=(7, 7), pad=(3, 3), depthwise=True, extreme=True, family="dw")
    g.conv(1, 10, 9, 16, 16, kernel=(3, 3), pad=(2, 2), dil=(2, 2), depthwise=True, family="dw")
    g.conv(1, 11, 12, 24, 24, kernel=(5, 5), stride=(2, 2), pad=(2, 2), depthwise=True, extreme="full", family="dw")
    g.conv(1, 9, 9, 8, 8, kernel=(3, 3), pad=(1, 1), depthwise=True, family="dw")
    return g


@pytest.mark.qemu
@pytest.mark.parametrize("board", sorted(VARIANT))
def test_any_window_depthwise_overlapping_its_input_on_device(board, without_3x3_variants, tmp_path):
    """The output starting its derived gap below its dying input (gap 0: in place, or 16 bytes above, for the
    Helium one on the in-place geometry) gives the portable twin's result."""
    graph = verify(select_kernels(chained(overlap_cases(seed=3).graph()), Target.of_board(load_board(board))))
    assert {n.call.kernel for n in graph.nodes} - {"mcu_maxpool2d_s8"} == {VARIANT[board]}
    graph, mem = plan_graph(graph)
    mem, gaps = placed_at_the_gap(graph, mem)
    assert (sum(g == 0 for g in gaps.values()) == 4) == (board == "mps3-an547")  # the stride-1 "same" ones
    assert_exact_at_the_gap(graph, mem, gaps, board, tmp_path, seed=11)


def test_which_depthwise_variant_each_board_picks():
    """M4: the 3x3 DSP variant for every 3x3 window, the tap-pair one for a 5x5 or 7x7 at stride_w 1 or 2, the
    any-window one for the rest (tests above). M55: the planar Helium one for a 3x3 at stride 1 (81 output pixels
    a channel), the any-window Helium one for every other window but a strided 3x3 (the 3x3 variant's smaller
    raster gap keeps the arena)."""
    g = GraphBuilder(1)
    g.conv(1, 9, 9, 8, 8, kernel=(3, 3), pad=(1, 1), depthwise=True)
    g.conv(1, 9, 9, 8, 8, kernel=(3, 3), stride=(2, 2), pad=(1, 1), depthwise=True)
    g.conv(1, 9, 9, 8, 8, kernel=(5, 5), pad=(2, 2), depthwise=True)
    g.conv(1, 9, 9, 8, 8, kernel=(7, 7), stride=(2, 2), pad=(3, 3), depthwise=True)
    g.conv(1, 5, 6, 4, 8, pad=(1, 1), depthwise=True)                          # ch_mult 2: stays portable
    mve = VARIANT["mps3-an547"]
    want = {"mps2-an386": ["mcu_dwconv2d_3x3_s8_dsp"] * 2 + ["mcu_dwconv2d_s8_dsp_line"] * 2 + ["mcu_dwconv2d_s8"],
            "mps3-an547": ["mcu_dwconv2d_s8_mve_planar", "mcu_dwconv2d_3x3_s8_mve", mve, mve, "mcu_dwconv2d_s8"],
            "mps2-an385": ["mcu_dwconv2d_3x3_s8_fast"] * 2 + ["mcu_dwconv2d_s8"] * 3}        # no DSP: portable
    for board, kernels in want.items():
        picked = [n.call.kernel for n in select_kernels(g.graph(), Target.of_board(load_board(board))).nodes]
        assert picked == kernels, board


@pytest.mark.host_c
@pytest.mark.parametrize("seed", range(40))
def test_dsp_variant_on_host_equals_portable_twin(seed):
    """Random windows (1..7 by 3..7), strides, dilations, padding, channel counts (tails of 1..3), batch."""
    lib = hostc.build(hostc.kernel_sources())
    variant = registry.KERNELS["mcu_dwconv2d_s8_dsp"]
    rng = np.random.default_rng(seed)
    kh, kw = int(rng.choice([1, 3, 5, 7])), int(rng.choice([3, 5, 7]))
    s, d, c, n = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.choice([1, 3, 8, 13, 64])), 1 + seed % 2
    h, w = int(rng.integers((kh - 1) * d + 1, 14)), int(rng.integers((kw - 1) * d + 1, 14))
    pad = (int(rng.integers(0, kh)), int(rng.integers(0, kw)))
    oh, ow = (h + 2 * pad[0] - d * (kh - 1) - 1) // s + 1, (w + 2 * pad[1] - d * (kw - 1) - 1) // s + 1
    in_off, out_off = rand_offsets(rng)
    params = conv_params((n, h, w, c), (1, kh, kw, c), (n, oh, ow, c), (s, s), pad, (d, d), (in_off, out_off),
                         rand_act(rng, out_off))
    acc_std = math.sqrt(kh * kw * (in_off**2 + 5500) * 5500)
    mult, shift = rand_quant(rng, c, acc_std)
    x, filt = rand_int8(rng, (n, h, w, c)), rng.integers(-128, 128, (1, kh, kw, c), dtype=np.int8)
    bias = rand_bias(rng, c, acc_std)
    expected = conv.dwconv2d_s8(params, mult, shift, x, filt, bias)
    scratch = np.zeros(variant.scratch(params) + 8, np.int8)
    out = np.empty(expected.size, np.int8)
    status = hostc.call(lib, variant.name, *prepared_variant_args(variant, params, mult, shift, x, filt, bias),
                        scratch, out=out)
    assert status == hostc.MCU_OK
    assert_equal_int(out.reshape(expected.shape), expected, f"{variant.name} {params}")
    assert not scratch[-8:].any(), "wrote past its scratch"
