"""Per-op profiling on the device (mcu.tools.profile, `mcu profile`): op counts add up to the whole run, MACs match
the float model, the table prints."""
from __future__ import annotations

import pytest

import mcu
from mcu.boards import load_board
from mcu.cli import main
from mcu.codegen.macs import op_macs
from mcu.tools.profile import format_profile, profile_run
from mcu.qemu.runner import INSTRUCTIONS_PER_SECOND
import torch
from torch import nn

from mcu.zoo import macs


def small_net():
    """conv, depthwise, pointwise, pool, linear: every op family the profile counts MACs for."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, groups=8, padding=1),
                          nn.ReLU(), nn.Conv2d(8, 16, 1), nn.ReLU(), nn.AvgPool2d(4), nn.Flatten(),
                          nn.Linear(16 * 4 * 4, 10)).eval()
    g = torch.Generator().manual_seed(1)
    return model, [(torch.randn(1, 3, 16, 16, generator=g),) for _ in range(4)]


def test_op_macs_from_params():
    conv = {"output": (1, 4, 5, 6), "filter": (6, 3, 3, 2)}
    assert op_macs("mcu_conv2d_s8", conv) == 4 * 5 * 6 * 3 * 3 * 2
    assert op_macs("mcu_dwconv2d_s8", {"output": (2, 4, 4, 8), "filter": (1, 3, 3, 8)}) == 2 * 4 * 4 * 8 * 9
    assert op_macs("mcu_fully_connected_s8", {"batches": 3, "in_features": 5, "out_features": 7}) == 105
    assert op_macs("mcu_maxpool2d_s8", {}) == 0


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386"])
def test_op_counts_add_up_to_the_whole_run(board, tmp_path, capsys):
    model, calib = small_net()
    pkg = mcu.compile(model, calib[0], board=board, calibration=calib, out_dir=tmp_path / "pkg")
    x = calib[1]
    rows, profiled_total = profile_run(pkg, x)
    whole = mcu.run(pkg, x).instructions  # the normal firmware, without the hooks
    calls = [n for n in pkg.graph.nodes if n.op != "alias"]
    assert [r["op"] for r in rows] == [n.name for n in calls]
    assert [r["kernel"] for r in rows] == [n.call.kernel for n in calls]
    assert all(r["instructions"] > 0 for r in rows)
    tick = INSTRUCTIONS_PER_SECOND // load_board(board).systick_hz
    op_sum = sum(r["instructions"] for r in rows)
    assert abs(op_sum - whole) <= 0.02 * whole + 4 * tick, (op_sum, whole)
    assert profiled_total >= op_sum
    assert sum(r["macs"] for r in rows) == macs(model, x)
    assert "whole run" in format_profile(rows, profiled_total)

    assert main(["profile", str(pkg.out_dir)]) == 0
    out = capsys.readouterr().out
    assert "MAC/instr" in out and rows[0]["kernel"] in out
