"""Inference code flash (kernels + generated glue) per zoo model and board, and per kernel source (issue #14 item 4).

python scripts/code_size.py [--boards B ...] [--models M ...] [--json out.json]

Each model is compiled with the default build, linked, and its ELF attributed with pyelftools
(`mcu.size`: the symbols each object file defines, looked up in the linked image). The first table gives
kernels, glue (model.c: the call sequence and the params structs) and their sum against the issue's goal;
the second gives every kernel source's flash on each board (a source has the same bytes in every model)."""
from __future__ import annotations

from pathlib import Path

import mcu
from mcu.zoo import MODELS, calibration_set

from flash_table import sweep  # scripts/ is on sys.path when a script in it runs

BOARDS = ["mps2-an386", "mps2-an385", "mps2-an500", "mps2-an505", "mps3-an547"]
GOAL = {"ad": 4096}  # kernels + glue, bytes; 8 KB for the others
DEFAULT_GOAL = 8192


def row(name: str, board: str, out: Path) -> dict:
    model, example = MODELS[name]()
    pkg = mcu.compile(model, example, board=board, calibration=calibration_set(name), force=True,
                      out_dir=out / f"{name}-{board}")
    size = mcu.size(pkg)
    return {"model": name, "board": board, "kernels": size.flash_kernels, "runtime": size.flash_runtime,
            "glue": size.flash_generated, "code": size.flash_kernels + size.flash_runtime + size.flash_generated,
            "goal": GOAL.get(name, DEFAULT_GOAL), "sources": size.kernels}


def model_table(rows: list[dict]) -> str:
    lines = ["| model | board | kernels B | glue B | kernels + glue B | goal B |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        mark = "" if r["code"] <= r["goal"] else " (over)"
        lines.append(f"| {r['model']} | {r['board']} | {r['kernels']:,} | {r['glue']:,} | {r['code']:,}{mark} | "
                     f"{r['goal']:,} |")
    return "\n".join(lines)


def source_table(rows: list[dict]) -> str:
    boards = list(dict.fromkeys(r["board"] for r in rows))
    bytes_of: dict[str, dict[str, int]] = {}
    for r in rows:
        for source, n in r["sources"].items():
            bytes_of.setdefault(source, {})[r["board"]] = n
    lines = ["| kernel source | " + " | ".join(boards) + " |", "|---|" + "---:|" * len(boards)]
    for source in sorted(bytes_of):
        cells = [f"{bytes_of[source][b]:,}" if b in bytes_of[source] else "" for b in boards]
        lines.append(f"| {source} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    rows = sweep(argv, __doc__, BOARDS, "out/code_size", row, model_table)
    print()
    print(model_table(rows))
    print()
    print(source_table(rows))


if __name__ == "__main__":
    main()
