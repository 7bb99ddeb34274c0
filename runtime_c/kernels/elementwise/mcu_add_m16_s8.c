/* Reference int8 add / subtract with broadcasting, 16-bit multipliers on the raw values and one shift. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

static inline int8_t add_element(const mcu_add_m16_params_t *p, int32_t a, int32_t b)
{
    return (int8_t)mcu_clamp_i32((a * p->multiplier1 + b * p->multiplier2 + p->bias) >> p->shift, p->act_min,
                                 p->act_max);
}

/* |a * m1 + b * m2| < 2^23 and |bias| <= 2^30 (checked): the int32 sum never overflows. */
#define MCU_BROADCAST_LOOP broadcast_loop
#define MCU_PARAMS_T mcu_add_m16_params_t
#define MCU_IN_T int8_t
#define MCU_OUT_T int8_t
#define MCU_ELEMENT(x1, x2) add_element(p, x1, x2)
#include "mcu/mcu_broadcast_loop.h"

mcu_status_t mcu_add_m16_s8(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output)
{
    const mcu_status_t status = mcu_add_m16_check(params, input1, input2, output, 24);
    if (status != MCU_OK) {
        return status;
    }
    broadcast_loop(params, input1, input2, output);
    return MCU_OK;
}
