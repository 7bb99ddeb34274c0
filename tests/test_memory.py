"""Memory planning of compiled graphs: in-place rules, the tensor-level verifier, the schedule."""
import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.codegen.memory import Location
from mcu.codegen.plan_verifier import verify_tensor_plan
from mcu.memory_planner import PlanError
from calls import kernel_of


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
    return mcu.compile(model, calib[0], board="mps2-an385", calibration=calib, out_dir=tmp_path_factory.mktemp("res"))


def test_add_runs_in_place_over_an_input_that_dies(residual):
    g, mem = residual.graph, residual.memory
    add = next(n for n in g.nodes if n.op == "call" and n.call.portable == "mcu_add_s8")
    out = mem.locations[add.outputs[0]]
    assert out in {mem.locations[t] for t in add.inputs}
    # three 288-byte tensors would be live at the add without the in-place rule; two are. The peak is the second
    # conv's call: its input and output and its scratch (the scalar conv's 72-tap window, live during the call only)
    assert g.tensors[g.nodes[1].outputs[1]].nbytes == 3 * 3 * 8
    assert residual.arena_bytes == mem.lower_bound == 2 * 6 * 6 * 8 + 3 * 3 * 8 < 3 * 6 * 6 * 8


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
    from mcu.codegen.sharing import raster_gap
    assert raster_gap(params) == gap


# ---- In-place kernels (optimize="memory"): depthwise with a ring of delayed outputs, 1x1 with a pixel buffer ------

class InPlaceChain(nn.Module):
    """conv -> dw 3x3 'same' -> 1x1 8->8 -> 1x1 8->6 (all three in place) -> dw stride 2 -> 1x1 6->12 (neither)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 8, 1)
        self.shrink = nn.Conv2d(8, 6, 1)
        self.dw2 = nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=6)
        self.grow = nn.Conv2d(6, 12, 1)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = torch.relu(self.pw(torch.relu(self.dw(x))))
        return self.grow(torch.relu(self.dw2(torch.relu(self.shrink(x)))))


class StillLive(nn.Module):
    """The depthwise conv's input is read again by the add after it: it does not die there."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.c = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = torch.relu(self.a(x))
        return self.c(torch.relu(self.dw(y)) + y)


def _compile(model, shape, out_dir, optimize="memory"):
    torch.manual_seed(0)
    calib = [(torch.randn(*shape),) for _ in range(4)]
    return mcu.compile(model.eval(), calib[0], calibration=calib, out_dir=out_dir, optimize=optimize)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    torch.manual_seed(1)
    return _compile(InPlaceChain(), (1, 3, 10, 7), tmp_path_factory.mktemp("chain"))


@pytest.fixture(scope="module")
def still_live(tmp_path_factory):
    torch.manual_seed(2)
    return _compile(StillLive(), (1, 4, 6, 6), tmp_path_factory.mktemp("live"))


def _calls(pkg):
    return [n for n in pkg.graph.nodes if n.op == "call"]


def test_in_place_rule_fires_where_the_input_dies_and_the_kernel_runs_the_geometry(chain):
    g, mem = chain.graph, chain.memory
    kernels = [n.call.kernel for n in _calls(chain)]
    assert kernels == ["mcu_conv2d_s8", "mcu_dwconv2d_s8_inplace", "mcu_conv2d_1x1_s8_inplace",
                       "mcu_conv2d_1x1_s8_inplace", "mcu_dwconv2d_s8", "mcu_conv2d_s8"]  # stride 2; 6 -> 12
    for n in _calls(chain)[1:4]:
        x, out, scratch = n.inputs[0], n.outputs[0], n.outputs[1]
        assert mem.locations[out] == mem.locations[x], f"{n.name} runs in place"
        assert mem.overlaps[out, x] == 0 and n.call.twin in ("mcu_dwconv2d_s8", "mcu_conv2d_s8")
        assert mem.locations[scratch].kind == "arena"
        step = next(i for i, b in enumerate(mem.buffers) if b.name == scratch)
        assert mem.buffers[step].first == mem.buffers[step].last  # live during its call only
    dw = _calls(chain)[1]
    assert g.tensors[dw.outputs[1]].nbytes == (7 + 1) * 8  # a ring of pad_top * W + pad_left pixels
    # 10x7x8 = 560 B tensors: the conv output plus one 64 B ring; no chain drift
    assert chain.arena_bytes == mem.lower_bound == 560 + 64
    model_c = (chain.out_dir / "model.c").read_text()
    a = mem.locations
    assert (f"mcu_dwconv2d_s8_inplace(&model_p1, &model_q1, (int8_t *)(a + {a[dw.inputs[0]].index}), model_w_"
            in model_c)
    assert f"(int8_t *)(a + {a[dw.outputs[1]].index}), (int8_t *)(a + {a[dw.outputs[0]].index}));" in model_c


@pytest.mark.host_c
def test_in_place_chain_is_exact_and_clean_under_sanitizers(chain):
    """The host build (ASan + UBSan, arena filled with two patterns: a read of a byte no op wrote shows) equals
    the reference, which runs the portable twins."""
    from mcu.build.host import run_host
    x = [torch.randn(1, 3, 10, 7, generator=torch.Generator().manual_seed(4)) * 2]
    got, want = run_host(chain, x).raw_outputs[0], chain.reference(x)[0]
    assert np.array_equal(got, want)


def test_in_place_rule_does_not_fire_on_an_input_still_live(still_live):
    g, mem = still_live.graph, still_live.memory
    dw = next(n for n in _calls(still_live) if n.call.kernel.startswith("mcu_dwconv2d"))
    assert dw.call.kernel == "mcu_dwconv2d_s8" and len(dw.outputs) == 1  # y is read by the add later
    assert (dw.outputs[0], dw.inputs[0]) not in mem.overlaps
    verify_tensor_plan(g, mem)


def test_verifier_rejects_in_place_over_an_input_still_live(still_live):
    """Force the in-place kernel onto the depthwise conv whose input the add still reads: the verifier refuses
    the output on the input's bytes (the rule needs the input to die at the op)."""
    g, mem = still_live.graph, still_live.memory
    i, dw = next((i, n) for i, n in enumerate(g.nodes) if kernel_of(n) == "mcu_dwconv2d_s8")
    forced = dw.with_call(kernel="mcu_dwconv2d_s8_inplace")
    g2 = g.replace(nodes=g.nodes[:i] + (forced,) + g.nodes[i + 1:])
    moved = dataclasses.replace(mem, locations={**mem.locations, dw.outputs[0]: mem.locations[dw.inputs[0]]})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g2, moved)


def test_verifier_rejects_in_place_on_geometry_the_kernel_cannot_run(chain):
    """The stride-2 depthwise conv's input dies there, but the in-place kernel does not run stride 2: forced onto
    it with its output on the input's bytes, the verifier refuses (as the portable kernel's raster gap does)."""
    g, mem = chain.graph, chain.memory
    i, dw2 = next((i, n) for i, n in enumerate(g.nodes) if kernel_of(n) == "mcu_dwconv2d_s8")
    moved = dataclasses.replace(mem, locations={**mem.locations, dw2.outputs[0]: mem.locations[dw2.inputs[0]]})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g, moved)  # portable: its output must start raster_gap > 0 bytes below
    forced = dw2.with_call(kernel="mcu_dwconv2d_s8_inplace")
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g.replace(nodes=g.nodes[:i] + (forced,) + g.nodes[i + 1:]), moved)


def test_verifier_checks_the_in_place_output_and_its_scratch(chain):
    g, mem = chain.graph, chain.memory
    dw = _calls(chain)[1]
    x, out, scratch = dw.inputs[0], dw.outputs[0], dw.outputs[1]
    at = mem.locations[x].index
    above = dataclasses.replace(mem, locations={**mem.locations, out: Location("arena", at + 4)})
    with pytest.raises(PlanError, match="overlap while both are live|past the"):
        verify_tensor_plan(g, above)  # an output above its input would overwrite pixels still to be read
    on_data = dataclasses.replace(mem, locations={**mem.locations, scratch: Location("arena", at)})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g, on_data)  # scratch shares bytes with nothing live
    verify_tensor_plan(g, mem)


@pytest.mark.qemu
def test_in_place_chain_is_exact_on_the_board(chain):
    x = [torch.randn(1, 3, 10, 7, generator=torch.Generator().manual_seed(5))]
    got, want = mcu.run(chain, x).raw_outputs[0], chain.reference(x)[0]
    bad = np.argwhere(got != want)
    assert not len(bad), f"first mismatch at {tuple(bad[0])}: device {got[tuple(bad[0])]}, reference {want[tuple(bad[0])]}"
