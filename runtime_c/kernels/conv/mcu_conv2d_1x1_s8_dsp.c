/* DSP (SIMD32) int8 1x1 convolution without padding: pixel pairs widened to int16, a 2x2-blocked SMLAD GEMM. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_conv2d_1x1_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                   const int8_t *input, const int8_t *filter, const int32_t *bias,
                                   int8_t *scratch, int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    (void)bias; /* folded into the filter stream */
    mcu_status_t status = mcu_conv_check_strided(p, quant, input, filter, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_conv_shapes_ok(p) || p->filter.h != 1 || p->filter.w != 1 || p->pad_top != 0 || p->pad_left != 0 ||
        (p->output.h - 1) * p->stride_h >= p->input.h || (p->output.w - 1) * p->stride_w >= p->input.w) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c_in = p->input.c, c_out = p->output.c, out_w = p->output.w, steps = (c_in + 3) / 4;
    const int32_t os = mcu_out_stride(p->output_pixel_stride, c_out); /* output pixel q at output + q * os */
    /* scratch (mcu_conv2d_1x1_s8_dsp_scratch_bytes): the entry, a pixel pair widened to int16, the state's address */
    mcu_rq_mode_t mode;
    mcu_dsp_g2_t g;
    if (mcu_dsp_g2_open(&g, filter, (uint32_t *)(void *)scratch + 1, steps, c_out, p->output_offset, p->act_min,
                        p->act_max, &mode) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const int32_t pixels = p->output.n * p->output.h * out_w;
    const int32_t col_step = p->stride_w * c_in, row_step = p->stride_h * p->input.w * c_in;

    /* Output pixel (n, y, x) reads input pixel (n, y * stride_h, x * stride_w): with unit strides pixel i reads
     * pixel i; else `next` walks them in order. */
    if (p->stride_h == 1 && p->stride_w == 1) {
        int32_t i = 0;
        for (; i + 1 < pixels; i += 2) {
            const int8_t *a = input + i * c_in;
            mcu_dsp_expand2(a, a + c_in, c_in, g.x);
            mcu_dsp_g2_run(&g, output + i * os, os, c_out, &mode);
        }
        if (i < pixels) {
            mcu_dsp_expand2(input + i * c_in, input + i * c_in, c_in, g.x);
            mcu_dsp_g2_run(&g, output + i * os, 0, c_out, &mode);
        }
        return MCU_OK;
    }
    const int32_t image_skip = (p->input.h - p->output.h * p->stride_h) * p->input.w * c_in;
    const int8_t *row = input, *next = input;
    int32_t col = 0, y = 0;
    for (int32_t i = 0; i < pixels; i += 2) {
        const int8_t *a = next, *b = next;
        for (int32_t k = 0; k < 2; ++k) {
            if (++col == out_w) {
                col = 0;
                row += row_step;
                if (++y == p->output.h) {
                    y = 0;
                    row += image_skip;
                }
                next = row;
            } else {
                next += col_step;
            }
            if (k == 0 && i + 1 < pixels) {
                b = next;
            }
        }
        mcu_dsp_expand2(a, b, c_in, g.x);
        mcu_dsp_g2_run(&g, output + i * os, i + 1 < pixels ? os : 0, c_out, &mode);
    }
    return MCU_OK;
}
