/* DSP int16-activation depthwise 2-d convolution (channel multiplier 1): 4 channels of SMLABB/SMLATT per tap. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt_s16.h"

/* The taps k in [lo, hi) of a window starting at o (step d) that land inside [0, size). */
static void valid_taps(int32_t o, int32_t d, int32_t taps, int32_t size, int32_t *lo, int32_t *hi)
{
    int32_t a = 0, b = taps;
    while (a < b && o + a * d < 0) {
        ++a;
    }
    while (b > a && o + (b - 1) * d >= size) {
        --b;
    }
    *lo = a;
    *hi = b;
}

mcu_status_t mcu_dwconv2d_s16_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                  const int16_t *input, const int8_t *filter, const int64_t *bias, int16_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv2d_params_t *p = params;
    if (!MCU_CONV_GEOMETRY_OK(p) || !mcu_io16_ok(p->input_offset, p->output_offset, p->act_min, p->act_max) ||
        !mcu_pixel_stride_contiguous(p->output_pixel_stride, p->output.c)) { /* variants write whole pixels */
        return MCU_ERR_ARG;
    }
    if (!mcu_dw_shape_ok(&p->input, &p->filter, &p->output) || p->output.c != p->input.c ||
        p->filter.h * p->filter.w > MCU_S16_DW_MAX_TAPS) {
        return MCU_ERR_SHAPE;
    }
    if (!mcu_quant_ok(quant, p->output.c)) {
        return MCU_ERR_ARG;
    }
    const int32_t c = p->input.c, ih = p->input.h, iw = p->input.w, kh = p->filter.h, kw = p->filter.w;
    const int32_t taps = kh * kw, stride = p->output_pixel_stride != 0 ? p->output_pixel_stride : c;
    const int32_t col_step = p->dilation_w * c, row_step = p->dilation_h * iw * c;
    const int32_t *mult = quant->multiplier, *shift = quant->shift;
    const uint32_t *wp = (const uint32_t *)(const void *)filter; /* [C2 / 2][taps] words (w_2j, w_2j+1) */
    int16_t *out = output;

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int16_t *in_n = input + n * ih * iw * c;
        for (int32_t oy = 0; oy < p->output.h; ++oy) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            int32_t ky0, ky1;
            valid_taps(y0, p->dilation_h, kh, ih, &ky0, &ky1);
            for (int32_t ox = 0; ox < p->output.w; ++ox, out += stride) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                int32_t kx0, kx1;
                valid_taps(x0, p->dilation_w, kw, iw, &kx0, &kx1);
                const int16_t *first = in_n + ((y0 + ky0 * p->dilation_h) * iw + x0 + kx0 * p->dilation_w) * c;
                const int32_t first_tap = ky0 * kw + kx0, cols = kx1 - kx0, rows = ky1 - ky0;
                int32_t ch = 0;
                for (; ch + 4 <= c; ch += 4) {
                    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
                    const uint32_t *w0 = wp + (ch / 2) * taps + first_tap;
                    for (int32_t r = 0; r < rows; ++r, w0 += kw) {
                        const int16_t *x = first + r * row_step + ch;
                        const uint32_t *wa = w0, *wb = w0 + taps;
                        for (int32_t j = 0; j < cols; ++j, x += col_step) {
                            const uint32_t xa = mcu_read_u32(x), xb = mcu_read_u32(x + 2), va = *wa++, vb = *wb++;
                            a0 = mcu_smlabb(xa, va, a0);
                            a1 = mcu_smlatt(xa, va, a1);
                            a2 = mcu_smlabb(xb, vb, a2);
                            a3 = mcu_smlatt(xb, vb, a3);
                        }
                    }
                    const int32_t a[4] = {a0, a1, a2, a3};
                    for (int32_t j = 0; j < 4; ++j) {
                        const int64_t acc = (int64_t)a[j] + (bias != NULL ? bias[ch + j] : 0);
                        out[ch + j] = mcu_s16_rq(acc, mult[ch + j], shift[ch + j], p->act_min, p->act_max);
                    }
                }
                for (; ch < c; ch += 2) { /* the last 2 or 1 channels; a lone one reads its own int16 only */
                    const int pair = ch + 1 < c;
                    int32_t a0 = 0, a1 = 0;
                    const uint32_t *w0 = wp + (ch / 2) * taps + first_tap;
                    for (int32_t r = 0; r < rows; ++r, w0 += kw) {
                        const int16_t *x = first + r * row_step + ch;
                        const uint32_t *wa = w0;
                        for (int32_t j = 0; j < cols; ++j, x += col_step) {
                            const uint32_t xa = pair ? mcu_read_u32(x) : (uint32_t)(uint16_t)x[0], va = *wa++;
                            a0 = mcu_smlabb(xa, va, a0);
                            a1 = mcu_smlatt(xa, va, a1);
                        }
                    }
                    out[ch] = mcu_s16_rq((int64_t)a0 + (bias != NULL ? bias[ch] : 0), mult[ch], shift[ch],
                                         p->act_min, p->act_max);
                    if (pair) {
                        out[ch + 1] = mcu_s16_rq((int64_t)a1 + (bias != NULL ? bias[ch + 1] : 0), mult[ch + 1],
                                                 shift[ch + 1], p->act_min, p->act_max);
                    }
                }
            }
        }
    }
    return MCU_OK;
}
