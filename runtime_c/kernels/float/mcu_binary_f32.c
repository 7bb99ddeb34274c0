/* Float32 division, minimum, maximum and power of two tensors, with broadcasting (mcu_broadcast_loop.h). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_fmath.h"
#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

static float binary(int32_t op, float x1, float x2)
{
    switch (op) {
    case MCU_BINARY_DIV: return x1 / x2;
    case MCU_BINARY_MINIMUM: return (x1 < x2 || x1 != x1) ? x1 : x2; /* NaN propagates, as torch.minimum */
    case MCU_BINARY_MAXIMUM: return (x1 > x2 || x1 != x1) ? x1 : x2;
    default: return mcu_expf(x2 * mcu_logf(x1)); /* MCU_BINARY_POW */
    }
}

#define MCU_BROADCAST_LOOP broadcast_loop
#define MCU_PARAMS_T mcu_binary_op_f32_params_t
#define MCU_IN_T float
#define MCU_OUT_T float
#define MCU_ELEMENT(x1, x2) mcu_clamp_float(binary(p->op, (x1), (x2)), p->act_min, p->act_max)
#include "mcu/mcu_broadcast_loop.h"

mcu_status_t mcu_binary_f32(const mcu_binary_op_f32_params_t *params, const float *input1, const float *input2,
                            float *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_binary_op_f32_params_t *p = params;
    const mcu_dims_t *o = &p->output;
    if (o->n < 1 || o->h < 1 || o->w < 1 || o->c < 1 || !(p->act_min <= p->act_max) || p->op < 0 ||
        p->op >= MCU_BINARY_COUNT) {
        return MCU_ERR_ARG;
    }
    if (!mcu_broadcasts(&p->input1, o) || !mcu_broadcasts(&p->input2, o)) {
        return MCU_ERR_SHAPE;
    }
    broadcast_loop(p, input1, input2, output);
    return MCU_OK;
}
