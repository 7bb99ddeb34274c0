/* The portable int16 convolutions' shared code, not a public API: mcu_conv_loop.h instantiated for int16
 * elements, and the argument checks every one of them makes (the bias is added first). */
#ifndef MCU_CONV_S16_H
#define MCU_CONV_S16_H

#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

#define MCU_CONV_LOOP mcu_conv_loop_s16
#define MCU_PARAMS_T mcu_conv2d_params_t
#define MCU_IN_T int16_t
#define MCU_W_T int8_t
#define MCU_BIAS_T int64_t
#define MCU_ACC_T int64_t
#define MCU_OUT_T int16_t
#define MCU_INPUT_OFFSET(p) 0
#define MCU_START(co) (bias != NULL ? bias[co] : 0)
#define MCU_MAC(acc, x, w) ((acc) + (int32_t)(x) * (int32_t)(w))
#define MCU_FINISH(acc, co) \
    (int16_t)mcu_clamp_i32(mcu_requantize64(acc, quant->multiplier[co], quant->shift[co]), p->act_min, p->act_max)
#include "mcu/mcu_conv_loop.h"

/* The checks of every portable int16 conv, in the int8 ones' order (offsets 0, the int16 clamp). */
static inline mcu_status_t mcu_conv_s16_check(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant,
                                              const void *input, const void *filter, const void *output,
                                              mcu_conv_kind_t kind)
{
    if (p == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!MCU_CONV_GEOMETRY_OK(p) || !mcu_io16_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_conv_channels_ok(&p->input, &p->filter, &p->output, kind)) {
        return MCU_ERR_SHAPE;
    }
    return mcu_quant_ok(quant, p->output.c) ? MCU_OK : MCU_ERR_ARG;
}

#endif /* MCU_CONV_S16_H */
