"""Weight flash against int8 parameter bytes per zoo model and board (issue #14 goal 1).

python scripts/flash_table.py [--boards B ...] [--models M ...] [--json out.json]

For each model and board: QEMU instructions of one inference, arena, weight flash, code flash (kernels +
runtime + glue), and the int8 parameter bytes, counted as the issue does (one byte per torch parameter) and as
they are stored (int8 weights + int32 biases); ratio = weight flash / int8 parameter bytes (issue's count)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import mcu
from mcu.zoo import MODELS, calibration_set

BOARDS = ["mps2-an386", "mps2-an385", "mps3-an547"]
ZOO = ["kws", "vww", "ic", "ad"]


def param_bytes(model) -> tuple[int, int]:
    """(one byte per parameter, int8 weights + int32 biases)."""
    every = sum(p.numel() for p in model.parameters())
    w = sum(p.numel() for k, p in model.named_parameters() if k.endswith("weight") and p.dim() > 1)
    b = sum(p.numel() for k, p in model.named_parameters() if k.endswith("bias") and p.dim() == 1)
    return every, w + 4 * b


def row(name: str, board: str, out: Path) -> dict:
    model, example = MODELS[name]()
    pkg = mcu.compile(model, example, board=board, calibration=calibration_set(name), force=True,
                      out_dir=out / f"{name}-{board}")
    res = mcu.run(pkg, example)
    size = mcu.size(pkg)
    every, stored = param_bytes(model)
    return {"model": name, "board": board, "instructions": res.instructions, "arena": pkg.arena_bytes,
            "weights": size.flash_weights, "code": size.flash_kernels + size.flash_runtime + size.flash_generated,
            "params": every, "params_w8b32": stored, "ratio": size.flash_weights / every,
            "kernels": sorted({op["kernel"] for op in pkg.manifest["ops"]} - {"alias"})}


def table(rows: list[dict]) -> str:
    lines = ["| model | board | instructions | arena B | weight flash B | code flash B | int8 params B "
             "(w8+b32) | weight flash / params |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['board']} | {r['instructions']:,} | {r['arena']:,} | {r['weights']:,} | "
                     f"{r['code']:,} | {r['params']:,} ({r['params_w8b32']:,}) | {r['ratio']:.2f} |")
    return "\n".join(lines)


def sweep(argv, doc: str, boards: list[str], out: str, row, table) -> list[dict]:
    """The command line of a zoo sweep (--boards, --models, --out, --json): row(model, board, out dir) for each
    board x model, each printed as table(rows)'s last line as it comes; all rows returned (and written to
    --json)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--boards", nargs="*", default=boards)
    ap.add_argument("--models", nargs="*", default=ZOO)
    ap.add_argument("--out", default=out)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = []
    for board in a.boards:
        for name in a.models:
            rows.append(row(name, board, Path(a.out)))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return rows


def main(argv=None) -> None:
    print(table(sweep(argv, __doc__, BOARDS, "out/flash_table", row, table)))


if __name__ == "__main__":
    main()
