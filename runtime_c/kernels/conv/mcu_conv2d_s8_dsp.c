/* DSP (SIMD32) int8 convolution via im2col: one pixel's window widened to int16, SMLAD with int16 weights. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_conv2d_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                               const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, c_out = p->output.c;
    const int32_t kh = p->filter.h, kw = p->filter.w, seg = kw * c_in, seg4 = (seg + 3) & ~3;
    if (!mcu_conv_shapes_ok(p) || kh * seg4 > MCU_OPT_MAX_K) {
        return MCU_ERR_SHAPE;
    }
    if (mcu_records_check(quant->multiplier, c_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const mcu_rq_mode_t mode = mcu_rq_mode(quant->multiplier, c_out, p->output_offset, p->act_min, p->act_max);
    const int32_t groups = kh * seg4 / 4, in_off = p->input_offset;
    const int32_t span_y = (kh - 1) * p->dilation_h, row_step = p->dilation_h * in_w * c_in;
    const int8_t zero_point = (int8_t)(-in_off);
    /* The widened window is KH rows of seg4 values (the packed weights are zero past seg in each row). An
     * interior pixel's rows are widened straight from the input; at the borders, whole taps are whole
     * 4-groups when c_in % 4 == 0 (widen the taps, zero the padding: it widens to 0); otherwise the int8
     * window is gathered first, padding as the zero point. */
    uint32_t row[MCU_OPT_MAX_K / 2]; /* 2 KB */
    int8_t window[MCU_OPT_MAX_K];    /* 1 KB; bytes past seg in each row stay 0 */
    mcu_fill_s8(window, 0, kh * seg4);
    int8_t *out = output;

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c_in;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            const int rows_inside = base_y >= 0 && base_y + span_y < in_h;
            for (int32_t x = 0; x < p->output.w; ++x, out += c_out) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                int32_t kx0, kx1;
                mcu_tap_range(base_x, p->dilation_w, kw, in_w, &kx0, &kx1);
                if (rows_inside && p->dilation_w == 1 && kx0 == 0 && kx1 == kw) {
                    const int8_t *src = in_n + (base_y * in_w + base_x) * c_in;
                    for (int32_t ky = 0; ky < kh; ++ky, src += row_step) {
                        mcu_dsp_expand(src, seg, in_off, row + ky * seg4 / 2);
                    }
                } else if (c_in % 4 == 0) {
                    uint32_t *dst = row;
                    for (int32_t ky = 0; ky < kh; ++ky) {
                        const int32_t iy = base_y + ky * p->dilation_h;
                        const int inside = iy >= 0 && iy < in_h;
                        const int32_t lo = inside ? kx0 : kw, hi = inside ? kx1 : kw;
                        const int32_t first = (iy * in_w + base_x + lo * p->dilation_w) * c_in; /* tap lo */
                        mcu_zero_u32(dst, lo * c_in / 2);
                        dst += lo * c_in / 2;
                        for (int32_t kx = lo; kx < hi; ++kx, dst += c_in / 2) {
                            mcu_dsp_expand(in_n + first + (kx - lo) * p->dilation_w * c_in, c_in, in_off, dst);
                        }
                        mcu_zero_u32(dst, (kw - hi) * c_in / 2);
                        dst += (kw - hi) * c_in / 2;
                    }
                } else {
                    mcu_im2col_rows_s8(p, in_n, y, x, zero_point, seg4, window);
                    mcu_dsp_expand(window, kh * seg4, in_off, row);
                }
                mcu_dsp_gemm_row(row, groups, filter, bias, quant->multiplier, c_out, &mode, out);
            }
        }
    }
    return MCU_OK;
}
