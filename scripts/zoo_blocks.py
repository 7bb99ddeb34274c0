"""The zoo's block networks (mcu.zoo.blocks) on QEMU: int8 SQNR vs float (pooled over 8 seeded inputs), float32
relative error, instructions, arena and flash on one board, and device == reference on every core.

    python scripts/zoo_blocks.py [--board mps2-an386] [--exact-on microbit,mps2-an385,...] [--blocks a,b]
Prints a Markdown table (the block-networks table of docs/benchmarks.md, kept there as text).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

import mcu
from mcu.codegen.macs import op_macs
from mcu.metrics import relative_error, sqnr_db
from mcu.zoo.blocks import BLOCKS

CORES = ["microbit", "mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547"]


def _inputs(example, n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(t.shape, generator=g) for t in example) for _ in range(n)]


def row(name: str, board: str, cores: list[str], out: Path) -> dict:
    model, example = BLOCKS[name]()
    calib, evals = _inputs(example, 16, 5), [example] + _inputs(example, 7, 9)
    with torch.no_grad():
        want = [model(*x).numpy() for x in evals]
    pkg = mcu.compile(model, example, board=board, calibration=calib, out_dir=out / f"{name}-{board}", force=True)
    got = [pkg.dequantize_outputs(pkg.reference(x))[0].reshape(w.shape) for x, w in zip(evals, want)]
    res = mcu.run(pkg, example)
    size = mcu.size(pkg)
    f32 = mcu.compile(model, example, board=board, quantize="none", out_dir=out / f"{name}-{board}-f32", force=True)
    rel = relative_error([f32.reference(x)[0].reshape(w.shape) for x, w in zip(evals, want)], want)
    exact, too_big, memory = [], [], []
    for core in cores:
        try:
            p = pkg if core == board else mcu.compile(model, example, board=core, calibration=calib, force=True,
                                                      out_dir=out / f"{name}-{core}")
        except mcu.errors.BoardFitError:
            try:  # the smallest arena (in-place kernels) before giving up on a small part
                p = mcu.compile(model, example, board=core, calibration=calib, force=True, optimize="memory",
                                out_dir=out / f"{name}-{core}-memory")
                memory.append(core)
            except mcu.errors.BoardFitError:
                too_big.append(core)
                continue
        dev = mcu.run(p, example).raw_outputs
        exact.append(all(np.array_equal(d, r) for d, r in zip(dev, p.reference(example))))
    macs = sum(op_macs(n.call.portable, n.call.params) for n in pkg.graph.nodes if n.call is not None)
    return {"block": name, "sqnr": sqnr_db(want, got), "rel_f32": rel, "instructions": res.instructions, "macs": macs,
            "arena": pkg.arena_bytes, "weights": size.flash_weights, "code": size.flash_kernels + size.flash_generated,
            "exact": f"{sum(exact)}/{len(exact)}" + (f" (does not fit {', '.join(too_big)})" if too_big else "")
            + (f" ({', '.join(memory)}: optimize='memory')" if memory else "")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("--exact-on", default=",".join(CORES))
    ap.add_argument("--blocks", default=",".join(BLOCKS))
    args = ap.parse_args(argv)
    cores = [c for c in args.exact_on.split(",") if c]
    print(f"| block | int8 SQNR dB | float32 rel. error | instructions ({args.board}) | MACs | MAC/instruction | "
          f"arena B | weights B | code B | device == reference ({', '.join(cores)}) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.blocks.split(","):
            r = row(name, args.board, cores, Path(tmp))
            print(f"| {r['block']} | {r['sqnr']:.1f} | {r['rel_f32']:.1e} | {r['instructions']:,} | {r['macs']:,} | "
                  f"{r['macs'] / r['instructions']:.3f} | {r['arena']:,} | "
                  f"{r['weights']:,} | {r['code']:,} | {r['exact']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
