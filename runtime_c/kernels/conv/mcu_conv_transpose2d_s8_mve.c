/* Helium int8 transposed convolution (groups 1), gather form as mcu_conv_transpose2d_s8. */
/* Per output pixel and 4 channels, each real tap's C_in products as 16-lane VMLADAVA (input offset through the
 * weights' sums, VADDVA), the 4 sums requantized as one vector (the last 1..3 channels' sums one at a time). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* Channels co.. (predicate pc) of output pixel out: bias added, requantized, offset, clamped, stored. */
MCU_INLINE void mcu_convt_out4_mve(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant,
                                   const int32_t *bias, int32x4_t acc, int32_t co, mve_pred16_t pc, int8_t *out)
{
    if (bias != NULL) {
        acc = vaddq_s32(acc, vldrwq_z_s32(bias + co, pc));
    }
    const int32x4_t r = mcu_mve_requantize(acc, vldrwq_z_s32(quant->multiplier + co, pc),
                                           vldrwq_z_s32(quant->shift + co, pc));
    const int32x4_t y = vminq_s32(vmaxq_s32(vaddq_n_s32(r, p->output_offset), vdupq_n_s32(p->act_min)),
                                  vdupq_n_s32(p->act_max));
    vstrbq_p_s32(out + co, y, pc);
}
#endif

mcu_status_t mcu_conv_transpose2d_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                         const int8_t *input, const int8_t *filter, const int32_t *bias,
                                         int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    const mcu_status_t status = mcu_convt_variant_check(p, quant, input, filter, output);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, c_out = p->output.c;
    const int32_t kh = p->filter.h, kw = p->filter.w, sh = p->stride_h, sw = p->stride_w;
    const int32_t in_off = p->input_offset, w_chan = kh * kw * c_in;
    const int32_t os = p->output_pixel_stride > 0 ? p->output_pixel_stride : c_out;
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c_in;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const mcu_convt_span_t sy = mcu_convt_span(y, p->pad_top, sh, kh, in_h);
            for (int32_t x = 0; x < p->output.w; ++x, out += os) {
                const mcu_convt_span_t sx = mcu_convt_span(x, p->pad_left, sw, kw, in_w);
                int32_t co = 0;
                for (; co + 4 <= c_out; co += 4) {
                    const int8_t *w0 = filter + co * w_chan;
                    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                    for (int32_t ky = sy.k0, iy = sy.i0; ky < sy.k1; ky += sh, --iy) {
                        for (int32_t kx = sx.k0, ix = sx.i0; kx < sx.k1; kx += sw, --ix) {
                            const int8_t *x_t = in_n + (iy * in_w + ix) * c_in;
                            const int8_t *w_t = w0 + (ky * kw + kx) * c_in;
                            for (int32_t ci = 0; ci < c_in; ci += 16) {
                                const mve_pred16_t pr = vctp8q((uint32_t)(c_in - ci));
                                const int8x16_t xv = vldrbq_z_s8(x_t + ci, pr);
                                const int8x16_t v0 = vldrbq_z_s8(w_t + ci, pr);
                                const int8x16_t v1 = vldrbq_z_s8(w_t + w_chan + ci, pr);
                                const int8x16_t v2 = vldrbq_z_s8(w_t + 2 * w_chan + ci, pr);
                                const int8x16_t v3 = vldrbq_z_s8(w_t + 3 * w_chan + ci, pr);
                                a0 = vmladavaq_s8(a0, xv, v0), s0 = vaddvaq_s8(s0, v0);
                                a1 = vmladavaq_s8(a1, xv, v1), s1 = vaddvaq_s8(s1, v1);
                                a2 = vmladavaq_s8(a2, xv, v2), s2 = vaddvaq_s8(s2, v2);
                                a3 = vmladavaq_s8(a3, xv, v3), s3 = vaddvaq_s8(s3, v3);
                            }
                        }
                    }
                    /* sum (x + in_off) w = sum x w + in_off sum w */
                    const int32_t acc4[4] = {a0 + in_off * s0, a1 + in_off * s1, a2 + in_off * s2, a3 + in_off * s3};
                    mcu_convt_out4_mve(p, quant, bias, vldrwq_s32(acc4), co, vctp32q(4), out);
                }
                if (co < c_out) { /* the last 1..3 channels, their dot products one at a time */
                    int32_t acc4[4] = {0, 0, 0, 0};
                    for (int32_t j = 0; co + j < c_out; ++j) {
                        const int8_t *w0 = filter + (co + j) * w_chan;
                        int32_t a = 0, s_w = 0;
                        for (int32_t ky = sy.k0, iy = sy.i0; ky < sy.k1; ky += sh, --iy) {
                            for (int32_t kx = sx.k0, ix = sx.i0; kx < sx.k1; kx += sw, --ix) {
                                const int8_t *x_t = in_n + (iy * in_w + ix) * c_in;
                                const int8_t *w_t = w0 + (ky * kw + kx) * c_in;
                                for (int32_t ci = 0; ci < c_in; ci += 16) {
                                    const mve_pred16_t pr = vctp8q((uint32_t)(c_in - ci));
                                    const int8x16_t v = vldrbq_z_s8(w_t + ci, pr);
                                    a = vmladavaq_s8(a, vldrbq_z_s8(x_t + ci, pr), v), s_w = vaddvaq_s8(s_w, v);
                                }
                            }
                        }
                        acc4[j] = a + in_off * s_w;
                    }
                    mcu_convt_out4_mve(p, quant, bias, vldrwq_s32(acc4), co, vctp32q((uint32_t)(c_out - co)), out);
                }
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)output;
    return MCU_ERR_ARG;
#endif
}
