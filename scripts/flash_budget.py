"""The zoo at a default and a tight flash budget (issue #26 item 6): what widened weights buy, per model and board.

python scripts/flash_budget.py [--boards B ...] [--models M ...] [--tight 1.45] [--out DIR]

Per model: the int8 parameters (one byte per torch parameter), then for each budget (the default, half the board's
flash; and --tight times the parameters) the weight flash, the layers widened, the instructions the compiler
estimates they save, and one inference's QEMU instructions.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import mcu
from mcu.zoo import MODELS, calibration_set

ZOO = ["kws", "vww", "ic", "ad"]


def run(name: str, board: str, out: Path, budget: int | None) -> dict:
    model, example = MODELS[name]()
    pkg = mcu.compile(model, example, board=board, calibration=calibration_set(name), force=True,
                      out_dir=out / f"{name}-{board}-{budget or 'default'}", flash_budget=budget)
    widened = pkg.manifest.get("widened", [])
    return {"budget": pkg.manifest["flash_budget"], "weights": pkg.manifest["weights_bytes"],
            "layers": len(widened), "estimate": sum(w["instructions"] for w in widened),
            "instructions": mcu.run(pkg, example).instructions}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", nargs="*", default=["mps2-an386"])
    ap.add_argument("--models", nargs="*", default=ZOO)
    ap.add_argument("--tight", type=float, default=1.45, help="the tight budget, times the int8 parameters")
    ap.add_argument("--out", default="out/flash_budget")
    a = ap.parse_args(argv)
    print("| model | board | int8 params B | budget | budget B | weight flash B (/ params) | layers widened | "
          "estimated saving | instructions |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    for board in a.boards:
        for name in a.models:
            params = sum(p.numel() for p in MODELS[name]()[0].parameters())
            for label, budget in (("default", None), (f"tight ({a.tight}x)", int(a.tight * params))):
                r = run(name, board, Path(a.out), budget)
                print(f"| {name} | {board} | {params:,} | {label} | {r['budget']:,} | {r['weights']:,} "
                      f"({r['weights'] / params:.2f}) | {r['layers']} | {r['estimate']:,} | {r['instructions']:,} |",
                      flush=True)


if __name__ == "__main__":
    main()
