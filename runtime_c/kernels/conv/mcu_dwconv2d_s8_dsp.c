/* DSP (SIMD32) int8 depthwise convolution, any window, stride and dilation, channel multiplier 1 (SMLAD). */

/*  - SMLAD on int16 pairs of neighbouring taps, 4 channels at a time, folded bias, 3-word records.
 *  - Per output row and group of 4 channels, each of the KH input rows becomes a row of pairs in the scratch: column
 *    j holds, per channel, (x[j], x[j + dilation_w]) as int16 (SXTB16, PKHBT/PKHTB), the zero point where the
 *    window leaves the input; so the padding costs nothing later.
 *  - Per output pixel, each window row is ceil(KW / 2) pairs of taps: the 4 pair words at column 2 j * dilation_w
 *    from the pixel's first, the 4 weight pair words, four SMLAD (an odd KW pairs its last tap with a zero weight).
 *  - The pair row's columns lie in residue order mod 2 dilation_w, so one window row's pairs are side by side (one
 *    LDM each); a stride that is a multiple of 2 dilation_w builds only residue 0; dilation 1 at an odd stride
 *    builds both in one sliding pass.
 *  - In fast mode (int8 clamp, shifts <= -2) and at most 4 pairs a row, the pixels of one residue class run in one
 *    assembly loop: per row a computed entry into 4 unrolled pairs (LDM, LDM, four SMLAD each), then SMMLA, ASR,
 *    SSAT, STRB per output. Otherwise an assembly pair loop and the C requantization.
 *  - Output rows in order (a row's pixels in any order), so the output may slide under the input by a row's gap.
 */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* (lo16(a), lo16(b)) and (hi16(a), hi16(b)). */
#define PK_LO(a, b) (((a) & 0xFFFFu) | ((b) << 16))
#define PK_HI(a, b) (((a) >> 16) | ((b) & 0xFFFF0000u))

/* The 4 pair words of input words a (column j) and b (column j + dilation_w), channels c0..c3. */
MCU_INLINE void pair4(uint32_t a, uint32_t b, uint32_t *t)
{
    const uint32_t ea = mcu_sxtb16(a), oa = mcu_sxtb16(mcu_ror8(a)), eb = mcu_sxtb16(b), ob = mcu_sxtb16(mcu_ror8(b));
    t[0] = PK_LO(ea, eb);
    t[1] = PK_LO(oa, ob);
    t[2] = PK_HI(ea, eb);
    t[3] = PK_HI(oa, ob);
}

/* Channels [ch, ch + n) (n <= 4) of the input word at absolute column col of row (NULL: padding), or zp4. */
MCU_INLINE uint32_t word_at(const int8_t *row, int32_t col, int32_t in_w, int32_t c, int32_t n, uint32_t zp4)
{
    if (row == NULL || col < 0 || col >= in_w) {
        return zp4;
    }
    return n == 4 ? mcu_read_u32(row + col * c) : mcu_read_tail(row + col * c, n);
}

/* Columns [j, j + count * r) step r of one pair row, all inside the input, channels [ch, ch + 4): x at column j,
 * t at its pair words (consecutive). */
MCU_INLINE void pair_run(const int8_t *x, int32_t dwc, int32_t xstep, int32_t count, uint32_t *t)
{
#if MCU_DSP_ASM
    uint32_t ea, oa, eb, ob, t2, t3;
    __asm__ volatile("1:\n\t" /* per column: two LDR, four SXTB16, four PKH, two STRD (and ADD, SUBS, BNE) */
                     "ldr %[ea], [%[x]]\n\t"
                     "ldr %[eb], [%[x], %[dwc]]\n\t"
                     "add %[x], %[x], %[xstep]\n\t"
                     "sxtb16 %[oa], %[ea], ror #8\n\t"
                     "sxtb16 %[ea], %[ea]\n\t"
                     "sxtb16 %[ob], %[eb], ror #8\n\t"
                     "sxtb16 %[eb], %[eb]\n\t"
                     "pkhtb %[t2], %[eb], %[ea], asr #16\n\t"
                     "pkhtb %[t3], %[ob], %[oa], asr #16\n\t"
                     "pkhbt %[ea], %[ea], %[eb], lsl #16\n\t"
                     "pkhbt %[oa], %[oa], %[ob], lsl #16\n\t"
                     "strd %[t2], %[t3], [%[t], #8]\n\t"
                     "strd %[ea], %[oa], [%[t]], #16\n\t"
                     "subs %[count], %[count], #1\n\t"
                     "bne 1b\n\t"
                     : [x] "+r"(x), [t] "+r"(t), [count] "+r"(count), [ea] "=&r"(ea), [oa] "=&r"(oa),
                       [eb] "=&r"(eb), [ob] "=&r"(ob), [t2] "=&r"(t2), [t3] "=&r"(t3)
                     : [dwc] "r"(dwc), [xstep] "r"(xstep)
                     : "cc", "memory");
#else
    for (int32_t i = 0; i < count; ++i, x += xstep, t += 4) {
        pair4(mcu_read_u32(x), mcu_read_u32(x + dwc), t);
    }
#endif
}

#if MCU_DSP_ASM
/* Dilation 1: column pairs [j, j + 2 np) of one pair row, all inside the input, in one pass: x at column j, ta at
 * column j's pair words, tb at column j + 1's (the other residue); each input word loaded and widened once (it is
 * the second of one pair and the first of the next). Per two columns: two LDR, four SXTB16, eight PKH, four STRD,
 * two ADD, two MOV (and SUBS, BNE): 12 instructions a column instead of 15. */
static void pair_slide(const int8_t *x, int32_t c, int32_t np, uint32_t *ta, uint32_t *tb)
{
    uint32_t ea = mcu_read_u32(x), oa, eb, ob, t2, t3;
    __asm__ volatile("sxtb16 %[oa], %[ea], ror #8\n\t"
                     "sxtb16 %[ea], %[ea]\n\t"
                     "1:\n\t"
                     "ldr %[eb], [%[x], %[c]]\n\t"
                     "add %[x], %[x], %[c]\n\t"
                     "sxtb16 %[ob], %[eb], ror #8\n\t"
                     "sxtb16 %[eb], %[eb]\n\t"
                     "pkhtb %[t2], %[eb], %[ea], asr #16\n\t"
                     "pkhtb %[t3], %[ob], %[oa], asr #16\n\t"
                     "pkhbt %[ea], %[ea], %[eb], lsl #16\n\t"
                     "pkhbt %[oa], %[oa], %[ob], lsl #16\n\t"
                     "strd %[t2], %[t3], [%[ta], #8]\n\t"
                     "strd %[ea], %[oa], [%[ta]], #16\n\t"
                     "ldr %[t2], [%[x], %[c]]\n\t"
                     "add %[x], %[x], %[c]\n\t"
                     "sxtb16 %[t3], %[t2], ror #8\n\t"
                     "sxtb16 %[t2], %[t2]\n\t"
                     "pkhtb %[ea], %[t2], %[eb], asr #16\n\t"
                     "pkhtb %[oa], %[t3], %[ob], asr #16\n\t"
                     "pkhbt %[eb], %[eb], %[t2], lsl #16\n\t"
                     "pkhbt %[ob], %[ob], %[t3], lsl #16\n\t"
                     "strd %[ea], %[oa], [%[tb], #8]\n\t"
                     "strd %[eb], %[ob], [%[tb]], #16\n\t"
                     "mov %[ea], %[t2]\n\t"
                     "mov %[oa], %[t3]\n\t"
                     "subs %[np], %[np], #1\n\t"
                     "bne 1b\n\t"
                     : [x] "+r"(x), [ta] "+r"(ta), [tb] "+r"(tb), [np] "+r"(np), [ea] "+r"(ea), [oa] "=&r"(oa),
                       [eb] "=&r"(eb), [ob] "=&r"(ob), [t2] "=&r"(t2), [t3] "=&r"(t3)
                     : [c] "r"(c)
                     : "cc", "memory");
}
#endif

/* One pair row: cols columns from absolute column col0 of row (NULL: a padded row), channels [ch, ch + n), in
 * residue order: column j at pair position (j % r) * m + j / r (r = 2 dilation_w, m = ceil(cols / r)), so the
 * pairs of one window row (columns 2 j dilation_w apart) are consecutive. */
static void pair_row(const int8_t *row, int32_t col0, int32_t cols, int32_t dw, int32_t sw, int32_t in_w,
                     int32_t c, int32_t n, uint32_t zp4, uint32_t *t)
{
    const int32_t r = 2 * dw, m = (cols + r - 1) / r;
    const int32_t lo = -col0 > 0 ? -col0 : 0, hi = in_w - dw - col0 < cols ? in_w - dw - col0 : cols;
    if (row == NULL) { /* a padded row: every pair the zero point's */
        const uint32_t e = mcu_sxtb16(zp4), zpw = PK_LO(e, e);
        for (int32_t i = 0; i < 4 * r * m; ++i) {
            t[i] = zpw;
        }
        return;
    }
#if MCU_DSP_ASM
    if (dw == 1 && sw % 2 != 0 && n == 4 && hi - lo >= 2) { /* both residues: one sliding pass inside */
        const int32_t np = (hi - lo) / 2;
        for (int32_t j = 0; j < cols; ++j) {
            if (j == lo) {
                pair_slide(row + (col0 + j) * c, c, np, t + ((j % 2) * m + j / 2) * 4,
                           t + (((j + 1) % 2) * m + (j + 1) / 2) * 4);
                j += 2 * np - 1;
                continue;
            }
            pair4(word_at(row, col0 + j, in_w, c, n, zp4), word_at(row, col0 + j + 1, in_w, c, n, zp4),
                  t + ((j % 2) * m + j / 2) * 4);
        }
        return;
    }
#endif
    for (int32_t res = 0; res < r; ++res) {
        if (res != 0 && sw % r == 0) { /* every window starts in residue 0 (stride 2, dilation 1) */
            continue;
        }
        uint32_t *tr = t + res * m * 4;
        int32_t j = res;
        if (row != NULL && n == 4) { /* both columns inside the input: j in [lo, hi) */
            for (; j < lo && j < cols; j += r, tr += 4) {
                pair4(word_at(row, col0 + j, in_w, c, n, zp4), word_at(row, col0 + j + dw, in_w, c, n, zp4), tr);
            }
            const int32_t count = j < hi ? (hi - j + r - 1) / r : 0;
            if (count > 0) {
                pair_run(row + (col0 + j) * c, dw * c, r * c, count, tr);
                j += count * r;
                tr += 4 * count;
            }
        }
        for (; j < cols; j += r, tr += 4) {
            pair4(word_at(row, col0 + j, in_w, c, n, zp4), word_at(row, col0 + j + dw, in_w, c, n, zp4), tr);
        }
    }
}

#if MCU_DSP_ASM
/* One pair of taps of 4 channels: the pair words and the weight words (LDM), four SMLAD. 24 bytes of code. */
#define DWK_PAIR                                                                                           \
    "ldmia.w r12!, {r4, r5, r6, r7}\n\t"                                                                   \
    "ldmia.w lr!, {r0, r1, r2, r3}\n\t"                                                                    \
    "smlad r8, r4, r0, r8\n\t"                                                                             \
    "smlad r9, r5, r1, r9\n\t"                                                                             \
    "smlad r10, r6, r2, r10\n\t"                                                                           \
    "smlad r11, r7, r3, r11\n\t"

/* Pixels of one group in fast mode, a window of at most 4 pairs of taps a row: count pixels, the first's pairs at
 * t and its outputs at out, each next one's t_step and out_step bytes on. Per pixel: the biases of the group's
 * stream g, each row entering 4 unrolled pairs at the first of its `pairs` (6 instructions a pair, 8 a row), the
 * 4 records after the weights (SMMLA, ASR, SSAT, STRB each), 16 instructions of bookkeeping. */
static __attribute__((noinline)) void pixels_fast(const uint32_t *t, int32_t t_step, int32_t row_skip, int32_t span,
                                                  int32_t pairs, const int8_t *g, int8_t *out, int32_t out_step,
                                                  int32_t count)
{
    const int32_t skip = (4 - pairs) * 24;
    uint32_t entry;
    const uint32_t *t_end;
    __asm__ volatile("adr r4, 3f\n\t"
                     "ldr r5, %[skip]\n\t"
                     "add r4, r4, r5\n\t"
                     "orr r4, r4, #1\n\t"
                     "str r4, %[entry]\n\t"
                     "0:\n\t"
                     "ldr r12, %[t]\n\t"
                     "ldr r4, %[t_step]\n\t"
                     "add r4, r12, r4\n\t"
                     "str r4, %[t]\n\t"
                     "ldr r4, %[span]\n\t"
                     "add r4, r12, r4\n\t"
                     "str r4, %[t_end]\n\t"
                     "ldr lr, %[g]\n\t"
                     "ldmia lr!, {r8, r9, r10, r11}\n\t"
                     "1:\n\t"
                     "ldr r4, %[entry]\n\t"
                     "bx r4\n\t"
                     ".balign 4\n"
                     "3:\n\t" DWK_PAIR DWK_PAIR DWK_PAIR DWK_PAIR
                     "ldr r4, %[row_skip]\n\t"
                     "add r12, r12, r4\n\t"
                     "ldr r4, %[t_end]\n\t"
                     "cmp r12, r4\n\t"
                     "bne 1b\n\t"
                     "ldr r12, %[out]\n\t"
                     "ldmia lr!, {r4, r5, r6, r7}\n\t" /* m0 sh0 rh0 m1 */
                     "smmla r8, r8, r4, r6\n\t"
                     "asr r8, r8, r5\n\t"
                     "ssat r8, #8, r8\n\t"
                     "strb r8, [r12, #0]\n\t"
                     "ldmia lr!, {r4, r5, r6, r8}\n\t" /* sh1 rh1 m2 sh2 */
                     "smmla r9, r9, r7, r5\n\t"
                     "asr r9, r9, r4\n\t"
                     "ssat r9, #8, r9\n\t"
                     "strb r9, [r12, #1]\n\t"
                     "ldmia lr!, {r4, r5, r7, r9}\n\t" /* rh2 m3 sh3 rh3 */
                     "smmla r10, r10, r6, r4\n\t"
                     "asr r10, r10, r8\n\t"
                     "ssat r10, #8, r10\n\t"
                     "strb r10, [r12, #2]\n\t"
                     "smmla r11, r11, r5, r9\n\t"
                     "asr r11, r11, r7\n\t"
                     "ssat r11, #8, r11\n\t"
                     "strb r11, [r12, #3]\n\t"
                     "ldr r4, %[out_step]\n\t"
                     "add r12, r12, r4\n\t"
                     "str r12, %[out]\n\t"
                     "ldr r4, %[count]\n\t"
                     "subs r4, r4, #1\n\t"
                     "str r4, %[count]\n\t"
                     "bne 0b\n\t"
                     : [entry] "=m"(entry), [t_end] "=m"(t_end), [t] "+m"(t), [out] "+m"(out), [count] "+m"(count)
                     : [t_step] "m"(t_step), [row_skip] "m"(row_skip), [span] "m"(span), [skip] "m"(skip),
                       [g] "m"(g), [out_step] "m"(out_step)
                     : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc",
                       "memory");
}
#endif

/* The window of one pixel: kh rows of pairs pairs of taps, the first pair column at t, the next pair step bytes on,
 * the next row row_skip bytes after a row's last pair; weights w (4 words a pair): acc += products. Per pair of
 * taps of 4 channels: four LDRD, ADD, four SMLAD (and the loop's SUBS, BNE), in assembly on DSP cores: GCC's
 * 17 (single LDRs, its counters) would take twice as many. */
static void smlad_window(const uint32_t *t, int32_t step, int32_t row_skip, int32_t kh, int32_t pairs,
                         const uint32_t *w, int32_t acc[4])
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
#if MCU_DSP_ASM
    uint32_t t0, t1, w0, w1, n;
    int32_t rows = kh;
    __asm__ volatile("1:\n\t"
                     "ldr %[n], %[pairs]\n\t"
                     "2:\n\t"
                     "ldrd %[t0], %[t1], [%[t]]\n\t"
                     "ldrd %[w0], %[w1], [%[w]], #8\n\t"
                     "smlad %[a0], %[t0], %[w0], %[a0]\n\t"
                     "smlad %[a1], %[t1], %[w1], %[a1]\n\t"
                     "ldrd %[t0], %[t1], [%[t], #8]\n\t"
                     "ldrd %[w0], %[w1], [%[w]], #8\n\t"
                     "smlad %[a2], %[t0], %[w0], %[a2]\n\t"
                     "smlad %[a3], %[t1], %[w1], %[a3]\n\t"
                     "add %[t], %[t], %[step]\n\t"
                     "subs %[n], %[n], #1\n\t"
                     "bne 2b\n\t"
                     "ldr %[n], %[row_skip]\n\t"
                     "add %[t], %[t], %[n]\n\t"
                     "ldr %[n], %[rows]\n\t"
                     "subs %[n], %[n], #1\n\t"
                     "str %[n], %[rows]\n\t"
                     "bne 1b\n\t"
                     : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [t] "+r"(t), [w] "+r"(w),
                       [n] "=&r"(n), [t0] "=&r"(t0), [t1] "=&r"(t1), [w0] "=&r"(w0), [w1] "=&r"(w1),
                       [rows] "+m"(rows)
                     : [step] "r"(step), [pairs] "m"(pairs), [row_skip] "m"(row_skip)
                     : "cc", "memory");
#else
    for (int32_t ky = 0; ky < kh; ++ky, t = (const uint32_t *)(const void *)((const int8_t *)t + row_skip)) {
        for (int32_t j = 0; j < pairs; ++j, t = (const uint32_t *)(const void *)((const int8_t *)t + step), w += 4) {
            a0 = mcu_smlad(t[0], w[0], a0);
            a1 = mcu_smlad(t[1], w[1], a1);
            a2 = mcu_smlad(t[2], w[2], a2);
            a3 = mcu_smlad(t[3], w[3], a3);
        }
    }
#endif
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
    const int32_t pairs = (kw + 1) / 2, group_bytes = MCU_DSP_DWK_GROUP_BYTES(kh, kw);
    const int32_t cols = mcu_dwk_pair_cols(p), out_w = p->output.w, sw = p->stride_w, dw = p->dilation_w;
    mcu_rq_mode_t mode = {p->act_min, p->act_max, p->output_offset, 1, 0};
    for (int32_t ch = 0; ch < c; ++ch) {
        const int32_t *rec = (const int32_t *)(const void *)(filter + ch / 4 * group_bytes + group_bytes - 48) +
                             3 * (ch % 4);
        if (mcu_rq3_check(rec, 1) != MCU_OK) {
            return MCU_ERR_ARG;
        }
        mode.records_fast = mode.records_fast && rec[1] >= 0;
    }
    mode.fast = mode.records_fast && p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX;
    const uint32_t zp4 = 0x01010101u * (uint8_t)(int8_t)(-p->input_offset);
    /* kh pair rows of r * m columns of 4 words (aligned: arena), r = 2 dilation_w, in residue order (pair_row) */
    const int32_t r = 2 * dw, m = (cols + r - 1) / r, row_words = 4 * r * m;
    uint32_t *pair_rows = (uint32_t *)(void *)scratch;
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, out += out_w * c) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            for (int32_t ch = 0; ch < c; ch += 4) {
                const int32_t lanes = c - ch < 4 ? c - ch : 4;
                for (int32_t ky = 0; ky < kh; ++ky) {
                    const int32_t iy = base_y + ky * p->dilation_h;
                    const int8_t *row = iy >= 0 && iy < in_h ? in_n + iy * in_w * c + ch : NULL;
                    pair_row(row, -p->pad_left, cols, dw, sw, in_w, c, lanes, zp4, pair_rows + ky * row_words);
                }
                const int8_t *g = filter + ch / 4 * group_bytes;
                const int32_t *rec = (const int32_t *)(const void *)(g + group_bytes - 48);
#if MCU_DSP_ASM
                if (mode.fast && lanes == 4 && pairs <= 4) {
                    /* pixels x = q, q + every, ...: their windows start in one residue, every * sw / r pairs apart */
                    int32_t every = 1;
                    while ((every * sw) % r != 0) {
                        ++every;
                    }
                    for (int32_t q = 0; q < every && q < out_w; ++q) {
                        const int32_t b = q * sw;
                        pixels_fast(pair_rows + ((b % r) * m + b / r) * 4, 16 * (every * sw / r),
                                    4 * (row_words - 4 * pairs), 4 * kh * row_words, pairs, g, out + q * c + ch,
                                    every * c, (out_w - q + every - 1) / every);
                    }
                    continue;
                }
#endif
                for (int32_t x = 0; x < out_w; ++x) {
                    const int32_t b = x * sw;
                    const uint32_t *t = pair_rows + ((b % r) * m + b / r) * 4;
                    int8_t *o = out + x * c + ch;
                    int32_t acc[4];
                    memcpy(acc, g, sizeof acc);
                    smlad_window(t, 16, 4 * (row_words - 4 * pairs), kh, pairs,
                                 (const uint32_t *)(const void *)(g + 16), acc);
                    for (int32_t j = 0; j < lanes; ++j) {
                        o[j] = mcu_rq3_out(acc[j], rec + 3 * j, &mode);
                    }
                }
            }
        }
    }
    return MCU_OK;
}
