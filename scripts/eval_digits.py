"""Digits accuracy table: a small MLP trained on scikit-learn's 8x8 digits, compiled int8, evaluated (float,
integer reference, device) on the M0, M4 and M55 in one QEMU run each.  python scripts/eval_digits.py [--n 500]"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcu  # noqa: E402

BOARDS = ("microbit", "mps2-an386", "mps3-an547")


def digits_split(seed: int = 0):
    """(x_train, y_train, x_test, y_test): the 1797 8x8 digits scaled to [0, 1], a seeded 70/30 split."""
    from sklearn.datasets import load_digits
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.7 * len(x))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def train_mlp(x, y, seed: int = 0, epochs: int = 60) -> nn.Module:
    """A 64-32-10 MLP, full-batch Adam; deterministic on CPU in about a second."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y).long()
    for _ in range(epochs):
        opt.zero_grad()
        nn.functional.cross_entropy(model(xt), yt).backward()
        opt.step()
    return model.eval()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=500, help="test inputs to evaluate (default 500)")
    ap.add_argument("--boards", nargs="+", default=list(BOARDS))
    args = ap.parse_args()
    x_train, y_train, x_test, y_test = digits_split()
    model = train_mlp(x_train, y_train)
    calib = [(torch.from_numpy(x_train[i:i + 1]),) for i in range(0, 256, 2)]
    x, y = x_test[:args.n], y_test[:args.n]
    print("| board | float | reference | device | device != float | s on QEMU | instructions/inference |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for board in args.boards:
            pkg = mcu.compile(model, (torch.from_numpy(x[:1]),), board=board, calibration=calib,
                              out_dir=Path(tmp) / board)
            t0 = time.monotonic()
            r = mcu.eval(pkg, x, y, float_model=model)
            total = time.monotonic() - t0
            a = r.accuracy
            print(f"| {board} | {100 * a['float']:.2f}% | {100 * a['reference']:.2f}% | {100 * a['device']:.2f}% | "
                  f"{r.device_float_differ} | {r.seconds:.1f} (eval {total:.1f}) | {r.instructions:,} |", flush=True)


if __name__ == "__main__":
    main()
