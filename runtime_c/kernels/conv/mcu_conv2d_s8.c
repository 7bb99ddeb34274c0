/* Reference int8 2-d convolution (groups 1): NHWC input, OHWI filter, per-output-channel requantization. */
#include "mcu/mcu_conv_s8.h"

mcu_status_t mcu_conv2d_s8(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                           const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const mcu_status_t status = mcu_conv_s8_check(params, quant, input, filter, output, MCU_CONV_REGULAR);
    if (status == MCU_OK) {
        mcu_conv_loop_s8(params, quant, input, filter, bias, NULL, output, MCU_CONV_REGULAR);
    }
    return status;
}
