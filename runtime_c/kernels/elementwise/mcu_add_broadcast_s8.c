/* Reference int8 add / subtract with broadcasting, TFLite rescaling of both inputs to a common scale. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_add_broadcast_s8(const mcu_add_broadcast_params_t *params, const int8_t *input1,
                                  const int8_t *input2, int8_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_add_broadcast_params_t *p = params;
    const mcu_dims_t *o = &p->output;
    if (o->n < 1 || o->h < 1 || o->w < 1 || o->c < 1 || (p->subtract != 0 && p->subtract != 1) ||
        p->left_shift < 0 || p->left_shift > 23 || p->input1_offset < -127 || p->input1_offset > 128 ||
        p->input2_offset < -127 || p->input2_offset > 128 || p->output_offset < MCU_Q7_MIN ||
        p->output_offset > MCU_Q7_MAX || p->input1_multiplier < 0 || p->input2_multiplier < 0 ||
        p->output_multiplier < 0 || p->input1_shift < -31 || p->input1_shift > 30 || p->input2_shift < -31 ||
        p->input2_shift > 30 || p->output_shift < -31 || p->output_shift > 30 || p->act_min < MCU_Q7_MIN ||
        p->act_min > p->act_max || p->act_max > MCU_Q7_MAX) {
        return MCU_ERR_ARG;
    }
    if (!mcu_broadcasts(&p->input1, o) || !mcu_broadcasts(&p->input2, o)) {
        return MCU_ERR_SHAPE;
    }

    int32_t s1[4], s2[4];
    mcu_broadcast_strides(&p->input1, s1);
    mcu_broadcast_strides(&p->input2, s2);
    int8_t *out = output;
    for (int32_t n = 0; n < o->n; ++n) {
        for (int32_t h = 0; h < o->h; ++h) {
            for (int32_t w = 0; w < o->w; ++w) {
                const int8_t *a = input1 + n * s1[0] + h * s1[1] + w * s1[2];
                const int8_t *b = input2 + n * s2[0] + h * s2[1] + w * s2[2];
                for (int32_t c = 0; c < o->c; ++c) {
                    const int32_t a1 = mcu_add_rescale(a[c * s1[3]], p->input1_offset, p->left_shift,
                                                       p->input1_multiplier, p->input1_shift);
                    const int32_t a2 = mcu_add_rescale(b[c * s2[3]], p->input2_offset, p->left_shift,
                                                       p->input2_multiplier, p->input2_shift);
                    const int32_t q = mcu_add_output(p->subtract ? (int64_t)a1 - a2 : (int64_t)a1 + a2,
                                                     p->output_multiplier, p->output_shift, p->output_offset);
                    *out++ = (int8_t)mcu_clamp_i32(q, p->act_min, p->act_max);
                }
            }
        }
    }
    return MCU_OK;
}
