"""The kernel registry (codegen/kernels) is complete and consistent: every C kernel has exactly one description,
and every description points at a source, a prototype, a params struct and a twin that exist."""
from __future__ import annotations

import ast
import pathlib

import pytest

import hostc
from mcu.codegen.kernels import KERNELS, SOURCES as LINKABLE, names, twin_function, variants_of
from mcu.codegen.kernels.geometry import INT4

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = {p.stem: p for p in (ROOT / "runtime_c" / "kernels").glob("*/*.c") if p.parent.name != "shared"}
SHARED = {p.relative_to(ROOT / "runtime_c" / "kernels").with_suffix("").as_posix()
          for p in (ROOT / "runtime_c" / "kernels" / "shared").glob("*.c")}


def test_every_c_kernel_is_registered_once_and_every_entry_has_its_source():
    assert set(KERNELS) == set(SOURCES)
    for k in KERNELS.values():
        assert (ROOT / "runtime_c" / "kernels" / f"{k.path}.c") == SOURCES[k.name], k.name


def test_every_shared_core_is_linked_and_every_link_exists():
    """runtime_c/kernels/shared holds the cores kernels link (registry `links`), nothing else."""
    assert {s for k in KERNELS.values() for s in k.links} == SHARED
    assert LINKABLE == {k.path for k in KERNELS.values()} | SHARED


def test_every_entry_has_its_prototype_and_params_struct():
    for k in KERNELS.values():
        assert k.name in hostc.PROTOTYPES, k.name
        assert hostc.PROTOTYPES[k.name][0][0] == k.params_type, (k.name, hostc.PROTOTYPES[k.name][0])
        assert k.params_type in hostc.STRUCTS, k.params_type


def test_portable_kernels_have_twins_and_variants_run_their_portable_twin():
    for k in KERNELS.values():
        if k.name == "mcu_conv2d_add_s8":  # the reference runs its two unfused twins (passes/fuse_add.py)
            continue
        if k.portable:
            assert k.portable in KERNELS and not KERNELS[k.portable].portable, k.name
            # a variant in another arithmetic runs the twin and params of the kernel holding it (portable, no
            # variant of its own)
            own = KERNELS[k.arithmetic or k.portable]
            assert not own.portable and (not k.arithmetic or not any(v.portable == k.arithmetic
                                                                     for v in KERNELS.values())), k.name
            assert k.twin is own.twin
            assert k.params_type == own.params_type
        else:
            assert k.twin is twin_function(k.name.removeprefix("mcu_"))
    with pytest.raises(KeyError, match="no numpy twin"):
        twin_function("conv2d_s9")


def test_variant_order_and_modes():
    """Most preferred first: int4 (weights packed for it), Helium, DSP, scalar; a 1x1 kernel before the general."""
    assert [v.name for v in variants_of("mcu_conv2d_s8")] == [
        "mcu_conv2d_s4", "mcu_conv2d_1x1_s8_mve", "mcu_conv2d_s8_mve", "mcu_conv2d_1x1_s8_dsp", "mcu_conv2d_s8_dsp",
        "mcu_conv2d_1x1_s8_fast", "mcu_conv2d_s8_fast"]
    assert [v.name for v in variants_of("mcu_conv2d_s8", "memory")] == ["mcu_conv2d_1x1_s8_inplace"]
    assert [v.name for v in variants_of("mcu_dwconv2d_s8", "memory")] == ["mcu_dwconv2d_s8_inplace"]
    assert KERNELS["mcu_conv2d_s4"].requires == frozenset(INT4)
    for v in KERNELS.values():
        if v.mode == "memory":
            assert v.overwrites is not None and v.scratch is not None and v.portable


def test_memory_properties():
    assert names(raster=True) == {"mcu_conv2d_s8", "mcu_dwconv2d_s8", "mcu_maxpool2d_s8", "mcu_avgpool2d_s8",
                                  "mcu_conv2d_add_s8"} | {
        f"mcu_{k}_{v}" for k in ("conv2d_s8", "conv2d_1x1_s8", "dwconv2d_3x3_s8", "dwconv2d_s8", "avgpool2d_s8")
        for v in ("dsp", "mve", "fast") if f"mcu_{k}_{v}" in KERNELS} | {
        "mcu_dwconv2d_3x3_s8_dsp_wide", "mcu_dwconv2d_s8_dsp_line"}
    # pixel by pixel, but the Helium convs (blocks of 3 pixels), the DSP convs (pixel pairs, read first) and the
    # DSP depthwise (a row per channel group, or a row a channel at a time), the any-window depthwise (a row:
    # pixel pairs, then the rest)
    assert {k.name: k.raster_block for k in KERNELS.values() if k.raster and k.raster_block != 1} == {
        "mcu_conv2d_1x1_s8_mve": 3, "mcu_conv2d_s8_mve": 3, "mcu_dwconv2d_3x3_s8_dsp": "row",
        "mcu_dwconv2d_3x3_s8_dsp_wide": "row", "mcu_dwconv2d_s8_dsp": "row",
        "mcu_dwconv2d_s8_dsp_line": "row", "mcu_dwconv2d_s8_mve": "row",
        "mcu_conv2d_1x1_s8_dsp": 2, "mcu_conv2d_s8_dsp": 2}
    assert names(raster_first=True) == {"mcu_conv2d_1x1_s8_dsp", "mcu_conv2d_s8_dsp", "mcu_conv2d_s8_fast",
                                        "mcu_conv2d_1x1_s8_fast", "mcu_conv2d_1x1_s8_mve"}
    assert names(strided=True) == {f"mcu_{op}_{t}" for op in ("conv2d", "dwconv2d", "maxpool2d", "avgpool2d")
                                   for t in ("s8", "s16", "f32")} | {"mcu_conv2d_grouped_s8"} | {
        f"mcu_{k}_{v}" for k in ("conv2d_s8", "conv2d_1x1_s8", "avgpool2d_s8") for v in ("dsp", "mve", "fast")
        if f"mcu_{k}_{v}" in KERNELS}  # the GEMM and average pool variants; not the 3x3 depthwise ones (their ring)
    assert names(input_array=True) == {"mcu_concat_s8", "mcu_concat_s16", "mcu_concat_f32"}
    assert KERNELS["mcu_conv2d_add_s8"].inplace == "residual"
    # an elementwise variant writes over its input as its portable kernel does; an in-place variant's rule is its own
    assert KERNELS["mcu_add_s8_fast"].inplace == KERNELS["mcu_add_s8_mve"].inplace == "elementwise"
    assert KERNELS["mcu_dwconv2d_s8_inplace"].inplace == ""


def test_codegen_imports_nothing_from_the_front_end():
    """Imports flow one way: front end (mcu/) -> compiler (codegen/) -> planner; codegen never imports mcu.<x>
    outside mcu.codegen and mcu.memory_planner."""
    bad = []
    for path in (ROOT / "codegen").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{path.relative_to(ROOT)}: {m}" for m in mods if m.startswith("mcu")
                    and not m.startswith(("mcu.codegen", "mcu.memory_planner"))]
    assert not bad, bad
