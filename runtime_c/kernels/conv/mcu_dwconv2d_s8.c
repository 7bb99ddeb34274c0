/* Reference int8 depthwise 2-d convolution (channel multiplier >= 1): NHWC input, [1, KH, KW, C_out] filter. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

#define MCU_CONV_LOOP conv_loop
#define MCU_PARAMS_T mcu_conv2d_params_t
#define MCU_IN_T int8_t
#define MCU_W_T int8_t
#define MCU_BIAS_T int32_t
#define MCU_ACC_T int32_t
#define MCU_OUT_T int8_t
#define MCU_INPUT_OFFSET(p) ((p)->input_offset)
#define MCU_START(co) (bias != NULL ? bias[co] : 0)
#define MCU_MAC(acc, x, w) ((acc) + ((int32_t)(x) + in_off) * (int32_t)(w))
#define MCU_FINISH(acc, co)                                                                                \
    (int8_t)mcu_clamp_i32(mcu_add_offset(mcu_requantize(acc, quant->multiplier[co], quant->shift[co]),   \
                                         p->output_offset),                                              \
                          p->act_min, p->act_max)
#include "mcu/mcu_conv_loop.h"

mcu_status_t mcu_dwconv2d_s8(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                             const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv2d_params_t *p = params;
    if (!MCU_CONV_GEOMETRY_OK(p) || !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_dw_shape_ok(&p->input, &p->filter, &p->output)) {
        return MCU_ERR_SHAPE;
    }
    if (!mcu_quant_ok(quant, p->output.c)) {
        return MCU_ERR_ARG;
    }
    conv_loop(p, quant, input, filter, bias, NULL, output, 1, 1, p->output.c);
    return MCU_OK;
}
