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
    add = next(n for n in g.nodes if n.attrs.get("kernel") == "mcu_add_s8")
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
