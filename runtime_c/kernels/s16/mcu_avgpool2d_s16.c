/* Reference int16 2-d average pooling (NHWC), rounding half away from zero; padded taps are skipped. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

/* The window's average, rounded half away from zero. |acc| <= 2^31 and d / 2 < 2^30, so the magnitude's rounded
 * quotient fits uint32; beyond 2^15 the int16 clamp decides. */
static inline int16_t avg_output(const mcu_pool2d_params_t *p, int32_t acc, int32_t d)
{
    const uint32_t mag = acc < 0 ? 0u - (uint32_t)acc : (uint32_t)acc;
    const uint32_t qm = (mag + (uint32_t)d / 2u) / (uint32_t)d;
    const int32_t q = qm > 32768u ? 32768 : (int32_t)qm;
    return (int16_t)mcu_clamp_i32(acc < 0 ? -q : q, p->act_min, p->act_max);
}

#define MCU_POOL_LOOP pool_loop
#define MCU_PARAMS_T mcu_pool2d_params_t
#define MCU_IN_T int16_t
#define MCU_ACC_T int32_t
#define MCU_OUT_T int16_t
#define MCU_START(first) 0
#define MCU_TAP(acc, x) ((acc) + (x))
#define MCU_FINISH(acc, taps, d) avg_output(p, acc, d)
#include "mcu/mcu_pool_loop.h"

mcu_status_t mcu_avgpool2d_s16(const mcu_pool2d_params_t *params, const int16_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool2d_params_t *p = params;
    /* At most 65536 taps keeps the int32 sum of int16 values exact: |acc| <= 2^16 * 2^15. */
    if (!MCU_POOL_GEOMETRY_OK(p) || p->kernel_h > 65536 / p->kernel_w || p->divisor < 0 ||
        !mcu_io16_ok(p->zero_point, 0, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!MCU_POOL_SHAPE_OK(p)) {
        return MCU_ERR_SHAPE;
    }
    pool_loop(p, input, output);
    return MCU_OK;
}
