"""`./dev example`: compile the bundled example CNN for a board, run it on QEMU, print the numbers."""
from __future__ import annotations

import argparse
import sys

import numpy as np

import mcu
from mcu.metrics import sqnr_db
from mcu.errors import McuError
from mcu.zoo.example import calibration_set, example_cnn


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--board", default="mps2-an386")
    parser.add_argument("-o", "--output", default="out/example")
    args = parser.parse_args(argv)
    try:
        model, example_inputs = example_cnn()
        print(f"compiling the example CNN for {args.board} (calibrating on 16 seeded batches) ...")
        pkg = mcu.compile(model, example_inputs, board=args.board, calibration=calibration_set(16),
                          out_dir=args.output, force=True)
        x = calibration_set(1, seed=1234)[0]
        res = mcu.run(pkg, x)
    except McuError as exc:
        print(f"mcu: error: {exc}", file=sys.stderr)
        return 1
    ref = pkg.reference(x)[0]
    float_out = model(*x).detach().numpy()
    exact = np.array_equal(res.raw_outputs[0], ref)
    np.set_printoptions(precision=4, suppress=True)
    print(f"\npackage: {pkg.out_dir}  ({len(pkg.manifest['ops'])} ops, kernels: "
          f"{', '.join(k.split('/')[-1] for k in pkg.manifest['kernels'])})")
    print(f"device output (dequantized): {res.outputs[0].ravel()}")
    print(f"float model output:          {float_out.ravel()}")
    print(f"device int8 == numpy integer reference: {'yes, bit for bit' if exact else 'NO'}")
    print(f"SQNR vs float model: {sqnr_db(float_out, res.outputs[0]):.1f} dB")
    print(f"\narena: {pkg.arena_bytes} B (liveness lower bound {pkg.manifest['arena_lower_bound']} B)")
    print(mcu.size(pkg).format())
    print(f"\ninstructions per inference: {res.instructions:,}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
