/* DSP (SIMD32) int8 bilinear resampling for equal input and output scales: mcu_upsample_bilinear_s8's arithmetic
 * with each channel's two horizontal taps paired into one SMUAD against (2^11 - wx, wx), 4 channels a word. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* (lo16 a, lo16 b) and (hi16 a, hi16 b): the halfword pairs of lanes 0 and 1 of two SXTB16 results. */
MCU_INLINE uint32_t mcu_pair_lo(uint32_t a, uint32_t b)
{
    return (a & 0xFFFFu) | (b << 16);
}

MCU_INLINE uint32_t mcu_pair_hi(uint32_t a, uint32_t b)
{
    return (a >> 16) | (b & 0xFFFF0000u);
}

/* One output element from its taps' horizontal sums (2^-11 units): (wy0 top + wy1 bottom + round) >> 22, clamped;
 * full: the int8 range. */
MCU_INLINE int8_t mcu_bilinear_out(int32_t top, int32_t bottom, int32_t wy0, int32_t wy1, int32_t round, int32_t lo,
                                   int32_t hi, int full)
{
    const int32_t r = (top * wy0 + bottom * wy1 + round) >> (2 * MCU_BILINEAR_BITS);
    return (int8_t)(full ? mcu_sat8(r) : mcu_clamp_i32(r, lo, hi));
}

MCU_INLINE void mcu_bilinear_rows_dsp(const mcu_upsample_bilinear_params_t *p, const int16_t *y_taps,
                                      const int16_t *x_taps, const int8_t *input, int8_t *output, int full)
{
    const int32_t in_h = p->input.h, in_w = p->input.w, c = p->input.c, one = 1 << MCU_BILINEAR_BITS;
    const int32_t round = (1 << (2 * MCU_BILINEAR_BITS - 1)) + (p->input_offset + p->output_offset) * (one * one);
    const int32_t lo = p->act_min, hi = p->act_max;
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int16_t *ty = y_taps + 3 * y;
            const int32_t wy1 = ty[2], wy0 = one - wy1, rows = (ty[1] - ty[0]) * in_w * c;
            const int8_t *row0 = in_n + ty[0] * in_w * c;
            for (int32_t x = 0; x < p->output.w; ++x, out += c) {
                const int16_t *tx = x_taps + 3 * x;
                const uint32_t w = (uint32_t)(one - tx[2]) | ((uint32_t)tx[2] << 16); /* (wx0, wx1) */
                const int8_t *a = row0 + tx[0] * c, *b = row0 + tx[1] * c;
                int32_t ch = 0;
                for (; ch + 4 <= c; ch += 4) {
                    const uint32_t ua = mcu_read_u32(a + ch), ub = mcu_read_u32(b + ch);
                    const uint32_t ud = mcu_read_u32(a + rows + ch), ue = mcu_read_u32(b + rows + ch);
                    const uint32_t a02 = mcu_sxtb16(ua), a13 = mcu_sxtb16(mcu_ror8(ua));
                    const uint32_t b02 = mcu_sxtb16(ub), b13 = mcu_sxtb16(mcu_ror8(ub));
                    const uint32_t d02 = mcu_sxtb16(ud), d13 = mcu_sxtb16(mcu_ror8(ud));
                    const uint32_t e02 = mcu_sxtb16(ue), e13 = mcu_sxtb16(mcu_ror8(ue));
                    out[ch] = mcu_bilinear_out(mcu_smlad(mcu_pair_lo(a02, b02), w, 0),
                                               mcu_smlad(mcu_pair_lo(d02, e02), w, 0), wy0, wy1, round, lo, hi, full);
                    out[ch + 1] = mcu_bilinear_out(mcu_smlad(mcu_pair_lo(a13, b13), w, 0),
                                                   mcu_smlad(mcu_pair_lo(d13, e13), w, 0), wy0, wy1, round, lo, hi,
                                                   full);
                    out[ch + 2] = mcu_bilinear_out(mcu_smlad(mcu_pair_hi(a02, b02), w, 0),
                                                   mcu_smlad(mcu_pair_hi(d02, e02), w, 0), wy0, wy1, round, lo, hi,
                                                   full);
                    out[ch + 3] = mcu_bilinear_out(mcu_smlad(mcu_pair_hi(a13, b13), w, 0),
                                                   mcu_smlad(mcu_pair_hi(d13, e13), w, 0), wy0, wy1, round, lo, hi,
                                                   full);
                }
                for (; ch < c; ++ch) {
                    const int32_t wx1 = tx[2], wx0 = one - wx1;
                    out[ch] = mcu_bilinear_out(wx0 * a[ch] + wx1 * b[ch], wx0 * a[ch + rows] + wx1 * b[ch + rows],
                                               wy0, wy1, round, lo, hi, full);
                }
            }
        }
    }
}

mcu_status_t mcu_upsample_bilinear_s8_dsp(const mcu_upsample_bilinear_params_t *params, const int16_t *y_taps,
                                          const int16_t *x_taps, const int8_t *input, int8_t *output)
{
    const mcu_upsample_bilinear_params_t *p = params;
    if (p == NULL || y_taps == NULL || x_taps == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    /* equal scales only (multiplier 2^30, shift -21): the registry runs this variant there */
    if (!mcu_dims_ok(&p->input) || !mcu_dims_ok(&p->output) || p->multiplier != (1 << 30) ||
        p->shift != 1 - 2 * MCU_BILINEAR_BITS ||
        !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (p->input.n != p->output.n || p->input.c != p->output.c ||
        !mcu_bilinear_taps_ok(y_taps, p->output.h, p->input.h) ||
        !mcu_bilinear_taps_ok(x_taps, p->output.w, p->input.w)) {
        return MCU_ERR_SHAPE;
    }
    if (p->act_min == -128 && p->act_max == 127) {
        mcu_bilinear_rows_dsp(p, y_taps, x_taps, input, output, 1);
    } else {
        mcu_bilinear_rows_dsp(p, y_taps, x_taps, input, output, 0);
    }
    return MCU_OK;
}
