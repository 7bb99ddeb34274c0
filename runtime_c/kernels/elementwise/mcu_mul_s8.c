/* Reference int8 multiply with broadcasting: one product per element, requantized with a single rounding. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

/* TFLite's int8 multiply of one element pair (one rounding, ties to even). */
static inline int8_t mul_element(const mcu_mul_params_t *p, int32_t x1, int32_t x2)
{
    const int32_t prod = (x1 + p->input1_offset) * (x2 + p->input2_offset);
    const int32_t r = mcu_requantize_round(prod, p->output_multiplier, p->output_shift);
    const int32_t q = mcu_add_offset(r, p->output_offset);
    return (int8_t)mcu_clamp_i32(q, p->act_min, p->act_max);
}

#define MCU_BROADCAST_LOOP broadcast_loop
#define MCU_PARAMS_T mcu_mul_params_t
#define MCU_IN_T int8_t
#define MCU_OUT_T int8_t
#define MCU_ELEMENT(x1, x2) mul_element(p, x1, x2)
#include "mcu/mcu_broadcast_loop.h"

mcu_status_t mcu_mul_s8(const mcu_mul_params_t *params, const int8_t *input1, const int8_t *input2,
                        int8_t *output)
{
    const mcu_status_t status = mcu_mul_check(params, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_mul_params_t *p = params;

    broadcast_loop(p, input1, input2, output);
    return MCU_OK;
}
