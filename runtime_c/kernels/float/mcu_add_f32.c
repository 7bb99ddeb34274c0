/* Float32 elementwise add / subtract with broadcasting (dims 4-d in the output's axis order). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

#define MCU_BROADCAST_LOOP broadcast_loop
#define MCU_PARAMS_T mcu_binary_f32_params_t
#define MCU_IN_T float
#define MCU_OUT_T float
#define MCU_ELEMENT(x1, x2) mcu_clamp_float(p->subtract ? (x1) - (x2) : (x1) + (x2), p->act_min, p->act_max)
#include "mcu/mcu_broadcast_loop.h"

mcu_status_t mcu_add_f32(const mcu_binary_f32_params_t *params, const float *input1, const float *input2,
                         float *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_binary_f32_params_t *p = params;
    const mcu_dims_t *o = &p->output;
    if (o->n < 1 || o->h < 1 || o->w < 1 || o->c < 1 || !(p->act_min <= p->act_max) ||
        (p->subtract != 0 && p->subtract != 1)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_broadcasts(&p->input1, o) || !mcu_broadcasts(&p->input2, o)) {
        return MCU_ERR_SHAPE;
    }

    broadcast_loop(p, input1, input2, output);
    return MCU_OK;
}
