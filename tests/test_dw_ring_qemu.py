"""The ring DSP depthwise (mcu_dwconv2d_s8_dsp_ring: 3x3 at stride 1, a channel pair at a time through rings of
widened input lines) equals the portable twin bit for bit under QEMU: on the M4 with its DSP instructions and on
the M3 with their C stand-ins.

- Windows along rows (W >= H) and along columns (H > W: the taps transposed), 'same', 'valid' and TF's 'same'
  (more padding after), padding up to 2 before; odd and even line lengths (a last lone output), a line as short
  as 1; channel counts 1, 3, 8, 13 (pairs and a last single channel); every quantization mode (slow records and
  narrow clamps in C), a missing bias, batch 2.
- Exactly in place over a dying input of its output's dims, as the compiler plans KWS's depthwise (and never
  below it: it has no raster gap).
- Where the compiler picks it: 3x3 at stride 1 when its weights are widened (the flash budget pays for its int16
  pairs), nowhere on a core without the DSP extension; 5x5 and 7x7 go to mcu_dwconv2d_s8_dsp_line.
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from mcu.boards import load_board
from mcu.codegen.ir import verify
from mcu.codegen.kernels import KERNELS
from mcu.codegen.kernels.geometry import is_dw_ring
from mcu.codegen.memory import plan_graph
from mcu.codegen.passes.select_kernels import as_variant, select_kernels
from mcu.codegen.passes.widen_weights import widen_weights
from mcu.codegen.reference import run_reference
from mcu.codegen.sharing import overlap_gap
from mcu.codegen.target import Target
from test_kernel_variants_qemu import GraphBuilder, assert_equal_int, chained, run_on_board, selected

RING = "mcu_dwconv2d_s8_dsp_ring"
MODES = [("normal", "full"), ("normal", True), ("slow", False), ("ties", "full"), ("normal", False)]


def ring_cases(seed: int):
    """Every geometry above as calls of the ring variant."""
    g = GraphBuilder(seed)
    shapes = ((1, 9), (3, 1), (4, 7), (7, 4), (6, 6), (25, 5), (5, 12), (12, 3))
    for i, ((h, w), kind, _) in enumerate(itertools.product(shapes, ("same", "valid", "tf"), range(2))):
        if kind == "valid" and (h < 3 or w < 3):
            continue
        pad = (1, 1) if kind == "same" else (0, 0) if kind == "valid" else (0, 1)
        end = (2, 1) if kind == "tf" else None
        mode, extreme = MODES[i % len(MODES)]
        c = (1, 3, 8, 13)[i % 4]
        g.conv(1 + (i % 11 == 5), h, w, c, c, pad=pad, pad_end=end, depthwise=True, mode=mode,
               extreme=extreme, bias=i % 7 != 3, family="dw")
    g.conv(1, 6, 9, 8, 8, pad=(2, 1), pad_end=(0, 1), depthwise=True, family="dw")     # pad k - 1
    g.conv(1, 4, 4, 4, 4, pad=(1, 1), depthwise=True, extreme="full", family="dw")     # even lines, pairs only
    g.conv(1, 16, 16, 48, 48, pad=(1, 1), depthwise=True, extreme="full", family="dw")  # mbv3's
    graph = g.graph()
    tensors = dict(graph.tensors)
    nodes = tuple(as_variant(n, KERNELS[RING], tensors) for n in graph.nodes)
    return verify(graph.replace(nodes=nodes, tensors=tensors))


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385"])
def test_ring_depthwise_equals_portable_twin_on_device(board, tmp_path):
    graph = ring_cases(3)
    assert {n.call.kernel for n in graph.nodes} == {RING}
    rng = np.random.default_rng(4)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    for node, a, e in zip(graph.nodes, run_on_board(graph, board, inputs, tmp_path), expected):
        p = node.call.params
        assert_equal_int(a, e, f"{node.name}: {p['input']} k {p['filter'][1]} pad {p['pad_top']},{p['pad_left']} "
                               f"on {board}")


def test_the_compiler_takes_the_ring_variant_for_widened_3x3_at_stride_1():
    def params(k, s=1, d=1, pad=None, h=9, w=9):
        pad = k // 2 if pad is None else pad
        return {"input": (1, h, w, 8), "filter": (1, k, k, 8), "output": (1, h, w, 8), "stride_h": s, "stride_w": s,
                "pad_top": pad, "pad_left": pad, "dilation_h": d, "dilation_w": d}
    assert is_dw_ring(params(3)) and is_dw_ring(params(3, pad=0)) and is_dw_ring(params(3, pad=2))
    assert not is_dw_ring(params(5)) and not is_dw_ring(params(3, s=2)) and not is_dw_ring(params(3, d=2))
    assert not is_dw_ring(params(3, pad=3))
    # widen_weights with a budget: the 3x3 ones through their widened weights, 5x5 and 7x7 to the line kernel
    g = GraphBuilder(1)
    g.conv(1, 9, 12, 8, 8, kernel=(5, 5), pad=(2, 2), depthwise=True, family="dw")
    g.conv(1, 9, 12, 8, 8, kernel=(7, 7), pad=(3, 3), depthwise=True, family="dw")
    g.conv(1, 25, 5, 64, 64, pad=(1, 1), depthwise=True, family="dw")
    target = dataclasses.replace(Target.of_board(load_board("mps2-an386")), flash_budget=1 << 20)
    graph = widen_weights(select_kernels(g.graph(), target), target)
    assert [n.call.kernel for n in graph.nodes] == ["mcu_dwconv2d_s8_dsp_line"] * 2 + [RING]
    assert [n.call.kernel for n in selected(g.graph(), "mps2-an385").nodes][:2] == ["mcu_dwconv2d_s8"] * 2


@pytest.mark.qemu
def test_ring_depthwise_runs_exactly_in_place_on_device(tmp_path):
    """Over a dying input of its output's dims (same padding, TF's same) the planner gives the output the input's
    very bytes (sharing.IN_PLACE_INPUTS "same_dims"), never a start below them (no raster gap: channels, not
    pixels, in order); along rows and along columns, channel pairs and a single last channel, on the M4."""
    g = GraphBuilder(8)
    g.conv(1, 25, 5, 13, 13, pad=(1, 1), depthwise=True, extreme="full", family="dw")             # KWS-like
    g.conv(1, 6, 11, 8, 8, pad=(0, 1), pad_end=(2, 1), depthwise=True, extreme="full", family="dw")
    g.conv(1, 7, 9, 8, 8, depthwise=True, extreme="full", family="dw")                             # 'valid'
    graph = chained(g.graph())
    tensors = dict(graph.tensors)
    nodes = tuple(as_variant(n, KERNELS[RING], tensors) if n.call.kernel == "mcu_dwconv2d_s8" else n
                  for n in graph.nodes)
    graph, mem = plan_graph(verify(graph.replace(nodes=nodes, tensors=tensors)))
    rings = [n for n in graph.nodes if n.call.kernel == RING]
    assert [overlap_gap(n) for n in rings] == [None] * 3
    assert [mem.locations[n.inputs[0]] == mem.locations[n.outputs[0]] for n in rings] == [True, True, False]
    rng = np.random.default_rng(9)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    for name, got, want in zip(graph.outputs, run_on_board(graph, "mps2-an386", inputs, tmp_path, mem),
                               run_reference(graph, inputs)):
        assert_equal_int(got.reshape(want.shape), want, name)
