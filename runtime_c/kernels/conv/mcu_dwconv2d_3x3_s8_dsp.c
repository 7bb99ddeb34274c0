/* DSP (SIMD32) int8 depthwise 3x3 convolution, channel multiplier 1: 4 channels per word, SMLABB/SMLATT, folded
 * bias; int8 weights in its stream, widened in the loop (SXTB16). The kernel: mcu_dw3x3_dsp.h. */
#define MCU_DSP_DW_WIDE 0
#define MCU_DSP_DW_KERNEL mcu_dwconv2d_3x3_s8_dsp
#include "mcu/mcu_dw3x3_dsp.h"
