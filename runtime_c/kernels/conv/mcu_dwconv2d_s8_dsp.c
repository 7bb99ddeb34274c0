/* DSP (SIMD32) int8 depthwise convolution, any window, stride and dilation, channel multiplier 1: 4 channels per
 * word, weights widened at compile time (SMLABB/SMLATT), folded bias, 3-word records. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_DSP
#define SMLABB(a, b, acc) __smlabb((int32_t)(a), (int32_t)(b), (acc))
#define SMLATT(a, b, acc) __smlatt((int32_t)(a), (int32_t)(b), (acc))
#else
#define SMLABB(a, b, acc) ((int32_t)((uint32_t)(acc) + (uint32_t)(mcu_lo16(a) * mcu_lo16(b))))
#define SMLATT(a, b, acc) ((int32_t)((uint32_t)(acc) + (uint32_t)(mcu_hi16(a) * mcu_hi16(b))))
#endif

/* n taps of one group, the first at x (then every step bytes), with their widened weights at w (2 words a tap):
 * acc (c0, c1, c2, c3) += products. */
MCU_INLINE void taps4(const int8_t *x, int32_t step, int32_t n, const uint32_t *w, int32_t acc[4])
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (int32_t t = 0; t < n; ++t, x += step, w += 2) {
        const uint32_t v = mcu_read_u32(x);
        const uint32_t e = mcu_sxtb16(v), o = mcu_sxtb16(mcu_ror8(v));
        a0 = SMLABB(e, w[0], a0);
        a2 = SMLATT(e, w[0], a2);
        a1 = SMLABB(o, w[1], a1);
        a3 = SMLATT(o, w[1], a3);
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

mcu_status_t mcu_dwconv2d_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                 const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                                 int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    (void)bias; /* folded into the filter stream */
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_dw_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c = p->input.c, in_h = p->input.h, in_w = p->input.w, kh = p->filter.h, kw = p->filter.w;
    const int32_t taps = kh * kw, group_bytes = MCU_DSP_DWK_GROUP_BYTES(taps), c4 = (c + 3) & ~3;
    const int32_t dh = p->dilation_h, cs = p->dilation_w * c;
    mcu_rq_mode_t mode = {p->act_min, p->act_max, p->output_offset, 1, 0};
    for (int32_t ch = 0; ch < c; ++ch) {
        const int32_t *rec = (const int32_t *)(const void *)(filter + ch / 4 * group_bytes + 16 + 8 * taps) + 3 * (ch % 4);
        if (mcu_rq3_check(rec, 1) != MCU_OK) {
            return MCU_ERR_ARG;
        }
        mode.records_fast = mode.records_fast && rec[1] >= 0;
    }
    mode.fast = mode.records_fast && p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX;
    int8_t *pad = scratch; /* C4 bytes: a padded tap reads the zero point (the bias is folded), a word at a time */
    mcu_fill_s8(pad, (int8_t)(-p->input_offset), c4);
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            for (int32_t x = 0; x < p->output.w; ++x, out += c) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                const int inside_x = base_x >= 0 && base_x + (kw - 1) * p->dilation_w < in_w;
                for (int32_t ch = 0; ch + 4 <= c; ch += 4) {
                    const int8_t *g = filter + ch / 4 * group_bytes;
                    const uint32_t *w = (const uint32_t *)(const void *)(g + 16);
                    int32_t acc[4];
                    memcpy(acc, g, sizeof acc);
                    for (int32_t ky = 0; ky < kh; ++ky, w += 2 * kw) {
                        const int32_t iy = base_y + ky * dh;
                        if (iy < 0 || iy >= in_h) {
                            taps4(pad + ch, 0, kw, w, acc);
                        } else if (inside_x) {
                            taps4(in_n + (iy * in_w + base_x) * c + ch, cs, kw, w, acc);
                        } else {
                            for (int32_t kx = 0; kx < kw; ++kx) {
                                const int32_t ix = base_x + kx * p->dilation_w;
                                taps4(ix >= 0 && ix < in_w ? in_n + (iy * in_w + ix) * c + ch : pad + ch, 0, 1,
                                      w + 2 * kx, acc);
                            }
                        }
                    }
                    const int32_t *rec = (const int32_t *)(const void *)(g + 16 + 8 * taps);
                    out[ch] = mcu_rq3_out(acc[0], rec, &mode);
                    out[ch + 1] = mcu_rq3_out(acc[1], rec + 3, &mode);
                    out[ch + 2] = mcu_rq3_out(acc[2], rec + 6, &mode);
                    out[ch + 3] = mcu_rq3_out(acc[3], rec + 9, &mode);
                }
                if (c & 3) { /* the last 1..3 channels, one byte at a time (word reads would pass the input's end) */
                    const int32_t ch = c & ~3, rest = c - ch;
                    const int8_t *g = filter + ch / 4 * group_bytes;
                    const int16_t *w = (const int16_t *)(const void *)(g + 16);
                    const int32_t *rec = (const int32_t *)(const void *)(g + 16 + 8 * taps);
                    static const int8_t lane[4] = {0, 2, 1, 3}; /* channel j's halfword in a tap's two words */
                    for (int32_t j = 0; j < rest; ++j) {
                        uint32_t acc = (uint32_t)((const int32_t *)(const void *)g)[j];
                        for (int32_t ky = 0; ky < kh; ++ky) {
                            const int32_t iy = base_y + ky * dh;
                            for (int32_t kx = 0; kx < kw; ++kx) {
                                const int32_t ix = base_x + kx * p->dilation_w;
                                const int inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
                                const int32_t v = inside ? in_n[(iy * in_w + ix) * c + ch + j] : pad[0];
                                acc += (uint32_t)(v * w[4 * (ky * kw + kx) + lane[j]]);
                            }
                        }
                        out[ch + j] = mcu_rq3_out((int32_t)acc, rec + 3 * j, &mode);
                    }
                }
            }
        }
    }
    return MCU_OK;
}
