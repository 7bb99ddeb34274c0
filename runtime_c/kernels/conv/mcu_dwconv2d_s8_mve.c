/* Helium (MVE) int8 depthwise convolution, any window, stride and dilation, channel multiplier 1: 4 channels per
 * vector in int32 lanes (VLDRB.S32 widens as it loads, VMLA accumulates), 4 output pixels per weight load. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* Requantize, offset, clamp and store the channels of predicate pr. */
MCU_INLINE void out4(int32x4_t acc, int32x4_t m, int32x4_t sh, int down, const mcu_conv2d_params_t *p,
                     mve_pred16_t pr, int8_t *out)
{
    int32x4_t y = down ? vrshlq_s32(vqdmulhq_s32(acc, m), sh) : mcu_mve_requantize(acc, m, sh);
    y = vminq_s32(vmaxq_s32(vaddq_n_s32(y, p->output_offset), vdupq_n_s32(p->act_min)), vdupq_n_s32(p->act_max));
    vstrbq_p_s32(out, y, pr);
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
    if (mcu_quant_check(quant, c) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    int down = 1; /* every shift < 0: VQDMULH then a rounding shift is mcu_requantize exactly */
    for (int32_t ch = 0; ch < c; ++ch) {
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
            for (; x + 4 <= x1; x += 4) { /* 4 inside pixels: each weight vector meets 4 input vectors */
                const int32_t base_x = x * p->stride_w - p->pad_left;
                int8_t *out = out_row + x * c;
                for (int32_t ch = 0; ch < c; ch += 4) {
                    const mve_pred16_t pr = vctp32q((uint32_t)(c - ch));
                    int32x4_t a0 = vldrwq_z_s32(bias + ch, pr), a1 = a0, a2 = a0, a3 = a0;
                    const int8_t *w = filter + ch;
                    for (int32_t ky = 0; ky < kh; ++ky) {
                        const int32_t iy = base_y + ky * dh;
                        const int row_ok = iy >= 0 && iy < in_h;
                        const int32_t step = row_ok ? cs : 0, pstep = row_ok ? ps : 0;
                        const int8_t *r0 = row_ok ? in_n + (iy * in_w + base_x) * c + ch : pad + ch;
                        const int8_t *r1 = r0 + pstep, *r2 = r1 + pstep, *r3 = r2 + pstep;
                        for (int32_t kx = 0; kx < kw; ++kx, w += c) {
                            const int32x4_t wv = vldrbq_z_s32(w, pr);
                            a0 = vmlaq_s32(a0, vldrbq_z_s32(r0, pr), wv);
                            a1 = vmlaq_s32(a1, vldrbq_z_s32(r1, pr), wv);
                            a2 = vmlaq_s32(a2, vldrbq_z_s32(r2, pr), wv);
                            a3 = vmlaq_s32(a3, vldrbq_z_s32(r3, pr), wv);
                            r0 += step, r1 += step, r2 += step, r3 += step;
                        }
                    }
                    const int32x4_t m = vldrwq_z_s32(quant->multiplier + ch, pr);
                    const int32x4_t sh = vldrwq_z_s32(quant->shift + ch, pr);
                    out4(a0, m, sh, down, p, pr, out + ch);
                    out4(a1, m, sh, down, p, pr, out + c + ch);
                    out4(a2, m, sh, down, p, pr, out + 2 * c + ch);
                    out4(a3, m, sh, down, p, pr, out + 3 * c + ch);
                }
            }
            for (int32_t xi = 0; xi < out_w; ++xi) { /* the rest one at a time, padded taps reading pad */
                if (xi >= x0 && xi < x) {
                    continue;
                }
                const int32_t base_x = xi * p->stride_w - p->pad_left;
                for (int32_t ch = 0; ch < c; ch += 4) {
                    const mve_pred16_t pr = vctp32q((uint32_t)(c - ch));
                    int32x4_t a = vldrwq_z_s32(bias + ch, pr);
                    const int8_t *w = filter + ch;
                    for (int32_t ky = 0; ky < kh; ++ky) {
                        const int32_t iy = base_y + ky * dh;
                        const int row_ok = iy >= 0 && iy < in_h;
                        for (int32_t kx = 0; kx < kw; ++kx, w += c) {
                            const int32_t ix = base_x + kx * dw;
                            const int8_t *src = row_ok && ix >= 0 && ix < in_w ? in_n + (iy * in_w + ix) * c : pad;
                            a = vmlaq_s32(a, vldrbq_z_s32(src + ch, pr), vldrbq_z_s32(w, pr));
                        }
                    }
                    out4(a, vldrwq_z_s32(quant->multiplier + ch, pr), vldrwq_z_s32(quant->shift + ch, pr), down,
                         p, pr, out_row + xi * c + ch);
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
