"""Which params each optimized variant runs (its `applies` predicate) and where it stores its weights widened."""
from __future__ import annotations

import numpy as np

from mcu.codegen.twins.conv import dsp_conv_compact, dwconv2d_s8_inplace_fits
from mcu.codegen.twins.mve import DWP_MAX_K, DWP_MAX_S, dwp_frame

# The exchange rate between speed and flash when no budget is given (Target.flash_budget None): a variant stores its
# weights widened (int16, or the scalar GEMM's two-channel words) rather than int8 only in a layer where that saves
# at least this many instructions per inference per flash byte it costs. With a budget, codegen/passes/widen_weights.py
# widens the layers that save the most per byte first until the budget is spent (never below MIN_WIDEN_GAIN).
WIDEN_GAIN = 64
MIN_WIDEN_GAIN = 1.0


def output_rows(params: dict) -> int:
    """The GEMM rows of a conv (output pixels) or fully connected layer (batches): how often each weight is used."""
    return params["batches"] if "batches" in params else int(np.prod(params["output"][:3]))


# A _fast GEMM widens its weights to the split words at compile time, or builds them in its loop from int8 words
# (mcu_fast_words): its ARMv7-M loop of 4 taps of 4 channels takes 31 instructions instead of 16 (MCU_FAST_ASM in
# mcu_opt.h). Widening costs one flash byte per weight and saves 15/16 instruction per weight per output row
# (pixels, or batches of a fully connected layer): at WIDEN_GAIN, from 69 output rows.
FAST_WIDE_ROWS = -(-WIDEN_GAIN * 16 // 15)


def fast_widen_gain(params: dict) -> float:
    """Instructions per inference the _fast GEMM (conv or fully connected) saves per flash byte of split words."""
    return output_rows(params) * 15 / 16


# A DSP conv keeps its weights int8 in flash and widens them in its loop: 4 SXTB16 per 16 MACs of a 2x2 block,
# so widening them at compile time instead saves MACs / 4 instructions for 1 more flash byte per weight, i.e.
# (output pixels) / 4 instructions per byte: at WIDEN_GAIN, from 256 pixels (WIDE_PIXELS): large feature maps
# with few weights (VWW's and IC's early layers). M4, instructions / weight flash, all int8 -> WIDEN_GAIN -> all
# int16: KWS 3.55 M / 35.7 KB (125 pixels: all int8), VWW 9.83 M / 272 KB -> 9.60 M / 273 KB -> 8.33 M /
# 468 KB, IC 12.02 M / 92 KB -> 11.10 M / 107 KB -> 10.18 M / 164 KB.
WIDE_PIXELS = 4 * WIDEN_GAIN


def dsp_widen_gain(params: dict) -> float:
    """Instructions per inference the DSP conv saves per flash byte of int16 weights (output pixels / 4)."""
    return output_rows(params) / 4


def s16_fc_widen_gain(params: dict) -> float:
    """Instructions per inference the int16-activation DSP fully connected layer saves per flash byte of int16
    weights: 7 per 4 taps of 4 features (16 more bytes) per row."""
    return 7 * params["batches"] / 16


def dw_widen_gain(params: dict) -> float:
    """Instructions per inference the DSP 3x3 depthwise saves per flash byte of int16 weights: 2 a tap of 4
    channels (4 more bytes) per output pixel; more where the widened call becomes the ring variant at stride 1
    (is_dw_ring: some 10 an output pixel and channel for 31 more bytes a channel)."""
    return output_rows(params) / 2


# A general conv whose window rows are not whole 4-tap steps and whose window is small: the DSP conv widens the
# window whole (its taps in one run), not row by row (mcu_dsp_conv_compact in mcu_kernels.h).
compact_window = dsp_conv_compact


# A fully connected layer over this many rows or more runs as a GEMM over them, as a 1x1 conv does over its pixels
# (the DSP GEMM reads each weight once per 3 rows, or per pair; the GEMV once per row). M4, scripts/fc_bench.py:
# T = 8..32, K, N = 64..256: 0.64-0.72 MAC/instruction one row at a time, 1.00-1.14 as the GEMM.
FC_GEMM_ROWS = 2


def is_fc_gemm(p: dict) -> bool:
    """Whether a fully connected layer runs as a GEMM over its rows (FC_GEMM_ROWS)."""
    return p["batches"] >= FC_GEMM_ROWS


def matmul_block_rows(p: dict) -> int:
    """Lhs rows per rhs batch of a matmul (mcu_matmul_block): the rows that share one packing of the rhs."""
    per = p["batches"] if p["rhs_batches"] == 1 else p.get("rhs_group", 1)
    return p["m"] if p["lhs_batches"] == 1 else per * p["m"]


def is_matmul_gemm_dsp(p: dict) -> bool:
    """Whether a matmul runs on the 2x2 DSP GEMM (mcu_matmul_gemm_s8_dsp): at least 2 rows share each packed rhs
    (measured on the M4, scripts/fc_bench.py --matmul: from 2 rows it beats the row-pair kernel at every k and n,
    by 15-25 % at 2 rows (a decode step's grouped heads) and 2-4x from 8)."""
    return matmul_block_rows(p) >= 2


def is_matmul_gemm_mve(p: dict) -> bool:
    """Whether a matmul runs on the Helium GEMM core (mcu_matmul_gemm_s8_mve), as measured on the M55 against
    mcu_matmul_s8_mve: 8 rows sharing each packed rhs with k >= 16, or k >= 8 and k * n >= 128; 4 rows with
    k >= 32 and n >= 16. Fewer rows (decode steps) or fewer taps keep the row-pair kernel, whose per-row cost has
    no packing to amortize; k <= 4096 (the packing's 16-bit offsets)."""
    rows, k, n = matmul_block_rows(p), p["k"], p["n"]
    if k > 4096:
        return False
    return (rows >= 8 and k >= 8 and (k >= 16 or k * n >= 128)) or (rows >= 4 and k >= 32 and n >= 16)


def is_dw_ring(p: dict) -> bool:
    """Where the compiler runs mcu_dwconv2d_s8_dsp_ring: a 3x3 depthwise (channel multiplier 1) at stride 1 and
    dilation 1, padded by less than its window on each side, with its weights widened (prepare_dw_dsp)."""
    k = p["filter"][2]
    return (is_dw(p) and k == 3 and p["filter"][1] == k and p["stride_h"] == 1 and p["stride_w"] == 1
            and p["dilation_h"] == 1 and p["dilation_w"] == 1 and 0 <= p["pad_top"] < k and 0 <= p["pad_left"] < k)


def is_dwk_line(p: dict) -> bool:
    """Where mcu_dwconv2d_s8_dsp_line runs its assembly: a 5x5 or 7x7 depthwise (channel multiplier 1) at
    stride_w 1 or 2, dilation_w 1, with 'same' (k // 2) or 'valid' (0) padding on the left, at least k - 1 input
    columns."""
    k = p["filter"][2]
    return (is_dw(p) and k in (5, 7) and p["filter"][1] == k and p["stride_w"] in (1, 2)
            and p["dilation_w"] == 1 and p["pad_left"] in (0, k // 2) and p["input"][2] >= k - 1)


def is_1x1(p: dict) -> bool:
    return p["filter"][1] == 1 and p["filter"][2] == 1 and p["pad_top"] == 0 and p["pad_left"] == 0


DW_MVE_TABLE = 512  # DW_TABLE in shared/mcu_dw_s8_mve.c: column pointers of a window, KH * dilation_w * KW at least


def is_dw3x3(p: dict) -> bool:
    """3x3 depthwise with channel multiplier 1 (any stride, padding, dilation, channel count)."""
    return p["filter"][1] == 3 and p["filter"][2] == 3 and p["output"][3] == p["input"][3]


def is_dw3x3_mve(p: dict) -> bool:
    """A 3x3 depthwise whose one-pixel table of column pointers fits (mcu_dwconv2d_3x3_s8_mve: 9 dilation_w <=
    DW_MVE_TABLE)."""
    return is_dw3x3(p) and 9 * p["dilation_w"] <= DW_MVE_TABLE


def is_dw(p: dict) -> bool:
    """Depthwise with channel multiplier 1 (any window, stride, padding, dilation, channel count)."""
    return p["output"][3] == p["input"][3]


def is_dw_any_mve(p: dict) -> bool:
    """Where mcu_dwconv2d_s8_mve runs: any depthwise with channel multiplier 1 whose one-pixel table of column
    pointers fits DW_MVE_TABLE, bar a 3x3 one off the in-place geometry (strided: mcu_dwconv2d_3x3_s8_mve's output
    pixels go in blocks of 1, a smaller raster gap than this kernel's rows, so it keeps those, and the arena with
    them)."""
    fits = p["filter"][1] * p["dilation_w"] * p["filter"][2] <= DW_MVE_TABLE
    return is_dw(p) and fits and (not is_dw3x3(p) or dwconv2d_s8_inplace_fits(p))


DWP_MIN_PIXELS = 64  # output pixels a channel from which mcu_dwconv2d_s8_mve_planar beats mcu_dwconv2d_s8_mve


def dwp_fits(p: dict) -> bool:
    """What mcu_dwconv2d_s8_mve_planar runs at all: channel multiplier 1, windows up to 7 x 7, strides up to 4."""
    return (is_dw(p) and p["filter"][1] <= DWP_MAX_K and p["filter"][2] <= DWP_MAX_K
            and p["stride_h"] <= DWP_MAX_S and p["stride_w"] <= DWP_MAX_S)


def is_dw_planar(p: dict) -> bool:
    """Where mcu_dwconv2d_s8_mve_planar (a channel at a time) is picked: a 3x3 depthwise at stride 1 with dilation
    1 along its lane axis (the longer output axis) and at least DWP_MIN_PIXELS output pixels a channel. Its cost
    per channel is ~270 + 7.6 per output pixel (M55: 6x6x128 69.7k instructions, 12x12x64 86.6k), the
    channels-in-lanes kernel's ~13.2 per pixel (60.7k, 114.2k): even at ~48 pixels; it loses at stride 2 (its
    rows' fills and bands) and on 5x5 and 7x7 (their taps in C). Only on the in-place geometry (output dims ==
    input dims): there its output takes its dying input's bytes (registry inplace="elementwise"); elsewhere, not
    being raster, it could not slide below its input as the 3x3 variant does, and the arena would grow."""
    if not (dwp_fits(p) and p["filter"][1] == 3 and p["filter"][2] == 3 and p["stride_h"] == 1
            and p["stride_w"] == 1):
        return False
    if tuple(p["output"]) != tuple(p["input"]):
        return False
    return dwp_frame(p)[6] == 1 and p["output"][1] * p["output"][2] >= DWP_MIN_PIXELS


def is_groups1(p: dict) -> bool:
    return p["filter"][3] == p["input"][3]


S16_DW_MAX_TAPS = 511  # MCU_S16_DW_MAX_TAPS: the window's products summed in int32 must fit


def is_dw_s16(p: dict) -> bool:
    """Channel multiplier 1 and at most 511 taps (mcu_dwconv2d_s16_dsp)."""
    return p["output"][3] == p["input"][3] and p["filter"][1] * p["filter"][2] <= S16_DW_MAX_TAPS


INT4 = ("int4",)  # a variant for weights packed as int4 (compile(weights="int4")), in either build mode
