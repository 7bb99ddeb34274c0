/* Reference int16 multiply with broadcasting: one product per element, requantized once (ties up). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

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

    int32_t s1[4], s2[4];
    mcu_broadcast_strides(&p->input1, s1);
    mcu_broadcast_strides(&p->input2, s2);
    int16_t *out = output;
    for (int32_t n = 0; n < o->n; ++n) {
        for (int32_t h = 0; h < o->h; ++h) {
            for (int32_t w = 0; w < o->w; ++w) {
                const int16_t *a = input1 + n * s1[0] + h * s1[1] + w * s1[2];
                const int16_t *b = input2 + n * s2[0] + h * s2[1] + w * s2[2];
                for (int32_t c = 0; c < o->c; ++c) {
                    const int32_t prod = (int32_t)a[c * s1[3]] * (int32_t)b[c * s2[3]];
                    const int32_t r = mcu_requantize64(prod, p->output_multiplier, p->output_shift);
                    *out++ = (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
                }
            }
        }
    }
    return MCU_OK;
}
