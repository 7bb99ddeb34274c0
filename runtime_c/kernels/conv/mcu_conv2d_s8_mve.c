/* Helium (MVE) int8 convolution: VMLADAVA of each pixel's window, read in place away from the borders, with 4 channels at a time. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_conv2d_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                               const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, c_out = p->output.c;
    const int32_t kh = p->filter.h, kw = p->filter.w, seg = kw * c_in, seg16 = (seg + 15) & ~15;
    if (!mcu_conv_shapes_ok(p) || kh * seg16 > MCU_OPT_MAX_K) {
        return MCU_ERR_SHAPE;
    }
    if (mcu_quant_check(quant, c_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const int8_t zero_point = (int8_t)(-p->input_offset);
    /* A window row (one ky) is `seg` contiguous input bytes when dilation_w == 1: interior pixels read the
     * input directly, row stride dilation_h * in_w * c_in; border pixels gather rows of seg16 bytes. */
    const int32_t in_stride = p->dilation_h * in_w * c_in;
    const int32_t span_y = (kh - 1) * p->dilation_h, span_x = (kw - 1) * p->dilation_w;
    int8_t window[MCU_OPT_MAX_K]; /* 1 KB */
    int8_t *out = output;

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c_in;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            const int rows_inside = base_y >= 0 && base_y + span_y < in_h;
            for (int32_t x = 0; x < p->output.w; ++x, out += c_out) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                const int8_t *rows = window;
                int32_t stride = seg16;
                if (rows_inside && p->dilation_w == 1 && base_x >= 0 && base_x + span_x < in_w) {
                    rows = in_n + (base_y * in_w + base_x) * c_in;
                    stride = in_stride;
                } else {
                    mcu_im2col_rows_s8(p, in_n, y, x, zero_point, seg16, window);
                }
                mcu_mve_gemm_rows(rows, stride, kh, seg, filter, bias, quant->multiplier, quant->shift, c_out,
                                  p->output_offset, p->act_min, p->act_max, out);
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)output;
    return MCU_ERR_ARG;
#endif
}
