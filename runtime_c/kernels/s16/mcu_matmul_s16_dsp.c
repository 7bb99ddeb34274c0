/* DSP-extension int16 matmul of two activations: SMLALD dot products (two products a step into 64 bits). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

/* - A transposed rhs (q @ k^T): each output is a dot product of two contiguous rows, a word (two int16) of each
 *   a SMLALD; with k == 8 (a decode step's heads) the lhs row stays in four registers across the outputs.
 * - A [K, N] rhs (attention @ v): two columns at a time; rows t and t + 1 of the pair are two words, repacked
 *   (PKHBT / PKHTB) into column j's pair and column j + 1's, each against the lhs word (a[t], a[t + 1]).
 * - Odd tails (a last tap, a last column) in plain C. */

/* The output's requantization: for shift <= -2 (attention's products) mcu_requantize64's r > 32 branch in 32-bit
 * pieces, q = (hi m + floor(lo m / 2^32) + 2^(s-1)) >> s (one UMULL, one SMLAL: floor(lo m / 2^32) < 2^31 and the
 * rounding term <= 2^29 share a word) and its int32 saturation folded into the int16 clamp; else
 * mcu_requantize64 itself. */
typedef struct {
    const mcu_matmul_params_t *p;
    uint32_t round;
    int32_t s;                /* 1 .. 30, or 0: the general path */
    int32_t m, act_min, act_max; /* copies: the int16 output's stores would reload them from p */
} rq_t;

MCU_INLINE int16_t out16_fast(const rq_t *q, int64_t acc)
{
    const int32_t m = q->m, s = q->s;
    const uint32_t u = (uint32_t)(((uint64_t)(uint32_t)acc * (uint32_t)m) >> 32) + q->round;
    int32_t top = (int32_t)(acc >> 32);
    MCU_OPAQUE(top); /* else GCC multiplies it as a 64-bit value (UMULL, MUL, MLA) instead of one SMLAL */
    const int64_t h = (int64_t)top * m + (int64_t)u;
    const int32_t hh = (int32_t)(h >> 32);
    const int32_t lo = (int32_t)(((uint32_t)h >> s) | ((uint32_t)hh << (32 - s))), hi = hh >> s; /* h >> s */
    if (hi != (lo < 0 ? -1 : 0)) {
        return (int16_t)(hi < 0 ? q->act_min : q->act_max);
    }
    return (int16_t)mcu_clamp_i32(lo, q->act_min, q->act_max);
}

MCU_INLINE int16_t out16(const rq_t *q, int64_t acc)
{
    if (q->s == 0) {
        const mcu_matmul_params_t *p = q->p;
        const int32_t r = mcu_requantize64(acc, p->output_multiplier, p->output_shift);
        return (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
    }
    return out16_fast(q, acc);
}

/* sum_t a[t] * b[t] over t < k, both contiguous. */
MCU_INLINE int64_t dot_rows(const int16_t *a, const int16_t *b, int32_t k)
{
    int64_t acc = 0;
    int32_t t = 0;
    for (; t + 2 <= k; t += 2) {
        acc = mcu_smlald(mcu_read_u32(a + t), mcu_read_u32(b + t), acc);
    }
    if (t < k) {
        acc += (int32_t)a[t] * (int32_t)b[t];
    }
    return acc;
}

/* out[j] for j < n, rows of b of 8 elements (contiguous) against a's row held in registers: ROWS8_GROUP dot
 * products into a stack buffer, then their requantizations (each loop then fits the registers). */
#define ROWS8_GROUP 16

static void rows8(const rq_t *q, const int16_t *a, const int16_t *b, int16_t *out)
{
    const uint32_t x0 = mcu_read_u32(a), x1 = mcu_read_u32(a + 2), x2 = mcu_read_u32(a + 4),
                   x3 = mcu_read_u32(a + 6);
    int64_t acc[ROWS8_GROUP];
    for (int32_t j0 = 0; j0 < q->p->n; j0 += ROWS8_GROUP, out += ROWS8_GROUP) {
        const int32_t len = q->p->n - j0 < ROWS8_GROUP ? q->p->n - j0 : ROWS8_GROUP;
        for (int32_t j = 0; j < len; ++j, b += 8) {
            int64_t d = mcu_smlald(x0, mcu_read_u32(b), 0);
            d = mcu_smlald(x1, mcu_read_u32(b + 2), d);
            d = mcu_smlald(x2, mcu_read_u32(b + 4), d);
            acc[j] = mcu_smlald(x3, mcu_read_u32(b + 6), d);
        }
        if (q->s != 0) {
            for (int32_t j = 0; j < len; ++j) {
                out[j] = out16_fast(q, acc[j]);
            }
        } else {
            for (int32_t j = 0; j < len; ++j) {
                out[j] = out16(q, acc[j]);
            }
        }
    }
}

/* out[j], out[j + 1] for a [K, N] rhs b (row stride n) starting at column j. */
static void column_pair(const rq_t *q, const int16_t *a, const int16_t *b, int16_t *out)
{
    const int32_t k = q->p->k, n = q->p->n;
    int64_t acc0 = 0, acc1 = 0;
    int32_t t = 0;
    for (; t + 4 <= k; t += 4, b += 4 * n) {
        const uint32_t x0 = mcu_read_u32(a + t), x1 = mcu_read_u32(a + t + 2);
        const uint32_t w0 = mcu_read_u32(b), w1 = mcu_read_u32(b + n);
        const uint32_t w2 = mcu_read_u32(b + 2 * n), w3 = mcu_read_u32(b + 3 * n);
        acc0 = mcu_smlald(x0, mcu_pack_lo(w0, w1), acc0);
        acc1 = mcu_smlald(x0, mcu_pack_hi(w0, w1), acc1);
        acc0 = mcu_smlald(x1, mcu_pack_lo(w2, w3), acc0);
        acc1 = mcu_smlald(x1, mcu_pack_hi(w2, w3), acc1);
    }
    for (; t + 2 <= k; t += 2, b += 2 * n) {
        const uint32_t x = mcu_read_u32(a + t);
        const uint32_t w0 = mcu_read_u32(b), w1 = mcu_read_u32(b + n);
        acc0 = mcu_smlald(x, mcu_pack_lo(w0, w1), acc0);
        acc1 = mcu_smlald(x, mcu_pack_hi(w0, w1), acc1);
    }
    if (t < k) {
        acc0 += (int32_t)a[t] * (int32_t)b[0];
        acc1 += (int32_t)a[t] * (int32_t)b[1];
    }
    out[0] = out16(q, acc0);
    out[1] = out16(q, acc1);
}

mcu_status_t mcu_matmul_s16_dsp(const mcu_matmul_params_t *params, const int16_t *lhs, const int16_t *rhs,
                                int16_t *output)
{
    const mcu_status_t status = mcu_matmul_s16_check(params, lhs, rhs, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_matmul_params_t *p = params;
    const int32_t m = p->m, k = p->k, n = p->n;
    const rq_t q = {p, p->output_shift <= -2 ? (uint32_t)1 << (-p->output_shift - 2) : 0,
                    p->output_shift <= -2 ? -p->output_shift - 1 : 0, p->output_multiplier, p->act_min, p->act_max};
    int16_t *out = output;
    for (int32_t b = 0; b < p->batches; ++b) {
        const mcu_matmul_at_t at = mcu_matmul_at(p, b);
        const int16_t *a = lhs + at.lhs, *bm = rhs + at.rhs;
        for (int32_t i = 0; i < m; ++i, a += k, out += n) {
            if (p->rhs_transposed && k == 8) {
                rows8(&q, a, bm, out);
            } else if (p->rhs_transposed) {
                for (int32_t j = 0; j < n; ++j) {
                    out[j] = out16(&q, dot_rows(a, bm + j * k, k));
                }
            } else {
                int32_t j = 0;
                for (; j + 2 <= n; j += 2) {
                    column_pair(&q, a, bm + j, out + j);
                }
                if (j < n) {
                    int64_t acc = 0;
                    for (int32_t t = 0; t < k; ++t) {
                        acc += (int32_t)a[t] * (int32_t)bm[t * n + j];
                    }
                    out[j] = out16(&q, acc);
                }
            }
        }
    }
    return MCU_OK;
}
