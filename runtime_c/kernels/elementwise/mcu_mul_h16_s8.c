/* Reference int8 multiply with broadcasting in Helium's int16 arithmetic (mcu_mul_h16_s8_mve's twin in C). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

/* VQRDMULH.S16: the doubled product's rounded top half (saturating only for -32768 * -32768, which the shifted
 * inputs and the multiplier never reach). */
static inline int32_t qrdmulh16(int32_t x, int32_t y)
{
    return mcu_clamp_i32((2 * x * y + (1 << 15)) >> 16, -32768, 32767);
}

static inline int8_t mul_element(const mcu_mul_h16_params_t *p, int32_t a, int32_t b)
{
    const int32_t x = (a + p->input1_offset) * (1 << p->shift1), y0 = (b + p->input2_offset) * (1 << p->shift2);
    const int32_t t = qrdmulh16(qrdmulh16(x, y0), p->multiplier);
    const int32_t y = (t + ((1 << p->shift) >> 1)) >> p->shift;
    return (int8_t)mcu_clamp_i32(mcu_clamp_i32(y + p->output_offset, -32768, 32767), p->act_min, p->act_max);
}

#define MCU_BROADCAST_LOOP broadcast_loop
#define MCU_PARAMS_T mcu_mul_h16_params_t
#define MCU_IN_T int8_t
#define MCU_OUT_T int8_t
#define MCU_ELEMENT(x1, x2) mul_element(p, x1, x2)
#include "mcu/mcu_broadcast_loop.h"

mcu_status_t mcu_mul_h16_s8(const mcu_mul_h16_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output)
{
    const mcu_status_t status = mcu_mul_h16_check(params, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    broadcast_loop(params, input1, input2, output);
    return MCU_OK;
}
