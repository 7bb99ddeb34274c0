/* int8 2-d convolution fused with the residual add that reads it: mcu_conv2d_s8 then mcu_add_s8, per element. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

static int add_params_ok(const mcu_conv2d_add_params_t *p)
{
    return p->add_left_shift >= 0 && p->add_left_shift <= 23 && p->add_input1_offset >= -127 &&
           p->add_input1_offset <= 128 && p->add_input2_offset >= -127 && p->add_input2_offset <= 128 &&
           p->add_output_offset >= MCU_Q7_MIN && p->add_output_offset <= MCU_Q7_MAX &&
           p->add_input1_multiplier >= 0 && p->add_input2_multiplier >= 0 && p->add_output_multiplier >= 0 &&
           p->add_input1_shift >= -31 && p->add_input1_shift <= 30 && p->add_input2_shift >= -31 &&
           p->add_input2_shift <= 30 && p->add_output_shift >= -31 && p->add_output_shift <= 30 &&
           p->add_act_min >= MCU_Q7_MIN && p->add_act_min <= p->add_act_max && p->add_act_max <= MCU_Q7_MAX;
}

/* The conv's int8 output exactly as mcu_conv2d_s8 gives it, then mcu_add_s8's arithmetic with the residual. */
static inline int8_t conv_add_output(const mcu_conv2d_add_params_t *p, const mcu_per_channel_quant_t *quant,
                                     int32_t acc, int32_t co, int32_t residual)
{
    const int32_t y = mcu_clamp_i32(mcu_add_offset(mcu_requantize(acc, quant->multiplier[co], quant->shift[co]),
                                                   p->output_offset), p->act_min, p->act_max);
    const int32_t a1 = mcu_add_rescale(y, p->add_input1_offset, p->add_left_shift, p->add_input1_multiplier,
                                       p->add_input1_shift);
    const int32_t a2 = mcu_add_rescale(residual, p->add_input2_offset, p->add_left_shift, p->add_input2_multiplier,
                                       p->add_input2_shift);
    const int32_t out = mcu_add_output((int64_t)a1 + a2, p->add_output_multiplier, p->add_output_shift,
                                       p->add_output_offset);
    return (int8_t)mcu_clamp_i32(out, p->add_act_min, p->add_act_max);
}

/* residual[i] is read right before output[i] is written, so output may alias the residual exactly. */
#define MCU_CONV_LOOP conv_add_loop
#define MCU_PARAMS_T mcu_conv2d_add_params_t
#define MCU_IN_T int8_t
#define MCU_W_T int8_t
#define MCU_BIAS_T int32_t
#define MCU_ACC_T int32_t
#define MCU_OUT_T int8_t
#define MCU_EXTRA_T int8_t
#define MCU_INPUT_OFFSET(p) ((p)->input_offset)
#define MCU_START(co) (bias != NULL ? bias[co] : 0)
#define MCU_MAC(acc, x, w) ((acc) + ((int32_t)(x) + in_off) * (int32_t)(w))
#define MCU_FINISH(acc, co) conv_add_output(p, quant, acc, co, extra[out - output])
#include "mcu/mcu_conv_loop.h"

mcu_status_t mcu_conv2d_add_s8(const mcu_conv2d_add_params_t *params, const mcu_per_channel_quant_t *quant,
                               const int8_t *input, const int8_t *filter, const int32_t *bias,
                               const int8_t *residual, int8_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || residual == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv2d_add_params_t *p = params;
    if (!MCU_CONV_GEOMETRY_OK(p) || !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max) ||
        !add_params_ok(p) || !mcu_pixel_stride_contiguous(p->output_pixel_stride, p->output.c)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_conv_channels_ok(&p->input, &p->filter, &p->output, MCU_CONV_REGULAR)) {
        return MCU_ERR_SHAPE;
    }
    if (!mcu_quant_ok(quant, p->output.c)) {
        return MCU_ERR_ARG;
    }
    conv_add_loop(p, quant, input, filter, bias, residual, output, MCU_CONV_REGULAR);
    return MCU_OK;
}
