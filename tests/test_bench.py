"""mcu.tools.bench's goals table (issue #14): each number against its goal, exactly as printed."""
from __future__ import annotations

from mcu.tools.bench import BEFORE_INSTRUCTIONS, BOARDS, format_goals


def row(model, board, instructions, arena, arena_memory, weights, params, kernels, glue, quantize="int8"):
    return {"model": model, "board": board, "quantize": quantize, "instructions": instructions,
            "arena_bytes": arena, "arena_memory": arena_memory, "flash_weights": weights, "params": params,
            "flash_kernels": kernels, "flash_glue": glue}


def test_goals_table_marks_each_number_against_its_goal():
    rows = [row("kws", "mps2-an386", 2_949_201, 8_896, 8_384, 25_498, 23_180, 6_700, 1_492),
            row("ad", "mps2-an386", 241_600, 256, 256, 294_721, 267_928, 3_276, 820),
            row("ad", "mps2-an386", 1, 1, 1, 1, 1, 1, 1, quantize="none")]  # float rows have no goals
    assert format_goals(rows).splitlines() == [
        "| model | board | instructions (goal) | arena B (memory mode) | weight flash / params (goal) | "
        "kernels + glue B (goal) |",
        "|---|---|---|---|---|---|",
        "| kws | mps2-an386 | 2,949,201 (2,949,200) over | 8,896 (8,384) over | 1.10 (1.10) ok | 8,192 (8,192) ok |",
        "| ad | mps2-an386 | 241,600 (241,600) ok | 256 (256) ok | 1.10 (1.10) over | 4,096 (4,096) ok |"]


def test_every_benched_board_has_its_before_instructions():
    assert sorted(BEFORE_INSTRUCTIONS) == sorted(BOARDS)
    assert all(sorted(v) == ["ad", "ic", "kws", "vww"] for v in BEFORE_INSTRUCTIONS.values())
