/* DSP (SIMD32) int8 depthwise 3x3 with int16 weights in its stream: mcu_dwconv2d_3x3_s8_dsp built with
 * MCU_DSP_DW_WIDE (mcu_opt.h), one LDRD per tap of 4 channels in place of an LDR and two SXTB16. The compiler picks
 * it where the flash budget pays for the wider weights (codegen/passes/widen_weights.py). */
#define MCU_DSP_DW_WIDE 1
#define mcu_dwconv2d_3x3_s8_dsp mcu_dwconv2d_3x3_s8_dsp_wide
#include "mcu_dwconv2d_3x3_s8_dsp.c"
