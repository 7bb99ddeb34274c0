/* int8 convolution with int4 weights (two per byte, unpacked on the fly) through one pixel's im2col window. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_s4.h"

mcu_status_t mcu_conv2d_s4(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                           const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                           int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t c_out = p->output.c, k = p->filter.h * p->filter.w * p->input.c;
    if (!mcu_conv_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    if (mcu_quant_check(quant, c_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const int8_t zero_point = (int8_t)(-p->input_offset);
    const int one_by_one = p->filter.h == 1 && p->filter.w == 1 && p->pad_top == 0 && p->pad_left == 0;
    int8_t *window = scratch; /* K bytes (mcu_conv2d_s4_scratch_bytes) */
    int8_t *out = output;

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * p->input.h * p->input.w * p->input.c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            for (int32_t x = 0; x < p->output.w; ++x, out += c_out) {
                const int8_t *win = window;
                if (one_by_one) { /* the pixel itself is the window */
                    win = in_n + (y * p->stride_h * p->input.w + x * p->stride_w) * p->input.c;
                } else {
                    mcu_im2col_s8(p, in_n, y, x, zero_point, window);
                }
                mcu_s4_gemm_row(win, k, filter, bias, quant, c_out, p->output_offset, p->act_min, p->act_max, out);
            }
        }
    }
    return MCU_OK;
}
