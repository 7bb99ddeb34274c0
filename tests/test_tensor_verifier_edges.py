"""verify_tensor_plan pinned at every edge (issue 14, "the verifier must have teeth"): for each rule that lets two
live tensors share bytes (alias, in-place elementwise, fused residual, raster overlap, concat view) and for the
plain rules (disjoint while live, inside the arena), the last accepted placement and the first refused one, one
byte or one step apart. Graphs are built by hand: nothing but the verifier runs. scripts/mutate_verifiers.py
checks that the comparisons in verify_tensor_plan are held by these tests and the memory tests."""
from __future__ import annotations

import pytest

from mcu.codegen.ir import Graph, Node, Tensor
from calls import call
from mcu.codegen.memory import Location, MemoryPlan
from mcu.codegen.plan_verifier import _apart_or_raster, verify_tensor_plan
from mcu.codegen.sharing import raster_gap
from mcu.memory_planner import Plan, PlanError

OPAQUE = "mcu_softmax_s8"  # neither in place nor raster: its output shares no byte with a live input


def _t(name: str, nbytes: int) -> Tensor:
    return Tensor(name, (1, 1, 1, nbytes), "int8", layout="NHWC")


def _graph(tensors: dict[str, Tensor], nodes: list[Node], inputs=("x",), outputs=("y",)) -> Graph:
    return Graph(tensors, tuple(nodes), tuple(inputs), tuple(outputs))


def _mem(arena: int, **offsets: int) -> MemoryPlan:
    locations = {"x": Location("input", 0), "y": Location("output", 0)}
    locations.update({t: Location("arena", o) for t, o in offsets.items()})
    return MemoryPlan(locations, (), Plan({}, arena, "hand"), 0, 0, 0, {})


def _check(graph: Graph, mem: MemoryPlan, ok: bool, match: str = "overlap while both are live"):
    if ok:
        verify_tensor_plan(graph, mem)
    else:
        with pytest.raises(PlanError, match=match):
            verify_tensor_plan(graph, mem)


# x -> a (16 B) -> b (16 B) -> c (16 B) -> y: a and b live together at step 1, b and c at step 2, a and c never
CHAIN = _graph({n: _t(n, 16) for n in "xabcy"},
               [call("s0", OPAQUE, ["x"], "a"), call("s1", OPAQUE, ["a"], "b"), call("s2", OPAQUE, ["b"], "c"),
                call("s3", OPAQUE, ["c"], "y")])


@pytest.mark.parametrize("b_at, ok", [(16, True), (15, False), (32, True)])
def test_live_tensors_touch_but_share_no_byte_b_above(b_at, ok):
    _check(CHAIN, _mem(64, a=0, b=b_at, c=48), ok)


@pytest.mark.parametrize("a_at, ok", [(16, True), (15, False), (1, False)])
def test_live_tensors_touch_but_share_no_byte_b_below(a_at, ok):
    _check(CHAIN, _mem(64, a=a_at, b=0, c=48), ok)


def test_the_message_names_both_tensors_and_their_bytes():
    _check(CHAIN, _mem(64, a=0, b=15, c=48), False, r"^a \[0, 16\) and b \[15, 31\) overlap while both are live")


@pytest.mark.parametrize("c_at, ok", [(0, True), (1, False), (31, False), (32, True)])
def test_lifetimes_that_do_not_meet_may_share_bytes(c_at, ok):
    """a dies at step 1 and c is born at step 2: c may take a's bytes, never b's (live with c at step 2)."""
    _check(CHAIN, _mem(64, a=0, b=16, c=c_at), ok)


@pytest.mark.parametrize("s_at, ok", [(32, True), (31, False), (15, False), (0, False)])
def test_a_calls_scratch_shares_no_byte_with_its_output_or_inputs(s_at, ok):
    """The scratch is the call's second output, born and dead at that step: live with the input it reads and
    the output it writes (born at the same step)."""
    g = CHAIN.replace(tensors={**CHAIN.tensors, "s": _t("s", 8)},
                      nodes=(CHAIN.nodes[0], call("s1", OPAQUE, ("a",), ("b", "s")),
                             *CHAIN.nodes[2:]))
    _check(g, _mem(64, a=0, b=16, c=48, s=s_at), ok)


@pytest.mark.parametrize("arena, ok", [(64, True), (63, False)])
def test_a_tensor_ends_at_the_arena_end_at_most(arena, ok):
    _check(CHAIN, _mem(arena, a=0, b=16, c=48), ok, r"^c \[48, 64\) ends past the 63-byte arena")


def test_tensors_outside_the_arena_are_not_placed_in_it():
    """The graph's input and output have their own buffers: index 0 of them is not arena byte 0."""
    _check(CHAIN, _mem(48, a=0, b=16, c=32), True)


# ---- alias: a reshape shares its source's bytes exactly ---------------------------------------------------------

ALIAS = _graph({**{n: _t(n, 16) for n in "xaby"}, "r": Tensor("r", (1, 16), "int8")},
               [call("s0", OPAQUE, ["x"], "a"), Node("v", "alias", ("a",), ("r",)),
                call("s1", OPAQUE, ["r"], "b"), call("s2", OPAQUE, ["b", "a"], "y")])


@pytest.mark.parametrize("r_at, ok", [(0, True), (1, False), (15, False)])
def test_an_alias_shares_bytes_only_at_its_source(r_at, ok):
    _check(ALIAS, _mem(64, a=0, r=r_at, b=32), ok)


# ---- in place elementwise: the output over an input that dies there, the same size -------------------------------

def _add(out_bytes=16, read_later=False):
    tensors = {n: _t(n, 16) for n in "xabcy"} | {"c": _t("c", out_bytes)}
    tail = [call("s3", OPAQUE, ["c", "a"] if read_later else ["c"], "y")]
    return _graph(tensors, [call("s0", OPAQUE, ["x"], "a"), call("s1", OPAQUE, ["x"], "b"),
                            call("s2", "mcu_add_s8", ["a", "b"], "c"), *tail])


@pytest.mark.parametrize("c_at, ok", [(0, True), (16, True), (1, False), (32, True), (31, False)])
def test_add_writes_exactly_over_a_dying_input(c_at, ok):
    _check(_add(), _mem(64, a=0, b=16, c=c_at), ok)


def test_add_in_place_needs_the_input_to_die_there():
    _check(_add(read_later=True), _mem(64, a=0, b=16, c=0), False)


@pytest.mark.parametrize("c_bytes", [15, 17])
def test_add_in_place_needs_the_same_size(c_bytes):
    _check(_add(out_bytes=c_bytes), _mem(64, a=0, b=16, c=0), False)


def test_sharing_is_transitive_along_allowed_pairs():
    """add in place over a, then a reshape of the add's output at the same bytes: r shares a's bytes through c."""
    tensors = {n: _t(n, 16) for n in "xabcy"} | {"r": Tensor("r", (1, 16), "int8")}
    g = _graph(tensors, [call("s0", OPAQUE, ["x"], "a"), call("s1", OPAQUE, ["x"], "b"),
                         call("s2", "mcu_add_s8", ["a", "b"], "c"), Node("v", "alias", ("c",), ("r",)),
                         call("s3", OPAQUE, ["r", "c"], "y")])
    _check(g, _mem(64, a=0, b=16, c=0, r=0), True)
    _check(g, _mem(64, a=0, b=16, c=0, r=1), False)


# ---- raster: a raster kernel's output may start the derived gap below its dying input ----------------------------

CONV = dict(input=(1, 4, 4, 4), output=(1, 4, 4, 8), stride_h=1, stride_w=1, pad_top=1, pad_left=1)
GAP = raster_gap(CONV)


def _conv(read_later=False, kernel="mcu_conv2d_s8", stride=0):
    params = dict(CONV, output_pixel_stride=stride) if stride else CONV
    tail = [call("s2", OPAQUE, ["b", "a"] if read_later else ["b"], "y")]
    return _graph({"x": _t("x", 64), "a": _t("a", 64), "b": Tensor("b", (1, 4, 4, 8), "int8", layout="NHWC"),
                   "y": _t("y", 128)},
                  [call("s0", OPAQUE, ["x"], "a"), call("s1", kernel, ["a"], "b", params), *tail])


def test_the_conv_gap_is_positive_and_smaller_than_the_output():
    assert 0 < GAP < 128


@pytest.mark.parametrize("below, ok", [(GAP, True), (GAP - 1, False), (GAP + 1, True), (0, False)])
def test_a_raster_output_starts_at_least_the_gap_below_its_input(below, ok):
    _check(_conv(), _mem(512, a=256, b=256 - below), ok)


@pytest.mark.parametrize("above, ok", [(1, False), (64, True), (63, False)])
def test_a_raster_output_never_starts_above_its_input(above, ok):
    _check(_conv(), _mem(512, a=0, b=above), ok)


def test_the_gap_needs_the_input_to_die_at_the_call():
    _check(_conv(read_later=True), _mem(512, a=256, b=256 - GAP), False)


def test_the_gap_is_the_kernels_not_any_calls():
    _check(_conv(kernel=OPAQUE), _mem(512, a=256, b=256 - GAP), False)


def test_a_strided_output_spans_its_extent_and_has_no_gap():
    """Output pixel stride 10 (> 8 channels): the output spans 15 * 10 + 8 bytes, and may not overlap its input."""
    extent = 15 * 10 + 8
    g = _conv(stride=10)
    _check(g, _mem(512, a=256, b=256 - extent), True)
    _check(g, _mem(512, a=256, b=256 - extent + 1), False)
    _check(g, _mem(256 + 64, a=0, b=64 + 256 - extent), True)
    _check(g, _mem(256 + 63, a=0, b=64 + 256 - extent), False, "ends past the")


# ---- fused conv + residual add: the output over the dying residual, the conv input apart -------------------------

def _fused(x_is_input=False, residual_read_later=False, conv=CONV):
    r_tail = ["o", "r"] if residual_read_later else ["o"]
    x = "x" if x_is_input else "a"

    def act(name, shape):
        return Tensor(name, tuple(shape), "int8", layout="NHWC")
    tensors = {"x": act("x", conv["input"]), "a": act("a", conv["input"]), "r": act("r", conv["output"]),
               "o": act("o", conv["output"]), "y": _t("y", 128)}
    return _graph(tensors, [call("s0", OPAQUE, ["x"], "a"), call("s1", OPAQUE, ["x"], "r"),
                            call("s2", "mcu_conv2d_add_s8", [x, "r"], "o", conv),
                            call("s3", OPAQUE, r_tail, "y")])


@pytest.mark.parametrize("a_at, ok", [(128, True), (0, False), (127, False), (256, True)])
def test_fused_residual_takes_the_residuals_bytes_with_the_conv_input_apart(a_at, ok):
    _check(_fused(), _mem(512, a=a_at, r=0, o=0), ok)


def test_fused_residual_below_its_conv_input():
    _check(_fused(), _mem(512, a=0, r=64, o=64), True)
    _check(_fused(), _mem(512, a=0, r=63, o=63), False)


def test_fused_residual_over_a_residual_read_later_is_refused():
    _check(_fused(residual_read_later=True), _mem(512, a=256, r=0, o=0), False)


def test_fused_residual_with_the_graph_input_as_conv_input():
    _check(_fused(x_is_input=True), _mem(512, a=256, r=0, o=0), True)
    _check(_fused(x_is_input=True), _mem(512, a=256, r=0, o=1), False)


def test_fused_residual_whose_conv_input_is_a_view_of_the_residual_is_refused():
    """x = reshape(r): x and r share bytes legally (alias), so only the residual rule stops the conv writing
    over windows it has yet to read."""
    g = _fused()
    x = Node("v", "alias", ("r",), ("xr",))
    nodes = list(g.nodes)
    nodes[2] = call("s2", "mcu_conv2d_add_s8", ["xr", "r"], "o", dict(CONV, input=(1, 4, 4, 8)))
    g = g.replace(tensors={**g.tensors, "xr": Tensor("xr", (1, 4, 4, 8), "int8", layout="NHWC")},
                  nodes=(nodes[0], nodes[1], x, *nodes[2:]))
    _check(g, _mem(512, a=256, r=0, o=0, xr=0), False)
    _check(g, _mem(512, a=256, r=0, o=128, xr=0), True)


ONE_PIXEL = dict(input=(1, 1, 1, 4), output=(1, 1, 1, 8), stride_h=1, stride_w=1, pad_top=0, pad_left=0)


@pytest.mark.parametrize("conv, a_at, o_at, ok", [
    (ONE_PIXEL, 8, 0, True), (ONE_PIXEL, 7, 0, False),  # input above the output (gap 8 = the output): touching
    (CONV, 0, 64, True), (CONV, 0, 63, False),          # input below the output: touching, one byte shared
    (CONV, GAP, 0, True), (CONV, GAP - 1, 0, False),    # inside the output: only from the raster gap up
])
def test_the_residual_rule_at_its_edges(conv, a_at, o_at, ok):
    g = _fused(conv=conv)
    assert raster_gap(ONE_PIXEL) == 8
    assert _apart_or_raster(g, _mem(512, a=a_at, r=o_at, o=o_at), g.nodes[2]) is ok


def test_the_residual_rule_ignores_tensors_outside_the_arena():
    g = _fused()
    mem = _mem(512, a=1, r=0, o=0)
    assert _apart_or_raster(g, mem, g.nodes[2]) is False
    out_elsewhere = MemoryPlan({**mem.locations, "o": Location("output", 0)}, (), mem.plan, 0, 0, 0, {})
    assert _apart_or_raster(g, out_elsewhere, g.nodes[2]) is True
    a_elsewhere = MemoryPlan({**mem.locations, "a": Location("input", 0)}, (), mem.plan, 0, 0, 0, {})
    assert _apart_or_raster(g, a_elsewhere, g.nodes[2]) is True
    g_in = _fused(x_is_input=True)
    assert _apart_or_raster(g_in, _mem(512, r=0, o=0), g_in.nodes[2]) is True


# ---- concat view: each input exactly at its slice of the output -------------------------------------------------

def _concat(read_later=False, sizes=(16, 24)):
    params = {"outer": 1, "sizes": list(sizes), "multiplier": [1 << 30, 1 << 30], "shift": [1, 1],
              "input_offset": [0, 0], "output_offset": 0}
    tail = [call("s3", OPAQUE, ["c", "a"] if read_later else ["c"], "y")]
    return _graph({"x": _t("x", 16), "a": _t("a", 16), "b": _t("b", 24), "c": _t("c", 40), "y": _t("y", 40)},
                  [call("s0", OPAQUE, ["x"], "a"), call("s1", OPAQUE, ["x"], "b"),
                   Node("cat", "alias", ("a", "b"), ("c",), {"view": "concat", "params": params}), *tail])


@pytest.mark.parametrize("a_at, b_at, ok", [(0, 16, True), (0, 17, False), (1, 16, False), (0, 15, False)])
def test_concat_inputs_sit_exactly_at_their_slices(a_at, b_at, ok):
    _check(_concat(), _mem(64, a=a_at, b=b_at, c=0), ok)


def test_concat_slices_follow_the_output():
    _check(_concat(), _mem(64, a=8, b=24, c=8), True)
    _check(_concat(), _mem(64, a=8, b=24, c=0), False)


def test_concat_view_needs_its_inputs_to_die_there():
    _check(_concat(read_later=True), _mem(64, a=0, b=16, c=0), False)


def test_concat_view_needs_sizes_that_tile_the_output():
    _check(_concat(sizes=(16, 23)), _mem(64, a=0, b=16, c=0), False)


def _channel_concat(stride=6, kernel="mcu_conv2d_s8", read_later=False, multiplier=1 << 30):
    """a (1,2,2,2) and b (1,2,2,4) written by strided convs into c (1,2,2,6), pixel q's slice at q * 6 + offset."""
    shape = (1, 2, 2)
    params = {"outer": 4, "sizes": [2, 4], "multiplier": [1 << 30, multiplier], "shift": [1, 1],
              "input_offset": [0, 0], "output_offset": 0}

    def conv(name, out, c):
        return call(name, kernel, ["x"], out, {"output": (*shape, c), "output_pixel_stride": stride})
    tail = [call("s3", OPAQUE, ["c", "a"] if read_later else ["c"], "y")]
    tensors = {"x": _t("x", 16), "y": _t("y", 24), "a": Tensor("a", (*shape, 2), "int8", layout="NHWC"),
               "b": Tensor("b", (*shape, 4), "int8", layout="NHWC"), "c": Tensor("c", (*shape, 6), "int8",
                                                                                  layout="NHWC")}
    return _graph(tensors, [conv("s0", "a", 2), conv("s1", "b", 4),
                            Node("cat", "alias", ("a", "b"), ("c",), {"view": "concat", "params": params}), *tail])


@pytest.mark.parametrize("b_at, ok", [(2, True), (3, False), (1, False)])
def test_channel_concat_slices_interleave_at_their_channel_offsets(b_at, ok):
    _check(_channel_concat(), _mem(64, a=0, b=b_at, c=0), ok)


@pytest.mark.parametrize("stride", [5, 7])
def test_channel_concat_needs_the_producers_to_stride_by_the_output_pixel(stride):
    _check(_channel_concat(stride=stride), _mem(64, a=0, b=2, c=0), False)


def test_channel_concat_needs_strided_producers():
    _check(_channel_concat(kernel=OPAQUE), _mem(64, a=0, b=2, c=0), False)


def test_channel_concat_needs_its_inputs_to_die_there():
    _check(_channel_concat(read_later=True), _mem(64, a=0, b=2, c=0), False)


def test_channel_concat_view_needs_unchanged_copies():
    """An input requantized on the way (its multiplier is not the copy's) is not its slice's bytes."""
    _check(_channel_concat(multiplier=1 << 29), _mem(64, a=0, b=2, c=0), False)
