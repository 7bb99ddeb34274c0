/* Scalar int8 1x1 convolution without padding: each input row times 4 channels at a time, folded offset. */

/* Over a dying input, a pixel whose outputs would overwrite input still to be read is copied to scratch first
 * (registry raster_copy); others are read in place. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_conv2d_1x1_s8_fast(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                    const int8_t *input, const int8_t *filter, const int32_t *bias,
                                    int8_t *scratch, int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check_strided(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_conv_shapes_ok(p) || p->filter.h != 1 || p->filter.w != 1 || p->pad_top != 0 || p->pad_left != 0 ||
        (p->output.h - 1) * p->stride_h >= p->input.h || (p->output.w - 1) * p->stride_w >= p->input.w) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c_in = p->input.c, c_out = p->output.c, os = mcu_out_stride(p->output_pixel_stride, c_out);
    if (mcu_records_check(quant->multiplier, c_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const mcu_rq_mode_t mode = mcu_rq_mode(quant->multiplier, c_out, p->output_offset, p->act_min, p->act_max);
    int8_t *out = output;
    const int8_t *in_end = input + p->input.n * p->input.h * p->input.w * c_in;

    for (int32_t n = 0; n < p->output.n; ++n) {
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int8_t *in = input + ((n * p->input.h + y * p->stride_h) * p->input.w) * c_in;
            for (int32_t x = 0; x < p->output.w; ++x, in += p->stride_w * c_in, out += os) {
                const int8_t *x_in = in;
                if (mcu_block_clobbers(out, out + c_out, in, in_end)) { /* scratch: C_in bytes */
                    mcu_copy_s8(scratch, in, c_in);
                    x_in = scratch;
                }
                mcu_fast_gemm_row(x_in, c_in, filter, bias, quant->multiplier, c_out, &mode, out);
            }
        }
    }
    return MCU_OK;
}
