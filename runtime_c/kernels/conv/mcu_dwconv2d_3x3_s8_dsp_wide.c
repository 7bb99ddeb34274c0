/* DSP (SIMD32) int8 depthwise 3x3 with int16 weights in its stream (mcu_dw3x3_dsp.h, MCU_DSP_DW_WIDE). */
/* One LDRD per tap of 4 channels in place of an LDR and two SXTB16; the compiler picks it where the flash budget
 * pays for the wider weights (codegen/passes/widen_weights.py). */
#define MCU_DSP_DW_WIDE 1
#define MCU_DSP_DW_KERNEL mcu_dwconv2d_3x3_s8_dsp_wide
#include "mcu/mcu_dw3x3_dsp.h"
