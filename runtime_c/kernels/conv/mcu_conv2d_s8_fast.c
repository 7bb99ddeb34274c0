/* Scalar int8 convolution via im2col: one output pixel's window times 4 channels at a time, folded offset. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_conv2d_s8_fast(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                                int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check_strided(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t c_out = p->output.c, k = p->filter.h * p->filter.w * p->input.c;
    const int32_t os = mcu_out_stride(p->output_pixel_stride, c_out); /* output pixel q at output + q * os */
    if (!mcu_conv_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    if (mcu_records_check(quant->multiplier, c_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const mcu_rq_mode_t mode = mcu_rq_mode(quant->multiplier, c_out, p->output_offset, p->act_min, p->act_max);
    const int8_t zero_point = (int8_t)(-p->input_offset);
    int8_t *window = scratch; /* K bytes (mcu_conv2d_s8_fast_scratch_bytes) */
    int8_t *out = output;

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * p->input.h * p->input.w * p->input.c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            for (int32_t x = 0; x < p->output.w; ++x, out += os) {
                mcu_im2col_s8(p, in_n, y, x, zero_point, window);
                mcu_fast_gemm_row(window, k, filter, bias, quant->multiplier, c_out, &mode, out);
            }
        }
    }
    return MCU_OK;
}
