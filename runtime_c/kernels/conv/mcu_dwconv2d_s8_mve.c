/* Helium (MVE) int8 depthwise convolution, any window, stride and dilation, channel multiplier 1. */

/*  - 8 channels per vector (VLDRB.S16 widens as it loads; VMULLB/VMULLT into even and odd int32 lanes), 2 output
 *    pixels per weight load.
 *  - Why 8 channels and not 16: Helium has no per-lane integer multiply-accumulate of two vectors (VMLA takes a
 *    scalar, VMLADAV sums across lanes), and int8 products summed in int16 lanes overflow after two taps; so a
 *    tap of 8 channels is one widening load, two VMULL and two VADD into int32, 4 channels a VMULL.
 *  - Per tap of a pair of pixels: the weight load, two input loads, four VMULL, four VADD, two pointer steps
 *    (VLDR has no register offset): 13 instructions for 16 MACs before the row, requantization and loop costs.
 */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
typedef struct {
    int32x4_t e, o; /* channels 0, 2, 4, 6 and 1, 3, 5, 7 of a group */
} acc8_t;

MCU_INLINE void mac8(acc8_t *a, int16x8_t x, int16x8_t w)
{
    a->e = vaddq_s32(a->e, vmullbq_int_s16(x, w));
    a->o = vaddq_s32(a->o, vmulltq_int_s16(x, w));
}

/* Requantize (lane-ordered params at q + 0, + 4), offset, clamp, interleave back and store the channels of pr. */
MCU_INLINE void out8(acc8_t a, const int32_t *m, const int32_t *sh, int down, const mcu_conv2d_params_t *p,
                     mve_pred16_t pr, int8_t *out)
{
    const int32x4_t me = vldrwq_s32(m), mo = vldrwq_s32(m + 4), se = vldrwq_s32(sh), so = vldrwq_s32(sh + 4);
    int32x4_t ye = down ? vrshlq_s32(vqdmulhq_s32(a.e, me), se) : mcu_mve_requantize(a.e, me, se);
    int32x4_t yo = down ? vrshlq_s32(vqdmulhq_s32(a.o, mo), so) : mcu_mve_requantize(a.o, mo, so);
    const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);
    ye = vminq_s32(vmaxq_s32(vaddq_n_s32(ye, p->output_offset), lo), hi);
    yo = vminq_s32(vmaxq_s32(vaddq_n_s32(yo, p->output_offset), lo), hi);
    int16x8_t y = vdupq_n_s16(0);
    y = vmovntq_s32(vmovnbq_s32(y, ye), yo);
    vstrbq_p_s16(out, y, pr);
}

/* One row of taps of 2 pixels ps bytes apart: n taps from x, step bytes apart (step 0, ps 0: a padded row reading
 * the zero point), weights from w; a0, a1 += products. tail: the last, partial group (loads predicated by pr). */
MCU_INLINE void pair_row(const int8_t *x, int32_t ps, int32_t step, int32_t n, const int8_t *w, mve_pred16_t pr,
                         const int tail, acc8_t *a0, acc8_t *a1)
{
    const int8_t *x1 = x + ps;
    for (int32_t t = 0; t < n; ++t, w += 8, x += step, x1 += step) {
        const int16x8_t wv = vldrbq_s16(w);
        mac8(a0, tail ? vldrbq_z_s16(x, pr) : vldrbq_s16(x), wv);
        mac8(a1, tail ? vldrbq_z_s16(x1, pr) : vldrbq_s16(x1), wv);
    }
}

/* One row of taps of one pixel (as pair_row). */
MCU_INLINE void one_row(const int8_t *x, int32_t step, int32_t n, const int8_t *w, mve_pred16_t pr, const int tail,
                        acc8_t *a)
{
    for (int32_t t = 0; t < n; ++t, w += 8, x += step) {
        mac8(a, tail ? vldrbq_z_s16(x, pr) : vldrbq_s16(x), vldrbq_s16(w));
    }
}

/* A pair of pixels whose columns lie inside the input, one group (channels ch..ch+7) from weights w: window rows
 * [0, ky0) and [ky1, KH) in the padding (reading the zero point), [ky0, ky1) from x on, row_bytes apart. */
MCU_INLINE void pair_group(const int8_t *x, const int8_t *pad, int32_t row_bytes, int32_t ky0, int32_t ky1,
                           int32_t kh, int32_t kw, int32_t cs, int32_t ps, const int8_t *w, mve_pred16_t pr,
                           const int tail, acc8_t *a0, acc8_t *a1)
{
    int32_t ky = 0;
    for (; ky < ky0; ++ky, w += 8 * kw) {
        pair_row(pad, 0, 0, kw, w, pr, tail, a0, a1);
    }
    for (; ky < ky1; ++ky, w += 8 * kw, x += row_bytes) {
        pair_row(x, ps, cs, kw, w, pr, tail, a0, a1);
    }
    for (; ky < kh; ++ky, w += 8 * kw) {
        pair_row(pad, 0, 0, kw, w, pr, tail, a0, a1);
    }
}

/* One pixel, any window position, one group: window rows [ky0, ky1) inside the input from x on (x at column kx0
 * of row ky0), row_bytes apart, each in up to three runs: padding [0, kx0), inside [kx0, kx1), padding [kx1, KW);
 * the other rows padding. */
MCU_INLINE void one_group(const int8_t *x, const int8_t *pad, int32_t row_bytes, int32_t ky0, int32_t ky1,
                          int32_t kh, int32_t kw, int32_t kx0, int32_t kx1, int32_t cs, const int8_t *w,
                          mve_pred16_t pr, const int tail, acc8_t *a)
{
    int32_t ky = 0;
    for (; ky < ky0; ++ky, w += 8 * kw) {
        one_row(pad, 0, kw, w, pr, tail, a);
    }
    for (; ky < ky1; ++ky, w += 8 * kw, x += row_bytes) {
        if (kx0 > 0) {
            one_row(pad, 0, kx0, w, pr, tail, a);
        }
        one_row(x, cs, kx1 - kx0, w + 8 * kx0, pr, tail, a);
        if (kx1 < kw) {
            one_row(pad, 0, kw - kx1, w + 8 * kx1, pr, tail, a);
        }
    }
    for (; ky < kh; ++ky, w += 8 * kw) {
        one_row(pad, 0, kw, w, pr, tail, a);
    }
}
#endif

mcu_status_t mcu_dwconv2d_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                 const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                                 int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_dw_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c = p->input.c, in_h = p->input.h, in_w = p->input.w, kh = p->filter.h, kw = p->filter.w;
    if (mcu_quant_check(quant, (c + 7) & ~7) != MCU_OK) { /* lane order permutes channels, not values */
        return MCU_ERR_ARG;
    }
    const int32_t c8 = (c + 7) & ~7, taps = kh * kw;
    int down = 1; /* every shift < 0: VQDMULH then a rounding shift is mcu_requantize exactly */
    for (int32_t ch = 0; ch < c8; ++ch) {
        down = down && quant->shift[ch] < 0;
    }
    int8_t *pad = scratch; /* C bytes: a padded tap reads the zero point (the bias is folded) */
    mcu_fill_s8(pad, (int8_t)(-p->input_offset), c);
    const int32_t dw = p->dilation_w, out_w = p->output.w, cs = dw * c, ps = p->stride_w * c;
    const int32_t row_bytes = p->dilation_h * in_w * c;
    /* the output columns whose windows lie inside the input's width: [x0, x1) */
    int32_t x0 = (p->pad_left + p->stride_w - 1) / p->stride_w, x1 = 0;
    if (in_w - 1 - (kw - 1) * dw + p->pad_left >= 0) {
        x1 = (in_w - 1 - (kw - 1) * dw + p->pad_left) / p->stride_w + 1;
    }
    x1 = x1 < out_w ? x1 : out_w;
    x0 = x0 < x1 ? x0 : x1;
    mcu_dw_rows_t rows = mcu_dw_rows_open(p, input, output, scratch + c); /* in place: a ring of rows */
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, mcu_dw_rows_next(&rows)) {
            int8_t *out_row = mcu_dw_rows_out(&rows);
            const int32_t base_y = y * p->stride_h - p->pad_top;
            int32_t x = x0;
            int32_t ky0, ky1; /* the window rows inside the input */
            mcu_tap_range(base_y, p->dilation_h, kh, in_h, &ky0, &ky1);
            const int8_t *row0 = ky1 > ky0 ? in_n + (base_y + ky0 * p->dilation_h) * in_w * c : pad;
            const int32_t npairs = (x1 - x0) / 2; /* pairs of pixels inside the width, a group at a time */
            for (int32_t ch = 0; ch < c && npairs > 0; ch += 8) {
                const mve_pred16_t pr = vctp16q((uint32_t)(c - ch));
                const int tail = ch + 8 > c;
                const int32_t *bq = bias + ch, *mq = quant->multiplier + ch, *sq = quant->shift + ch;
                const int8_t *w = filter + ch * taps;
                const int8_t *win = row0 + (x0 * p->stride_w - p->pad_left) * c + ch;
                int8_t *out = out_row + x0 * c + ch;
                for (int32_t i = 0; i < npairs; ++i, win += 2 * ps, out += 2 * c) {
                    const int32x4_t be = vldrwq_s32(bq), bo = vldrwq_s32(bq + 4);
                    acc8_t a0 = {be, bo}, a1 = {be, bo};
                    if (tail) {
                        pair_group(win, pad + ch, row_bytes, ky0, ky1, kh, kw, cs, ps, w, pr, 1, &a0, &a1);
                    } else {
                        pair_group(win, pad + ch, row_bytes, ky0, ky1, kh, kw, cs, ps, w, pr, 0, &a0, &a1);
                    }
                    out8(a0, mq, sq, down, p, pr, out);
                    out8(a1, mq, sq, down, p, pr, out + c);
                }
            }
            x = x0 + 2 * npairs;
            for (int32_t xi = 0; xi < out_w; ++xi) { /* the rest one at a time */
                if (xi >= x0 && xi < x) {
                    continue;
                }
                const int32_t base_x = xi * p->stride_w - p->pad_left;
                int32_t kx0, kx1;
                mcu_tap_range(base_x, dw, kw, in_w, &kx0, &kx1);
                const int inside = ky1 > ky0 && kx1 > kx0;
                const int8_t *win = inside ? row0 + (base_x + kx0 * dw) * c : pad;
                for (int32_t ch = 0; ch < c; ch += 8) {
                    const mve_pred16_t pr = vctp16q((uint32_t)(c - ch));
                    acc8_t a = {vldrwq_s32(bias + ch), vldrwq_s32(bias + ch + 4)};
                    const int8_t *w = filter + ch * taps;
                    if (ch + 8 <= c) {
                        one_group(win + ch, pad + ch, row_bytes, ky0, ky1, kh, kw, kx0, kx1, cs, w, pr, 0, &a);
                    } else {
                        one_group(win + ch, pad + ch, row_bytes, ky0, ky1, kh, kw, kx0, kx1, cs, w, pr, 1, &a);
                    }
                    out8(a, quant->multiplier + ch, quant->shift + ch, down, p, pr, out_row + xi * c + ch);
                }
            }
        }
    }
    mcu_dw_rows_close(&rows);
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)scratch, (void)output;
    return MCU_ERR_ARG;
#endif
}
