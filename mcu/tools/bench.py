"""`python -m mcu.tools.bench` (or `mcu bench`): compile and run the model zoo on each board; print the table, and the
one-build goals table (each number against its goal), and write them to JSON. Numbers are QEMU instructions
(not cycles), bytes from the ELF."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

import mcu
from mcu.errors import McuError
from mcu.errors import BoardFitError
from mcu.metrics import relative_error, sqnr_db
from mcu.tools.bench_markdown import ONE_BUILD_BEFORE
from mcu.zoo import MODELS, calibration_set, macs

BOARDS = ["mps2-an386", "mps2-an385", "mps2-an500", "mps2-an505", "mps3-an547"]
FLOAT_BOARDS = ["mps2-an386", "mps2-an385", "mps3-an547"]  # the float32 table of docs/benchmarks.md

# The one-build goals (issue #14), per model and board: instructions at most the speed build's when the issue was
# filed (bench_markdown.ONE_BUILD_BEFORE, measured then; the M3's IC: 25 M), the arena at most the memory build's,
# weight flash at most 1.10x the int8 parameters (one byte per parameter), kernels + glue at most 8 KiB (AD: 4 KiB).
BEFORE_INSTRUCTIONS = {board: {model: ONE_BUILD_BEFORE[model, board][0] for model in ("kws", "vww", "ic", "ad")}
                       for board in BOARDS}
BEFORE_INSTRUCTIONS["mps2-an385"]["ic"] = 25_000_000
FLASH_PER_PARAM = 1.10
CODE_BYTES = {"ad": 4096}  # else 8192


def bench_one(name: str, board: str, out_root: Path, quantize: str = "int8") -> dict:
    """One row; quantize="none" compiles the float model (float32 kernels) and adds its relative errors."""
    model, example = MODELS[name]()
    suffix = "" if quantize == "int8" else "-f32"
    pkg = mcu.compile(model, example, board=board, calibration=calibration_set(name), force=True,
                      out_dir=out_root / f"{name}-{board}{suffix}", quantize=quantize)
    xs, want = _eval_set(name, model)
    refs = [pkg.reference(x)[0] for x in xs]  # raw: integer, or float32 (quantize="none")
    res = mcu.run(pkg, xs[0])
    size = mcu.size(pkg)
    n_macs = macs(model, example)
    row = {
        "model": name, "board": board, "quantize": quantize, "arena_bytes": pkg.arena_bytes,
        "arena_lower_bound": pkg.manifest["arena_lower_bound"],
        "flash_weights": size.flash_weights, "flash_kernels": size.flash_kernels,
        "flash_runtime": size.flash_runtime, "flash_glue": size.flash_generated, "flash_other": size.flash_other,
        "flash_total": size.flash_total, "ram_static": size.ram_static, "ram_stack_reserved": size.ram_stack,
        "instructions": res.instructions, "macs": n_macs, "macs_per_instruction": n_macs / res.instructions,
        "exact": bool(np.array_equal(res.raw_outputs[0], refs[0])),
        "sqnr_db": sqnr_db(want, [pkg.dequantize_outputs([r])[0] for r in refs]),  # pooled over 10 inputs
        "kernels": sorted({op["kernel"] for op in pkg.manifest["ops"]} - {"alias"}),
        "params": sum(p.numel() for p in model.parameters()),
    }
    if quantize == "int8":  # the smallest arena: optimize="memory" (portable and in-place kernels), compiled only
        small = mcu.compile(model, example, board=board, calibration=calibration_set(name), force=True,
                            out_dir=out_root / f"{name}-{board}-memory", optimize="memory")
        row["arena_memory"] = small.arena_bytes
        row["arena_memory_lower_bound"] = small.manifest["arena_lower_bound"]
    if quantize == "none":  # float32: max |error| / max |torch|, of the device (one input) and the twin (10)
        row["rel_error_device"] = relative_error(res.outputs[0], want[0])
        row["rel_error_reference"] = relative_error(refs, want)
    return row


def format_table(rows: list[dict]) -> str:
    head = ("| model | board | arena B | arena B (memory; lower bound) | weights B | kernels B | runtime B | glue B | "
            "static RAM B | instructions | MACs | MACs/instr | exact | SQNR dB |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        model = r["model"] if r.get("quantize", "int8") == "int8" else f"{r['model']} (float32)"
        memory = (f"{r['arena_memory']:,} ({r['arena_memory_lower_bound']:,})" if "arena_memory" in r else "-")
        lines.append(f"| {model} | {r['board']} | {r['arena_bytes']:,} | {memory} | {r['flash_weights']:,} | "
                     f"{r['flash_kernels']:,} | {r['flash_runtime']:,} | {r['flash_glue']:,} | {r['ram_static']:,} | "
                     f"{r['instructions']:,} | {r['macs']:,} | {r['macs_per_instruction']:.3f} | "
                     f"{'yes' if r['exact'] else 'NO'} | {r['sqnr_db']:.1f} |")
    return "\n".join(lines)


def format_goals(rows: list[dict]) -> str:
    """The one-build goals table (BEFORE_INSTRUCTIONS): each int8 row's numbers against its goal, 'ok' or 'over'."""
    def cell(value: str, goal: str, ok: bool) -> str:
        return f"{value} ({goal}) {'ok' if ok else 'over'}"
    lines = ["| model | board | instructions (goal) | arena B (memory mode) | weight flash / params (goal) | "
             "kernels + glue B (goal) |", "|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("quantize", "int8") != "int8" or "arena_memory" not in r or "params" not in r:
            continue
        ceiling = BEFORE_INSTRUCTIONS.get(r["board"], {}).get(r["model"])
        ins = r["instructions"]
        ins = cell(f"{ins:,}", f"{ceiling:,}", ins <= ceiling) if ceiling else f"{ins:,}"
        arena = cell(f"{r['arena_bytes']:,}", f"{r['arena_memory']:,}", r["arena_bytes"] <= r["arena_memory"])
        ratio = r["flash_weights"] / r["params"]
        flash = cell(f"{ratio:.2f}", f"{FLASH_PER_PARAM:.2f}", ratio <= FLASH_PER_PARAM)
        code, code_goal = r["flash_kernels"] + r["flash_glue"], CODE_BYTES.get(r["model"], 8192)
        lines.append(f"| {r['model']} | {r['board']} | {ins} | {arena} | {flash} | "
                     f"{cell(f'{code:,}', f'{code_goal:,}', code <= code_goal)} |")
    return "\n".join(lines)


def bench(models: list[str] | None = None, boards: list[str] | None = None,
          out: str | Path = "out/bench", quantize: str = "int8") -> list[dict]:
    """Run models (default: the whole zoo) on boards (default: BOARDS); print the table, write bench.json.
    quantize="none" benchmarks the float models (float32 kernels) into bench-float32.json, skipping the
    boards a model does not fit, and prints each row's relative error vs torch too."""
    from mcu.boards import load_board
    models, boards, out = models or list(MODELS), boards or BOARDS, Path(out)
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise McuError(f"no model {', '.join(unknown)} in mcu.zoo; choose from {', '.join(MODELS)}")
    for board in boards:
        load_board(board)  # an unknown board fails before the first slow run
    rows = []
    runs = tqdm([(m, b) for m in models for b in boards], desc="bench", unit="run", file=sys.stderr, disable=None)
    for name, board in runs:
        t = time.time()
        try:
            rows.append(bench_one(name, board, out, quantize))
        except BoardFitError as exc:
            if quantize == "int8":
                raise
            runs.write(f"{name} on {board}: skipped, the float32 model does not fit ({exc.flash_needed:,} B "
                       f"flash, {exc.ram_needed:,} B RAM)", file=sys.stderr)
            continue
        runs.write(f"{name} on {board}: {rows[-1]['instructions']:,} instructions ({time.time() - t:.0f} s)",
                   file=sys.stderr)
    path = out / ("bench.json" if quantize == "int8" else "bench-float32.json")
    path.write_text(json.dumps(rows, indent=2) + "\n")
    print(format_table(rows))
    if quantize == "int8":
        print("\nThe one-build goals (issue #14):\n" + format_goals(rows))
    if quantize == "none":
        print("\n| model | board | relative error, device vs torch | numpy twin vs torch (10 inputs) |\n|---|---|---|---|")
        for r in rows:
            print(f"| {r['model']} | {r['board']} | {r['rel_error_device']:.2g} | {r['rel_error_reference']:.2g} |")
    print(f"\nwritten to {path}")
    return rows


def _eval_set(name: str, model) -> tuple[list, list]:
    """The 10 inputs SQNR is measured on (drawn like the calibration data) and the float model's outputs."""
    xs = [calibration_set(name, 1, seed=50 + s)[0] for s in range(10)]
    with torch.no_grad():
        return xs, [model(*x).numpy() for x in xs]


def observer_sqnr(models: list[str] | None = None, out: str | Path = "out/bench") -> list[dict]:
    """SQNR vs float of each zoo model under each activation observer (mcu.quantization.observers.OBSERVERS), from the numpy
    reference (which the device equals bit for bit) on 10 inputs drawn like the calibration data."""
    from mcu.quantization.observers import OBSERVERS
    models, out = models or list(MODELS), Path(out)
    rows = []
    for name in models:
        model, example = MODELS[name]()
        xs, want = _eval_set(name, model)
        row = {"model": name}
        for obs in OBSERVERS:
            pkg = mcu.compile(model, example, calibration=calibration_set(name), observer=obs, force=True,
                              out_dir=out / f"{name}-observer-{obs}")
            row[obs] = sqnr_db(want, [pkg.dequantize_outputs(pkg.reference(x))[0] for x in xs])
        rows.append(row)
    lines = ["| model | " + " | ".join(f"{o} SQNR dB" for o in OBSERVERS) + " |", "|---|" + "---:|" * len(OBSERVERS)]
    lines += [f"| {r['model']} | " + " | ".join(f"{r[o]:.1f}" for o in OBSERVERS) + " |" for r in rows]
    out.mkdir(parents=True, exist_ok=True)
    (out / "observers.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n".join(lines))
    print(f"\nwritten to {out / 'observers.json'}")
    return rows


# Numerics (issue 8): each mode's compile options; "int4" is int8 activations with int4 weights.
MODES = {"int8": {}, "a16w8": {"quantize": "a16w8"}, "int4": {"weights": "int4"}, "float32": {"quantize": "none"}}


NUMERICS_HEAD = "| model | mode | SQNR vs float, dB | weights B | flash B | arena B | instructions | device = reference |"


def format_numerics(rows: list[dict]) -> list[str]:
    """The numerics table's markdown lines (printed by `mcu bench --numerics`, written to the README)."""
    lines = [NUMERICS_HEAD, "|---|---|---:|---:|---:|---:|---:|---|"]
    return lines + [f"| {r['model']} | {r['mode']} | {r['sqnr_db']:.1f} | {r['flash_weights']:,} | "
                    f"{r['flash_total']:,} | {r['arena_bytes']:,} | {r['instructions']:,} | "
                    f"{'yes' if r['exact'] else 'NO'} |" for r in rows]


def numerics(models: list[str] | None = None, board: str = "mps2-an386", out: str | Path = "out/bench") -> list[dict]:
    """Per model and numeric mode (MODES) on one board: SQNR vs float of the numpy reference (which the device equals
    bit for bit in every mode; "exact" says so for the first input) over 10 inputs, weight and total flash, arena
    and instructions. Writes numerics.json."""
    models, out = models or list(MODELS), Path(out)
    rows = []
    runs = tqdm(total=len(models) * len(MODES), desc="numerics", unit="run", file=sys.stderr, disable=None)
    for name in models:
        model, example = MODELS[name]()
        xs, want = _eval_set(name, model)
        for mode, options in MODES.items():
            t = time.time()
            pkg = mcu.compile(model, example, board=board, calibration=calibration_set(name), force=True,
                              out_dir=out / f"{name}-{board}-{mode}", **options)
            res, size = mcu.run(pkg, xs[0]), mcu.size(pkg)
            refs = [pkg.reference(x)[0] for x in xs]
            rows.append({"model": name, "mode": mode, "board": board,
                         "sqnr_db": sqnr_db(want, [pkg.dequantize_outputs([r])[0] for r in refs]),
                         "flash_weights": size.flash_weights, "flash_total": size.flash_total,
                         "arena_bytes": pkg.arena_bytes, "instructions": res.instructions,
                         "exact": bool(np.array_equal(res.raw_outputs[0], refs[0]))})
            runs.update()
            runs.write(f"{name} {mode}: {res.instructions:,} instructions ({time.time() - t:.0f} s)", file=sys.stderr)
    runs.close()
    lines = format_numerics(rows)
    out.mkdir(parents=True, exist_ok=True)
    (out / "numerics.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n".join(lines))
    print(f"\nwritten to {out / 'numerics.json'}")
    return rows
