/* Reference int16-activation depthwise 2-d convolution (channel multiplier >= 1), int64 accumulator. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_dwconv2d_s16(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                              const int16_t *input, const int8_t *filter, const int64_t *bias, int16_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv2d_params_t *p = params;
    if (!mcu_window_ok(&p->input, &p->output, p->stride_h, p->stride_w, p->dilation_h, p->dilation_w, p->pad_top,
                       p->pad_left) || !mcu_dims_ok(&p->filter) ||
        !mcu_io16_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (p->output.n != p->input.n || p->filter.n != 1 || p->filter.c != p->output.c ||
        p->output.c % p->input.c != 0) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c_out = p->output.c;
    if (!mcu_quant_ok(quant, c_out)) {
        return MCU_ERR_ARG;
    }

    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c;
    const int32_t ch_mult = c_out / c_in;
    const int32_t kh = p->filter.h, kw = p->filter.w;
    const int32_t dh = p->dilation_h, dw = p->dilation_w;
    const int32_t in_row_step = dh * in_w * c_in, in_col_step = dw * c_in;
    const int32_t w_row_step = kw * c_out;
    int16_t *out = output;

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int16_t *in_n = input + n * in_h * in_w * c_in;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            int32_t ky0, ky1;
            mcu_tap_range(base_y, dh, kh, in_h, &ky0, &ky1);
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                int32_t kx0, kx1;
                mcu_tap_range(base_x, dw, kw, in_w, &kx0, &kx1);
                /* Offsets into in_n / filter; only in-range taps are ever read. */
                const int32_t in_win = ((base_y + ky0 * dh) * in_w + base_x + kx0 * dw) * c_in;
                const int32_t w_win = (ky0 * kw + kx0) * c_out;
                for (int32_t ci = 0; ci < c_in; ++ci) {
                    for (int32_t m = 0; m < ch_mult; ++m) {
                        const int32_t co = ci * ch_mult + m;
                        int64_t acc = bias != NULL ? bias[co] : 0;
                        int32_t in_row = in_win + ci, w_row = w_win + co;
                        for (int32_t ky = ky0; ky < ky1; ++ky) {
                            int32_t in_px = in_row, w_px = w_row;
                            for (int32_t kx = kx0; kx < kx1; ++kx) {
                                acc += (int32_t)in_n[in_px] * (int32_t)filter[w_px];
                                in_px += in_col_step;
                                w_px += c_out;
                            }
                            in_row += in_row_step;
                            w_row += w_row_step;
                        }
                        const int32_t r = mcu_requantize64(acc, quant->multiplier[co], quant->shift[co]);
                        *out++ = (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
                    }
                }
            }
        }
    }
    return MCU_OK;
}
