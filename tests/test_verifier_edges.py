"""verify_plan pinned at every edge (issue 14, "the verifier must have teeth"): for each rule the last accepted
placement and the first refused one, one byte or one step apart. scripts/mutate_verifiers.py checks that every
comparison in verify_plan and Buffer.conflicts is held by a test here."""
from __future__ import annotations

import pytest

from mcu.memory_planner import Buffer, Plan, PlanError, verify_plan


def _plan(arena: int, **offsets: int) -> Plan:
    return Plan(dict(offsets), arena, "hand")


A = Buffer("a", 32, 0, 2)
B = Buffer("b", 48, 1, 3)  # live with a at steps 1..2


def test_a_buffer_without_an_offset_is_refused():
    with pytest.raises(PlanError, match="^b has no offset$"):
        verify_plan([A, B], _plan(128, a=0))


@pytest.mark.parametrize("offset, ok", [(0, True), (-16, False)])
def test_offsets_start_at_zero(offset, ok):
    buf = Buffer("x", 16, 0, 0)
    if ok:
        assert verify_plan([buf], _plan(64, x=offset)).offsets == {"x": 0}
    else:
        with pytest.raises(PlanError, match=r"^x at -16 \(\+16, align 16\) is outside the 64-byte arena"):
            verify_plan([buf], _plan(64, x=offset))


@pytest.mark.parametrize("offset, ok", [(16, True), (15, False), (17, False), (8, False)])
def test_offsets_are_aligned(offset, ok):
    buf = Buffer("x", 8, 0, 0, align=16)
    if ok:
        verify_plan([buf], _plan(64, x=offset))
    else:
        with pytest.raises(PlanError, match=f"^x at {offset} .*misaligned"):
            verify_plan([buf], _plan(64, x=offset))


@pytest.mark.parametrize("arena, ok", [(48, True), (47, False)])
def test_a_buffer_ends_inside_the_arena_exactly_at_its_end_at_most(arena, ok):
    buf = Buffer("x", 32, 0, 0)
    if ok:
        verify_plan([buf], _plan(arena, x=16))
    else:
        with pytest.raises(PlanError, match=r"^x at 16 \(\+32, align 16\) is outside the 47-byte arena"):
            verify_plan([buf], _plan(arena, x=16))


@pytest.mark.parametrize("b_at, ok", [(32, True), (31, False), (0, False)])
def test_live_buffers_may_touch_but_not_share_a_byte_b_above(b_at, ok):
    a, b = Buffer("a", 32, 0, 2, align=1), Buffer("b", 48, 1, 3, align=1)
    if ok:
        verify_plan([a, b], _plan(128, a=0, b=b_at))
    else:
        with pytest.raises(PlanError, match=rf"^a \[0, 32\) and b \[{b_at}, {b_at + 48}\) overlap while both "
                                            r"live \(steps 1\.\.2\)$"):
            verify_plan([a, b], _plan(128, a=0, b=b_at))


@pytest.mark.parametrize("a_at, ok", [(48, True), (47, False)])
def test_live_buffers_may_touch_but_not_share_a_byte_a_above(a_at, ok):
    a, b = Buffer("a", 32, 0, 2, align=1), Buffer("b", 48, 1, 3, align=1)
    if ok:
        verify_plan([a, b], _plan(128, a=a_at, b=0))
    else:
        with pytest.raises(PlanError, match=r"^a \[47, 79\) and b \[0, 48\) overlap"):
            verify_plan([a, b], _plan(128, a=a_at, b=0))


@pytest.mark.parametrize("b_first, ok", [(3, True), (2, False)])
def test_buffers_share_bytes_only_when_their_lifetimes_do_not_meet(b_first, ok):
    """a lives at steps 0..2: b from step 3 on may reuse its bytes, b from step 2 on may not."""
    a, b = Buffer("a", 32, 0, 2), Buffer("b", 32, b_first, 5)
    if ok:
        verify_plan([a, b], _plan(32, a=0, b=0))
    else:
        with pytest.raises(PlanError, match=r"overlap while both live \(steps 2\.\.2\)$"):
            verify_plan([a, b], _plan(32, a=0, b=0))
        with pytest.raises(PlanError, match=r"overlap while both live \(steps 2\.\.2\)$"):
            verify_plan([b, a], _plan(32, a=0, b=0))  # either order


@pytest.mark.parametrize("a_first, ok", [(6, True), (5, False)])
def test_lifetimes_from_the_other_side(a_first, ok):
    """b lives at steps 1..5: a from 6 on may reuse its bytes, from 5 on may not."""
    a, b = Buffer("a", 32, a_first, 9), Buffer("b", 32, 1, 5)
    if ok:
        verify_plan([a, b], _plan(32, a=0, b=0))
    else:
        with pytest.raises(PlanError, match="overlap while both live"):
            verify_plan([a, b], _plan(32, a=0, b=0))


@pytest.mark.parametrize("sizes", [(0, 32), (32, 0)])
def test_an_empty_buffer_shares_with_anything(sizes):
    a, b = Buffer("a", sizes[0], 0, 2), Buffer("b", sizes[1], 0, 2)
    verify_plan([a, b], _plan(32, a=0, b=0))


@pytest.mark.parametrize("gap, ok", [(16, True), (17, False)])
def test_an_output_may_start_its_derived_gap_below_its_input_and_no_closer(gap, ok):
    """out overlaps its dying input `inp` when it starts at least the derived gap (16 B) below it."""
    out, inp = Buffer("out", 64, 1, 2, align=1), Buffer("inp", 64, 0, 1, align=1)
    plan = _plan(128, out=0, inp=16)
    if ok:
        verify_plan([out, inp], plan, {("out", "inp"): gap})
        verify_plan([inp, out], plan, {("out", "inp"): gap})  # the pair in either order
    else:
        with pytest.raises(PlanError, match=r"^out \[0, 64\) and inp \[16, 80\) overlap"):
            verify_plan([out, inp], plan, {("out", "inp"): gap})
        with pytest.raises(PlanError, match=r"^inp \[16, 80\) and out \[0, 64\) overlap"):
            verify_plan([inp, out], plan, {("out", "inp"): gap})


def test_a_derived_gap_is_one_way():
    """The gap lets the output start below its input, not above it."""
    out, inp = Buffer("out", 64, 1, 2, align=1), Buffer("inp", 64, 0, 1, align=1)
    with pytest.raises(PlanError, match="overlap"):
        verify_plan([out, inp], _plan(128, out=16, inp=0), {("out", "inp"): 16})
    with pytest.raises(PlanError, match="overlap"):
        verify_plan([inp, out], _plan(128, out=16, inp=0), {("out", "inp"): 16})


def test_a_gap_for_another_pair_allows_nothing():
    out, inp = Buffer("out", 64, 1, 2, align=1), Buffer("inp", 64, 0, 1, align=1)
    with pytest.raises(PlanError, match="overlap"):
        verify_plan([out, inp], _plan(128, out=0, inp=16), {("out", "other"): 0, ("other", "inp"): 0})


def test_conflicts_is_inclusive_at_both_ends():
    a = Buffer("a", 1, 2, 4)
    assert [a.conflicts(Buffer("b", 1, f, f)) for f in range(0, 7)] == [False, False, True, True, True, False,
                                                                         False]
