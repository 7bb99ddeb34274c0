"""The numerical debugger: per-op comparison of device dumps with the reference and the float model."""
import re

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.tools.debug import debug, first_divergence, format_rows

pytestmark = pytest.mark.qemu


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        y = torch.relu(self.c2(self.c1(x)))  # the second op
        return self.fc(torch.flatten(nn.functional.max_pool2d(y, 2), 1))


@pytest.fixture()
def small(tmp_path):
    torch.manual_seed(0)
    model = Small().eval()
    calib = [(torch.randn(1, 3, 8, 8),) for _ in range(8)]
    pkg = mcu.compile(model, calib[0], calibration=calib, out_dir=tmp_path / "pkg")
    return model, pkg, torch.randn(1, 3, 8, 8)


def test_debugger_agrees_everywhere_and_measures_sqnr(small):
    _, pkg, x = small
    rows = debug(pkg, x)
    assert len(rows) == sum(1 for n in pkg.graph.nodes if n.op == "call")
    assert first_divergence(rows) is None and all(r.max_lsb == 0 for r in rows)
    convs = [r for r in rows if "conv" in r.kernel]
    assert len(convs) == 2 and all(r.sqnr_db is not None and r.sqnr_db > 25 for r in convs)
    assert "test_debug.py" in convs[1].source and "self.c2" in convs[1].source
    assert "device == reference at every op" in format_rows(rows)


def test_debugger_names_the_op_of_a_planted_wrong_kernel(small):
    _, pkg, x = small
    model_c = pkg.out_dir / "model.c"
    lines = model_c.read_text().splitlines()
    # plant a wrong kernel at the second call (the depthwise conv): it adds 5 to one output byte
    at = [i for i, line in enumerate(lines) if line.strip().startswith("status = ")][1]
    out_expr = re.search(r", ([^,]+)\);$", lines[at]).group(1)
    lines.insert(at + 1, f"    ((int8_t *){out_expr})[3] = (int8_t)(((int8_t *){out_expr})[3] + 5);")
    model_c.write_text("\n".join(lines) + "\n")
    rows = debug(pkg, x)
    bad = first_divergence(rows)
    assert bad is not None and bad.index == 1 and bad.max_lsb >= 5
    assert rows[0].max_lsb == 0
    text = format_rows(rows)
    assert "first divergence: #1 n1_conv2d" in text and "self.c2" in text


def test_debug_build_names_the_op_that_wrote_past_the_arena(small):
    _, pkg, x = small
    model_c = pkg.out_dir / "model.c"
    lines = model_c.read_text().splitlines()
    # plant a kernel that writes one byte past the arena at the second call (the depthwise conv)
    at = [i for i, line in enumerate(lines) if line.strip().startswith("status = ")][1]
    lines.insert(at + 1, "    a[MODEL_ARENA_BYTES] = (uint8_t)(a[MODEL_ARENA_BYTES] ^ 0xFFu);")
    model_c.write_text("\n".join(lines) + "\n")
    with pytest.raises(mcu.McuError, match=r"op #1 n1_conv2d \(mcu_\w+\) at .*self\.c2.* wrote past the end of the "
                                           r"arena: .*MCU_ERR_ARENA_GUARD"):
        debug(pkg, x)
