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
