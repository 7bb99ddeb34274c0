"""mcu report: one self-contained HTML file with the four sections."""
import re

import pytest

import mcu
from mcu.report import report
from tests.opmodels import make


@pytest.mark.qemu
def test_report_is_self_contained_and_complete(tmp_path):
    model, example, calib = make("conv_bn_relu6")
    pkg = mcu.compile(model, example, calibration=calib, out_dir=tmp_path / "pkg")
    html = report(pkg).read_text()
    assert html.count("<svg") == 3  # flash bar, RAM bar, arena timeline
    assert not re.search(r"<(link|script|img)\b", html)
    assert re.findall(r"(?:src|href)=", html) == []
    assert f"Arena {pkg.arena_bytes:,} B" in html
    assert "fits" in html and "DOES NOT FIT" not in html
    calls = sum(1 for n in pkg.graph.nodes if n.op == "call")
    assert html.count("<tr><td>") == 2 + calls  # two limit rows, one profile row per kernel call
    size = mcu.size(pkg)
    assert f"weights: {size.flash_weights:,} B" in html
