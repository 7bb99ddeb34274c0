"""`--target-sqnr` on the zoo and the deep depthwise networks (issue 16): what it picked and what it cost.

For each model: SQNR vs float of the int8 package and of the --target-sqnr package (the numpy integer reference,
which the device equals bit for bit), on the calibration data the target is met on and on 10 held-out inputs
drawn like it; the layers raised,
weight flash and instructions on the board (QEMU), and the time the search took.

    python scripts/target_sqnr.py [--target 30] [--board mps2-an386] [--models kws vww ic ad mobilenet_v2 mnasnet_se]
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import torch

import mcu
from mcu.metrics import sqnr_db
from mcu.zoo import deep
from mcu.zoo.mlperf_tiny import MODELS, calibration_set

ALL = {**MODELS, **deep.DEEP}


def data(name: str):
    """(model, example, calibration, held-out inputs) of a zoo or deep model."""
    model, example = ALL[name]()
    if name in deep.DEEP:
        return model, example, deep.calibration_set(16), deep.calibration_set(10, seed=50)
    return model, example, calibration_set(name), [calibration_set(name, 1, seed=50 + s)[0] for s in range(10)]


def measure(pkg, model, xs) -> dict:
    with torch.no_grad():
        want = [model(*x).numpy() for x in xs]
    got = [pkg.dequantize_outputs(pkg.reference(x))[0] for x in xs]
    size, res = mcu.size(pkg), mcu.run(pkg, xs[0])
    return {"sqnr": sqnr_db(want, got), "weights": size.flash_weights, "instructions": res.instructions}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=float, default=30.0)
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("--models", nargs="+", default=list(ALL), choices=list(ALL))
    ap.add_argument("--out", default="out/target-sqnr")
    args = ap.parse_args(argv)
    lines = [f"| model | int8 SQNR dB (calibration / held out) | target {args.target:g}: SQNR dB (calibration / held "
             f"out) | raised (a16w8 / float32) | weights B int8 -> target | instructions int8 -> target | search s |",
             "|---|---:|---:|---|---:|---:|---:|"]
    for name in args.models:
        model, example, calib, xs = data(name)
        out = Path(args.out)
        base = mcu.compile(model, example, board=args.board, calibration=calib, force=True,
                           out_dir=out / f"{name}-int8")
        t = time.time()
        try:
            pkg = mcu.compile(model, example, board=args.board, calibration=calib, force=True,
                              out_dir=out / f"{name}-{args.target:g}dB", target_sqnr=args.target)
        except mcu.McuError as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            lines.append(f"| {name} | {measure(base, model, xs)['sqnr']:.1f} | out of reach | | | | |")
            continue
        took = time.time() - t
        a, b = measure(base, model, xs), measure(pkg, model, xs)
        raised = collections.Counter(o.precision for o in pkg.precision.rows)
        print(f"{name}:\n{pkg.precision.table()}\n", file=sys.stderr)
        c = pkg.precision
        lines.append(f"| {name} | {c.base_db:.1f} / {a['sqnr']:.1f} | {c.sqnr_db:.1f} / {b['sqnr']:.1f} | "
                     f"{len(c.rows)} "
                     f"({raised['a16w8']} / {raised['float32']}) | {a['weights']:,} -> {b['weights']:,} | "
                     f"{a['instructions']:,} -> {b['instructions']:,} | {took:.0f} |")
        print(lines[-1], flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
