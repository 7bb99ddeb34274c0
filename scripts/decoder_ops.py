"""Instructions per true MAC of the decoder ops (transposed convs, bilinear upsampling) on QEMU, one op a model.

    python scripts/decoder_ops.py [--board mps2-an386]
Prints a Markdown table: int8 SQNR vs float, true MACs (a transposed conv: input pixels x C_in x C_out x KH x KW;
bilinear: 4 per output element), instructions, instructions per MAC, arena, weights and code flash, and device == reference.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import mcu
from mcu.metrics import sqnr_db


class Bilinear(nn.Module):
    def __init__(self, scale=2.0, align_corners=False):
        super().__init__()
        self.scale, self.align_corners = scale, align_corners

    def forward(self, x):
        return F.interpolate(x, scale_factor=self.scale, mode="bilinear", align_corners=self.align_corners)


def cases():
    """(name, model, example input, true MACs)."""
    torch.manual_seed(0)
    return [
        ("convT 2x2 s2 16->8 @16x16", nn.ConvTranspose2d(16, 8, 2, 2), torch.randn(1, 16, 16, 16),
         16 * 16 * 16 * 8 * 4),
        ("convT 3x3 s2 p1 op1 16->8 @16x16", nn.ConvTranspose2d(16, 8, 3, 2, 1, output_padding=1),
         torch.randn(1, 16, 16, 16), 16 * 16 * 16 * 8 * 9),
        ("bilinear x2 16x16x16", Bilinear(), torch.randn(1, 16, 16, 16), 4 * 16 * 32 * 32),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="mps2-an386")
    args = ap.parse_args(argv)
    print(f"| op | SQNR dB | true MACs | instructions ({args.board}) | instr./MAC | arena B | weights B | code B | "
          f"exact |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, model, x, macs) in enumerate(cases()):
            model.eval()
            g = torch.Generator().manual_seed(5)
            calib = [(torch.randn(x.shape, generator=g),) for _ in range(8)]
            pkg = mcu.compile(model, (x,), board=args.board, calibration=calib, out_dir=Path(tmp) / str(i), force=True)
            res = mcu.run(pkg, (x,))
            size = mcu.size(pkg)
            exact = all(np.array_equal(d, r) for d, r in zip(res.raw_outputs, pkg.reference((x,))))
            with torch.no_grad():
                want = model(x).numpy()
            sqnr = sqnr_db([want], [pkg.dequantize_outputs(pkg.reference((x,)))[0].reshape(want.shape)])
            print(f"| {name} | {sqnr:.1f} | {macs:,} | {res.instructions:,} | {res.instructions / macs:.2f} | "
                  f"{pkg.arena_bytes:,} | "
                  f"{size.flash_weights:,} | {size.flash_kernels + size.flash_generated:,} | {exact} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
