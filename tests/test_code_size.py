"""Code flash per kernel: shared cores are linked once, and the per-source attribution (pyelftools) adds up and
agrees with binutils."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.codegen.kernels import GEMM2_DSP, KERNELS

needs_tools = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
                                 reason="arm-none-eabi-gcc / qemu-system-arm not installed (./dev setup)")


def two_convs():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 1), nn.ReLU()).eval()
    return model, (torch.randn(1, 3, 8, 8),)


def test_registry_links_name_shared_sources():
    """Every linked core is a shared source, and both DSP convs link the 2x2 GEMM core."""
    for k in KERNELS.values():
        assert all(s.startswith("shared/") for s in k.links), k.name
    assert GEMM2_DSP in KERNELS["mcu_conv2d_s8_dsp"].links and GEMM2_DSP in KERNELS["mcu_conv2d_1x1_s8_dsp"].links


@pytest.mark.qemu
@needs_tools
def test_shared_core_linked_once_and_sizes_add_up(tmp_path):
    model, example = two_convs()
    pkg = mcu.compile(model, example, board="mps2-an386", out_dir=tmp_path / "m")
    assert pkg.manifest["kernels"] == ["conv/mcu_conv2d_1x1_s8_dsp", "conv/mcu_conv2d_s8_dsp", GEMM2_DSP]
    res = mcu.run(pkg, example)
    assert np.array_equal(res.raw_outputs[0], pkg.reference(example)[0])

    size = mcu.size(pkg)
    elf = pkg.build()
    symbols = subprocess.run(["arm-none-eabi-nm", "-S", "--size-sort", str(elf)], capture_output=True, text=True,
                             check=True).stdout
    assert [line.split()[-1] for line in symbols.splitlines()].count("mcu_dsp_g2_run") == 1
    assert set(size.kernels) == set(pkg.manifest["kernels"])
    assert sum(size.kernels.values()) == size.flash_kernels
    for source, n in size.kernels.items():  # binutils: the sizes of the symbols the object defines
        obj = pkg.build_dir / "kernels" / f"{source}.o"
        defined = subprocess.run(["arm-none-eabi-nm", "-S", "--defined-only", str(obj)], capture_output=True,
                                 text=True, check=True).stdout
        want = sum(int(p[1], 16) for p in (line.split() for line in defined.splitlines())
                   if len(p) == 4 and p[2] in "tTrR")
        assert n == want, source
    text = size.format()
    assert all(f"    {s.split('/')[-1]} " in text for s in size.kernels)
