"""Convolutions: portable conv2d (groups 1, grouped), depthwise and the conv fused with its residual add, in int8,
int16 and float32; the int8 variants (int4 weights, Helium, DSP, scalar) and in-place variants; the int16 DSP
variants. Constants for the variants: codegen/kernels/prepare.py; C: runtime_c/kernels/conv, s16, float."""
from __future__ import annotations

from mcu.codegen.kernels import DW_MVE, GEMM2_DSP, GEMM_MVE, kernel, variant
from mcu.codegen.kernels.geometry import (INT4, dsp_widen_gain, dw_widen_gain, fast_widen_gain, is_1x1, is_dw,
                                          is_dw3x3, is_dw3x3_mve, is_dw_any_mve, is_dw_planar, is_dw_ring, is_dw_s16,
                                          is_dwk_line,
                                          is_groups1)
from mcu.codegen.kernels.prepare import (prepare_dsp_conv, prepare_dw_dsp, prepare_dw_dsp_wide,
                                         prepare_dw_fast, prepare_dwk_dsp, prepare_dwk_line, prepare_dwk_mve, prepare_dwk_ring,
                                         prepare_fast, prepare_mve, prepare_s4, prepare_s16_conv_dsp,
                                         prepare_s16_dw_dsp)
from mcu.codegen.twins.conv import (conv2d_1x1_s8_dsp_scratch_bytes, conv2d_1x1_s8_fast_scratch_bytes,
                                    conv2d_1x1_s8_inplace_fits,
                                    conv2d_1x1_s8_inplace_scratch_bytes, conv2d_s4_scratch_bytes,
                                    conv2d_s8_dsp_scratch_bytes, conv2d_s8_fast_scratch_bytes,
                                    dwconv2d_3x3_s8_dsp_scratch_bytes, dwconv2d_3x3_s8_dsp_wide_scratch_bytes,
                                    dwconv2d_3x3_s8_fast_scratch_bytes,
                                    dwconv2d_s8_dsp_ring_scratch_bytes, dwconv2d_s8_dsp_scratch_bytes,
                                    dwconv2d_s8_inplace_fits, dwconv2d_s8_inplace_scratch_bytes)
from mcu.codegen.twins.mve import (conv2d_1x1_s8_mve_scratch_bytes, conv2d_s8_mve_scratch_bytes,
                                   dwconv2d_3x3_s8_mve_scratch_bytes, dwconv2d_s8_mve_planar_scratch_bytes,
                                   dwconv2d_s8_mve_scratch_bytes)
from mcu.codegen.twins.s16 import conv2d_s16_dsp_scratch_bytes

MVE, DSP = ("mve",), ("dsp",)
# Loop orders (the `raster` property): the DSP convs widen a pixel pair (both windows, pixels paired over n, y, x)
# into scratch before writing either pixel (blocks of 2, read first), the scalar conv copies each window first;
# the Helium convs read 3 pixels in place while writing them 4 channels at a time (blocks of 3); the scalar and
# Helium 1x1 convs (blocks of 1, 3) read in place too, and copy a block to scratch first where its writes would
# reach input still to be read (read first by copying: `raster_copy`); the DSP depthwise runs a row's interior
# pixels one 4-channel group at a time (one row). The 3x3 depthwise variants run in place on the in-place depthwise's geometry (`overwrites`: their output rows wait in
# a ring, mcu_opt.h mcu_dw_rows_t).
BLOCKS_OF_3 = {"raster": True, "raster_block": 3}
PAIRS_FIRST = {"raster": True, "raster_block": 2, "raster_first": True}
COPY_FIRST = {"raster_first": True, "raster_copy": True}  # read first by copying, where the plan needs it
# the GEMM variants and the average pool variants write each pixel whole at params["output_pixel_stride"]
STRIDED = {"strided": True}
CONV, CONV_F32 = "mcu_conv2d_params_t", "mcu_conv2d_f32_params_t"

SPECS = [
    # portable loop nests (mcu_conv_loop.h): raster order, strided output
    kernel("mcu_conv2d_s8", "conv", CONV, raster=True, strided=True),
    kernel("mcu_conv2d_grouped_s8", "conv", CONV, strided=True),
    kernel("mcu_dwconv2d_s8", "conv", CONV, raster=True, strided=True),
    kernel("mcu_conv_transpose2d_s8", "conv", CONV),  # gather form: the true MACs
    kernel("mcu_conv2d_add_s8", "conv", "mcu_conv2d_add_params_t", inplace="residual", raster=True),
    kernel("mcu_conv2d_s16", "s16", CONV, strided=True),
    kernel("mcu_dwconv2d_s16", "s16", CONV, strided=True),
    kernel("mcu_conv2d_f32", "float", CONV_F32, strided=True),
    kernel("mcu_dwconv2d_f32", "float", CONV_F32, strided=True),
    # int8 conv variants, most preferred first
    variant("mcu_conv2d_s4", "conv", "mcu_conv2d_s8", INT4, prepare=prepare_s4, scratch=conv2d_s4_scratch_bytes),
    variant("mcu_conv2d_1x1_s8_mve", "conv", "mcu_conv2d_s8", MVE, is_1x1, prepare_mve,
            conv2d_1x1_s8_mve_scratch_bytes, links=(GEMM_MVE,), **BLOCKS_OF_3, **COPY_FIRST, **STRIDED),
    variant("mcu_conv2d_s8_mve", "conv", "mcu_conv2d_s8", MVE, prepare=prepare_mve,
            scratch=conv2d_s8_mve_scratch_bytes, links=(GEMM_MVE,), **BLOCKS_OF_3, **STRIDED),
    variant("mcu_conv2d_1x1_s8_dsp", "conv", "mcu_conv2d_s8", DSP, is_1x1, prepare_dsp_conv,
            conv2d_1x1_s8_dsp_scratch_bytes, links=(GEMM2_DSP,), widen=dsp_widen_gain, **PAIRS_FIRST, **STRIDED),
    variant("mcu_conv2d_s8_dsp", "conv", "mcu_conv2d_s8", DSP, prepare=prepare_dsp_conv,
            scratch=conv2d_s8_dsp_scratch_bytes, links=(GEMM2_DSP,), widen=dsp_widen_gain, **PAIRS_FIRST,
            **STRIDED),
    variant("mcu_conv2d_1x1_s8_fast", "conv", "mcu_conv2d_s8", (), is_1x1, prepare_fast,
            conv2d_1x1_s8_fast_scratch_bytes, raster=True, widen=fast_widen_gain, **COPY_FIRST, **STRIDED),
    variant("mcu_conv2d_s8_fast", "conv", "mcu_conv2d_s8", prepare=prepare_fast, scratch=conv2d_s8_fast_scratch_bytes,
            widen=fast_widen_gain, raster=True, raster_first=True, **STRIDED),
    # transposed conv (gather form): Helium (16-lane dot products over C_in), DSP (SMLAD on widened pairs)
    variant("mcu_conv_transpose2d_s8_mve", "conv", "mcu_conv_transpose2d_s8", MVE),
    variant("mcu_conv_transpose2d_s8_dsp", "conv", "mcu_conv_transpose2d_s8", DSP),
    # depthwise: the any-window Helium one first (every window bar a strided 3x3, is_dw_any_mve), the 3x3 ones, then
    # the any-window DSP one (output rows in order: pixel pairs, then the rest of the row)
    # a channel at a time, lanes = 4 output pixels (the portable constants): channel by channel, so neither raster
    # nor sliding below its input; its output may take a dying input of its dims exactly (as the DSP ring one)
    variant("mcu_dwconv2d_s8_mve_planar", "conv", "mcu_dwconv2d_s8", MVE, is_dw_planar,
            scratch=dwconv2d_s8_mve_planar_scratch_bytes, inplace="same_dims"),
    variant("mcu_dwconv2d_s8_mve", "conv", "mcu_dwconv2d_s8", MVE, is_dw_any_mve, prepare_dwk_mve,
            dwconv2d_s8_mve_scratch_bytes, links=(DW_MVE,), raster=True, raster_block="row",
            overwrites=dwconv2d_s8_inplace_fits),
    variant("mcu_dwconv2d_3x3_s8_mve", "conv", "mcu_dwconv2d_s8", MVE, is_dw3x3_mve, prepare_dwk_mve,
            dwconv2d_3x3_s8_mve_scratch_bytes, links=(DW_MVE,), raster=True, overwrites=dwconv2d_s8_inplace_fits),
    variant("mcu_dwconv2d_3x3_s8_dsp", "conv", "mcu_dwconv2d_s8", DSP, is_dw3x3, prepare_dw_dsp,
            dwconv2d_3x3_s8_dsp_scratch_bytes, raster=True, raster_block="row", overwrites=dwconv2d_s8_inplace_fits,
            widen=dw_widen_gain),
    # ... its weights widened: the same geometry, after it, so select_kernels takes the int8 one and widen_weights
    # switches (prepare_dw_dsp(wide=True)): at stride 1 to the ring one below (int16 tap pairs), else to the same
    # source built with MCU_DSP_DW_WIDE
    variant("mcu_dwconv2d_3x3_s8_dsp_wide", "conv", "mcu_dwconv2d_s8", DSP, is_dw3x3, prepare_dw_dsp_wide,
            dwconv2d_3x3_s8_dsp_wide_scratch_bytes, raster=True, raster_block="row", overwrites=dwconv2d_s8_inplace_fits),
    variant("mcu_dwconv2d_3x3_s8_fast", "conv", "mcu_dwconv2d_s8", (), is_dw3x3, prepare_dw_fast,
            dwconv2d_3x3_s8_fast_scratch_bytes, raster=True, overwrites=dwconv2d_s8_inplace_fits),
    # 3x3 at stride 1 (as the widened 3x3 DSP one: prepare_dw_dsp): a channel pair at a time, its input lines
    # widened once into rings of 3 int16 lines, along the output's longer axis: exactly in place over an input of
    # its output's dims, or clear of it (channels, not pixels, in order: no raster gap)
    variant("mcu_dwconv2d_s8_dsp_ring", "conv", "mcu_dwconv2d_s8", DSP, is_dw_ring, prepare_dwk_ring,
            dwconv2d_s8_dsp_ring_scratch_bytes, inplace="same_dims"),
    # 5x5 and 7x7 at stride_w 1 or 2: int16 tap pairs a channel at a time along each row (output rows in order)
    variant("mcu_dwconv2d_s8_dsp_line", "conv", "mcu_dwconv2d_s8", DSP, is_dwk_line, prepare_dwk_line,
            raster=True, raster_block="row"),
    variant("mcu_dwconv2d_s8_dsp", "conv", "mcu_dwconv2d_s8", DSP, is_dw, prepare_dwk_dsp,
            dwconv2d_s8_dsp_scratch_bytes, raster=True, raster_block="row"),
    # optimize="memory": in place over a dying input, on the geometry `overwrites` accepts
    variant("mcu_dwconv2d_s8_inplace", "conv", "mcu_dwconv2d_s8", mode="memory",
            applies=dwconv2d_s8_inplace_fits, overwrites=dwconv2d_s8_inplace_fits,
            scratch=dwconv2d_s8_inplace_scratch_bytes),
    variant("mcu_conv2d_1x1_s8_inplace", "conv", "mcu_conv2d_s8", mode="memory",
            applies=conv2d_1x1_s8_inplace_fits, overwrites=conv2d_1x1_s8_inplace_fits,
            scratch=conv2d_1x1_s8_inplace_scratch_bytes),
    # int16 activations (a16w8)
    variant("mcu_conv2d_s16_dsp", "s16", "mcu_conv2d_s16", DSP, is_groups1, prepare_s16_conv_dsp,
            conv2d_s16_dsp_scratch_bytes),
    variant("mcu_dwconv2d_s16_dsp", "s16", "mcu_dwconv2d_s16", DSP, is_dw_s16, prepare_s16_dw_dsp),
]
