/* DSP (SIMD32) int8 depthwise 3x3, channel multiplier 1: int8 weights widened in the loop (mcu_dw3x3_dsp.h). */
#define MCU_DSP_DW_WIDE 0
#define MCU_DSP_DW_KERNEL mcu_dwconv2d_3x3_s8_dsp
#include "mcu/mcu_dw3x3_dsp.h"
