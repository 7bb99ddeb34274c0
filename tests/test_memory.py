"""Memory planning of compiled graphs: in-place rules, the tensor-level verifier, the schedule."""
import dataclasses

import pytest
import torch
from torch import nn

import mcu
from mcu.codegen.memory import Location, verify_tensor_plan
from mcu.memory_planner import PlanError


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 8, 3, padding=1)
        self.c = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = torch.relu(self.a(x))
        return self.c(torch.relu(self.b(y) + y))


@pytest.fixture(scope="module")
def residual(tmp_path_factory):
    torch.manual_seed(0)
    model = Residual().eval()
    calib = [(torch.randn(1, 4, 6, 6),) for _ in range(4)]
    return mcu.compile(model, calib[0], calibration=calib, out_dir=tmp_path_factory.mktemp("res"))


def test_add_runs_in_place_over_an_input_that_dies(residual):
    g, mem = residual.graph, residual.memory
    add = next(n for n in g.nodes if n.attrs.get("twin", n.attrs.get("kernel")) == "mcu_add_s8")
    out = mem.locations[add.outputs[0]]
    assert out in {mem.locations[t] for t in add.inputs}
    # three 288-byte tensors would be live at the add without the in-place rule; two are
    assert residual.arena_bytes == mem.lower_bound == 2 * 6 * 6 * 8


def test_verifier_rejects_an_overlap_no_rule_allows(residual):
    g, mem = residual.graph, residual.memory
    first_conv = g.nodes[0].outputs[0]
    second_conv = g.nodes[1].outputs[0]  # both live while the second conv runs
    broken = dataclasses.replace(mem, locations={**mem.locations, second_conv: mem.locations[first_conv]})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g, broken)
    verify_tensor_plan(g, mem)


def test_verifier_rejects_a_tensor_past_the_arena(residual):
    g, mem = residual.graph, residual.memory
    t = g.nodes[0].outputs[0]
    broken = dataclasses.replace(mem, locations={**mem.locations, t: Location("arena", mem.arena_bytes - 8)})
    with pytest.raises(PlanError, match="past the"):
        verify_tensor_plan(g, broken)


@pytest.mark.parametrize("params, gap", [
    # 1x1 conv, 8 -> 16 channels on 4x5: (p + 1) * 16 - p * 8, largest at the last pixel p = 19
    (dict(input=(1, 4, 5, 8), output=(1, 4, 5, 16), stride_h=1, stride_w=1, pad_top=0, pad_left=0), 20 * 16 - 19 * 8),
    # 3x3 same conv on a 25x5x64 map (KWS depthwise): (W + 2) * C
    (dict(input=(1, 25, 5, 64), output=(1, 25, 5, 64), stride_h=1, stride_w=1, pad_top=1, pad_left=1), 7 * 64),
    # 1x1 conv 16 -> 8 channels: the output never catches up with the reads
    (dict(input=(1, 4, 4, 16), output=(1, 4, 4, 8), stride_h=1, stride_w=1, pad_top=0, pad_left=0), 8),
])
def test_raster_gap_by_hand(params, gap):
    from mcu.codegen.memory import raster_gap
    assert raster_gap(params) == gap
