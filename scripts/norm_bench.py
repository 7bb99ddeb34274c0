"""Instructions per element of int8 layer norm and RMS norm on the M4 (mps2-an386) and the M55 (mps3-an547): the float
island they ran as before (dequantize -> float kernels -> quantize; the hand-written RMSNorm: look-up tables, a sum
and products) against the integer kernels (mcu_layer_norm_s8, mcu_rms_norm_s8), from `mcu profile`'s per-op counts,
and the SQNR of the int8 model (linear, norm, linear) against torch's float model. Instructions count the
norm's calls only.

    python scripts/norm_bench.py [--rows 16] [--cols 64 256]

"before" is rebuilt here by switching the integer lowering off: layer_norm lowered to the float fallback, aten's
rms_norm decomposed (its statistic a float island) and the hand-written form left as its primitives.
"""
from __future__ import annotations

import argparse
import contextlib
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

import mcu
from mcu.codegen.lowering import call_node, dequantize_call, f32, quantize_call
from mcu.codegen.lowering_s8 import INT8
from mcu.importer import decompose
from mcu.importer.composites import norms
from mcu.metrics import sqnr_db
from mcu.tools.profile import profile_run


class HandRMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


MODELS = {"LayerNorm": lambda c: nn.LayerNorm(c), "RMSNorm": lambda c: nn.RMSNorm(c, eps=1e-6),
          "hand RMSNorm": HandRMSNorm}
BOARDS = {"M4": "mps2-an386", "M55": "mps3-an547"}


def _float_layer_norm(ctx, node):
    """The float island layer_norm was lowered to before: dequantize -> mcu_layer_norm_f32 -> quantize."""
    x, out = ctx.tensors[node.inputs[0]], ctx.tensors[node.outputs[0]]
    size = int(np.prod(x.shape))
    cols = int(np.prod(x.shape[len(x.shape) - node.attrs["normalized"]:]))
    xf = ctx.temp(f"{node.name}_in_f32", x.shape, "float32")
    yf = ctx.temp(f"{node.name}_out_f32", x.shape, "float32")
    dq = dequantize_call(node.replace(name=f"{node.name}_dequantize", outputs=(xf,)), x)
    ln = call_node(node.replace(outputs=(yf,)), "mcu_layer_norm_f32",
                   {"rows": size // cols, "cols": cols, "eps": f32(node.attrs["eps"])}, (xf, *node.inputs[1:3]))
    return [dq, ln, quantize_call(node.replace(name=f"{node.name}_quantize"), yf, out)]


@contextlib.contextmanager
def float_islands():
    saved = INT8["layer_norm"], decompose.INTEGER_KERNEL_OPS, norms.fuse_rms_norms
    INT8["layer_norm"], decompose.INTEGER_KERNEL_OPS = _float_layer_norm, set()
    norms.fuse_rms_norms = lambda gm, builder: False
    try:
        yield
    finally:
        INT8["layer_norm"], decompose.INTEGER_KERNEL_OPS, norms.fuse_rms_norms = saved


def measure(name: str, rows: int, cols: int, board: str, before: bool, out: Path) -> tuple[float, float, list[str]]:
    """(instructions per element, SQNR in dB of the int8 reference against torch, the kernels called)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(cols, cols), MODELS[name](cols), nn.Linear(cols, 8)).eval()  # int8 in and out
    g = torch.Generator().manual_seed(1)
    x = torch.randn(rows, cols, generator=g)
    calib = [(torch.randn(rows, cols, generator=g),) for _ in range(4)] + [(x,)]
    with float_islands() if before else contextlib.nullcontext():
        pkg = mcu.compile(model, (x,), calibration=calib, board=board, out_dir=out)
    ops, _ = profile_run(pkg, (x,))
    with torch.no_grad():
        want = model(x).numpy()
    got = np.asarray(pkg.dequantize_outputs(pkg.reference((x,)))[0], np.float32).reshape(want.shape)
    ops = [r for r in ops if not r["kernel"].startswith("mcu_fully_connected")]
    return sum(r["instructions"] for r in ops) / (rows * cols), sqnr_db(want, got), [r["kernel"] for r in ops]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--cols", type=int, nargs="+", default=[64, 256])
    args = ap.parse_args(argv)
    print("| op | rows x cols | core | instr/elem before | instr/elem after | speed-up | SQNR before -> after (dB) "
          "| calls before -> after |")
    print("|---|---|---|---:|---:|---:|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for cols in args.cols:
            for name in MODELS:
                for core, board in BOARDS.items():
                    slug = f"{name.replace(' ', '_')}_{cols}_{board}"
                    b, qb, kb = measure(name, args.rows, cols, board, True, Path(tmp) / f"{slug}_before")
                    a, qa, ka = measure(name, args.rows, cols, board, False, Path(tmp) / f"{slug}_after")
                    print(f"| {name} | {args.rows} x {cols} | {core} | {b:.1f} | {a:.1f} | {b / a:.1f}x | "
                          f"{qb:.1f} -> {qa:.1f} | {len(kb)} -> {len(ka)} ({', '.join(ka)}) |", flush=True)


if __name__ == "__main__":
    main()
