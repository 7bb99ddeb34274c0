/* Reference int16-activation depthwise 2-d convolution (channel multiplier >= 1), int64 accumulator. */
#include "mcu/mcu_conv_s16.h"

mcu_status_t mcu_dwconv2d_s16(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                              const int16_t *input, const int8_t *filter, const int64_t *bias, int16_t *output)
{
    const mcu_status_t status = mcu_conv_s16_check(params, quant, input, filter, output, MCU_CONV_DEPTHWISE);
    if (status == MCU_OK) {
        mcu_conv_loop_s16(params, quant, input, filter, bias, NULL, output, MCU_CONV_DEPTHWISE);
    }
    return status;
}
