/* Reference int8 bilinear resampling (NHWC): 4 taps an output element, fixed-point weights from per-axis tables. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

/* A table of `size` (i0, i1, w1) triples indexing an axis of `in_size`, with w1 in [0, 2^MCU_BILINEAR_BITS]. */
static int mcu_bilinear_taps_ok(const int16_t *taps, int32_t size, int32_t in_size)
{
    for (int32_t i = 0; i < 3 * size; i += 3) {
        if (taps[i] < 0 || taps[i] >= in_size || taps[i + 1] < 0 || taps[i + 1] >= in_size || taps[i + 2] < 0 ||
            taps[i + 2] > (1 << MCU_BILINEAR_BITS)) {
            return 0;
        }
    }
    return 1;
}

/* The output; shift_only (multiplier 2^30, equal input and output scales, a constant in each call below):
 * mcu_requantize is one rounding shift, and as in_off 2^22 is a multiple of 2^22, the offsets add after it. */
static inline void mcu_bilinear_rows(const mcu_upsample_bilinear_params_t *p, const int16_t *y_taps,
                                     const int16_t *x_taps, const int8_t *input, int8_t *output, int shift_only)
{
    const int32_t in_h = p->input.h, in_w = p->input.w, c = p->input.c, one = 1 << MCU_BILINEAR_BITS;
    /* sum w (x + in_off) = sum w x + in_off 2^(2 BITS): the weights of an output sum to 2^(2 BITS) */
    const int32_t base = p->input_offset * (one * one), offsets = p->input_offset + p->output_offset;
    const int32_t right = 1 - p->shift, half = shift_only ? (int32_t)1 << (right - 1) : 0;
    const int32_t lo = p->act_min, hi = p->act_max;
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int16_t *ty = y_taps + 3 * y;
            const int32_t wy1 = ty[2];
            const int8_t *row0 = in_n + ty[0] * in_w * c, *row1 = in_n + ty[1] * in_w * c;
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int16_t *tx = x_taps + 3 * x;
                const int32_t wx1 = tx[2], wx0 = one - wx1;
                const int8_t *a = row0 + tx[0] * c, *b = row0 + tx[1] * c;
                const int8_t *d = row1 + tx[0] * c, *e = row1 + tx[1] * c;
                for (int32_t ch = 0; ch < c; ++ch) {
                    const int32_t top = wx0 * a[ch] + wx1 * b[ch], bottom = wx0 * d[ch] + wx1 * e[ch];
                    const int32_t raw = top * one + wy1 * (bottom - top); /* wy0 top + wy1 bottom */
                    int32_t r;
                    if (shift_only) {
                        r = ((raw + half) >> right) + offsets;
                    } else {
                        r = mcu_add_offset(mcu_requantize(raw + base, p->multiplier, p->shift), p->output_offset);
                    }
                    *out++ = (int8_t)(r < lo ? lo : (r > hi ? hi : r));
                }
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
    if (p->multiplier == (1 << 30) && p->shift <= -2) {
        mcu_bilinear_rows(p, y_taps, x_taps, input, output, 1);
    } else {
        mcu_bilinear_rows(p, y_taps, x_taps, input, output, 0);
    }
    return MCU_OK;
}
