/* DSP int16-activation 2-d convolution (groups 1, any window): 2 pixels x 2 channels of SMLAD on int16 weights. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt_s16.h"

/* Taps [t, t + n) of one pixel's window from src (NULL: zeros) into the interleaved pair window: tap t of the
 * pixel at int16 index 4 (t / 2) + (t % 2) of win, win pointing at the pixel's first word. */
static void put_taps(int16_t *win, int32_t t, const int16_t *src, int32_t n)
{
    int32_t i = 0;
    if ((t & 1) != 0 && n > 0) {
        win[4 * (t >> 1) + 1] = src != NULL ? src[0] : 0;
        i = 1;
    }
    uint32_t *d = (uint32_t *)(void *)(win + 4 * ((t + i) >> 1));
    for (; i + 2 <= n; i += 2, d += 2) {
        uint32_t v = src != NULL ? mcu_read_u32(src + i) : 0u;
        MCU_OPAQUE(v);
        *d = v;
    }
    if (i < n) {
        *(int16_t *)(void *)d = src != NULL ? src[i] : 0;
    }
}

/* The window of output pixel q (raster order over N, H, W) as taps in OHWI order, padded taps and the tail
 * after K = KH * KW * C_in up to k4 zero, into the pair window's slot win (see put_taps). */
static void gather(const mcu_conv2d_params_t *p, const int16_t *input, int32_t q, int16_t *win, int32_t k4)
{
    const int32_t ih = p->input.h, iw = p->input.w, c = p->input.c, kw = p->filter.w;
    const int32_t per_image = p->output.h * p->output.w;
    const int32_t n = q / per_image, r = q - n * per_image;
    const int32_t oy = r / p->output.w, ox = r - oy * p->output.w;
    const int32_t y0 = oy * p->stride_h - p->pad_top, x0 = ox * p->stride_w - p->pad_left;
    const int16_t *in_n = input + n * ih * iw * c;
    int32_t t = 0;
    for (int32_t ky = 0; ky < p->filter.h; ++ky) {
        const int32_t iy = y0 + ky * p->dilation_h;
        if (iy < 0 || iy >= ih) {
            put_taps(win, t, NULL, kw * c);
            t += kw * c;
            continue;
        }
        const int16_t *row = in_n + iy * iw * c;
        for (int32_t kx = 0; kx < kw; ++kx, t += c) {
            const int32_t ix = x0 + kx * p->dilation_w;
            put_taps(win, t, ix < 0 || ix >= iw ? NULL : row + ix * c, c);
        }
    }
    put_taps(win, t, NULL, k4 - t);
}

mcu_status_t mcu_conv2d_s16_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                const int16_t *input, const int8_t *filter, const int64_t *bias, int8_t *scratch,
                                int16_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || scratch == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv2d_params_t *p = params;
    if (!MCU_CONV_GEOMETRY_OK(p) || !mcu_io16_ok(p->input_offset, p->output_offset, p->act_min, p->act_max) ||
        !mcu_pixel_stride_contiguous(p->output_pixel_stride, p->output.c)) { /* variants write whole pixels */
        return MCU_ERR_ARG;
    }
    if (!mcu_conv_groups_ok(&p->input, &p->filter, &p->output) || p->filter.c != p->input.c) {
        return MCU_ERR_SHAPE;
    }
    if (!mcu_quant_ok(quant, p->output.c)) {
        return MCU_ERR_ARG;
    }
    const int32_t c_out = p->output.c, k = p->filter.h * p->filter.w * p->filter.c, k4 = (k + 3) & ~3;
    const int32_t total = p->output.n * p->output.h * p->output.w;
    const int32_t stride = p->output_pixel_stride != 0 ? p->output_pixel_stride : c_out;
    const int32_t *mult = quant->multiplier, *shift = quant->shift;
    int16_t *win = (int16_t *)(void *)scratch; /* 2 * k4 int16: the pair's windows interleaved by word */

    for (int32_t q = 0; q < total; q += 2) {
        const int two = q + 1 < total; /* else the pair's second pixel repeats the first and is not stored */
        gather(p, input, q, win, k4);
        gather(p, input, two ? q + 1 : q, win + 2, k4);
        const uint32_t *w = (const uint32_t *)(const void *)filter;
        int16_t *o0 = output + q * stride, *o1 = o0 + stride;
        for (int32_t co = 0; co < c_out; co += 2, w += k4) {
            const int one = co + 1 >= c_out; /* the pair's second channel is padding */
            const int64_t b0 = bias != NULL ? bias[co] : 0, b1 = bias != NULL && !one ? bias[co + 1] : 0;
            int64_t acc[4] = {b0, b1, b0, b1};
            mcu_s16_dot_2x2((const uint32_t *)(const void *)win, w, k4 / 4, acc);
            o0[co] = mcu_s16_rq(acc[0], mult[co], shift[co], p->act_min, p->act_max);
            if (two) {
                o1[co] = mcu_s16_rq(acc[2], mult[co], shift[co], p->act_min, p->act_max);
            }
            if (!one) {
                o0[co + 1] = mcu_s16_rq(acc[1], mult[co + 1], shift[co + 1], p->act_min, p->act_max);
                if (two) {
                    o1[co + 1] = mcu_s16_rq(acc[3], mult[co + 1], shift[co + 1], p->act_min, p->act_max);
                }
            }
        }
    }
    return MCU_OK;
}
