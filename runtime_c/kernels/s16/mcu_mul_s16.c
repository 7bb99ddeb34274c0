/* Reference int16 multiply with broadcasting: one product per element, requantized once (ties up). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

/* The int16 product of one element pair, requantized (int32 product, exact in the int64 requantization). */
static inline int16_t mul_element(const mcu_mul_params_t *p, int32_t x1, int32_t x2)
{
    const int32_t r = mcu_requantize64((int64_t)(x1 * x2), p->output_multiplier, p->output_shift);
    return (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
}

#define MCU_BROADCAST_LOOP broadcast_loop
#define MCU_PARAMS_T mcu_mul_params_t
#define MCU_IN_T int16_t
#define MCU_OUT_T int16_t
#define MCU_ELEMENT(x1, x2) mul_element(p, x1, x2)
#include "mcu/mcu_broadcast_loop.h"

mcu_status_t mcu_mul_s16(const mcu_mul_params_t *params, const int16_t *input1, const int16_t *input2,
                         int16_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_mul_params_t *p = params;
    const mcu_dims_t *o = &p->output;
    if (!mcu_dims_ok(o) || p->input1_offset != 0 || p->input2_offset != 0 ||
        !mcu_io16_ok(0, p->output_offset, p->act_min, p->act_max) || p->output_multiplier < 0 ||
        p->output_shift < -31 || p->output_shift > 30) {
        return MCU_ERR_ARG;
    }
    if (!mcu_broadcasts(&p->input1, o) || !mcu_broadcasts(&p->input2, o)) {
        return MCU_ERR_SHAPE;
    }

    broadcast_loop(p, input1, input2, output);
    return MCU_OK;
}
