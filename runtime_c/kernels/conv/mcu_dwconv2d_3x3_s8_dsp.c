/* DSP (SIMD32) int8 depthwise 3x3 convolution, channel multiplier 1: 4 channels per word, SMLABB/SMLATT, int16 weights. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* Weight of channel ch at tap t in the packed layout [ch / 4][t][lanes 0, 2, 1, 3]. */
static int32_t weight(const int8_t *filter, int32_t ch, int32_t t)
{
    static const uint8_t lane[4] = {0, 2, 1, 3};
    int16_t v;
    memcpy(&v, filter + ((ch / 4) * 9 + t) * 8 + lane[ch % 4] * 2, sizeof v);
    return v;
}

mcu_status_t mcu_dwconv2d_3x3_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
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
    const int32_t in_off = p->input_offset;
    const uint32_t off2 = ((uint32_t)in_off & 0xFFFFu) * 0x00010001u;
    const int32_t dh = p->dilation_h, dw = p->dilation_w;
    int8_t pad[MCU_OPT_MAX_K]; /* a padded tap reads -input_offset: it widens to 0 */
    mcu_fill_s8(pad, (int8_t)(-in_off), c);
    /* Interior pixels address their taps as window + rel[t]; border pixels as absolute addresses (padded taps
     * at pad) with base 0. Either way the kernel reads base + ch + tab[t]. */
    intptr_t rel[9], abs_tap[9];
    for (int32_t t = 0; t < 9; ++t) {
        rel[t] = ((t / 3) * dh * in_w + (t % 3) * dw) * c;
    }
    int8_t *out = output;

    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            const int rows_inside = base_y >= 0 && base_y + 2 * dh < in_h;
            for (int32_t x = 0; x < p->output.w; ++x, out += c) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                intptr_t base;
                const intptr_t *tab;
                if (rows_inside && base_x >= 0 && base_x + 2 * dw < in_w) {
                    base = (intptr_t)(in_n + (base_y * in_w + base_x) * c);
                    tab = rel;
                } else {
                    const int8_t *tap[9];
                    mcu_dw3x3_taps(p, in_n, base_y, base_x, pad, tap);
                    for (int32_t t = 0; t < 9; ++t) {
                        abs_tap[t] = (intptr_t)tap[t];
                    }
                    base = 0;
                    tab = abs_tap;
                }
                int32_t ch = 0;
                if (mode.fast && c >= 4) {
                    mcu_dsp_dw_t q = {bias, rec, out, c / 4, off2};
                    mcu_dsp_dw_pixel(base, tab, filter, &q);
                    ch = c & ~3;
                }
                for (; ch + 4 <= c; ch += 4) {
                    int32_t acc[4];
                    mcu_dsp_dw_taps(base + ch, tab, filter + ch * 18, off2, bias + ch, acc);
                    mcu_dsp_rq4(acc, rec + 4 * ch, &mode, out + ch);
                }
                for (; ch < c; ++ch) {
                    int32_t acc = bias[ch];
                    for (int32_t t = 0; t < 9; ++t) {
                        acc += (((const int8_t *)(base + tab[t]))[ch] + in_off) * weight(filter, ch, t);
                    }
                    out[ch] = mcu_rq_out(acc, rec + 4 * ch, &mode, 0);
                }
            }
        }
    }
    return MCU_OK;
}
