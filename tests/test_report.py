"""mcu report: one self-contained HTML file with the four sections."""
import re

import pytest
import torch

import mcu
from mcu.tools.report import report
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


PROBE = """<script>
for (const img of document.images) {
  if (!img.complete || img.naturalWidth === 0) console.error("broken image: " + img.src);
}
</script>"""


def chromium_console(html_path, screenshot) -> list[str]:
    """Open html_path in headless Chromium with PROBE added, save a screenshot; the console messages it logged
    (the report has no scripts of its own: any message is a page error, a failed load or a broken image)."""
    import shutil
    import subprocess
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium, or ./dev setup)")
    probed = html_path.with_name("probed-" + html_path.name)
    probed.write_text(html_path.read_text().replace("</body>", PROBE + "</body>"))
    proc = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=3000", "--window-size=1000,3000", f"--screenshot={screenshot}",
         probed.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000, proc.stderr[-2000:]
    return re.findall(r":CONSOLE[^\]]*\] (.*)", proc.stderr)


def test_chromium_probe_catches_a_broken_image(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text('<html><body><h1>x</h1><img src="missing.png"></body></html>')
    messages = chromium_console(page, tmp_path / "broken.png")
    assert any("broken image" in m for m in messages), messages


@pytest.mark.qemu
def test_report_with_eval_renders_cleanly_in_chromium(tmp_path):
    from scripts.eval_digits import digits_split, train_mlp
    pytest.importorskip("sklearn")
    x_train, y_train, x_test, y_test = digits_split()
    model = train_mlp(x_train, y_train, epochs=30)
    calib = [(torch.from_numpy(x_train[i:i + 1]),) for i in range(0, 128, 2)]
    pkg = mcu.compile(model, (torch.from_numpy(x_test[:1]),), board="mps2-an386", calibration=calib,
                      out_dir=tmp_path / "digits")
    result = mcu.eval(pkg, x_test[:100], y_test[:100], float_model=model)
    path = report(pkg)
    html = path.read_text()
    assert html.count("<svg") == 4  # flash, RAM, arena timeline, confusion
    assert "<h2>Accuracy</h2>" in html and f"{100 * result.accuracy['device']:.2f}%" in html
    assert html.count("<tr><th>") >= 3 + 10  # accuracy rows, one per-class row per digit
    assert html.count("<title>label ") == 100  # 10 x 10 confusion cells
    assert not re.search(r"<(link|script|img)\b", html)
    messages = chromium_console(path, tmp_path / "report.png")
    assert messages == [], messages
