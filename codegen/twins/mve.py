"""Twins of the Helium (_mve) kernels' scratch sizes (runtime_c/include/mcu/mcu_kernels.h), for select_kernels.

The kernels' arithmetic needs no twin of its own: a variant's output equals its portable kernel's, which
codegen/reference.py runs (see codegen/passes/select_kernels.py)."""
from __future__ import annotations

from .conv import dw3x3_scratch_bytes


def conv2d_s8_mve_compact(p: dict) -> bool:
    """The _mve conv gathers the whole window compactly (its rows, KW * C_in taps, are not whole 16-tap chunks)."""
    return (p["filter"][2] * p["input"][3]) % 16 != 0


def conv2d_1x1_s8_mve_scratch_bytes(p: dict) -> int:
    """Twin of mcu_conv2d_1x1_s8_mve_scratch_bytes: a block's 3 input pixels, C_in bytes each (copied there when
    the block's outputs would overwrite input still to be read)."""
    return 3 * p["input"][3]


def conv2d_s8_mve_scratch_bytes(p: dict) -> int:
    """Twin of mcu_conv2d_s8_mve_scratch_bytes: 3 row pointers (4 bytes each) per window row, then 3 windows: KH
    rows of KW * C_in bytes, and a row of KW * C_in zero points; or, compact, a table of K16 byte offsets (K = KH * KW * C_in rounded up to 16) and 3
    windows of K16 bytes."""
    kh, seg = p["filter"][1], p["filter"][2] * p["input"][3]
    if conv2d_s8_mve_compact(p):
        return 12 + 4 * (-(-kh * seg // 16) * 16)
    return 12 * kh + 3 * kh * seg + seg


def dwconv2d_3x3_s8_mve_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dwconv2d_3x3_s8_mve_scratch_bytes (conv.dw3x3_scratch_bytes)."""
    return dw3x3_scratch_bytes(p)


def dwconv2d_s8_mve_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dwconv2d_s8_mve_scratch_bytes (conv.dw3x3_scratch_bytes: C bytes of the input zero point, then
    on the in-place geometry the ring of output rows)."""
    return dw3x3_scratch_bytes(p)


DWP_MAX_K = 7   # MCU_DWP_MAX_K
DWP_MAX_S = 4   # MCU_DWP_MAX_S
DWP_LQ2 = 64    # MCU_DWP_LQ2
DWP_BAND_BYTES = 4096  # MCU_DWP_BAND_BYTES


def dwp_frame(p: dict) -> tuple[bool, int, int, int, int, int, int]:
    """mcu_dwconv2d_s8_mve_planar's lane frame: (swapped, lanes (output columns), window rows, window columns,
    row dilation, column stride, column dilation); swapped where the output has fewer columns than rows."""
    s = p["output"][2] < p["output"][1]
    ow = p["output"][1] if s else p["output"][2]
    kh, kw = (p["filter"][2], p["filter"][1]) if s else (p["filter"][1], p["filter"][2])
    dh, dw = (p["dilation_w"], p["dilation_h"]) if s else (p["dilation_h"], p["dilation_w"])
    sw = p["stride_h"] if s else p["stride_w"]
    return s, ow, kh, kw, dh, sw, dw


def dwp_phase_entries(p: dict) -> int:
    """Twin of mcu_dwp_phase_entries: a ring row's entries per stride phase."""
    _, ow, _, kw, _, sw, dw = dwp_frame(p)
    lq = (-(-ow // 4) * 4 + (kw - 1) * dw // sw + 1 + 7) // 8 * 8
    if kw == 3 and dw == 1 and sw <= 2 and lq <= DWP_LQ2:   # the assembly's fixed row strides
        return DWP_LQ2 // 2 if sw == 1 and lq <= DWP_LQ2 // 2 else DWP_LQ2
    return lq


def dwp_stage_pitch(p: dict) -> int:
    """Twin of mcu_dwp_stage_pitch: bytes between staging rows."""
    ow4 = -(-dwp_frame(p)[1] // 4) * 4
    return 32 if dwp_phase_entries(p) == 32 else max(64, ow4)


def dwp_band_rows(p: dict) -> int:
    """Twin of mcu_dwp_band_rows: output rows of a band, as many as keep its plane within DWP_BAND_BYTES."""
    s, _, kh, _, dh, sw, _ = dwp_frame(p)
    oh, sh = (p["output"][2], p["stride_w"]) if s else (p["output"][1], p["stride_h"])
    row = 2 * sw * dwp_phase_entries(p)
    b = int((DWP_BAND_BYTES // row - (kh - 1) * dh - 1) / sh) + 1   # C division truncates towards zero
    return max(1, min(oh, b))


def dwconv2d_s8_mve_planar_scratch_bytes(p: dict) -> int:
    """Twin of mcu_dwconv2d_s8_mve_planar_scratch_bytes: a band's plane of int16 rows (stride_w phases each), then
    its staging output rows (dwp_stage_pitch bytes each) and 16 bytes (lane frame)."""
    s, _, kh, _, dh, sw, _ = dwp_frame(p)
    sh = p["stride_w"] if s else p["stride_h"]
    b = dwp_band_rows(p)
    return ((b - 1) * sh + (kh - 1) * dh + 1) * sw * dwp_phase_entries(p) * 2 + b * dwp_stage_pitch(p) + 16
