/* Inline helpers of the int16-activation DSP variants (runtime_c/kernels/s16/ *_dsp.c); not a public API.
 *
 *  - Exact int32 accumulation: |x * w| <= 2^22 for int16 x and int8 w, so a sum of at most 511 products fits
 *    int32 whatever their order (SMLAD/SMLABB wrap modulo 2^32, which is exact when the true sum fits). The
 *    GEMMs accumulate chunks of MCU_S16_CHUNK taps in int32 (SMLAD, two 16x16 products per instruction) and
 *    add each chunk to int64, so the result equals the portable kernels' int64 sum for any K.
 *  - Requantization: mcu_s16_rq equals mcu_requantize64 for every int64 acc (proof at the function).
 *  - DSP intrinsics from arm_acle.h (via mcu_opt.h), C stand-ins without the DSP extension.
 */
#ifndef MCU_OPT_S16_H
#define MCU_OPT_S16_H

#include <stdint.h>

#include "mcu/mcu_opt.h"

#define MCU_S16_CHUNK 508 /* taps per int32 chunk: a multiple of 4, at most 511 */
#define MCU_S16_DW_MAX_TAPS 511 /* the depthwise variant's window, accumulated in int32 whole */

/* clamp(mcu_requantize64(acc, mult, shift), act_min, act_max), exact. When shift <= -2 and acc fits int32 it
 * takes h = floor(acc * mult / 2^32) (one SMULL) and returns (h + 2^(s-1)) >> s, s = -1 - shift in [1, 30].
 * mcu_requantize64 with r = 31 - shift > 32 computes the same: with acc = hi 2^32 + lo its H is
 * hi * mult + floor(lo * mult / 2^32) = floor(acc * mult / 2^32) = h, and it returns (H + 2^(s-1)) >> s
 * saturated; here |acc| <= 2^31 and 0 <= mult < 2^31 give |h| <= 2^30, so h + 2^(s-1) and the result fit
 * int32 and the saturation never acts. Everything else goes to mcu_requantize64. */
MCU_INLINE int16_t mcu_s16_rq(int64_t acc, int32_t mult, int32_t shift, int32_t act_min, int32_t act_max)
{
    int32_t q, a = (int32_t)acc;
    if (shift <= -2 && (int64_t)a == acc) {
        MCU_OPAQUE(a); /* else GCC multiplies the whole int64 acc (3 multiplies, not one SMULL) */
        const int32_t h = (int32_t)(((int64_t)a * mult) >> 32);
        const int32_t s = -1 - shift;
        q = (h + ((int32_t)1 << (s - 1))) >> s;
    } else {
        q = mcu_requantize64(acc, mult, shift);
    }
    return (int16_t)mcu_clamp_i32(q, act_min, act_max);
}

/* Two pixels x two channels: acc[2 p + c] += sum over k < 4 * steps of x_p[k] * w_c[k]. x holds the two
 * pixels' int16 taps interleaved by word: per 2 taps p0 (k, k+1), p1 (k, k+1); w the pair's weights likewise,
 * per 2 taps c0 (k, k+1), c1 (k, k+1) (mcu_conv2d_s16_dsp's layouts). */
MCU_INLINE void mcu_s16_dot_2x2(const uint32_t *x, const uint32_t *w, int32_t steps, int64_t acc[4])
{
    while (steps > 0) {
        int32_t n = steps < MCU_S16_CHUNK / 4 ? steps : MCU_S16_CHUNK / 4;
        steps -= n;
        int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
#if MCU_DSP_ASM
        uint32_t xa, xb, wa, wb;
        __asm__ volatile(
            "1:\n\t"
            "ldrd %[xa], %[xb], [%[x]], #8\n\t"
            "ldrd %[wa], %[wb], [%[w]], #8\n\t"
            "smlad %[a00], %[xa], %[wa], %[a00]\n\t"
            "smlad %[a01], %[xa], %[wb], %[a01]\n\t"
            "smlad %[a10], %[xb], %[wa], %[a10]\n\t"
            "smlad %[a11], %[xb], %[wb], %[a11]\n\t"
            "ldrd %[xa], %[xb], [%[x]], #8\n\t"
            "ldrd %[wa], %[wb], [%[w]], #8\n\t"
            "smlad %[a00], %[xa], %[wa], %[a00]\n\t"
            "smlad %[a01], %[xa], %[wb], %[a01]\n\t"
            "smlad %[a10], %[xb], %[wa], %[a10]\n\t"
            "smlad %[a11], %[xb], %[wb], %[a11]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n"
            : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [x] "+r"(x), [w] "+r"(w),
              [n] "+r"(n), [xa] "=&r"(xa), [xb] "=&r"(xb), [wa] "=&r"(wa), [wb] "=&r"(wb)
            :
            : "cc", "memory");
#else
        do {
            for (int32_t j = 0; j < 4; j += 2) {
                const uint32_t xa = x[j], xb = x[j + 1], wa = w[j], wb = w[j + 1];
                a00 = mcu_smlad(xa, wa, a00);
                a01 = mcu_smlad(xa, wb, a01);
                a10 = mcu_smlad(xb, wa, a10);
                a11 = mcu_smlad(xb, wb, a11);
            }
            x += 4;
            w += 4;
        } while (--n > 0);
#endif
        acc[0] += a00;
        acc[1] += a01;
        acc[2] += a10;
        acc[3] += a11;
    }
}

/* One row x four channels: acc[c] += sum over k < 4 * steps of x[k] * w_c[k]; x the row's int16 taps, w per
 * 2 taps the words c0 (k, k+1), c1 (k, k+1), c2 (k, k+1), c3 (k, k+1) (mcu_fully_connected_s16_dsp's layout). */
MCU_INLINE void mcu_s16_dot_1x4(const uint32_t *x, const uint32_t *w, int32_t steps, int64_t acc[4])
{
    while (steps > 0) {
        int32_t n = steps < MCU_S16_CHUNK / 4 ? steps : MCU_S16_CHUNK / 4;
        steps -= n;
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
#if MCU_DSP_ASM
        uint32_t xa;
        __asm__ volatile(
            "1:\n\t"
            "ldr %[xa], [%[x]], #4\n\t"
            "ldm %[w]!, {r4, r5, r6, r7}\n\t"
            "smlad %[a0], %[xa], r4, %[a0]\n\t"
            "smlad %[a1], %[xa], r5, %[a1]\n\t"
            "smlad %[a2], %[xa], r6, %[a2]\n\t"
            "smlad %[a3], %[xa], r7, %[a3]\n\t"
            "ldr %[xa], [%[x]], #4\n\t"
            "ldm %[w]!, {r4, r5, r6, r7}\n\t"
            "smlad %[a0], %[xa], r4, %[a0]\n\t"
            "smlad %[a1], %[xa], r5, %[a1]\n\t"
            "smlad %[a2], %[xa], r6, %[a2]\n\t"
            "smlad %[a3], %[xa], r7, %[a3]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [w] "+r"(w), [n] "+r"(n),
              [xa] "=&r"(xa)
            :
            : "r4", "r5", "r6", "r7", "cc", "memory");
#else
        do {
            for (int32_t j = 0; j < 2; ++j) {
                const uint32_t xa = x[j];
                a0 = mcu_smlad(xa, w[4 * j], a0);
                a1 = mcu_smlad(xa, w[4 * j + 1], a1);
                a2 = mcu_smlad(xa, w[4 * j + 2], a2);
                a3 = mcu_smlad(xa, w[4 * j + 3], a3);
            }
            x += 2;
            w += 8;
        } while (--n > 0);
#endif
        acc[0] += a0;
        acc[1] += a1;
        acc[2] += a2;
        acc[3] += a3;
    }
}

/* mcu_s16_dot_1x4 on int8 weights: per 4 taps one word per channel c0..c3 of bytes w(k), w(k+2), w(k+1), w(k+3)
 * (mcu_fully_connected_s16_dsp's layout), which SXTB16 splits into the halfword pairs (k, k+1) and (k+2, k+3). */
MCU_INLINE void mcu_s16_dot_1x4_s8(const uint32_t *x, const uint32_t *w, int32_t steps, int64_t acc[4])
{
    while (steps > 0) {
        int32_t n = steps < MCU_S16_CHUNK / 4 ? steps : MCU_S16_CHUNK / 4;
        steps -= n;
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
#if MCU_DSP_ASM
        uint32_t xa, xb, lo;
        __asm__ volatile(
            "1:\n\t"
            "ldrd %[xa], %[xb], [%[x]], #8\n\t"
            "ldm %[w]!, {r4, r5, r6, r7}\n\t"
            "sxtb16 %[lo], r4\n\t"
            "sxtb16 r4, r4, ror #8\n\t"
            "smlad %[a0], %[xa], %[lo], %[a0]\n\t"
            "smlad %[a0], %[xb], r4, %[a0]\n\t"
            "sxtb16 %[lo], r5\n\t"
            "sxtb16 r5, r5, ror #8\n\t"
            "smlad %[a1], %[xa], %[lo], %[a1]\n\t"
            "smlad %[a1], %[xb], r5, %[a1]\n\t"
            "sxtb16 %[lo], r6\n\t"
            "sxtb16 r6, r6, ror #8\n\t"
            "smlad %[a2], %[xa], %[lo], %[a2]\n\t"
            "smlad %[a2], %[xb], r6, %[a2]\n\t"
            "sxtb16 %[lo], r7\n\t"
            "sxtb16 r7, r7, ror #8\n\t"
            "smlad %[a3], %[xa], %[lo], %[a3]\n\t"
            "smlad %[a3], %[xb], r7, %[a3]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [w] "+r"(w), [n] "+r"(n),
              [xa] "=&r"(xa), [xb] "=&r"(xb), [lo] "=&r"(lo)
            :
            : "r4", "r5", "r6", "r7", "cc", "memory");
#else
        do {
            a0 = mcu_smlad(x[1], mcu_sxtb16(mcu_ror8(w[0])), mcu_smlad(x[0], mcu_sxtb16(w[0]), a0));
            a1 = mcu_smlad(x[1], mcu_sxtb16(mcu_ror8(w[1])), mcu_smlad(x[0], mcu_sxtb16(w[1]), a1));
            a2 = mcu_smlad(x[1], mcu_sxtb16(mcu_ror8(w[2])), mcu_smlad(x[0], mcu_sxtb16(w[2]), a2));
            a3 = mcu_smlad(x[1], mcu_sxtb16(mcu_ror8(w[3])), mcu_smlad(x[0], mcu_sxtb16(w[3]), a3));
            x += 2;
            w += 4;
        } while (--n > 0);
#endif
        acc[0] += a0;
        acc[1] += a1;
        acc[2] += a2;
        acc[3] += a3;
    }
}

/* dst[0..k4) = row[0..k), then zeros; dst word-aligned, row any (the input row the DSP fully connected reads). */
MCU_INLINE void mcu_s16_load_row(int16_t *dst, const int16_t *row, int32_t k, int32_t k4)
{
    int32_t i = 0;
    uint32_t *d = (uint32_t *)(void *)dst;
    for (; i + 2 <= k; i += 2) {
        uint32_t v = mcu_read_u32(row + i);
        MCU_OPAQUE(v);
        *d++ = v;
    }
    for (; i < k4; ++i) {
        int32_t v = i < k ? row[i] : 0;
        MCU_OPAQUE(v);
        dst[i] = (int16_t)v;
    }
}

/* mcu_fully_connected_s16_dsp (int8 weights, wide 0) and mcu_fully_connected_s16_dsp_wide (int16 weights, wide 1):
 * one row x 4 output features at a time; each source calls this with a constant `wide`. */
MCU_INLINE mcu_status_t mcu_fc_s16_dsp_run(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                           const int16_t *input, const int8_t *weights, const int64_t *bias,
                                           int8_t *scratch, int16_t *output, int wide)
{
    const mcu_status_t status = mcu_fc_s16_check(params, quant, input, weights, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const mcu_fc_params_t *p = params;
    const int32_t k = p->in_features, k4 = (k + 3) & ~3, n_out = p->out_features;
    const int32_t *mult = quant->multiplier, *shift = quant->shift;
    int16_t *row = (int16_t *)(void *)scratch;

    for (int32_t b = 0; b < p->batches; ++b) {
        mcu_s16_load_row(row, input + b * k, k, k4);
        const uint32_t *w = (const uint32_t *)(const void *)weights;
        int16_t *out = output + b * n_out;
        for (int32_t o = 0; o < n_out; o += 4, w += (wide ? 2 : 1) * k4) {
            int64_t acc[4] = {0, 0, 0, 0};
            if (wide) {
                mcu_s16_dot_1x4((const uint32_t *)(const void *)row, w, k4 / 4, acc);
            } else {
                mcu_s16_dot_1x4_s8((const uint32_t *)(const void *)row, w, k4 / 4, acc);
            }
            const int32_t n = n_out - o < 4 ? n_out - o : 4; /* the quad's channels past n are padding */
            for (int32_t j = 0; j < n; ++j) {
                const int64_t a = acc[j] + (bias != NULL ? bias[o + j] : 0);
                out[o + j] = mcu_s16_rq(a, mult[o + j], shift[o + j], p->act_min, p->act_max);
            }
        }
    }
    return MCU_OK;
}

#endif /* MCU_OPT_S16_H */
