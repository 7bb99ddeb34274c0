"""The tap-pair DSP depthwise kernel (mcu_dwconv2d_s8_dsp_line: 5x5, 7x7) equals the portable twin bit for bit under
QEMU (M4, M33), on every geometry its assembly takes and the ones it leaves to C.

- Widths from k - 1 up (steps of outputs plus a last step partly inside the input), 'same' and 'valid' padding,
  TF's 'same' (more padding after), padded window rows at the top and bottom, batch 2; channel counts 1, 3, 8,
  13; the quantization modes (int8 clamp, extreme offsets and a narrow clamp, shifts >= 0, ties) and a missing
  bias; strides 1 and 2.
- Stride 3, dilation 2 and pad_left 1 run in C.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from mcu.codegen.ir import verify
from mcu.codegen.kernels import KERNELS
from mcu.codegen.memory import plan_graph
from mcu.codegen.passes.select_kernels import as_variant
from mcu.codegen.reference import run_reference
from test_kernel_variants_qemu import (GraphBuilder, assert_equal_int, assert_exact_at_the_gap, chained,
                                       placed_at_the_gap, run_on_board)

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


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an505"])
def test_line_depthwise_equals_portable_twin_on_device(board, tmp_path):
    graph = linek_cases(3)
    rng = np.random.default_rng(4)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    for node, a, e in zip(graph.nodes, run_on_board(graph, board, inputs, tmp_path), expected):
        p = node.call.params
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}: {p['input']} stride {p['stride_h']}x{p['stride_w']} pad "
                               f"{p['pad_top']},{p['pad_left']}) on {board}")


@pytest.mark.qemu
def test_line_depthwise_overlapping_its_input_on_device(tmp_path):
    """The line variant's output at its derived gap below its dying input gives the portable twin's result on the
    M4."""
    g = GraphBuilder(7)
    g.conv(1, 9, 11, 8, 8, kernel=(5, 5), pad=(2, 2), depthwise=True, family="dw")
    g.conv(1, 8, 13, 13, 13, kernel=(7, 7), pad=(3, 3), depthwise=True, family="dw")
    g.conv(1, 7, 12, 8, 8, kernel=(5, 5), depthwise=True, family="dw")
    graph = chained(g.graph())
    tensors = dict(graph.tensors)
    nodes = tuple(as_variant(n, KERNELS[LINEK], tensors) if n.call.kernel == "mcu_dwconv2d_s8" else n
                  for n in graph.nodes)
    graph = verify(graph.replace(nodes=nodes, tensors=tensors))
    graph, mem = plan_graph(graph)
    mem, gaps = placed_at_the_gap(graph, mem)
    assert_exact_at_the_gap(graph, mem, gaps, "mps2-an386", tmp_path, seed=12)
