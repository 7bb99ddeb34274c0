/* The portable int8 convolutions' shared code, not a public API: mcu_conv_loop.h instantiated for int8
 * elements, and the argument checks every one of them makes (the bias is added first). */
#ifndef MCU_CONV_S8_H
#define MCU_CONV_S8_H

#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

#define MCU_CONV_LOOP mcu_conv_loop_s8
#define MCU_PARAMS_T mcu_conv2d_params_t
#define MCU_IN_T int8_t
#define MCU_W_T int8_t
#define MCU_BIAS_T int32_t
#define MCU_ACC_T int32_t
#define MCU_OUT_T int8_t
#define MCU_INPUT_OFFSET(p) ((p)->input_offset)
#define MCU_START(co) (bias != NULL ? bias[co] : 0)
#define MCU_MAC(acc, x, w) ((acc) + ((int32_t)(x) + in_off) * (int32_t)(w))
#define MCU_FINISH(acc, co)                                                                                \
    (int8_t)mcu_clamp_i32(mcu_add_offset(mcu_requantize(acc, quant->multiplier[co], quant->shift[co]),   \
                                         p->output_offset),                                              \
                          p->act_min, p->act_max)
#include "mcu/mcu_conv_loop.h"

/* The checks of every portable int8 conv, in order: NULL pointers, geometry and offsets (MCU_ERR_ARG), channels
 * (MCU_ERR_SHAPE), per-channel requantization (MCU_ERR_ARG). */
static inline mcu_status_t mcu_conv_s8_check(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant,
                                             const void *input, const void *filter, const void *output,
                                             mcu_conv_kind_t kind)
{
    if (p == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!MCU_CONV_GEOMETRY_OK(p) || !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_conv_channels_ok(&p->input, &p->filter, &p->output, kind)) {
        return MCU_ERR_SHAPE;
    }
    return mcu_quant_ok(quant, p->output.c) ? MCU_OK : MCU_ERR_ARG;
}

#endif /* MCU_CONV_S8_H */
