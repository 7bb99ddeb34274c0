/* DSP (SIMD32) int8 depthwise 3x3, channel multiplier 1: int8 weights widened in the loop (mcu_dw3x3_dsp.h). */
#define MCU_DSP_DW_WIDE 0
#include "mcu/mcu_dw3x3_dsp.h"

mcu_status_t mcu_dwconv2d_3x3_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                                     int8_t *output)
{
    return mcu_dw3x3_dsp(params, quant, input, filter, bias, scratch, output);
}
