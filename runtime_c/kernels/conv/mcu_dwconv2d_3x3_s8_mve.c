/* Helium (MVE) int8 depthwise 3x3 convolution, channel multiplier 1: 8 channels per vector, VMULLB/VMULLT of int16. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

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
    const int32_t c = p->input.c, c8 = (c + 7) & ~7, in_h = p->input.h, in_w = p->input.w;
    if (mcu_quant_check(quant, c) != MCU_OK) { /* lane order permutes channels, not values */
        return MCU_ERR_ARG;
    }
    int8_t *pad = scratch; /* C bytes (mcu_dwconv2d_3x3_s8_mve_scratch_bytes): a padded tap reads the zero point */
    mcu_fill_s8(pad, (int8_t)(-p->input_offset), c);
    const int32x4_t vmin = vdupq_n_s32(p->act_min), vmax = vdupq_n_s32(p->act_max);
    const uint32x4_t even = vidupq_n_u32(0, 2), odd = vidupq_n_u32(1, 2);
    /* int8 [9][c8], widened by the load (VLDRB.S16: as many instructions as loading int16) */
    mcu_dw_rows_t rows = mcu_dw_rows_open(p, input, output, scratch + c); /* in place: a ring of rows */

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, mcu_dw_rows_next(&rows)) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            int8_t *out = mcu_dw_rows_out(&rows);
            for (int32_t x = 0; x < p->output.w; ++x, out += c) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                const int8_t *tap[9];
                mcu_dw3x3_taps(p, in_n, base_y, base_x, pad, tap);
                for (int32_t ch = 0; ch < c; ch += 8) {
                    /* lanes: acc_e holds channels ch, ch+2, ch+4, ch+6; acc_o ch+1, ch+3, ... (bias, mult and
                     * shift are stored in that order) */
                    const mve_pred16_t pred = vctp16q((uint32_t)(c - ch));
                    int32x4_t acc_e = vldrwq_s32(bias + ch), acc_o = vldrwq_s32(bias + ch + 4);
                    for (int32_t t = 0; t < 9; ++t) {
                        const int16x8_t xv = vldrbq_z_s16(tap[t] + ch, pred);
                        const int16x8_t wv = vldrbq_s16(filter + t * c8 + ch);
                        acc_e = vaddq_s32(acc_e, vmullbq_int_s16(xv, wv));
                        acc_o = vaddq_s32(acc_o, vmulltq_int_s16(xv, wv));
                    }
                    int32x4_t y_e = mcu_mve_requantize(acc_e, vldrwq_s32(quant->multiplier + ch),
                                                       vldrwq_s32(quant->shift + ch));
                    int32x4_t y_o = mcu_mve_requantize(acc_o, vldrwq_s32(quant->multiplier + ch + 4),
                                                       vldrwq_s32(quant->shift + ch + 4));
                    y_e = vminq_s32(vmaxq_s32(vaddq_n_s32(y_e, p->output_offset), vmin), vmax);
                    y_o = vminq_s32(vmaxq_s32(vaddq_n_s32(y_o, p->output_offset), vmin), vmax);
                    const int32_t rem = c - ch;
                    vstrbq_scatter_offset_p_s32(out + ch, even, y_e, vctp32q((uint32_t)(rem + 1) / 2));
                    vstrbq_scatter_offset_p_s32(out + ch, odd, y_o, vctp32q((uint32_t)rem / 2));
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
