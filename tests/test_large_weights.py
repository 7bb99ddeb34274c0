"""Weights too big for the fast memory go to the board's large region: on mps3-an547 (512 KB ITCM for code and
weights) a MobileNetV3-small-like stack of our own (876,112 B of int8 weights and int32 biases) compiles with its
weights in DDR at 0x60000000 ([memory.large] in board.toml, the section .mcu_weights_large in its linker script),
runs bit-exact on QEMU, and the fit check and the size report name DDR. QEMU models no wait states: the instruction
count is the ITCM one; on silicon, weights in DDR cost more cycles.

- Small models do not move: their weights file names no section, and the estimate keeps them in flash.
- A model too big even for DDR, or whose code alone overflows the ITCM, is refused naming each memory.
- A bundle whose models fit the ITCM one by one but not together (AD twice) has the largest weights moved to DDR; its
  firmware, built with plain make, links and runs both bit-exact.
"""
from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
import torch
from elftools.elf.elffile import ELFFile
from torch import nn

import mcu
from mcu.boards import LARGE_WEIGHTS_SECTION, load_board
from mcu.build.fit import bundle_large_weights, check_fit, estimate
from mcu.cli.compile import summary_line
from mcu.errors import BoardFitError
from mcu.package import to_stored
from mcu.qemu.runner import run_firmware
from mcu.tools.report import render
from mcu.zoo.blocks import InvertedResidualSE, _build, _cbn, _Net
from mcu.zoo.mlperf_tiny import ad
from tests.bundle_firmware import build_make

M55 = "mps3-an547"
emulated = pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                              reason="needs arm-none-eabi-gcc and qemu-system-arm (./dev setup)")


def mbv3_like():
    """MobileNetV3-small's later stages at 64x64 (inverted residuals with squeeze-excite and hardswish, a 576-channel
    head): 876,112 B of weights, more than the M55's 512 KB ITCM; compiles in seconds."""
    body = nn.Sequential(InvertedResidualSE(16, 64, 24, 2), InvertedResidualSE(24, 96, 40, 2),
                         InvertedResidualSE(40, 240, 48), InvertedResidualSE(48, 288, 96, 2),
                         InvertedResidualSE(96, 576, 96), InvertedResidualSE(96, 576, 96),
                         _cbn(96, 576, act=nn.Hardswish))
    return _build(_Net(_cbn(3, 16, 3, 2, act=nn.Hardswish), body, 576), (1, 3, 64, 64), 21)


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    model, example = mbv3_like()
    return mcu.compile(model, example, board=M55, out_dir=tmp_path_factory.mktemp("large") / "mbv3")


def test_board_names_its_large_region():
    board = load_board(M55)
    assert (board.large_name, board.large_origin, board.large_size) == ("DDR", 0x60000000, 2 << 30)
    assert load_board("mps2-an386").large_size == 0
    assert LARGE_WEIGHTS_SECTION in board.linker_script.read_text()


def test_the_compiler_puts_the_weights_in_ddr(pkg):
    board = load_board(M55)
    assert pkg.manifest["weights_bytes"] > board.flash_size
    need = estimate(pkg.graph, pkg.manifest, board)
    assert need.weights_region == "DDR" and need.flash_main < board.flash_size < need.flash
    assert f'__attribute__((section("{LARGE_WEIGHTS_SECTION}")))' in (pkg.out_dir / "weights.c").read_text()
    assert "in DDR" in (pkg.out_dir / "README.md").read_text()


def test_a_bundle_keeps_the_placement(pkg, tmp_path):
    b = mcu.bundle([pkg.out_dir], out_dir=tmp_path / "bundle")
    assert (b.out_dir / "model" / "weights.c").read_bytes() == (pkg.out_dir / "weights.c").read_bytes()


def test_small_models_stay_in_flash(pkg):
    small = dict(pkg.manifest, weights_bytes=400_000)
    assert estimate(pkg.graph, small, load_board(M55)).weights_region == ""
    assert estimate(pkg.graph, pkg.manifest, load_board("mps2-an386")).weights_region == ""  # 4 MB flash: no move


def test_too_big_even_for_ddr_is_refused(pkg):
    board = load_board(M55)
    huge = dict(pkg.manifest, weights_bytes=board.large_size + 1)
    with pytest.raises(BoardFitError) as e:
        check_fit(pkg.graph, huge, board)
    msg = str(e.value)
    assert "does not fit mps3-an547" in msg and "DDR:" in msg and "1 B too many" in msg and "shrink the weights" in msg
    tiny = dataclasses.replace(board, flash_size=2048)  # the code alone overflows: the weights do not move
    with pytest.raises(BoardFitError, match="the rest does not fit even with the weights in DDR"):
        check_fit(pkg.graph, pkg.manifest, tiny)


@emulated
@pytest.mark.qemu
def test_runs_bit_exact_with_weights_in_ddr(pkg):
    board = load_board(M55)
    x = (torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(5)),)
    res = mcu.run(pkg, x)
    want = pkg.reference(x)[0]
    bad = np.argwhere(res.raw_outputs[0] != want)
    assert not len(bad), f"first mismatch at {tuple(bad[0])}: {res.raw_outputs[0][tuple(bad[0])]} vs " \
                         f"{want[tuple(bad[0])]}"
    with open(pkg.build(), "rb") as f:
        image = ELFFile(f)
        section = image.get_section_by_name(LARGE_WEIGHTS_SECTION)
        assert section["sh_addr"] == board.large_origin and section["sh_size"] == pkg.manifest["weights_bytes"]
        weights = [s for s in image.get_section_by_name(".symtab").iter_symbols() if s.name.startswith("model_w_")]
        assert weights and all(board.large_origin <= s["st_value"] < board.large_origin + board.large_size
                               for s in weights)
    size = mcu.size(pkg)
    assert size.large_region == "DDR" and size.large_bytes == pkg.manifest["weights_bytes"]
    assert size.flash_total - size.large_bytes < board.flash_size
    text = size.format()
    assert "in DDR" in text and "of 2 GB" in text
    line = summary_line(M55, res.instructions, pkg.arena_bytes, pkg.manifest["arena_lower_bound"], size)
    assert f"DDR {size.large_bytes:,} B" in line
    html = render(pkg, size, None, None, board)  # mcu report: the weights against DDR, the rest against the ITCM
    assert "DDR (weights)" in html and "DOES NOT FIT" not in html
    print(f"\n{line}\n{text}")


# ---- a bundle whose weights together overflow the ITCM ------------------------------------------------------------


@pytest.fixture(scope="module")
def two_ads(tmp_path_factory):
    """AD compiled twice for the M55, as ad and ad2: each fits the ITCM alone (291 KB), the two do not."""
    root = tmp_path_factory.mktemp("two-ads")
    model, example = ad()
    pkgs = [mcu.compile(model, example, board=M55, name=n, out_dir=root / n) for n in ("ad", "ad2")]
    return pkgs, mcu.bundle([p.out_dir for p in pkgs], out_dir=root / "bundle")


def test_a_bundle_moves_the_largest_weights_when_together_they_overflow(two_ads):
    pkgs, b = two_ads
    board = load_board(M55)
    assert all(estimate(p.graph, p.manifest, board).weights_region == "" for p in pkgs)
    assert sum(p.manifest["weights_bytes"] for p in pkgs) > board.flash_size
    assert bundle_large_weights([(p.graph, p.manifest) for p in pkgs], board) == [True, False]
    assert LARGE_WEIGHTS_SECTION in (b.out_dir / "ad" / "ad_weights.c").read_text()
    assert LARGE_WEIGHTS_SECTION not in (b.out_dir / "ad2" / "ad2_weights.c").read_text()
    assert "| DDR |" in (b.out_dir / "README.md").read_text()


@emulated
@pytest.mark.qemu
def test_the_bundle_links_and_runs_with_one_models_weights_in_ddr(two_ads, tmp_path):
    pkgs, b = two_ads
    board = load_board(M55)
    rng = np.random.default_rng(1)
    xs = [[rng.standard_normal(p.manifest["inputs"][0]["shape"]).astype(np.float32)] for p in pkgs]
    elf = build_make(b, M55, tmp_path)
    res = run_firmware(elf, M55, b"".join(p.quantize_inputs(x)[0].tobytes() for p, x in zip(pkgs, xs)))
    assert res.status == 0
    want = [to_stored(p.reference(x)[0], p.manifest["outputs"][0]).tobytes() for p, x in zip(pkgs, xs)]
    assert res.output_bytes == b"".join(want + want[:1])
    with open(elf, "rb") as f:
        syms = {s.name: s["st_value"] for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    ddr = range(board.large_origin, board.large_origin + board.large_size)
    assert all(a in ddr for n, a in syms.items() if n.startswith("ad_w_"))
    assert all(a < board.flash_size for n, a in syms.items() if n.startswith("ad2_w_"))
