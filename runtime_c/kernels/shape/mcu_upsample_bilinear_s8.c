/* Reference int8 bilinear resampling (NHWC): 4 taps an output element, fixed-point weights from per-axis tables. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

/* The output; equal and full (constants in each call below): equal input and output scales (multiplier 2^30, shift
 * -21), where mcu_requantize is one rounding shift by 22 and, in_off 2^22 being a multiple of 2^22, the offsets add
 * after it: out = (raw + 2^21 + (in_off + out_off) 2^22) >> 22. */
MCU_INLINE void mcu_bilinear_rows(const mcu_upsample_bilinear_params_t *p, const int16_t *y_taps,
                                  const int16_t *x_taps, const int8_t *input, int8_t *output, int equal, int full)
{
    const int32_t in_h = p->input.h, in_w = p->input.w, c = p->input.c, one = 1 << MCU_BILINEAR_BITS;
    /* sum w (x + in_off) = sum w x + in_off 2^(2 BITS): the weights of an output sum to 2^(2 BITS) */
    const int32_t base = p->input_offset * (one * one);
    const int32_t round = (1 << (2 * MCU_BILINEAR_BITS - 1)) + (p->input_offset + p->output_offset) * (one * one);
    const int32_t lo = full ? -128 : p->act_min, hi = full ? 127 : p->act_max; /* full: the int8 range (SSAT) */
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int16_t *ty = y_taps + 3 * y;
            const int32_t wy = ty[2];
            const int8_t *row0 = in_n + ty[0] * in_w * c;
            const int32_t rows = (ty[1] - ty[0]) * in_w * c;
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int16_t *tx = x_taps + 3 * x;
                const int32_t wx = tx[2];
                const int8_t *a = row0 + tx[0] * c, *b = row0 + tx[1] * c; /* row1's at + rows */
                for (int32_t ch = 0; ch < c; ++ch) { /* (1 - w) u + w v = u 2^11 + w (v - u), in 2^-11 units */
                    const int32_t top = a[ch] * one + wx * (b[ch] - a[ch]);
                    const int32_t bottom = a[ch + rows] * one + wx * (b[ch + rows] - a[ch + rows]);
                    const int32_t raw = top * one + wy * (bottom - top);
                    int32_t r;
                    if (equal) {
                        r = (raw + round) >> (2 * MCU_BILINEAR_BITS);
                    } else {
                        r = mcu_add_offset(mcu_requantize(raw + base, p->multiplier, p->shift), p->output_offset);
                    }
                    out[ch] = (int8_t)(full ? mcu_sat8(r) : mcu_clamp_i32(r, lo, hi));
                }
                out += c;
            }
        }
    }
}

mcu_status_t mcu_upsample_bilinear_s8(const mcu_upsample_bilinear_params_t *params, const int16_t *y_taps,
                                      const int16_t *x_taps, const int8_t *input, int8_t *output)
{
    const mcu_upsample_bilinear_params_t *p = params;
    if (p == NULL || y_taps == NULL || x_taps == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!mcu_dims_ok(&p->input) || !mcu_dims_ok(&p->output) || p->multiplier < 0 || p->shift < -31 ||
        p->shift > 30 || !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (p->input.n != p->output.n || p->input.c != p->output.c || !mcu_bilinear_taps_ok(y_taps, p->output.h, p->input.h) ||
        !mcu_bilinear_taps_ok(x_taps, p->output.w, p->input.w)) {
        return MCU_ERR_SHAPE;
    }
    if (p->multiplier == (1 << 30) && p->shift == 1 - 2 * MCU_BILINEAR_BITS) {
        if (p->act_min == -128 && p->act_max == 127) {
            mcu_bilinear_rows(p, y_taps, x_taps, input, output, 1, 1);
        } else {
            mcu_bilinear_rows(p, y_taps, x_taps, input, output, 1, 0);
        }
    } else {
        mcu_bilinear_rows(p, y_taps, x_taps, input, output, 0, 0);
    }
    return MCU_OK;
}
