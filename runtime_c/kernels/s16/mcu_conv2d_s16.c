/* Reference int16-activation 2-d convolution, any groups: NHWC int16 input, OHWI int8 filter, int64 sums. */
#include "mcu/mcu_conv_s16.h"

mcu_status_t mcu_conv2d_s16(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                            const int16_t *input, const int8_t *filter, const int64_t *bias, int16_t *output)
{
    const mcu_status_t status = mcu_conv_s16_check(params, quant, input, filter, output, MCU_CONV_GROUPED);
    if (status == MCU_OK) {
        mcu_conv_loop_s16(params, quant, input, filter, bias, NULL, output, MCU_CONV_GROUPED);
    }
    return status;
}
