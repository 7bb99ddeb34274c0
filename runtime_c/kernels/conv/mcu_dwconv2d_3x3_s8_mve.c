/* Helium (MVE) int8 depthwise 3x3 convolution, channel multiplier 1, pixel by pixel (any stride and dilation). */

/* Each output pixel's 9 tap pointers (its input pixel's channel 0, or the zero point in the padding) form a table
 * of 3 window rows of 3 entries; the pixel then runs 16 channels a pass through the any-window kernel's tap loops
 * (mcu/mcu_dw_mve.h), the table moving on by 16 channels after each pass. Pixels are finished one at a time, so
 * the output may follow its input by one pixel (the raster gap of blocks of 1). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_dw_mve.h"
#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* Every channel of one output pixel from its table t (9 entries, room for 12). */
static void dw3x3_pixel(const dwk_t *k, uint32_t *t, const mcu_per_channel_quant_t *quant, const int8_t *filter,
                        const int32_t *bias, const int down, int8_t *out)
{
    const int32_t c = k->c;
    for (int32_t ch = 0; ch < c;) {
        const int32_t left = c - ch, g2 = left > 8, step = g2 ? 16 : 8;
        const mve_pred16_t pr = vctp16q((uint32_t)(g2 ? left - 8 : left));
        const int8_t *w = filter + ch * 9;
        const int32_t *b = bias + ch, *m = quant->multiplier + ch, *sh = quant->shift + ch;
        if (g2 && left >= 16 && down) { /* the common case, and the others */
            mcu_dw_mve_pixel(k, t, 0, w, b, m, sh, pr, 1, 0, 1, out + ch);
        } else if (g2) {
            mcu_dw_mve_pixel(k, t, 0, w, b, m, sh, pr, 1, left < 16, down, out + ch);
        } else {
            mcu_dw_mve_pixel(k, t, 0, w, b, m, sh, pr, 0, left < 8, down, out + ch);
        }
        ch += step;
        for (int32_t i = 0; i < 12; i += 4) { /* the table moves on to the next pass's channels */
            vstrwq_u32(t + i, vaddq_n_u32(vldrwq_u32(t + i), (uint32_t)step));
        }
    }
}
#endif

mcu_status_t mcu_dwconv2d_3x3_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int8_t *input, const int8_t *filter, const int32_t *bias,
                                     int8_t *scratch, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_dw3x3_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c = p->input.c, in_h = p->input.h, in_w = p->input.w;
    if (mcu_quant_check(quant, (c + 7) & ~7) != MCU_OK) { /* lane order permutes channels, not values */
        return MCU_ERR_ARG;
    }
    int down = 1; /* every shift < 0: VQDMULH then a rounding shift is mcu_requantize exactly */
    for (int32_t ch = 0; ch < ((c + 7) & ~7); ++ch) {
        down = down && quant->shift[ch] < 0;
    }
    int8_t *pad = scratch; /* C bytes (mcu_dwconv2d_3x3_s8_mve_scratch_bytes): a padded tap reads the zero point */
    mcu_fill_s8(pad, (int8_t)(-p->input_offset), c);
    const dwk_t k = {pad, c, 3, 3, 1, 1, 3, 3, p->output_offset, p->act_min, p->act_max};
    mcu_dw_rows_t rows = mcu_dw_rows_open(p, input, output, scratch + c); /* in place: a ring of rows */
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, mcu_dw_rows_next(&rows)) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            int8_t *out = mcu_dw_rows_out(&rows);
            for (int32_t x = 0; x < p->output.w; ++x, out += c) {
                const int8_t *tap[9];
                uint32_t t[12] = {0};
                mcu_dw3x3_taps(p, in_n, base_y, x * p->stride_w - p->pad_left, pad, tap);
                for (int32_t i = 0; i < 9; ++i) {
                    t[i] = (uint32_t)(uintptr_t)tap[i];
                }
                dw3x3_pixel(&k, t, quant, filter, bias, down, out);
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
