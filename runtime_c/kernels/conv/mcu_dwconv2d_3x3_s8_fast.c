/* Scalar int8 depthwise 3x3 convolution, channel multiplier 1: the 9 taps unrolled, offset folded into the bias. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_dwconv2d_3x3_s8_fast(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                      const int8_t *input, const int8_t *filter, const int32_t *bias,
                                      int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL) {
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
    const int32_t dh = p->dilation_h, dw = p->dilation_w;
    const int32_t cs = dw * c, rs = dh * in_w * c; /* column and row steps of the window */
    const int32_t zero_point = -p->input_offset;   /* what a padded tap reads, the bias being folded */
    int8_t *out = output;

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            for (int32_t x = 0; x < p->output.w; ++x, out += c) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                const int interior = base_y >= 0 && base_y + 2 * dh < in_h && base_x >= 0 && base_x + 2 * dw < in_w;
                const int8_t *w = filter;
                for (int32_t ch = 0; ch < c; ++ch, w += 9) {
                    uint32_t acc = (uint32_t)bias[ch]; /* wraps like the folded bias */
                    if (interior) {
                        const int8_t *r0 = in_n + (base_y * in_w + base_x) * c + ch, *r1 = r0 + rs, *r2 = r1 + rs;
                        acc += (uint32_t)(r0[0] * w[0]) + (uint32_t)(r0[cs] * w[1]) + (uint32_t)(r0[2 * cs] * w[2]);
                        acc += (uint32_t)(r1[0] * w[3]) + (uint32_t)(r1[cs] * w[4]) + (uint32_t)(r1[2 * cs] * w[5]);
                        acc += (uint32_t)(r2[0] * w[6]) + (uint32_t)(r2[cs] * w[7]) + (uint32_t)(r2[2 * cs] * w[8]);
                    } else {
                        for (int32_t t = 0; t < 9; ++t) {
                            const int32_t iy = base_y + (t / 3) * dh, ix = base_x + (t % 3) * dw;
                            const int inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
                            acc += (uint32_t)((inside ? in_n[(iy * in_w + ix) * c + ch] : zero_point) * w[t]);
                        }
                    }
                    out[ch] = mcu_rq_out((int32_t)acc, rec + 4 * ch, &mode, 0);
                }
            }
        }
    }
    return MCU_OK;
}
