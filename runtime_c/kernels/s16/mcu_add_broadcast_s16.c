/* Reference int16 add / subtract with broadcasting (TFLite 16x8 add arithmetic, mcu_add_s16's). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

/* mcu_add_s16's arithmetic on one element pair, or its difference. */
static inline int16_t add_element(const mcu_add_broadcast_params_t *p, int32_t x1, int32_t x2)
{
    const int32_t a1 = mcu_add_rescale(x1, 0, p->left_shift, p->input1_multiplier, p->input1_shift);
    const int32_t a2 = mcu_add_rescale(x2, 0, p->left_shift, p->input2_multiplier, p->input2_shift);
    const int32_t r = mcu_add_output(p->subtract ? (int64_t)a1 - a2 : (int64_t)a1 + a2, p->output_multiplier,
                                     p->output_shift, 0);
    return (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
}

#define MCU_BROADCAST_LOOP broadcast_loop
#define MCU_PARAMS_T mcu_add_broadcast_params_t
#define MCU_IN_T int16_t
#define MCU_OUT_T int16_t
#define MCU_ELEMENT(x1, x2) add_element(p, x1, x2)
#include "mcu/mcu_broadcast_loop.h"

mcu_status_t mcu_add_broadcast_s16(const mcu_add_broadcast_params_t *params, const int16_t *input1,
                                   const int16_t *input2, int16_t *output)
{
    const mcu_status_t status = mcu_add_broadcast_s16_check(params, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_add_broadcast_params_t *p = params;

    broadcast_loop(p, input1, input2, output);
    return MCU_OK;
}
