/* Float32 2-d average pooling (NHWC): valid taps summed over ky, then kx, divided once. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

#define MCU_POOL_LOOP pool_loop
#define MCU_PARAMS_T mcu_pool2d_f32_params_t
#define MCU_IN_T float
#define MCU_ACC_T float
#define MCU_OUT_T float
#define MCU_START(first) 0.0f
#define MCU_TAP(acc, x) ((acc) + (x))
#define MCU_FINISH(acc, taps, d) mcu_clamp_float((acc) / (float)(d), p->act_min, p->act_max)
#include "mcu/mcu_pool_loop.h"

mcu_status_t mcu_avgpool2d_f32(const mcu_pool2d_f32_params_t *params, const float *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool2d_f32_params_t *p = params;
    if (!MCU_POOL_GEOMETRY_OK(p) || p->divisor < 0 ||
        !(p->act_min <= p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!MCU_POOL_SHAPE_OK(p)) {
        return MCU_ERR_SHAPE;
    }
    pool_loop(p, input, output);
    return MCU_OK;
}
