/* Helium (MVE) int8 depthwise convolution, any window, stride and dilation, channel multiplier 1: 8 channels per
 * vector (VLDRB.S16 widens as it loads; VMULLB/VMULLT into even and odd int32 lanes), 2 output pixels per weight
 * load. */
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
    const int32_t dh = p->dilation_h, dw = p->dilation_w, cs = dw * c, ps = p->stride_w * c, out_w = p->output.w;
    /* the output columns whose windows lie inside the input's width: [x0, x1) */
    int32_t x0 = (p->pad_left + p->stride_w - 1) / p->stride_w, x1 = 0;
    if (in_w - 1 - (kw - 1) * dw + p->pad_left >= 0) {
        x1 = (in_w - 1 - (kw - 1) * dw + p->pad_left) / p->stride_w + 1;
    }
    x1 = x1 < out_w ? x1 : out_w;
    x0 = x0 < x1 ? x0 : x1;
    int8_t *out_row = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, out_row += out_w * c) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            int32_t x = x0;
            for (; x + 2 <= x1; x += 2) { /* 2 inside pixels: each weight vector meets 2 input vectors */
                const int32_t base_x = x * p->stride_w - p->pad_left;
                int8_t *out = out_row + x * c;
                for (int32_t ch = 0; ch < c; ch += 8) {
                    const mve_pred16_t pr = vctp16q((uint32_t)(c - ch));
                    const int32x4_t be = vldrwq_s32(bias + ch), bo = vldrwq_s32(bias + ch + 4);
                    acc8_t a0 = {be, bo}, a1 = {be, bo};
                    const int8_t *w = filter + ch * taps;
                    for (int32_t ky = 0; ky < kh; ++ky) {
                        const int32_t iy = base_y + ky * dh;
                        const int row_ok = iy >= 0 && iy < in_h;
                        const int32_t step = row_ok ? cs : 0;
                        const int8_t *r0 = row_ok ? in_n + (iy * in_w + base_x) * c + ch : pad + ch;
                        const int8_t *r1 = r0 + (row_ok ? ps : 0);
                        for (int32_t kx = 0; kx < kw; ++kx, w += 8, r0 += step, r1 += step) {
                            const int16x8_t wv = vldrbq_s16(w);
                            mac8(&a0, vldrbq_z_s16(r0, pr), wv);
                            mac8(&a1, vldrbq_z_s16(r1, pr), wv);
                        }
                    }
                    out8(a0, quant->multiplier + ch, quant->shift + ch, down, p, pr, out + ch);
                    out8(a1, quant->multiplier + ch, quant->shift + ch, down, p, pr, out + c + ch);
                }
            }
            for (int32_t xi = 0; xi < out_w; ++xi) { /* the rest one at a time, padded taps reading pad */
                if (xi >= x0 && xi < x) {
                    continue;
                }
                const int32_t base_x = xi * p->stride_w - p->pad_left;
                for (int32_t ch = 0; ch < c; ch += 8) {
                    const mve_pred16_t pr = vctp16q((uint32_t)(c - ch));
                    acc8_t a = {vldrwq_s32(bias + ch), vldrwq_s32(bias + ch + 4)};
                    const int8_t *w = filter + ch * taps;
                    for (int32_t ky = 0; ky < kh; ++ky) {
                        const int32_t iy = base_y + ky * dh;
                        const int row_ok = iy >= 0 && iy < in_h;
                        for (int32_t kx = 0; kx < kw; ++kx, w += 8) {
                            const int32_t ix = base_x + kx * dw;
                            const int8_t *src = row_ok && ix >= 0 && ix < in_w ? in_n + (iy * in_w + ix) * c : pad;
                            mac8(&a, vldrbq_z_s16(src + ch, pr), vldrbq_s16(w));
                        }
                    }
                    out8(a, quant->multiplier + ch, quant->shift + ch, down, p, pr, out_row + xi * c + ch);
                }
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)scratch, (void)output;
    return MCU_ERR_ARG;
#endif
}
