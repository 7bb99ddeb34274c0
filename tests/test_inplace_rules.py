"""optimize="memory" rules: a concat written in place by its inputs' producers, a residual add fused into its conv.
Each fires where it is safe and exact, stays off where it is not, and the tensor verifier refuses a plan that
bends it."""
import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.codegen.ir import Call
from mcu.codegen.memory import Location
from mcu.codegen.plan_verifier import verify_tensor_plan
from mcu.codegen.sharing import group_offsets
from mcu.memory_planner import PlanError
from calls import kernel_of


def _compile(model, shape, out_dir, optimize="memory", scale=1.0, seed=0):
    torch.manual_seed(seed)
    calib = [(torch.randn(*shape) * scale,) for _ in range(4)]
    return mcu.compile(model.eval(), calib[0], calibration=calib, out_dir=out_dir, optimize=optimize)


def _exact_on_host(pkg, shape, scale=1.0, seed=4):
    from mcu.build.host import run_host
    x = [torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale]
    got, want = run_host(pkg, x).raw_outputs[0], pkg.reference(x)[0]
    bad = np.argwhere(got != want)
    assert not len(bad), f"first mismatch at {tuple(bad[0])}: host {got[tuple(bad[0])]}, reference {want[tuple(bad[0])]}"


def _exact_on_board(pkg, shape, scale=1.0, seed=5):
    x = [torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale]
    got, want = mcu.run(pkg, x).raw_outputs[0], pkg.reference(x)[0]
    bad = np.argwhere(got != want)
    assert not len(bad), f"first mismatch at {tuple(bad[0])}: device {got[tuple(bad[0])]}, reference {want[tuple(bad[0])]}"


def _kernels(pkg):
    return [n.call.kernel for n in pkg.graph.nodes if n.op == "call"]


def _views(pkg):
    return [n for n in pkg.graph.nodes if n.op == "alias" and n.attrs.get("view") == "concat"]


# ---- Concat written in place ----------------------------------------------------------------------------------------
# The quantizer gives a concat's inputs and output one shared range (mcu/quantization/quantizer.py, as TFLite requires), so it
# copies exactly; the ReLU6 branches fed inputs large enough to saturate both ends keep the ranges round.

SCALE = 30.0


class ConcatH(nn.Module):
    """Two conv branches concatenated over H (N = 1: each a contiguous slice), then a 1x1 conv."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(3, 8, 3, padding=1)
        self.c = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.c(torch.cat([nn.functional.relu6(self.a(x)), nn.functional.relu6(self.b(x))], dim=2))


class ConcatPooled(nn.Module):
    """Global-pooled branches flattened and concatenated over C (a reshape chain per slice), then a linear."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(3, 6, 3, padding=1)
        self.fc = nn.Linear(14, 5)

    def forward(self, x):
        pa = torch.flatten(nn.functional.max_pool2d(nn.functional.relu6(self.a(x)), (5, 6)), 1)
        pb = torch.flatten(nn.functional.max_pool2d(nn.functional.relu6(self.b(x)), (5, 6)), 1)
        return self.fc(torch.cat([pa, pb], dim=1))


class ConcatChannels(ConcatH):
    """A channel concat of spatial tensors: each input is strided in the output (outer = H * W), written in place
    by strided producers (tests/test_concat_inplace.py)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(16, 4, 1)

    def forward(self, x):
        return self.c(torch.cat([nn.functional.relu6(self.a(x)), nn.functional.relu6(self.b(x))], dim=1))


class ConcatMixed(ConcatH):
    """One branch without ReLU6, one through a sigmoid (fixed qparams): both still share the concat's range, the
    sigmoid's output through a requantization (an identity table) that writes the slice."""

    def forward(self, x):
        return self.c(torch.cat([torch.sigmoid(self.a(x)), self.b(x)], dim=2))


class ConcatStillLive(ConcatH):
    """The first branch is also read by the second: its bytes cannot be the concat's slice (a copy)."""

    def __init__(self):
        super().__init__()
        self.b = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        a = nn.functional.relu6(self.a(x))
        return self.c(torch.cat([a, nn.functional.relu6(self.b(a))], dim=2))


class ConcatIsOutput(ConcatH):
    """The concat is the model's output (the caller's buffer, which emit addresses whole): a copy."""

    def forward(self, x):
        return torch.cat([nn.functional.relu6(self.a(x)), nn.functional.relu6(self.b(x))], dim=2)


SHAPE = (1, 3, 5, 6)


@pytest.fixture(scope="module")
def concat_h(tmp_path_factory):
    torch.manual_seed(1)
    return _compile(ConcatH(), SHAPE, tmp_path_factory.mktemp("cat_h"), scale=SCALE)


@pytest.fixture(scope="module")
def concat_pooled(tmp_path_factory):
    torch.manual_seed(2)
    return _compile(ConcatPooled(), SHAPE, tmp_path_factory.mktemp("cat_pool"), scale=SCALE)


def test_concat_over_h_is_written_in_place(concat_h):
    g, mem = concat_h.graph, concat_h.memory
    assert "mcu_concat_s8" not in _kernels(concat_h)
    (view,) = _views(concat_h)
    out = mem.locations[view.outputs[0]].index
    a, b = view.inputs
    assert mem.locations[a] == Location("arena", out) and mem.locations[b] == Location("arena", out + 5 * 6 * 8)
    assert group_offsets(g) == {a: 0, b: 240}
    # the two 240 B branches fill the 480 B concat buffer; the 1x1 conv's 120 B output slides under it
    assert concat_h.arena_bytes == mem.lower_bound
    assert "mcu_concat_s8" not in (concat_h.out_dir / "model.c").read_text()


@pytest.mark.host_c
def test_concat_in_place_is_exact(concat_h, concat_pooled):
    _exact_on_host(concat_h, SHAPE, SCALE)
    _exact_on_host(concat_pooled, SHAPE, SCALE)


def test_concat_of_flattened_pools_is_written_in_place(concat_pooled):
    g, mem = concat_pooled.graph, concat_pooled.memory
    (view,) = _views(concat_pooled)
    out = mem.locations[view.outputs[0]].index
    pools = [n for n in g.nodes if n.op == "call" and n.call.kernel == "mcu_maxpool2d_s8"]
    assert [mem.locations[p.outputs[0]].index for p in pools] == [out, out + 8]  # the pools write the slices
    assert mem.arena_bytes == mem.lower_bound


def test_concat_of_differing_ranges_is_still_written_in_place(tmp_path):
    pkg = _compile(ConcatMixed(), SHAPE, tmp_path, scale=SCALE)
    assert "mcu_concat_s8" not in _kernels(pkg) and len(_views(pkg)) == 1
    assert "mcu_lut_s8" in _kernels(pkg)  # the sigmoid's 1/256 grid requantized onto the concat's
    verify_tensor_plan(pkg.graph, pkg.memory)


def test_a_requantizing_concat_keeps_its_copy(tmp_path):
    """Only a foreign graph has a concat whose inputs' qparams differ from its output's: the rule refuses it."""
    from mcu.codegen.passes.inplace import concat_view
    pkg = _compile(ConcatStillLive(), SHAPE, tmp_path, scale=SCALE)
    cat = next(n for n in pkg.graph.nodes if kernel_of(n) == "mcu_concat_s8")
    p = cat.call.params
    requantizing = cat.with_call(params={**p, "multiplier": (p["multiplier"][0] // 2, *p["multiplier"][1:])})
    assert not concat_view(pkg.graph, requantizing)


def test_channel_concat_is_a_strided_view(tmp_path):
    pkg = _compile(ConcatChannels(), SHAPE, tmp_path, scale=SCALE)
    (view,) = _views(pkg)
    assert all(pkg.graph.producer(t).call.params["output_pixel_stride"] == 16 for t in view.inputs)
    verify_tensor_plan(pkg.graph, pkg.memory)


@pytest.mark.parametrize("model, why", [
    (ConcatStillLive(), "an input is read by another node"),
    (ConcatIsOutput(), "the concat is a graph output"),
])
def test_concat_keeps_its_copy(model, why, tmp_path):
    pkg = _compile(model, SHAPE, tmp_path, scale=SCALE)
    assert "mcu_concat_s8" in _kernels(pkg) and not _views(pkg), why
    if isinstance(model, ConcatStillLive):
        cat = next(n for n in pkg.graph.nodes if kernel_of(n) == "mcu_concat_s8")
        p = cat.call.params
        assert p["outer"] == 1  # the layout would allow it: the other condition holds it back
    verify_tensor_plan(pkg.graph, pkg.memory)


def test_concat_view_needs_inputs_that_are_not_graph_io(concat_h):
    from mcu.codegen.passes.inplace import concat_view
    g = concat_h.graph
    (view,) = _views(concat_h)
    cat = view.replace(op="call", attrs={}, call=Call("mcu_concat_s8", view.attrs["params"]))
    g2 = g.replace(nodes=tuple(cat if n is view else n for n in g.nodes))
    assert concat_view(g2, cat)
    assert not concat_view(g2.replace(outputs=g2.outputs + (cat.inputs[1],)), cat)  # a slice is a graph output
    assert not concat_view(g2.replace(outputs=(cat.outputs[0],)), cat)  # the concat is the graph output


def test_verifier_checks_each_slice_against_the_params(concat_h):
    g, mem = concat_h.graph, concat_h.memory
    (view,) = _views(concat_h)
    a, b = view.inputs
    verify_tensor_plan(g, mem)
    shifted = dataclasses.replace(mem, locations={**mem.locations, b: Location("arena", mem.locations[b].index - 4)})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g, shifted)  # the second slice 4 bytes early: over the first one's last pixel
    p = view.attrs["params"]
    requant = view.replace(attrs={**view.attrs, "params": {**p, "multiplier": (p["multiplier"][0], 1 << 29)}})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g.replace(nodes=tuple(requant if n is view else n for n in g.nodes)), mem)  # not a copy
    swapped = view.replace(attrs={**view.attrs, "params": {**p, "sizes": (p["sizes"][0] - 8, p["sizes"][1] + 8)}})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g.replace(nodes=tuple(swapped if n is view else n for n in g.nodes)), mem)


@pytest.mark.qemu
def test_concat_in_place_is_exact_on_the_board(concat_h):
    _exact_on_board(concat_h, SHAPE, SCALE)


# ---- Residual add fused into its conv ------------------------------------------------------------------------------

class Block(nn.Module):
    """conv -> y; y -> 3x3 conv -> 3x3 conv (+ y) -> 1x1 conv: the add's residual y dies at it."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 8, 3, padding=1)
        self.d = nn.Conv2d(8, 8, 3, padding=1)
        self.c = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = torch.relu(self.a(x))
        return self.c(torch.relu(self.d(torch.relu(self.b(y))) + y))


class ResidualIsConvInput(Block):
    """The residual is also the conv's input: the sum must not take its bytes (later windows still read them)."""

    def forward(self, x):
        y = torch.relu(self.a(x))
        return self.c(torch.relu(self.b(y) + y))


class ResidualStillLive(Block):
    """y is read again after the first add: the fused output gets its own bytes."""

    def forward(self, x):
        y = torch.relu(self.a(x))
        z = torch.relu(self.b(y) + y)
        return self.c(self.d(z) + y)


class ConvReadTwice(Block):
    """The conv's output is read by the add and by the next conv: it must exist, no fusion."""

    def forward(self, x):
        y = torch.relu(self.a(x))
        t = self.b(y)
        return self.c(torch.relu(t + y)) + self.c(t)


class ResidualIsInput(nn.Module):
    """The residual is the graph input and the sum the graph output: fused, both in the caller's buffers."""

    def __init__(self):
        super().__init__()
        self.b = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        return self.b(x) + x


BLOCK = (1, 3, 6, 5)


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    torch.manual_seed(3)
    return _compile(Block(), BLOCK, tmp_path_factory.mktemp("block"))


def test_residual_add_is_fused_and_takes_the_residuals_bytes(block):
    g, mem = block.graph, block.memory
    assert _kernels(block) == ["mcu_conv2d_s8", "mcu_conv2d_s8", "mcu_conv2d_add_s8", "mcu_conv2d_s8"]
    fused = g.nodes[2]
    r, out = fused.inputs[3], fused.outputs[0]
    assert r == g.nodes[0].outputs[0]  # y, the block input
    conv, add = fused.call.unfused
    assert conv["kernel"] == "mcu_conv2d_s8" and add["kernel"] == "mcu_add_s8" and conv["output"] not in g.tensors
    # y dies at the fused call, so the sum takes its bytes: y + the second conv's output, 240 B each, at most
    assert mem.locations[out] == mem.locations[r]
    assert block.arena_bytes == mem.lower_bound == 2 * 6 * 5 * 8
    speed = _compile(Block(), BLOCK, block.out_dir.parent / "block_speed", optimize="speed")
    assert "mcu_conv2d_add_s8" not in _kernels(speed)


@pytest.mark.host_c
def test_fused_residual_add_is_exact(block, tmp_path):
    _exact_on_host(block, BLOCK)
    for model in (ResidualStillLive(), ResidualIsInput()):
        torch.manual_seed(6)
        _exact_on_host(_compile(model, BLOCK, tmp_path / type(model).__name__), BLOCK)


def test_fused_output_gets_its_own_bytes_where_the_residual_lives_on(tmp_path):
    torch.manual_seed(6)
    pkg = _compile(ResidualStillLive(), BLOCK, tmp_path)
    first, second = (n for n in pkg.graph.nodes if kernel_of(n) == "mcu_conv2d_add_s8")
    y = first.inputs[3]
    assert second.inputs[3] == y  # y is read again by the second add
    locs = pkg.memory.locations
    assert locs[first.outputs[0]] != locs[y]  # y is still live: the first sum gets its own bytes
    assert locs[second.outputs[0]] == locs[y]  # y dies at the second: that sum takes its bytes
    verify_tensor_plan(pkg.graph, pkg.memory)


def test_no_fusion_where_the_conv_output_is_read_twice(tmp_path):
    torch.manual_seed(7)
    pkg = _compile(ConvReadTwice(), BLOCK, tmp_path)
    t = next(n for n in pkg.graph.nodes if n.op == "call" and n.call.kernel == "mcu_conv2d_s8"
             and n.inputs[0] != pkg.graph.inputs[0] and n.call.params["filter"][1] == 3).outputs[0]
    assert any(kernel_of(n) == "mcu_add_s8" and t in n.inputs for n in pkg.graph.nodes)
    assert sum(t in n.inputs for n in pkg.graph.nodes) == 2  # the add (unfused) and the 1x1 conv read it


def test_fused_with_the_residual_a_graph_input(tmp_path):
    torch.manual_seed(8)
    pkg = _compile(ResidualIsInput(), BLOCK, tmp_path)
    (fused,) = [n for n in pkg.graph.nodes if n.op == "call"]
    assert fused.call.kernel == "mcu_conv2d_add_s8"
    assert pkg.memory.locations[fused.inputs[3]].kind == "input"
    assert pkg.memory.locations[fused.outputs[0]].kind == "output" and pkg.arena_bytes == 0


def test_verifier_refuses_the_sum_on_a_residual_still_live(tmp_path):
    torch.manual_seed(6)
    pkg = _compile(ResidualStillLive(), BLOCK, tmp_path)
    g, mem = pkg.graph, pkg.memory
    first = next(n for n in g.nodes if kernel_of(n) == "mcu_conv2d_add_s8")
    moved = dataclasses.replace(mem, locations={**mem.locations, first.outputs[0]: mem.locations[first.inputs[3]]})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g, moved)


def test_residual_that_is_also_the_conv_input_keeps_its_bytes(tmp_path):
    torch.manual_seed(9)
    pkg = _compile(ResidualIsConvInput(), BLOCK, tmp_path)
    (fused,) = [n for n in pkg.graph.nodes if kernel_of(n) == "mcu_conv2d_add_s8"]
    assert fused.inputs[0] == fused.inputs[3]
    locs, mem = pkg.memory.locations, pkg.memory
    assert locs[fused.outputs[0]] != locs[fused.inputs[3]]
    moved = dataclasses.replace(mem, locations={**locs, fused.outputs[0]: locs[fused.inputs[3]]})
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(pkg.graph, moved)  # the residual rule does not cover the conv's windows
    _exact_on_host(pkg, BLOCK)


def test_verifier_refuses_the_sum_on_the_convs_input(block):
    """The sum may take the residual's bytes, never the conv input's at its offset (the 3x3 window reads ahead):
    the fused call rewired to a constant residual, its output left on the conv input's bytes."""
    g, mem = block.graph, block.memory
    fused = g.nodes[2]
    other = fused.replace(inputs=fused.inputs[:3] + ("c_fake",))
    tensors = {**g.tensors, "c_fake": g.tensors[fused.inputs[0]].replace(name="c_fake", data=np.zeros(
        g.tensors[fused.inputs[0]].shape, np.int8))}
    g2 = g.replace(nodes=(*g.nodes[:2], other, *g.nodes[3:]), tensors=tensors)
    locs = {**mem.locations, "c_fake": Location("const", 0), fused.outputs[0]: mem.locations[fused.inputs[0]]}
    with pytest.raises(PlanError, match="overlap while both are live"):
        verify_tensor_plan(g2, dataclasses.replace(mem, locations=locs))


@pytest.mark.qemu
def test_fused_residual_add_is_exact_on_the_board(block):
    _exact_on_board(block, BLOCK)
