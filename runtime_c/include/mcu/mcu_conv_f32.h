/* The portable float32 convolutions' shared code, not a public API: mcu_conv_loop.h instantiated for float32
 * elements, and the argument checks every one of them makes (the bias is added at the end, after the taps' sum, as the float twin does). */
#ifndef MCU_CONV_F32_H
#define MCU_CONV_F32_H

#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

#define MCU_CONV_LOOP mcu_conv_loop_f32
#define MCU_PARAMS_T mcu_conv2d_f32_params_t
#define MCU_IN_T float
#define MCU_W_T float
#define MCU_BIAS_T float
#define MCU_ACC_T float
#define MCU_OUT_T float
#define MCU_INPUT_OFFSET(p) 0
#define MCU_START(co) 0.0f
#define MCU_MAC(acc, x, w) ((acc) + (x) * (w))
#define MCU_FINISH(acc, co) mcu_clamp_float(bias != NULL ? (acc) + bias[co] : (acc), p->act_min, p->act_max)
#include "mcu/mcu_conv_loop.h"

/* The checks of every float32 conv: NULL pointers, geometry and clamp (MCU_ERR_ARG), channels (MCU_ERR_SHAPE). */
static inline mcu_status_t mcu_conv_f32_check(const mcu_conv2d_f32_params_t *p, const void *input,
                                              const void *filter, const void *output, mcu_conv_kind_t kind)
{
    if (p == NULL || input == NULL || filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!MCU_CONV_GEOMETRY_OK(p) || !(p->act_min <= p->act_max)) {
        return MCU_ERR_ARG;
    }
    return mcu_conv_channels_ok(&p->input, &p->filter, &p->output, kind) ? MCU_OK : MCU_ERR_SHAPE;
}

#endif /* MCU_CONV_F32_H */
