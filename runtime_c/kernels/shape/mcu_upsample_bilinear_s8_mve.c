/* Helium int8 bilinear resampling: mcu_upsample_bilinear_s8's arithmetic on 4 channels a vector (int32 lanes). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_upsample_bilinear_s8_mve(const mcu_upsample_bilinear_params_t *params, const int16_t *y_taps,
                                          const int16_t *x_taps, const int8_t *input, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_upsample_bilinear_params_t *p = params;
    if (p == NULL || y_taps == NULL || x_taps == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!mcu_dims_ok(&p->input) || !mcu_dims_ok(&p->output) || p->multiplier < 0 || p->shift < -31 ||
        p->shift > 30 || !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (p->input.n != p->output.n || p->input.c != p->output.c ||
        !mcu_bilinear_taps_ok(y_taps, p->output.h, p->input.h) ||
        !mcu_bilinear_taps_ok(x_taps, p->output.w, p->input.w)) {
        return MCU_ERR_SHAPE;
    }
    const int32_t in_h = p->input.h, in_w = p->input.w, c = p->input.c, bits = MCU_BILINEAR_BITS;
    const int32_t one = 1 << bits, base = p->input_offset * (one * one);
    /* equal scales (multiplier 2^30, shift -21): one rounding shift by 22, the offsets added before it */
    const int equal = p->multiplier == (1 << 30) && p->shift == 1 - 2 * bits;
    const int32_t round = (1 << (2 * bits - 1)) + (p->input_offset + p->output_offset) * (one * one);
    const int32x4_t vmin = vdupq_n_s32(p->act_min), vmax = vdupq_n_s32(p->act_max);
    const int32x4_t mult = vdupq_n_s32(p->multiplier), shift = vdupq_n_s32(p->shift);
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int16_t *ty = y_taps + 3 * y;
            const int32_t wy = ty[2], rows = (ty[1] - ty[0]) * in_w * c;
            const int8_t *row0 = in_n + ty[0] * in_w * c;
            for (int32_t x = 0; x < p->output.w; ++x, out += c) {
                const int16_t *tx = x_taps + 3 * x;
                const int32_t wx = tx[2];
                const int8_t *a = row0 + tx[0] * c, *b = row0 + tx[1] * c;
                for (int32_t ch = 0; ch < c; ch += 4) {
                    const mve_pred16_t pr = vctp32q((uint32_t)(c - ch));
                    const int32x4_t va = vldrbq_z_s32(a + ch, pr), vb = vldrbq_z_s32(b + ch, pr);
                    const int32x4_t vd = vldrbq_z_s32(a + rows + ch, pr), ve = vldrbq_z_s32(b + rows + ch, pr);
                    const int32x4_t top = vmlaq_n_s32(vshlq_n_s32(va, MCU_BILINEAR_BITS), vsubq_s32(vb, va), wx);
                    const int32x4_t bottom = vmlaq_n_s32(vshlq_n_s32(vd, MCU_BILINEAR_BITS), vsubq_s32(ve, vd), wx);
                    const int32x4_t raw = vmlaq_n_s32(vshlq_n_s32(top, MCU_BILINEAR_BITS), vsubq_s32(bottom, top), wy);
                    int32x4_t r;
                    if (equal) {
                        r = vshrq_n_s32(vaddq_n_s32(raw, round), 2 * MCU_BILINEAR_BITS);
                    } else {
                        r = vaddq_n_s32(mcu_mve_requantize(vaddq_n_s32(raw, base), mult, shift), p->output_offset);
                    }
                    vstrbq_p_s32(out + ch, vminq_s32(vmaxq_s32(r, vmin), vmax), pr);
                }
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)y_taps, (void)x_taps, (void)input, (void)output;
    return MCU_ERR_ARG;
#endif
}
