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

/* n >= 1 taps of one group, the first at x (then every step bytes), with their widened weights at w (2 words a
 * tap): acc (c0, c1, c2, c3) += products. Per tap: LDR, ADD, LDRD, two SXTB16, four SMLAxy (and the loop's
 * SUBS, BNE: GCC keeps neither the LDRD nor the rotation in SXTB16, so it is assembly on DSP cores). */
MCU_INLINE void taps4(const int8_t *x, int32_t step, int32_t n, const uint32_t *w, int32_t acc[4])
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
#if MCU_DSP_ASM
    uint32_t v, o, w0, w1;
    __asm__ volatile("1:\n\t"
                     "ldr %[v], [%[x]]\n\t"
                     "add %[x], %[x], %[step]\n\t"
                     "ldrd %[w0], %[w1], [%[w]], #8\n\t"
                     "sxtb16 %[o], %[v], ror #8\n\t"
                     "sxtb16 %[v], %[v]\n\t"
                     "smlabb %[a0], %[v], %[w0], %[a0]\n\t"
                     "smlatt %[a2], %[v], %[w0], %[a2]\n\t"
                     "smlabb %[a1], %[o], %[w1], %[a1]\n\t"
                     "smlatt %[a3], %[o], %[w1], %[a3]\n\t"
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b\n\t"
                     : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [w] "+r"(w),
                       [n] "+r"(n), [v] "=&r"(v), [o] "=&r"(o), [w0] "=&r"(w0), [w1] "=&r"(w1)
                     : [step] "r"(step)
                     : "cc", "memory");
#else
    for (int32_t t = 0; t < n; ++t, x += step, w += 2) {
        const uint32_t v = mcu_read_u32(x);
        const uint32_t e = mcu_sxtb16(v), o = mcu_sxtb16(mcu_ror8(v));
        a0 = SMLABB(e, w[0], a0);
        a2 = SMLATT(e, w[0], a2);
        a1 = SMLABB(o, w[1], a1);
        a3 = SMLATT(o, w[1], a3);
    }
#endif
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

#if MCU_DSP_ASM
/* One tap: the word at [x] (then x += step, or the second of a pair at [x, step], then x += 2 step), the next two
 * weight words, four SMLAxy. */
#define DWK_TAP(load, advance)                                                                             \
    "ldr %[v], " load "\n\t" advance                                                                       \
    "sxtb16 %[o], %[v], ror #8\n\t"                                                                        \
    "sxtb16 %[v], %[v]\n\t"                                                                                \
    "ldrd %[w0], %[w1], [%[w]], #8\n\t"                                                                    \
    "smlabb %[a0], %[v], %[w0], %[a0]\n\t"                                                                 \
    "smlatt %[a2], %[v], %[w0], %[a2]\n\t"                                                                 \
    "smlabb %[a1], %[o], %[w1], %[a1]\n\t"                                                                 \
    "smlatt %[a3], %[o], %[w1], %[a3]\n\t"
#define DWK_ODD DWK_TAP("[%[x]]", "add %[x], %[x], %[step]\n\t")
#define DWK_PAIRS                                                                                          \
    "ldr %[n], %[pairs]\n\t"                                                                               \
    "2:\n\t" DWK_TAP("[%[x]]", "") DWK_TAP("[%[x], %[step]]", "add %[x], %[x], %[step], lsl #1\n\t")          \
    "subs %[n], %[n], #1\n\t"                                                                              \
    "bne 2b\n\t"
/* The whole window of one inside pixel, rows of kw taps (an odd one first, then pairs), row_skip bytes from a
 * row's end to the next row's start, until the weights reach w_end. Per pair of taps 18 instructions. */
#define DWK_WINDOW(row)                                                                                    \
    __asm__ volatile("1:\n\t" row                                                                          \
                     "ldr %[n], %[row_skip]\n\t"                                                           \
                     "add %[x], %[x], %[n]\n\t"                                                            \
                     "ldr %[n], %[w_end]\n\t"                                                              \
                     "cmp %[w], %[n]\n\t"                                                                  \
                     "bne 1b\n\t"                                                                          \
                     : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [w] "+r"(w), \
                       [n] "=&r"(n), [v] "=&r"(v), [o] "=&r"(o), [w0] "=&r"(w0), [w1] "=&r"(w1)            \
                     : [step] "r"(step), [pairs] "m"(pairs), [row_skip] "m"(row_skip), [w_end] "m"(w_end)    \
                     : "cc", "memory")
#endif

/* The kh x kw window at x (rows row_bytes apart, taps step apart), weights w (2 words a tap): acc += products. */
static void window4(const int8_t *x, int32_t step, int32_t row_bytes, int32_t kh, int32_t kw, const uint32_t *w,
                    int32_t acc[4])
{
#if MCU_DSP_ASM
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const uint32_t *const w_end = w + 2 * kh * kw;
    const int32_t pairs = kw / 2, row_skip = row_bytes - kw * step;
    uint32_t v, o, w0, w1, n;
    if (kw == 1) {
        DWK_WINDOW(DWK_ODD);
    } else if (kw & 1) {
        DWK_WINDOW(DWK_ODD DWK_PAIRS);
    } else {
        DWK_WINDOW(DWK_PAIRS);
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
#else
    for (int32_t ky = 0; ky < kh; ++ky, x += row_bytes, w += 2 * kw) {
        taps4(x, step, kw, w, acc);
    }
#endif
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
            const int inside_y = base_y >= 0 && base_y + (kh - 1) * dh < in_h;
            for (int32_t x = 0; x < p->output.w; ++x, out += c) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                const int inside_x = base_x >= 0 && base_x + (kw - 1) * p->dilation_w < in_w;
                int32_t kx0, kx1; /* the window's columns inside the input */
                mcu_tap_range(base_x, p->dilation_w, kw, in_w, &kx0, &kx1);
                for (int32_t ch = 0; ch + 4 <= c; ch += 4) {
                    const int8_t *g = filter + ch / 4 * group_bytes;
                    const uint32_t *w = (const uint32_t *)(const void *)(g + 16);
                    int32_t acc[4];
                    memcpy(acc, g, sizeof acc);
                    if (inside_x && inside_y) {
                        window4(in_n + (base_y * in_w + base_x) * c + ch, cs, dh * in_w * c, kh, kw, w, acc);
                    } else {
                        for (int32_t ky = 0; ky < kh; ++ky, w += 2 * kw) {
                            const int32_t iy = base_y + ky * dh;
                            if (iy < 0 || iy >= in_h || kx1 <= kx0) {
                                taps4(pad + ch, 0, kw, w, acc);
                                continue;
                            }
                            if (kx0 > 0) { /* taps in the padding: left, inside, right */
                                taps4(pad + ch, 0, kx0, w, acc);
                            }
                            taps4(in_n + (iy * in_w + base_x + kx0 * p->dilation_w) * c + ch, cs, kx1 - kx0,
                                  w + 2 * kx0, acc);
                            if (kx1 < kw) {
                                taps4(pad + ch, 0, kw - kx1, w + 2 * kx1, acc);
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
