/* DSP (SIMD32) int8 matmul of two activations: SMLAD on int16 pairs, two lhs rows per rhs load. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

/*  - sum_t (a_t + oa)(b_t + ob) = sum_t (a_t + oa) b_t + ob * S with S = sum_t (a_t + oa), one per lhs row:
 *    only the lhs carries its offset into the products (SXTAB16 widens and adds it), b stays raw.
 *  - Each block of rows that reads one rhs batch (mcu_matmul_block) is one [L, K] x [K, N] product; two lhs rows
 *    share every rhs word loaded and widened.
 *  - rhs_transposed ([N, K], q @ k^T): an output is a dot of two contiguous rows; 4 taps take LDR + 2 SXTB16 of
 *    b, then per row LDR + 2 SXTAB16 + 2 SMLAD.
 *  - [K, N] (attention @ v): 4 columns x 4 taps at once: four rhs row words widened (SXTB16) and re-paired per
 *    column with PKHBT / PKHTB into taps (t, t+2) and (t+1, t+3), the lhs word widened the same way with its
 *    offset (SXTAB16), so 16 MACs take 8 SMLAD and the second row only its own word and 8 SMLAD.
 *  - Integer sums are exact, so the result equals mcu_matmul_s8's bit for bit (its twin is the portable one). */

MCU_INLINE int32_t out_s8(int32_t acc, const mcu_matmul_params_t *p)
{
    acc = mcu_add_offset(mcu_requantize(acc, p->output_multiplier, p->output_shift), p->output_offset);
    return mcu_clamp_i32(acc, p->act_min, p->act_max);
}

static int32_t row_sum(const int8_t *a, int32_t k, int32_t oa)
{
    int32_t s = oa * k;
    for (int32_t t = 0; t < k; ++t) {
        s += a[t];
    }
    return s;
}

/* out[i, j] for rows a0 (and a1 when not NULL) against rhs rows b_j = b + j * k. */
static void rows_nk(const int8_t *a0, const int8_t *a1, const int8_t *b, int32_t k, int32_t n, int32_t s0,
                    int32_t s1, const mcu_matmul_params_t *p, int8_t *o0, int8_t *o1)
{
    const uint32_t oa2 = (uint16_t)(int16_t)p->lhs_offset * 0x00010001u;
    const int32_t groups = k / 4, ob = p->rhs_offset;
    for (int32_t j = 0; j < n; ++j, b += k) {
        int32_t acc0 = ob * s0, acc1 = ob * s1;
        const int8_t *x0 = a0, *x1 = a1, *y = b;
        for (int32_t g = 0; g < groups; ++g, x0 += 4, y += 4) {
            const uint32_t bw = mcu_read_u32(y);
            const uint32_t b02 = mcu_sxtb16(bw), b13 = mcu_sxtb16(mcu_ror8(bw));
            const uint32_t aw = mcu_read_u32(x0);
            acc0 = mcu_smlad(mcu_sxtab16(oa2, aw), b02, acc0);
            acc0 = mcu_smlad(mcu_sxtab16(oa2, mcu_ror8(aw)), b13, acc0);
            if (x1 != NULL) {
                const uint32_t cw = mcu_read_u32(x1);
                acc1 = mcu_smlad(mcu_sxtab16(oa2, cw), b02, acc1);
                acc1 = mcu_smlad(mcu_sxtab16(oa2, mcu_ror8(cw)), b13, acc1);
                x1 += 4;
            }
        }
        for (int32_t t = 4 * groups; t < k; ++t, ++x0, ++y) {
            acc0 += ((int32_t)*x0 + p->lhs_offset) * *y;
            if (x1 != NULL) {
                acc1 += ((int32_t)*x1 + p->lhs_offset) * *y;
                ++x1;
            }
        }
        o0[j] = (int8_t)out_s8(acc0, p);
        if (o1 != NULL) {
            o1[j] = (int8_t)out_s8(acc1, p);
        }
    }
}

/* Column c's taps t, t + 2 (or t + 1, t + 3) as one int16 pair from two widened rhs rows. */
MCU_INLINE uint32_t pack_lo(uint32_t a, uint32_t b)
{
    return (a & 0xFFFFu) | (b << 16); /* PKHBT */
}

MCU_INLINE uint32_t pack_hi(uint32_t a, uint32_t b)
{
    return (a >> 16) | (b & 0xFFFF0000u); /* PKHTB */
}

/* acc[c] += sum over taps t..t+3 of (x[t] + oa) * y[t * n + c], c = 0..3: lhs pairs (t, t+2), (t+1, t+3). */
MCU_INLINE void quad_kn(uint32_t x02, uint32_t x13, const uint32_t r[4][2], int32_t acc[4])
{
    acc[0] = mcu_smlad(x02, pack_lo(r[0][0], r[2][0]), mcu_smlad(x13, pack_lo(r[1][0], r[3][0]), acc[0]));
    acc[1] = mcu_smlad(x02, pack_lo(r[0][1], r[2][1]), mcu_smlad(x13, pack_lo(r[1][1], r[3][1]), acc[1]));
    acc[2] = mcu_smlad(x02, pack_hi(r[0][0], r[2][0]), mcu_smlad(x13, pack_hi(r[1][0], r[3][0]), acc[2]));
    acc[3] = mcu_smlad(x02, pack_hi(r[0][1], r[2][1]), mcu_smlad(x13, pack_hi(r[1][1], r[3][1]), acc[3]));
}

/* out[i, j] for rows a0 (and a1) against rhs [K, N] read down its columns, 4 columns and 4 taps at a time. */
static void rows_kn(const int8_t *a0, const int8_t *a1, const int8_t *b, int32_t k, int32_t n, int32_t s0,
                    int32_t s1, const mcu_matmul_params_t *p, int8_t *o0, int8_t *o1)
{
    const uint32_t oa2 = (uint16_t)(int16_t)p->lhs_offset * 0x00010001u;
    const int32_t ob = p->rhs_offset, whole = k & ~3;
    int32_t j = 0;
    for (; j + 4 <= n; j += 4) {
        int32_t acc0[4] = {ob * s0, ob * s0, ob * s0, ob * s0}, acc1[4] = {ob * s1, ob * s1, ob * s1, ob * s1};
        const int8_t *y = b + j;
        for (int32_t t = 0; t < whole; t += 4, y += 4 * n) {
            uint32_t r[4][2]; /* row t + q widened: (c0, c2), (c1, c3) */
            for (int32_t q = 0; q < 4; ++q) {
                mcu_widen8(mcu_read_u32(y + q * n), r[q]);
            }
            const uint32_t xw = mcu_read_u32(a0 + t);
            quad_kn(mcu_sxtab16(oa2, xw), mcu_sxtab16(oa2, mcu_ror8(xw)), r, acc0);
            if (a1 != NULL) {
                const uint32_t zw = mcu_read_u32(a1 + t);
                quad_kn(mcu_sxtab16(oa2, zw), mcu_sxtab16(oa2, mcu_ror8(zw)), r, acc1);
            }
        }
        for (int32_t t = whole; t < k; ++t) {
            for (int32_t c = 0; c < 4; ++c) {
                acc0[c] += ((int32_t)a0[t] + p->lhs_offset) * b[t * n + j + c];
                if (a1 != NULL) {
                    acc1[c] += ((int32_t)a1[t] + p->lhs_offset) * b[t * n + j + c];
                }
            }
        }
        for (int32_t c = 0; c < 4; ++c) {
            o0[j + c] = (int8_t)out_s8(acc0[c], p);
            if (o1 != NULL) {
                o1[j + c] = (int8_t)out_s8(acc1[c], p);
            }
        }
    }
    for (; j < n; ++j) {
        int32_t acc0 = ob * s0, acc1 = ob * s1;
        for (int32_t t = 0; t < k; ++t) {
            acc0 += ((int32_t)a0[t] + p->lhs_offset) * b[t * n + j];
            if (a1 != NULL) {
                acc1 += ((int32_t)a1[t] + p->lhs_offset) * b[t * n + j];
            }
        }
        o0[j] = (int8_t)out_s8(acc0, p);
        if (o1 != NULL) {
            o1[j] = (int8_t)out_s8(acc1, p);
        }
    }
}

mcu_status_t mcu_matmul_s8_dsp(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                               int8_t *output)
{
    const mcu_status_t status = mcu_matmul_check(params, lhs, rhs, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_matmul_params_t *p = params;
    const int32_t k = p->k, n = p->n, blocks = mcu_matmul_blocks(p);
    for (int32_t blk = 0; blk < blocks; ++blk) {
        const mcu_matmul_block_t b = mcu_matmul_block(p, blk, lhs, rhs, output);
        for (int32_t i = 0; i < b.rows; i += 2) {
            const int8_t *a0 = b.lhs + i * k, *a1 = i + 1 < b.rows ? a0 + k : NULL;
            const int32_t s0 = row_sum(a0, k, p->lhs_offset), s1 = a1 != NULL ? row_sum(a1, k, p->lhs_offset) : 0;
            int8_t *o0 = b.out + i * n, *o1 = a1 != NULL ? o0 + n : NULL;
            if (p->rhs_transposed) {
                rows_nk(a0, a1, b.rhs, k, n, s0, s1, p, o0, o1);
            } else {
                rows_kn(a0, a1, b.rhs, k, n, s0, s1, p, o0, o1);
            }
        }
    }
    return MCU_OK;
}
