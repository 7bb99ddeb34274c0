/* Float32 2-d convolution, regular or grouped: NHWC input, OHWI filter, taps summed in (ky, kx, ci) order. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

#define MCU_CONV_LOOP conv_loop
#define MCU_PARAMS_T mcu_conv2d_f32_params_t
#define MCU_IN_T float
#define MCU_W_T float
#define MCU_BIAS_T float
#define MCU_ACC_T float
#define MCU_OUT_T float
#define MCU_INPUT_OFFSET(p) 0
#define MCU_START(co) 0.0f
#define MCU_MAC(acc, x, w) ((acc) + (x) * (w))
#define MCU_FINISH(acc, co) mcu_clamp_float(bias != NULL ? (acc) + bias[co] : (acc), p->act_min, p->act_max)
#include "mcu/mcu_conv_loop.h"

mcu_status_t mcu_conv2d_f32(const mcu_conv2d_f32_params_t *params, const float *input, const float *filter,
                            const float *bias, float *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv2d_f32_params_t *p = params;
    if (!MCU_CONV_GEOMETRY_OK(p) || !(p->act_min <= p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_conv_groups_ok(&p->input, &p->filter, &p->output)) {
        return MCU_ERR_SHAPE;
    }
    conv_loop(p, NULL, input, filter, bias, NULL, output, p->filter.c, p->filter.h * p->filter.w * p->filter.c,
              p->filter.c);
    return MCU_OK;
}
