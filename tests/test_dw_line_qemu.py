"""The tap-pair DSP depthwise kernels (mcu_dwconv2d_3x3_s8_dsp_line, mcu_dwconv2d_s8_dsp_line: 5x5, 7x7) equal the
portable twin bit for bit under QEMU (M4, M33), on every geometry their assembly takes and the ones they leave to C.

- Widths 1..14 and 48 (steps of 4 outputs plus a last step with 0..3 columns inside the input), 'same' and
  'valid' padding, TF's 'same' (more padding after), padded window rows at the top and bottom, batch 2; channel
  counts 1, 3, 8, 13, 64; the quantization modes (int8 clamp, extreme offsets and a narrow clamp, shifts >= 0,
  ties) and a missing bias.
- Strides 2 and 3, dilation 2 and pad_left 2 run in C.
- Where the compiler picks it: widened rows of at least 8 output pixels at stride_w 1 (geometry.dw_line_pays).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from mcu.codegen.ir import verify
from mcu.codegen.kernels import KERNELS
from mcu.codegen.kernels.geometry import dw_line_pays
from mcu.codegen.memory import plan_graph
from mcu.codegen.passes.select_kernels import as_variant
from mcu.codegen.reference import run_reference
from test_kernel_variants_qemu import (GraphBuilder, assert_equal_int, assert_exact_at_the_gap, chained,
                                       placed_at_the_gap, run_on_board)

LINE = "mcu_dwconv2d_3x3_s8_dsp_line"
LINEK = "mcu_dwconv2d_s8_dsp_line"
MODES = [("normal", "full"), ("normal", True), ("slow", False), ("ties", "full"), ("normal", False)]


def as_line(g: GraphBuilder, kernel: str):
    graph = g.graph()
    tensors = dict(graph.tensors)
    nodes = tuple(as_variant(n, KERNELS[kernel], tensors) for n in graph.nodes)
    return verify(graph.replace(nodes=nodes, tensors=tensors))


def linek_cases(seed: int):
    """5x5 and 7x7 at strides 1 and 2: widths from k - 1 up, 'same', 'valid' and TF's 'same' columns, padded
    rows at the top and bottom, batch 2, every quantization mode; stride 3, dilation 2 and pad_left 1 in C."""
    g = GraphBuilder(seed)
    geometries = itertools.product(((5, 1), (7, 1), (5, 2), (7, 2)), (4, 5, 6, 7, 8, 9, 12, 13, 30),
                                   ("same", "valid", "tf"))
    for i, ((k, s), w, kind) in enumerate(geometries):
        m = k // 2
        if w < k - 1 or (kind == "valid" and w < k):
            continue
        pad = (m, m) if kind != "valid" else (0, 0)
        end = (m + 1, m + 1) if kind == "tf" else None
        mode, extreme = MODES[i % len(MODES)]
        c = (1, 3, 8, 13)[i % 4]
        h = k + i % 3 - (2 * m if kind != "valid" else 0)
        g.conv(1 + (i % 11 == 5), max(h, 1), w, c, c, kernel=(k, k), stride=(s, s), pad=pad, pad_end=end, depthwise=True,
               mode=mode, extreme=extreme, bias=i % 7 != 3, family="dw")
    g.conv(1, 9, 11, 8, 8, kernel=(7, 7), stride=(3, 3), pad=(3, 3), depthwise=True, family="dw")    # in C
    g.conv(1, 9, 14, 8, 8, kernel=(5, 5), pad=(4, 4), dil=(2, 2), depthwise=True, family="dw")
    g.conv(1, 9, 12, 8, 8, kernel=(7, 7), pad=(3, 1), depthwise=True, family="dw")
    g.conv(1, 9, 12, 8, 8, kernel=(5, 5), stride=(2, 1), pad=(2, 2), depthwise=True, family="dw")    # asm rows
    return as_line(g, LINEK)


def line_cases(seed: int):
    """Depthwise 3x3 calls of every kind above, each as a call of the line variant."""
    g = GraphBuilder(seed)
    widths = list(range(1, 15)) + [48]
    for i, (w, pad) in enumerate(itertools.product(widths, ((1, 1), (0, 0), (1, 1, "end")))):
        if pad == (0, 0) and w < 3:
            continue
        end = (0, 2) if len(pad) == 3 else None
        mode, extreme = MODES[i % len(MODES)]
        c = (1, 3, 8, 13, 64)[i % 5] if w != 48 else 16
        g.conv(1, 3 + i % 4, w, c, c, pad=pad[:2], pad_end=end, depthwise=True, mode=mode, extreme=extreme,
               bias=i % 7 != 3, family="dw")
    g.conv(2, 5, 9, 8, 8, pad=(1, 1), depthwise=True, extreme="full", family="dw")                 # batch 2
    g.conv(1, 9, 11, 8, 8, stride=(2, 2), pad=(1, 1), depthwise=True, family="dw")                 # in C
    g.conv(1, 9, 12, 13, 13, stride=(3, 1), pad=(1, 1), depthwise=True, extreme="full", family="dw")
    g.conv(1, 9, 12, 8, 8, stride=(1, 3), pad=(1, 1), depthwise=True, family="dw")
    g.conv(1, 9, 12, 8, 8, pad=(2, 2), dil=(2, 2), depthwise=True, family="dw")
    g.conv(1, 6, 12, 8, 8, pad=(1, 2), depthwise=True, family="dw")
    g.conv(1, 1, 9, 8, 8, pad=(1, 1), depthwise=True, family="dw")                                 # 2 padded rows
    return as_line(g, LINE)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an505"])
@pytest.mark.parametrize("cases", [line_cases, linek_cases], ids=["3x3", "5x5-7x7"])
def test_line_depthwise_equals_portable_twin_on_device(board, cases, tmp_path):
    graph = cases(3)
    rng = np.random.default_rng(4)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    for node, a, e in zip(graph.nodes, run_on_board(graph, board, inputs, tmp_path), expected):
        p = node.call.params
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}: {p['input']} stride {p['stride_h']}x{p['stride_w']} pad "
                               f"{p['pad_top']},{p['pad_left']}) on {board}")


def test_the_line_variant_pays_on_wide_rows_at_stride_1():
    def params(w, s=1, d=1, pad=1):
        ow = (w + 2 * pad - 2 * d - 1) // s + 1
        return {"input": (1, 9, w, 8), "filter": (1, 3, 3, 8), "output": (1, 9, ow, 8), "stride_h": s,
                "stride_w": s, "pad_top": pad, "pad_left": pad, "dilation_h": d, "dilation_w": d}
    assert dw_line_pays(params(24)) and dw_line_pays(params(8))
    assert not dw_line_pays(params(5)) and not dw_line_pays(params(24, s=2)) and not dw_line_pays(params(24, d=2))


@pytest.mark.qemu
def test_line_depthwise_overlapping_its_input_on_device(tmp_path):
    """Each line variant's output at its derived gap below its dying input (the 3x3 one also exactly in place,
    through its ring of rows) gives the portable twin's result on the M4."""
    g = GraphBuilder(7)
    g.conv(1, 9, 11, 8, 8, kernel=(5, 5), pad=(2, 2), depthwise=True, family="dw")
    g.conv(1, 8, 13, 13, 13, kernel=(7, 7), pad=(3, 3), depthwise=True, family="dw")
    g.conv(1, 7, 12, 8, 8, kernel=(5, 5), depthwise=True, family="dw")
    g.conv(1, 9, 12, 16, 16, pad=(1, 1), depthwise=True, family="dw")
    g.conv(1, 9, 13, 8, 8, pad=(1, 1), depthwise=True, family="dw")
    graph = chained(g.graph())
    tensors = dict(graph.tensors)
    kernels = [LINEK, LINEK, LINEK, LINE, LINE]
    calls = iter(kernels)
    nodes = tuple(as_variant(n, KERNELS[next(calls)], tensors) if n.call.kernel == "mcu_dwconv2d_s8" else n
                  for n in graph.nodes)
    graph = verify(graph.replace(nodes=nodes, tensors=tensors))
    graph, mem = plan_graph(graph)
    mem, gaps = placed_at_the_gap(graph, mem)
    assert_exact_at_the_gap(graph, mem, gaps, "mps2-an386", tmp_path, seed=12)
