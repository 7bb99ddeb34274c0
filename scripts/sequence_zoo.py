"""The sequence zoo's table (issue #25): per model and board, SQNR of int8 vs the float model over 16 calls,
instructions per call on QEMU (averaged over the calls of one firmware run), arena, state and flash bytes (the
model's flash: weights + generated code + kernels + runtime, no harness).

    .venv/bin/python scripts/sequence_zoo.py [--boards mps2-an386,mps2-an385,mps3-an547]
"""
from __future__ import annotations

import argparse
import tempfile

import numpy as np
import torch

import mcu
from mcu.metrics import sqnr_db
from mcu.zoo.sequence import SEQUENCE, sequence_calibration

CORES = {"mps2-an386": "M4", "mps2-an385": "M3", "mps3-an547": "M55"}


def row(name: str, board: str, tmp: str) -> str:
    model, example = SEQUENCE[name]()
    pkg = mcu.compile(model, example, board=board, calibration=sequence_calibration(name, 64), out_dir=f"{tmp}/{name}-{board}")
    calls = sequence_calibration(name, 16, seed=5)
    fresh = type(model)()
    fresh.load_state_dict(model.state_dict())
    with torch.no_grad():
        want = np.concatenate([fresh.eval()(*x).numpy() for x in calls])
    if pkg.state_bytes:
        ref, dev = mcu.session(pkg, "reference").run_sequence(calls), mcu.session(pkg).run_sequence(calls)
        exact = all(np.array_equal(a.raw_outputs[0], b.raw_outputs[0]) for a, b in zip(ref, dev))
        got, instructions = np.concatenate([r.outputs[0] for r in ref]), dev[-1].instructions
    else:
        runs = [mcu.run(pkg, x) for x in calls[:4]]
        exact = all(np.array_equal(r.raw_outputs[0], pkg.reference(x)[0]) for r, x in zip(runs, calls))
        got = np.concatenate([pkg.dequantize_outputs(pkg.reference(x))[0] for x in calls])
        instructions = runs[0].instructions
    size = mcu.size(pkg)
    flash = size.flash_weights + size.flash_generated + size.flash_kernels + size.flash_runtime
    return (f"| {name} | {CORES.get(board, board)} | {sqnr_db(want, got):.1f} | {instructions:,} | {pkg.arena_bytes:,} | "
            f"{pkg.state_bytes:,} | {flash:,} | {'yes' if exact else 'NO'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(CORES))
    args = parser.parse_args()
    print("| model | core | SQNR vs float (dB) | instructions / call | arena (B) | state (B) | flash (B) | "
          "device == reference |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in SEQUENCE:
            for board in args.boards.split(","):
                print(row(name, board, tmp), flush=True)


if __name__ == "__main__":
    main()
