/* Float32 elementwise multiply with broadcasting (dims 4-d in the output's axis order). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_mul_f32(const mcu_binary_f32_params_t *params, const float *input1, const float *input2,
                         float *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_binary_f32_params_t *p = params;
    const mcu_dims_t *o = &p->output;
    if (o->n < 1 || o->h < 1 || o->w < 1 || o->c < 1 || !(p->act_min <= p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_broadcasts(&p->input1, o) || !mcu_broadcasts(&p->input2, o)) {
        return MCU_ERR_SHAPE;
    }

    int32_t s1[4], s2[4];
    mcu_broadcast_strides(&p->input1, s1);
    mcu_broadcast_strides(&p->input2, s2);
    float *out = output;
    for (int32_t n = 0; n < o->n; ++n) {
        for (int32_t h = 0; h < o->h; ++h) {
            for (int32_t w = 0; w < o->w; ++w) {
                const float *a = input1 + n * s1[0] + h * s1[1] + w * s1[2];
                const float *b = input2 + n * s2[0] + h * s2[1] + w * s2[2];
                for (int32_t c = 0; c < o->c; ++c) {
                    float v = a[c * s1[3]] * b[c * s2[3]];
                    v = v < p->act_min ? p->act_min : v;
                    *out++ = v > p->act_max ? p->act_max : v;
                }
            }
        }
    }
    return MCU_OK;
}
