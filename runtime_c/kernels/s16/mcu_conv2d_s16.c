/* Reference int16-activation 2-d convolution, any groups: NHWC int16 input, OHWI int8 filter, int64 sums. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

#define MCU_CONV_LOOP conv_loop
#define MCU_PARAMS_T mcu_conv2d_params_t
#define MCU_IN_T int16_t
#define MCU_W_T int8_t
#define MCU_BIAS_T int64_t
#define MCU_ACC_T int64_t
#define MCU_OUT_T int16_t
#define MCU_INPUT_OFFSET(p) 0
#define MCU_START(co) (bias != NULL ? bias[co] : 0)
#define MCU_MAC(acc, x, w) ((acc) + (int32_t)(x) * (int32_t)(w))
#define MCU_FINISH(acc, co) \
    (int16_t)mcu_clamp_i32(mcu_requantize64(acc, quant->multiplier[co], quant->shift[co]), p->act_min, p->act_max)
#include "mcu/mcu_conv_loop.h"

mcu_status_t mcu_conv2d_s16(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                            const int16_t *input, const int8_t *filter, const int64_t *bias, int16_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv2d_params_t *p = params;
    if (!MCU_CONV_GEOMETRY_OK(p) || !mcu_io16_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_conv_groups_ok(&p->input, &p->filter, &p->output)) {
        return MCU_ERR_SHAPE;
    }
    if (!mcu_quant_ok(quant, p->output.c)) {
        return MCU_ERR_ARG;
    }
    conv_loop(p, quant, input, filter, bias, NULL, output, p->filter.c, p->filter.h * p->filter.w * p->filter.c,
              p->filter.c);
    return MCU_OK;
}
