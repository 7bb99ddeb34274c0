/* Reference int16-activation 2-d convolution, any groups: NHWC int16 input, OHWI int8 filter, int64 accumulator. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_conv2d_s16(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
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
    const int32_t c_in = p->input.c, c_group = p->filter.c, c_out = p->output.c;
    if (p->output.n != p->input.n || c_out != p->filter.n || c_in % c_group != 0 || c_out % (c_in / c_group) != 0) {
        return MCU_ERR_SHAPE;
    }
    if (!mcu_quant_ok(quant, c_out)) {
        return MCU_ERR_ARG;
    }

    const int32_t out_per_group = c_out / (c_in / c_group);
    const int32_t in_h = p->input.h, in_w = p->input.w;
    const int32_t kh = p->filter.h, kw = p->filter.w;
    const int32_t dh = p->dilation_h, dw = p->dilation_w;
    const int32_t filter_size = kh * kw * c_group;
    const int32_t in_row_step = dh * in_w * c_in, in_col_step = dw * c_in;
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
                /* Offsets into in_n / the filter row; only in-range taps are ever read. */
                const int32_t in_win = ((base_y + ky0 * dh) * in_w + base_x + kx0 * dw) * c_in;
                const int32_t w_win = (ky0 * kw + kx0) * c_group;
                for (int32_t co = 0; co < c_out; ++co) {
                    const int8_t *w_co = filter + co * filter_size;
                    int64_t acc = bias != NULL ? bias[co] : 0;
                    int32_t in_row = in_win + (co / out_per_group) * c_group, w_row = w_win;
                    for (int32_t ky = ky0; ky < ky1; ++ky) {
                        int32_t in_px = in_row, w_px = w_row;
                        for (int32_t kx = kx0; kx < kx1; ++kx) {
                            for (int32_t ci = 0; ci < c_group; ++ci) {
                                acc += (int32_t)in_n[in_px + ci] * (int32_t)w_co[w_px + ci];
                            }
                            in_px += in_col_step;
                            w_px += c_group;
                        }
                        in_row += in_row_step;
                        w_row += kw * c_group;
                    }
                    const int32_t r = mcu_requantize64(acc, quant->multiplier[co], quant->shift[co]);
                    *out++ = (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
                }
            }
        }
    }
    return MCU_OK;
}
