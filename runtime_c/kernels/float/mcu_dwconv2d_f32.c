/* Float32 depthwise 2-d convolution (channel multiplier >= 1): NHWC input, [1, KH, KW, C_out] filter. */
#include "mcu/mcu_conv_f32.h"

mcu_status_t mcu_dwconv2d_f32(const mcu_conv2d_f32_params_t *params, const float *input, const float *filter,
                              const float *bias, float *output)
{
    const mcu_status_t status = mcu_conv_f32_check(params, input, filter, output, MCU_CONV_DEPTHWISE);
    if (status == MCU_OK) {
        mcu_conv_loop_f32(params, NULL, input, filter, bias, NULL, output, MCU_CONV_DEPTHWISE);
    }
    return status;
}
