/* Scalar int8 depthwise 3x3 convolution, channel multiplier 1: the 9 taps unrolled, offset folded into the bias. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_dwconv2d_3x3_s8_fast(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                      const int8_t *input, const int8_t *filter, const int32_t *bias,
                                      int8_t *scratch, int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_dw3x3_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c = p->input.c, in_h = p->input.h, in_w = p->input.w;
    if (mcu_records_check(quant->multiplier, c) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const int32_t *rec = quant->multiplier;
    const mcu_rq_mode_t mode = mcu_rq_mode(rec, c, p->output_offset, p->act_min, p->act_max);
    int8_t *pad = scratch; /* C bytes: a padded tap reads the zero point, the bias is folded */
    mcu_fill_s8(pad, (int8_t)(-p->input_offset), c);
    mcu_dw_rows_t rows = mcu_dw_rows_open(p, input, output, scratch + c); /* in place: a ring of rows */

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, mcu_dw_rows_next(&rows)) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            int8_t *out = mcu_dw_rows_out(&rows);
            for (int32_t x = 0; x < p->output.w; ++x, out += c) {
                const int8_t *tap[9];
                mcu_dw3x3_taps(p, in_n, base_y, x * p->stride_w - p->pad_left, pad, tap);
                const int8_t *w = filter;
                for (int32_t ch = 0; ch < c; ++ch, w += 9) {
                    uint32_t acc = (uint32_t)bias[ch]; /* wraps like the folded bias */
                    acc += (uint32_t)(tap[0][ch] * w[0]) + (uint32_t)(tap[1][ch] * w[1]) + (uint32_t)(tap[2][ch] * w[2]);
                    acc += (uint32_t)(tap[3][ch] * w[3]) + (uint32_t)(tap[4][ch] * w[4]) + (uint32_t)(tap[5][ch] * w[5]);
                    acc += (uint32_t)(tap[6][ch] * w[6]) + (uint32_t)(tap[7][ch] * w[7]) + (uint32_t)(tap[8][ch] * w[8]);
                    out[ch] = mcu_rq_out((int32_t)acc, rec + 4 * ch, &mode, 0);
                }
            }
        }
    }
    mcu_dw_rows_close(&rows);
    return MCU_OK;
}
