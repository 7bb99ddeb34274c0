/* Int8 depthwise 2-d convolution (channel multiplier 1, stride 1) that may run in place: a ring of delayed outputs. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

static int same_dims(const mcu_dims_t *a, const mcu_dims_t *b)
{
    return a->n == b->n && a->h == b->h && a->w == b->w && a->c == b->c;
}

mcu_status_t mcu_dwconv2d_s8_inplace(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int8_t *input, const int8_t *filter, const int32_t *bias,
                                     int8_t *scratch, int8_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || scratch == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv2d_params_t *p = params;
    if (!mcu_window_ok(&p->input, &p->output, p->stride_h, p->stride_w, p->dilation_h, p->dilation_w, p->pad_top,
                       p->pad_left) || !mcu_dims_ok(&p->filter) ||
        !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max) ||
        !mcu_pixel_stride_contiguous(p->output_pixel_stride, p->output.c)) {
        return MCU_ERR_ARG;
    }
    if (!same_dims(&p->output, &p->input) || p->filter.n != 1 || p->filter.c != p->output.c || p->stride_h != 1 ||
        p->stride_w != 1) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c = p->output.c;
    for (int32_t co = 0; co < c; ++co) {
        if (quant->multiplier[co] < 0 || quant->shift[co] < -31 || quant->shift[co] > 30) {
            return MCU_ERR_ARG;
        }
    }

    const int32_t in_h = p->input.h, in_w = p->input.w;
    const int32_t kh = p->filter.h, kw = p->filter.w;
    const int32_t dh = p->dilation_h, dw = p->dilation_w;
    const int32_t in_off = p->input_offset;
    const int32_t in_row_step = dh * in_w * c, in_col_step = dw * c;
    const int32_t w_row_step = kw * c;
    /* Pixel q (flattened n, y, x) reads no input pixel before q - delay, so output pixel q - delay may replace
     * input pixel q - delay channel by channel once pixel q has read it. Until then outputs wait in the ring. */
    const int32_t delay = mcu_dwconv2d_s8_inplace_scratch_bytes(p) / c;
    const int32_t pixels = p->output.n * p->output.h * p->output.w;
    int32_t q = 0, slot = 0; /* slot = q % delay */

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y - p->pad_top;
            int32_t ky0, ky1;
            mcu_tap_range(base_y, dh, kh, in_h, &ky0, &ky1);
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int32_t base_x = x - p->pad_left;
                int32_t kx0, kx1;
                mcu_tap_range(base_x, dw, kw, in_w, &kx0, &kx1);
                const int32_t in_win = ((base_y + ky0 * dh) * in_w + base_x + kx0 * dw) * c;
                const int32_t w_win = (ky0 * kw + kx0) * c;
                int8_t *ring = scratch + slot * c;
                int8_t *flush = q >= delay ? output + (q - delay) * c : NULL;
                for (int32_t ch = 0; ch < c; ++ch) {
                    int32_t acc = bias != NULL ? bias[ch] : 0;
                    int32_t in_row = in_win + ch, w_row = w_win + ch;
                    for (int32_t ky = ky0; ky < ky1; ++ky) {
                        int32_t in_px = in_row, w_px = w_row;
                        for (int32_t kx = kx0; kx < kx1; ++kx) {
                            acc += ((int32_t)in_n[in_px] + in_off) * (int32_t)filter[w_px];
                            in_px += in_col_step;
                            w_px += c;
                        }
                        in_row += in_row_step;
                        w_row += w_row_step;
                    }
                    acc = mcu_requantize(acc, quant->multiplier[ch], quant->shift[ch]);
                    acc = mcu_add_offset(acc, p->output_offset);
                    if (flush != NULL) {
                        flush[ch] = ring[ch]; /* the last read of input (q - delay, ch) was just above */
                    }
                    ring[ch] = (int8_t)mcu_clamp_i32(acc, p->act_min, p->act_max);
                }
                ++q;
                slot = slot + 1 == delay ? 0 : slot + 1;
            }
        }
    }
    /* The last min(delay, pixels) outputs are still in the ring; slot is where the oldest of them sits. */
    int32_t first = pixels - delay;
    if (first < 0) {
        first = 0;
        slot = 0;
    }
    for (int32_t r = first; r < pixels; ++r) {
        const int8_t *ring = scratch + slot * c;
        int8_t *out = output + r * c;
        for (int32_t ch = 0; ch < c; ++ch) {
            out[ch] = ring[ch];
        }
        slot = slot + 1 == delay ? 0 : slot + 1;
    }
    return MCU_OK;
}
