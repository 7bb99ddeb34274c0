"""Determinism: the same model compiled twice, by two processes with different string hashing (PYTHONHASHSEED), gives
byte-identical output folders, every file compared."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COMPILE = '''
import sys

import torch
from torch import nn

import mcu


class Net(nn.Module):
    """A few of every kind of op: conv + BatchNorm + ReLU, depthwise, a residual add, pool, concat, linear, softmax."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 4, 1)
        self.fc = nn.Linear(12 * 3 * 3, 5)

    def forward(self, x):
        y = self.stem(x)
        y = torch.relu(y + self.dw(y))
        y = nn.functional.max_pool2d(torch.cat([y, self.pw(y)], 1), 2)
        return torch.softmax(self.fc(torch.flatten(y, 1)), -1)


torch.manual_seed(0)
model = Net().eval()
with torch.no_grad():  # BatchNorm statistics that are not the identity
    model.stem[1].running_mean.uniform_(-0.5, 0.5)
    model.stem[1].running_var.uniform_(0.5, 2.0)
g = torch.Generator().manual_seed(1)
calib = [(torch.randn(1, 3, 6, 6, generator=g),) for _ in range(6)]
mcu.compile(model, calib[0], calibration=calib, out_dir=sys.argv[1])
'''


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_compiling_twice_gives_byte_identical_folders(tmp_path):
    script = tmp_path / "compile_net.py"
    script.write_text(COMPILE)
    root = Path(__file__).resolve().parents[1]
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / out)], cwd=root, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONHASHSEED": seed})
             for out, seed in (("a", "1"), ("b", "2"))]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    a, b = files(tmp_path / "a"), files(tmp_path / "b")
    assert {"model.c", "model.h", "weights.c", "manifest.json", "model.pt2"} <= a.keys()
    assert sorted(a) == sorted(b)
    differ = [name for name in a if a[name] != b[name]]
    assert not differ, f"{len(differ)} of {len(a)} files differ: {', '.join(differ)}"
