/* Helium (MVE) int8 1x1 convolution without padding: input pixels read in place, 3 pixels x 4 channels per block. */

/* Over a dying input, a block whose outputs would overwrite input still to be read has its pixels copied to
 * scratch first (registry raster_copy); others are read in place. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_mve.h"

mcu_status_t mcu_conv2d_1x1_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                   const int8_t *input, const int8_t *filter, const int32_t *bias,
                                   int8_t *scratch, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check_strided(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_conv_shapes_ok(p) || p->filter.h != 1 || p->filter.w != 1 || p->pad_top != 0 || p->pad_left != 0 ||
        (p->output.h - 1) * p->stride_h >= p->input.h || (p->output.w - 1) * p->stride_w >= p->input.w) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c_in = p->input.c, c_out = p->output.c, oh = p->output.h, ow = p->output.w;
    if (mcu_quant_check(quant, c_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const int32_t os = mcu_out_stride(p->output_pixel_stride, c_out); /* output pixel q at output + q * os */
    const mcu_mve_gemm_t g = mcu_mve_gemm_of(filter, bias, quant, c_out, 1, c_in, p->output_offset, p->act_min,
                                             p->act_max, os);
    const int32_t dx = p->stride_w * c_in, dy = p->stride_h * p->input.w * c_in, plane = p->input.h * p->input.w * c_in;
    const int32_t pixels = p->output.n * oh * ow;
    const int8_t *row_start = input, *px = input; /* output pixel (n, y, x)'s input pixel, and (n, y, 0)'s */
    int32_t y = 0, x = 0, n = 0;
    const int8_t *in_end = input + p->input.n * plane;
    const int unit = p->stride_h == 1 && p->stride_w == 1; /* the pixels one after another: 3 in one run */
    for (int32_t i = 0; i < pixels; i += 3) {
        const int32_t npix = pixels - i < 3 ? pixels - i : 3;
        const int copy = mcu_block_clobbers(output + i * os, output + (i + npix - 1) * os + c_out, px, in_end);
        if (copy && unit) { /* scratch: 3 pixels of C_in bytes */
            mcu_copy_s8(scratch, px, npix * c_in);
        }
        const int8_t *rows[3];
        for (int32_t j = 0; j < 3; ++j) {
            rows[j] = j < npix ? px : rows[0]; /* past the end: pixel 0 again */
            if (j < npix) {
                if (copy) {
                    if (!unit) {
                        mcu_copy_s8(scratch + j * c_in, px, c_in);
                    }
                    rows[j] = scratch + j * c_in;
                }
                px += dx;
                if (++x == ow) {
                    x = 0;
                    row_start += dy;
                    if (++y == oh) {
                        y = 0;
                        row_start = input + ++n * plane;
                    }
                    px = row_start;
                }
            }
        }
        if (npix == 1) {
            mcu_mve_gemv(rows[0], &g, output + i * os);
        } else {
            mcu_mve_gemm_block(rows, &g, npix, output + i * os);
        }
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)scratch, (void)output;
    return MCU_ERR_ARG;
#endif
}
