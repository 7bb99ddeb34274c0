/* Reference int8 2-d average pooling (NHWC), rounding half away from zero; padded taps are skipped. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

#define MCU_POOL_LOOP pool_loop
#define MCU_PARAMS_T mcu_pool2d_params_t
#define MCU_IN_T int8_t
#define MCU_ACC_T int32_t
#define MCU_OUT_T int8_t
#define MCU_START(first) 0
#define MCU_TAP(acc, x) ((acc) + (x))
#define MCU_FINISH(acc, taps, d) mcu_avg_pool_out(p, acc, taps, d)
#include "mcu/mcu_pool_loop.h"

mcu_status_t mcu_avgpool2d_s8(const mcu_pool2d_params_t *params, const int8_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool2d_params_t *p = params;
    if (!MCU_POOL_GEOMETRY_OK(p) || p->divisor < 0 ||
        p->zero_point < MCU_Q7_MIN || p->zero_point > MCU_Q7_MAX || p->act_min < MCU_Q7_MIN ||
        p->act_min > p->act_max || p->act_max > MCU_Q7_MAX) {
        return MCU_ERR_ARG;
    }
    if (!MCU_POOL_SHAPE_OK(p)) {
        return MCU_ERR_SHAPE;
    }
    pool_loop(p, input, output);
    return MCU_OK;
}
