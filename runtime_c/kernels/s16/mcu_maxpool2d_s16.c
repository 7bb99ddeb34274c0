/* Reference int16 2-d max pooling (NHWC); padded taps are skipped, so padding never wins. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

#define MCU_POOL_LOOP pool_loop
#define MCU_PARAMS_T mcu_pool2d_params_t
#define MCU_IN_T int16_t
#define MCU_ACC_T int32_t
#define MCU_OUT_T int16_t
#define MCU_START(first) (int32_t)(first)
#define MCU_TAP(acc, x) ((x) > (acc) ? (int32_t)(x) : (acc))
#define MCU_FINISH(acc, taps, d) (int16_t)mcu_clamp_i32(acc, p->act_min, p->act_max)
#include "mcu/mcu_pool_loop.h"

mcu_status_t mcu_maxpool2d_s16(const mcu_pool2d_params_t *params, const int16_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool2d_params_t *p = params;
    if (!MCU_POOL_GEOMETRY_OK(p) || !mcu_io16_ok(p->zero_point, 0, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!MCU_POOL_SHAPE_OK(p)) {
        return MCU_ERR_SHAPE;
    }
    pool_loop(p, input, output);
    return MCU_OK;
}
