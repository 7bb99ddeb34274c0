/* DSP (SIMD32) int8 depthwise 3x3 with int16 weights in its stream (mcu_dw3x3_dsp.h, MCU_DSP_DW_WIDE). */
/* One LDRD per tap of 4 channels in place of an LDR and two SXTB16; the compiler picks it where the flash budget
 * pays for the wider weights (codegen/passes/widen_weights.py). */
#define MCU_DSP_DW_WIDE 1
#include "mcu/mcu_dw3x3_dsp.h"

mcu_status_t mcu_dwconv2d_3x3_s8_dsp_wide(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                          const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                                          int8_t *output)
{
    return mcu_dw3x3_dsp(params, quant, input, filter, bias, scratch, output);
}
