/* DSP (SIMD32) int8 matmul of two activations on the 2x2 GEMM core: the rhs packed at run time into its stream. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/*  - sum_t (a_t + oa)(b_t + ob) = sum_t a_t (b_t + ob) + oa * sum_t (b_t + ob): with the rhs offset in the weights
 *    (b + ob fits int16) and oa * sum_t (b_t + ob) as the bias, the lhs rows enter raw, as the convs' pixels do.
 *  - Each block of rows that reads one rhs batch (mcu_matmul_block) packs its rhs, a block of channels (the rhs
 *    columns) at a time, into the 2x2 core's int16 stream (mcu_opt.h, mcu_dsp_g2_t; step_bytes 16) in scratch:
 *    per pair of channels the biases, per 4 taps the words c0 (t0, t2), c0 (t1, t3), c1 (t0, t2), c1 (t1, t3),
 *    the control words, the records (one requantization for all). Transposes fold into this packing: a
 *    transposed rhs ([N, K], q @ k^T) gives a channel's 4 taps in one word; a [K, N] one (attn @ v) a pair's
 *    taps t in one halfword, two of which (t, t + 2) form a word that SXTAB16 widens into both channels' pairs.
 *  - Then every pair of lhs rows is widened once (mcu_dsp_expand2) and runs the core over the block's channels
 *    (mcu_dsp_g2_run: 10 instructions per 16 MACs in its loop); an odd last row runs paired with itself.
 *  - Tail taps (k % 4) and the missing channel of an odd block are zero weights. Integer sums are exact, so the
 *    result equals mcu_matmul_s8's bit for bit (its twin is the portable one).
 *  - Packing costs about 2 instructions per rhs element (its whole steps in assembly: GCC fuses no rotation into
 *    SXTAB16), shared by every row of the block; the core's 116 instructions per 2 rows x 2 channels x 32 taps
 *    bound it near 1.1 MAC/instruction at k = 32 (0.9 at 16, 0.62 at 8: the requantization's 4 instructions per
 *    output and the pair's fixed costs do not shrink with k). */

/* sum + the four int16 lanes of x and y. */
MCU_INLINE int32_t add4(uint32_t x, uint32_t y, int32_t sum)
{
    return mcu_smlad(y, 0x00010001u, mcu_smlad(x, 0x00010001u, sum));
}

MCU_INLINE uint32_t read_u16(const int8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* rhs[t, c] + ob, or 0 for a tap or channel that does not exist. */
static int32_t tap(const mcu_matmul_params_t *p, const int8_t *rhs, int32_t c, int32_t t, int32_t n_end)
{
    if (t >= p->k || c >= n_end) {
        return 0;
    }
    return rhs[p->rhs_transposed ? c * p->k + t : t * p->n + c] + p->rhs_offset;
}

/* Step s of the pair of channels c, c + 1 (c + 1 < n_end or not) from single taps: the tail or a lone channel. */
static void step_c(const mcu_matmul_params_t *p, const int8_t *rhs, int32_t c, int32_t s, int32_t n_end, uint32_t *d,
                   int32_t sum[2])
{
    for (int32_t j = 0; j < 2; ++j) {
        for (int32_t h = 0; h < 2; ++h) { /* word h: taps (h, h + 2) */
            const int32_t lo = tap(p, rhs, c + j, 4 * s + h, n_end), hi = tap(p, rhs, c + j, 4 * s + h + 2, n_end);
            d[2 * j + h] = ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16);
            sum[j] += lo + hi;
        }
    }
}

/* cnt (>= 1) whole steps of a transposed pair (channel rows y0, y1) into w; their sums added to acc[0], acc[1].
 * The assembly: 13 instructions a step (two LDR, four SXTAB16 with the rotation fused, one STM, four SMLAD). */
static __attribute__((noinline)) uint32_t *run_nk(const int8_t *y0, const int8_t *y1, int32_t cnt, uint32_t ob2,
                                                  uint32_t *w, int32_t acc[2])
{
    int32_t a = acc[0], b = acc[1];
#if MCU_DSP_ASM
    const uint32_t ones = 0x00010001u;
    __asm__ volatile("1:\n\t"
                     "ldr r4, [%[y0]], #4\n\t"
                     "ldr r6, [%[y1]], #4\n\t"
                     "sxtab16 r5, %[ob], r4, ror #8\n\t"
                     "sxtab16 r4, %[ob], r4\n\t"
                     "sxtab16 r8, %[ob], r6, ror #8\n\t"
                     "sxtab16 r6, %[ob], r6\n\t"
                     "stmia %[w]!, {r4, r5, r6, r8}\n\t"
                     "smlad %[a], r4, %[one], %[a]\n\t"
                     "smlad %[a], r5, %[one], %[a]\n\t"
                     "smlad %[b], r6, %[one], %[b]\n\t"
                     "smlad %[b], r8, %[one], %[b]\n\t"
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b\n\t"
                     : [y0] "+r"(y0), [y1] "+r"(y1), [w] "+r"(w), [n] "+r"(cnt), [a] "+r"(a), [b] "+r"(b)
                     : [ob] "r"(ob2), [one] "r"(ones)
                     : "r4", "r5", "r6", "r8", "cc", "memory");
#else
    for (; cnt > 0; --cnt, y0 += 4, y1 += 4, w += 4) {
        const uint32_t u = mcu_read_u32(y0), v = mcu_read_u32(y1);
        const uint32_t u02 = mcu_sxtab16(ob2, u), u13 = mcu_sxtab16(ob2, mcu_ror8(u));
        const uint32_t v02 = mcu_sxtab16(ob2, v), v13 = mcu_sxtab16(ob2, mcu_ror8(v));
        w[0] = u02;
        w[1] = u13;
        w[2] = v02;
        w[3] = v13;
        a = add4(u02, u13, a);
        b = add4(v02, v13, b);
    }
#endif
    acc[0] = a;
    acc[1] = b;
    return w;
}

/* cnt (>= 1) whole steps of a [K, N] pair (y: its two columns at the steps' first row, rows n apart) into w,
 * summed. The assembly: 19 instructions a step (four LDRH, two ORR and four SXTAB16 pairing taps t, t + 2 and
 * t + 1, t + 3 of both columns, one STM, four SMLAD). */
static __attribute__((noinline)) uint32_t *run_kn(const int8_t *y, int32_t n, int32_t cnt, uint32_t ob2, uint32_t *w,
                                                  int32_t acc[2])
{
    int32_t a = acc[0], b = acc[1];
#if MCU_DSP_ASM
    const uint32_t ones = 0x00010001u;
    const int8_t *y2 = y + 2 * n;
    __asm__ volatile("1:\n\t"
                     "ldrh r4, [%[y]]\n\t"
                     "ldrh r5, [%[y2]]\n\t"
                     "ldrh r6, [%[y], %[n]]\n\t"
                     "ldrh r8, [%[y2], %[n]]\n\t"
                     "add %[y], %[y], %[n], lsl #2\n\t"
                     "add %[y2], %[y2], %[n], lsl #2\n\t"
                     "orr r4, r4, r5, lsl #16\n\t" /* taps t, t + 2 */
                     "orr r6, r6, r8, lsl #16\n\t" /* taps t + 1, t + 3 */
                     "sxtab16 r5, %[ob], r6\n\t"
                     "sxtab16 r8, %[ob], r6, ror #8\n\t"
                     "sxtab16 r6, %[ob], r4, ror #8\n\t"
                     "sxtab16 r4, %[ob], r4\n\t"
                     "stmia %[w]!, {r4, r5, r6, r8}\n\t"
                     "smlad %[a], r4, %[one], %[a]\n\t"
                     "smlad %[a], r5, %[one], %[a]\n\t"
                     "smlad %[b], r6, %[one], %[b]\n\t"
                     "smlad %[b], r8, %[one], %[b]\n\t"
                     "subs %[c], %[c], #1\n\t"
                     "bne 1b\n\t"
                     : [y] "+r"(y), [y2] "+r"(y2), [w] "+r"(w), [c] "+r"(cnt), [a] "+r"(a), [b] "+r"(b)
                     : [n] "r"(n), [ob] "r"(ob2), [one] "r"(ones)
                     : "r4", "r5", "r6", "r8", "cc", "memory");
#else
    for (; cnt > 0; --cnt, y += 4 * n, w += 4) {
        const uint32_t u = read_u16(y) | (read_u16(y + 2 * n) << 16);     /* taps t, t + 2 of both columns */
        const uint32_t v = read_u16(y + n) | (read_u16(y + 3 * n) << 16); /* taps t + 1, t + 3 */
        const uint32_t c0e = mcu_sxtab16(ob2, u), c0o = mcu_sxtab16(ob2, v);
        const uint32_t c1e = mcu_sxtab16(ob2, mcu_ror8(u)), c1o = mcu_sxtab16(ob2, mcu_ror8(v));
        w[0] = c0e;
        w[1] = c0o;
        w[2] = c1e;
        w[3] = c1o;
        a = add4(c0e, c0o, a);
        b = add4(c1e, c1o, b);
    }
#endif
    acc[0] = a;
    acc[1] = b;
    return w;
}

/* The common case of pack: k a multiple of 4 and whole pairs, each a run of steps per control word. */
static void pack_whole(const mcu_matmul_params_t *p, const int8_t *rhs, int32_t c0, int32_t pairs, int32_t steps,
                       const int32_t rec[3], uint32_t *w)
{
    const int32_t k = p->k, n = p->n, first = mcu_dsp_g2_first(steps), oa = p->lhs_offset;
    const uint32_t ob2 = (uint16_t)(int16_t)p->rhs_offset * 0x00010001u;
    const int transposed = p->rhs_transposed;
    for (int32_t pr = 0, c = c0; pr < pairs; ++pr, c += 2) {
        int32_t sum[2] = {0, 0};
        uint32_t *bias = w;
        w += 2;
        for (int32_t s = 0, ctrl = first;; ctrl += MCU_DSP_G2_CHUNK) {
            w = transposed ? run_nk(rhs + c * k + 4 * s, rhs + (c + 1) * k + 4 * s, ctrl + 1 - s, ob2, w, sum)
                           : run_kn(rhs + 4 * s * n + c, n, ctrl + 1 - s, ob2, w, sum);
            s = ctrl + 1;
            if (s == steps) {
                break;
            }
            *w++ = 0u;
        }
        *w++ = pr < pairs - 1 ? 1u : 0xFFFFFFFFu;
        bias[0] = (uint32_t)(oa * sum[0]);
        bias[1] = (uint32_t)(oa * sum[1]);
        memcpy(w, rec, 12);
        memcpy(w + 3, rec, 12);
        w += 6;
    }
}

/* Channels [c0, c0 + cn) of the block's rhs as the core's stream (header, pairs); records `rec` in every pair.
 * Whole steps of whole pairs run in runs between control words; the tail step and a lone channel tap by tap. */
static void pack(const mcu_matmul_params_t *p, const int8_t *rhs, int32_t c0, int32_t cn, int32_t steps,
                 const int32_t rec[3], int8_t *stream)
{
    const int32_t k = p->k, n = p->n, pairs = (cn + 1) / 2, last = cn / 2 > 0 ? cn / 2 - 1 : 0;
    const int32_t first = mcu_dsp_g2_first(steps), n_end = c0 + cn;
    const uint32_t ob2 = (uint16_t)(int16_t)p->rhs_offset * 0x00010001u;
    uint32_t *w = (uint32_t *)(void *)stream;
    *w++ = 16u; /* step bytes: int16 words */
    if (k % 4 == 0 && cn % 2 == 0) {
        pack_whole(p, rhs, c0, pairs, steps, rec, w);
        return;
    }
    for (int32_t pr = 0; pr < pairs; ++pr) {
        const int32_t c = c0 + 2 * pr, two = c + 1 < n_end, whole = two ? k / 4 : 0;
        uint32_t *bias = w;
        int32_t sum[2] = {0, 0};
        w += 2;
        for (int32_t s = 0, ctrl = first; s < steps; ctrl += MCU_DSP_G2_CHUNK) {
            const int32_t end = ctrl + 1 < whole ? ctrl + 1 : whole; /* whole steps up to the control word */
            if (s < end) {
                w = p->rhs_transposed ? run_nk(rhs + c * k + 4 * s, rhs + (c + 1) * k + 4 * s, end - s, ob2, w, sum)
                                      : run_kn(rhs + 4 * s * n + c, n, end - s, ob2, w, sum);
                s = end;
            }
            for (; s <= ctrl; ++s, w += 4) { /* the tail step, or a lone channel's steps */
                step_c(p, rhs, c, s, n_end, w, sum);
            }
            /* a control word: 0 inside the pair; at its end 1, or -1 from the last whole pair */
            *w++ = s < steps ? 0u : pr < last ? 1u : 0xFFFFFFFFu;
        }
        bias[0] = (uint32_t)(p->lhs_offset * sum[0]);
        bias[1] = two ? (uint32_t)(p->lhs_offset * sum[1]) : 0u;
        memcpy(w, rec, 12);
        memcpy(w + 3, rec, 12);
        w += 6;
    }
}

mcu_status_t mcu_matmul_gemm_s8_dsp(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                                    int8_t *scratch, int8_t *output)
{
    const mcu_status_t status = mcu_matmul_check(params, lhs, rhs, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const mcu_matmul_params_t *p = params;
    const int32_t k = p->k, n = p->n, steps = (k + 3) / 4, blocks = mcu_matmul_blocks(p);
    const int32_t nb = mcu_matmul_gemm_s8_dsp_channels(p);
    /* scratch (mcu_matmul_gemm_s8_dsp_scratch_bytes): the entry, 2 rows widened, the state's address; the stream */
    uint32_t *x = (uint32_t *)(void *)scratch + 1;
    int8_t *stream = scratch + 4 * (4 * steps + 2);
    int32_t rec[3];
    mcu_rq3_record(p->output_multiplier, p->output_shift, p->output_offset, rec);
    for (int32_t blk = 0; blk < blocks; ++blk) {
        const mcu_matmul_block_t b = mcu_matmul_block(p, blk, lhs, rhs, output);
        for (int32_t c0 = 0; c0 < n; c0 += nb) {
            const int32_t cn = n - c0 < nb ? n - c0 : nb;
            mcu_rq_mode_t mode;
            mcu_dsp_g2_t g;
            pack(p, b.rhs, c0, cn, steps, rec, stream);
            if (mcu_dsp_g2_open(&g, stream, x, steps, cn, p->output_offset, p->act_min, p->act_max, &mode) != MCU_OK) {
                return MCU_ERR_ARG;
            }
            int32_t i = 0;
            for (; i + 1 < b.rows; i += 2) {
                const int8_t *a = b.lhs + i * k;
                mcu_dsp_expand2(a, a + k, k, g.x);
                mcu_dsp_g2_run(&g, b.out + i * n + c0, n, cn, &mode);
            }
            if (i < b.rows) { /* the last row alone: paired with itself, its second outputs not written */
                mcu_dsp_expand2(b.lhs + i * k, b.lhs + i * k, k, g.x);
                mcu_dsp_g2_run(&g, b.out + i * n + c0, 0, cn, &mode);
            }
        }
    }
    return MCU_OK;
}
