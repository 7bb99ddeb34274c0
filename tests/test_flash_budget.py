"""The flash budget (issue #26 item 6): weights stored widened where that saves the most instructions per byte,
within the budget (codegen/passes/widen_weights.py); the option, its default and its errors (mcu.compile,
--flash-budget); what the manifest and `mcu size` say it bought."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from mcu.boards import load_board
from mcu.build.fit import DEFAULT_FLASH_SHARE, check_flash_budget
from mcu.codegen.kernels.geometry import WIDEN_GAIN, dsp_widen_gain, is_dw_ring
from mcu.codegen.passes.select_kernels import select_kernels
from mcu.codegen.passes.widen_weights import constant_bytes, widen_weights
from mcu.codegen.reference import run_reference
from mcu.codegen.target import Target
from mcu.errors import McuError
from mcu.codegen.ir import verify
from test_kernel_variants_qemu import GraphBuilder, assert_equal_int, run_on_board

M4 = "mps2-an386"


def three_convs():
    """DSP convs whose widening saves 100/4, 36/4 and 16/4 instructions a byte (output pixels / 4), each with
    8 * 3 * 3 * 8 = 576 weights."""
    g = GraphBuilder(5)
    for side in (10, 6, 4):
        g.conv(1, side + 2, side + 2, 8, 8, family="gemm")
    return g.graph()


def narrow(graph, budget=None):
    target = dataclasses.replace(Target.of_board(load_board(M4)), flash_budget=budget)
    picked = select_kernels(graph, target)
    return picked, widen_weights(picked, target)


def widened(graph) -> list[str]:
    return [n.name for n in graph.nodes if n.call.widened]


def test_the_budget_buys_the_most_instructions_per_byte_first():
    picked, _ = narrow(three_convs())
    base = constant_bytes(picked)
    extra = {}  # each layer's cost, widened alone
    for i, n in enumerate(picked.nodes):
        _, all_wide = narrow(three_convs(), budget=10**9)
        extra[n.name] = all_wide.nodes[i].call.widened[0]
    assert sorted(extra.values()) == [576] * 3  # one more byte per weight
    names = [n.name for n in picked.nodes]
    for spend, want in ((0, []), (575, []), (576, names[:1]), (1151, names[:1]), (1152, names[:2]),
                        (3 * 576, names)):
        _, g = narrow(three_convs(), budget=base + spend)
        assert widened(g) == want, spend
        assert constant_bytes(g) == base + 576 * len(want) <= base + spend


def test_without_a_budget_layers_widen_at_the_fixed_exchange_rate():
    """No budget: a layer widens where it saves >= WIDEN_GAIN instructions a byte (256 output pixels)."""
    g = GraphBuilder(6)
    g.conv(1, 18, 18, 8, 8, family="gemm")    # 16 x 16 = 256 pixels: exactly WIDEN_GAIN
    g.conv(1, 17, 17, 8, 8, family="gemm")    # 225 pixels: below
    _, out = narrow(g.graph())
    assert [dsp_widen_gain(n.call.params) for n in out.nodes] == [WIDEN_GAIN, 225 / 4]
    assert [bool(n.call.widened) for n in out.nodes] == [True, False]


def test_widened_weights_compute_what_the_narrow_ones_do():
    """The reference runs the portable twin on the portable constants either way, and the estimate is MACs / 4."""
    picked, wide = narrow(three_convs(), budget=10**9)
    assert [n.call.widened[1] for n in wide.nodes] == [100 * 576 // 4, 36 * 576 // 4, 16 * 576 // 4]
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-128, 128, picked.tensors[t].shape, dtype=np.int8) for t in picked.inputs]
    for a, b in zip(run_reference(picked, inputs), run_reference(wide, inputs)):
        np.testing.assert_array_equal(a, b)


def test_a_budget_below_the_narrow_weights_widens_nothing():
    picked, out = narrow(three_convs(), budget=1)
    assert widened(out) == [] and constant_bytes(out) == constant_bytes(picked)


def test_default_budget_and_bad_budgets():
    board = load_board(M4)
    assert check_flash_budget(None, board) == int(DEFAULT_FLASH_SHARE * 4 * 1024 * 1024)
    assert check_flash_budget(96 * 1024, board) == 96 * 1024
    for bad, says in ((0, "positive integer"), (-5, "positive integer"), (1.5, "positive integer"),
                      (True, "positive integer"), (5 * 1024 * 1024, "more than mps2-an386 has")):
        with pytest.raises(McuError, match=says):
            check_flash_budget(bad, board)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.c3 = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = torch.relu(self.c3(torch.relu(self.c2(torch.relu(self.c1(x))))))
        return self.fc(x.flatten(1))


def _compile(tmp_path, sub, **kw):
    import mcu
    torch.manual_seed(0)
    x = torch.randn(1, 3, 16, 16)
    return mcu.compile(Net().eval(), (x,), board=M4, out_dir=tmp_path / sub, **kw), x


@pytest.mark.qemu
def test_compile_spends_the_budget_and_says_what_it_bought(tmp_path):
    import mcu
    wide, x = _compile(tmp_path, "default")
    m = wide.manifest
    assert m["flash_budget"] == check_flash_budget(None, load_board(M4))
    assert [w["name"] for w in m["widened"]] and all(w["bytes"] > 0 for w in m["widened"])
    narrow_bytes = m["weights_bytes"] - sum(w["bytes"] for w in m["widened"])
    tight, _ = _compile(tmp_path, "tight", flash_budget=narrow_bytes)
    assert tight.manifest["weights_bytes"] == narrow_bytes and "widened" not in tight.manifest
    with pytest.raises(McuError, match=f"need {narrow_bytes:,} B .* budget is {narrow_bytes - 1:,} B"):
        _compile(tmp_path, "too_tight", flash_budget=narrow_bytes - 1)
    runs = [mcu.run(p, (x,)) for p in (wide, tight)]
    for p, r in zip((wide, tight), runs):
        np.testing.assert_array_equal(r.raw_outputs[0], p.reference((x,))[0])
    saved = runs[1].instructions - runs[0].instructions
    estimated = sum(w["instructions"] for w in m["widened"])
    assert 0.8 * estimated <= saved <= 1.2 * estimated, (saved, estimated)
    report = mcu.size(wide).format()
    assert f"budget {m['flash_budget']:,}".replace(" ", "") in report.replace(" ", "")
    assert f"widen {len(m['widened'])} layers" in report


def test_the_cli_reads_byte_counts():
    import argparse

    from mcu.cli import _bytes_arg, build_parser
    assert [_bytes_arg(t) for t in ("98304", "96K", "96k", "2M")] == [98304, 96 * 1024, 96 * 1024, 2 * 1024 * 1024]
    for bad in ("", "K", "1.5M", "-3", "12 K", "ten"):
        with pytest.raises(argparse.ArgumentTypeError, match="not a byte count"):
            _bytes_arg(bad)
    args = build_parser().parse_args(["compile", "mcu.zoo:kws", "--flash-budget", "96K"])
    assert args.flash_budget == 96 * 1024


@pytest.mark.qemu
def test_widened_depthwise_and_convs_equal_the_portable_twins_on_device(tmp_path):
    """With room in the budget every DSP conv stores int16 weights and every 3x3 depthwise runs its int16 stream
    (mcu_dwconv2d_s8_dsp_ring at stride 1; mcu_dwconv2d_3x3_s8_dsp_wide: the asm runs, border tables, C tails,
    dilation, stride 2 and 3), bit for bit the portable twins on the M4."""
    g = GraphBuilder(9)
    f = "full"
    g.conv(1, 9, 10, 8, 8, pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 10, 9, 16, 16, stride=(2, 2), pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 7, 7, 12, 12, depthwise=True, extreme=f, family="dw")
    g.conv(2, 6, 6, 13, 13, pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 8, 8, 68, 68, pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 9, 9, 8, 8, pad=(2, 2), dil=(2, 2), depthwise=True, extreme=f, family="dw")
    g.conv(1, 11, 11, 8, 8, stride=(3, 3), pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 2, 2, 8, 8, pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 5, 3, 16, 5, kernel=(1, 1), extreme=f, family="1x1")
    g.conv(1, 8, 8, 48, 4, pad=(1, 1), extreme=f, family="gemm")
    portable = g.graph()
    _, graph = narrow(portable, budget=10**9)
    graph = verify(graph)
    ring = [is_dw_ring(n.call.params) for n in graph.nodes[:8]]
    assert ring == [True, False, True, True, True, False, False, True]
    assert [n.call.kernel for n in graph.nodes] == [
        "mcu_dwconv2d_s8_dsp_ring" if r else "mcu_dwconv2d_3x3_s8_dsp_wide" for r in ring] + [
        "mcu_conv2d_1x1_s8_dsp", "mcu_conv2d_s8_dsp"]
    assert all(n.call.widened for n in graph.nodes)
    rng = np.random.default_rng(11)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    for node, a, e in zip(graph.nodes, run_on_board(graph, M4, inputs, tmp_path), expected):
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}) on {M4}")
