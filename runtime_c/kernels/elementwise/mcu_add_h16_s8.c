/* Reference int8 add / subtract with broadcasting in Helium's int16 arithmetic (mcu_add_h16_s8_mve's twin in C). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

static inline int32_t sat16(int32_t x)
{
    return mcu_clamp_i32(x, -32768, 32767);
}

/* The int16 steps of VQRDMULH (a << 8 by m1), VQRDMLAH (b << 8 by m2), VQADD (bias), then VQRSHL, VQMOVN. */
static inline int8_t add_element(const mcu_add_m16_params_t *p, int32_t a, int32_t b)
{
    int32_t t = sat16((a * p->multiplier1 + 64) >> 7);
    t = sat16(t + ((b * p->multiplier2 + 64) >> 7));
    t = sat16(t + p->bias);
    return (int8_t)mcu_clamp_i32((t + (1 << (p->shift - 1))) >> p->shift, p->act_min, p->act_max);
}

#define MCU_BROADCAST_LOOP broadcast_loop
#define MCU_PARAMS_T mcu_add_m16_params_t
#define MCU_IN_T int8_t
#define MCU_OUT_T int8_t
#define MCU_ELEMENT(x1, x2) add_element(p, x1, x2)
#include "mcu/mcu_broadcast_loop.h"

mcu_status_t mcu_add_h16_s8(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output)
{
    const mcu_status_t status = mcu_add_m16_check(params, input1, input2, output, 15);
    if (status != MCU_OK) {
        return status;
    }
    broadcast_loop(params, input1, input2, output);
    return MCU_OK;
}
