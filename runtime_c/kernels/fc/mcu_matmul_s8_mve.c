/* Helium (MVE) int8 matmul of two activations: 16-tap dot products (VMLADAVA) or 4-lane column updates (VMLA). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

/*  - Blocks of rows that read one rhs batch (mcu_matmul_block); two lhs rows at a time.
 *  - rhs_transposed ([N, K]): out = sum a*b + oa * sum b + ob * sum a + K * oa * ob; per 16 taps one rhs load,
 *    VMLADAVA per row and one VADDVA (sum b); the row sums are taken once. Tails are zero-predicated loads.
 *    With k <= 32 (a head's q @ k^T) the outputs go 4 at a time instead (rows_nk_gather).
 *  - [K, N]: 8 columns as two int32x4 accumulators per row, started at ob * sum(a + oa); per tap t the rhs row's
 *    8 bytes are loaded widened (VLDRB.S32) and multiplied by the scalar a[t] + oa (VMLA): 16 MACs per 4
 *    instructions for two rows. The requantization runs on the vectors (mcu_mve_requantize, exact).
 *  - The result equals mcu_matmul_s8's bit for bit (its twin is the portable one). */

#if MCU_HAVE_MVE
typedef struct {
    int32x4_t mult, shift, vmin, vmax;
    int32_t zo;
} rq_t;

MCU_INLINE void store4(int32x4_t acc, const rq_t *r, int8_t *out, mve_pred16_t p)
{
    int32x4_t y = vaddq_n_s32(mcu_mve_requantize(acc, r->mult, r->shift), r->zo);
    vstrbq_p_s32(out, vminq_s32(vmaxq_s32(y, r->vmin), r->vmax), p);
}

static int32_t raw_sum(const int8_t *a, int32_t k)
{
    int32_t s = 0;
    for (int32_t t = 0; t < k; t += 16) {
        s = vaddvaq_s8(s, vldrbq_z_s8(a + t, vctp8q((uint32_t)(k - t))));
    }
    return s;
}

static void rows_nk(const int8_t *a0, const int8_t *a1, const int8_t *b, int32_t k, int32_t n,
                    const mcu_matmul_params_t *p, int8_t *o0, int8_t *o1)
{
    const int32_t oa = p->lhs_offset, ob = p->rhs_offset;
    const int32_t base0 = ob * raw_sum(a0, k) + k * oa * ob;
    const int32_t base1 = a1 != NULL ? ob * raw_sum(a1, k) + k * oa * ob : 0;
    for (int32_t j = 0; j < n; ++j, b += k) {
        int32_t d0 = 0, d1 = 0, sb = 0;
        for (int32_t t = 0; t < k; t += 16) {
            const mve_pred16_t pr = vctp8q((uint32_t)(k - t));
            const int8x16_t vb = vldrbq_z_s8(b + t, pr);
            sb = vaddvaq_s8(sb, vb);
            d0 = vmladavaq_s8(d0, vldrbq_z_s8(a0 + t, pr), vb);
            if (a1 != NULL) {
                d1 = vmladavaq_s8(d1, vldrbq_z_s8(a1 + t, pr), vb);
            }
        }
        o0[j] = (int8_t)mcu_clamp_i32(mcu_add_offset(mcu_requantize((int32_t)((uint32_t)d0 + (uint32_t)(oa * sb) + (uint32_t)base0), p->output_multiplier,
                                                                     p->output_shift), p->output_offset),
                                      p->act_min, p->act_max);
        if (a1 != NULL) {
            o1[j] = (int8_t)mcu_clamp_i32(mcu_add_offset(mcu_requantize((int32_t)((uint32_t)d1 + (uint32_t)(oa * sb) + (uint32_t)base1), p->output_multiplier,
                                                                         p->output_shift), p->output_offset),
                                          p->act_min, p->act_max);
        }
    }
}

/* rhs_transposed with few taps (k <= 32, attention's q @ k^T per head): 4 outputs at once, each tap's 4 rhs
 * values gathered (VLDRB.S32 with offsets 0, k, 2k, 3k) and multiplied by the scalar a[t] + oa, so the
 * requantization also runs on vectors: 8 outputs of 8 taps in about 40 instructions. */
static void rows_nk_gather(const int8_t *a0, const int8_t *a1, const int8_t *b, int32_t k, int32_t n,
                           const mcu_matmul_params_t *p, const rq_t *r, int8_t *o0, int8_t *o1)
{
    const int32_t oa = p->lhs_offset, ob = p->rhs_offset;
    const int32_t s0 = raw_sum(a0, k) + k * oa, s1 = a1 != NULL ? raw_sum(a1, k) + k * oa : 0;
    const uint32x4_t rows = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)k);
    for (int32_t j = 0; j < n; j += 4, b += 4 * k) {
        const mve_pred16_t pj = vctp32q((uint32_t)(n - j));
        int32x4_t x = vdupq_n_s32(ob * s0), z = vdupq_n_s32(ob * s1);
        for (int32_t t = 0; t < k; ++t) {
            const int32x4_t v = vldrbq_gather_offset_z_s32(b + t, rows, pj);
            x = vmlaq_n_s32(x, v, a0[t] + oa);
            if (a1 != NULL) {
                z = vmlaq_n_s32(z, v, a1[t] + oa);
            }
        }
        store4(x, r, o0 + j, pj);
        if (a1 != NULL) {
            store4(z, r, o1 + j, pj);
        }
    }
}

static void rows_kn(const int8_t *a0, const int8_t *a1, const int8_t *b, int32_t k, int32_t n,
                    const mcu_matmul_params_t *p, const rq_t *r, int8_t *o0, int8_t *o1)
{
    const int32_t oa = p->lhs_offset, ob = p->rhs_offset;
    const int32_t s0 = raw_sum(a0, k) + k * oa, s1 = a1 != NULL ? raw_sum(a1, k) + k * oa : 0;
    for (int32_t j = 0; j < n; j += 8) {
        const mve_pred16_t p0 = vctp32q((uint32_t)(n - j)), p1 = vctp32q((uint32_t)(n - j > 4 ? n - j - 4 : 0));
        int32x4_t x0 = vdupq_n_s32(ob * s0), x1 = x0, z0 = vdupq_n_s32(ob * s1), z1 = z0;
        const int8_t *y = b + j;
        for (int32_t t = 0; t < k; ++t, y += n) {
            const int32x4_t v0 = vldrbq_z_s32(y, p0), v1 = vldrbq_z_s32(y + 4, p1);
            const int32_t c0 = a0[t] + oa;
            x0 = vmlaq_n_s32(x0, v0, c0);
            x1 = vmlaq_n_s32(x1, v1, c0);
            if (a1 != NULL) {
                const int32_t c1 = a1[t] + oa;
                z0 = vmlaq_n_s32(z0, v0, c1);
                z1 = vmlaq_n_s32(z1, v1, c1);
            }
        }
        store4(x0, r, o0 + j, p0);
        store4(x1, r, o0 + j + 4, p1);
        if (a1 != NULL) {
            store4(z0, r, o1 + j, p0);
            store4(z1, r, o1 + j + 4, p1);
        }
    }
}
#endif

mcu_status_t mcu_matmul_s8_mve(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                               int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_status_t status = mcu_matmul_check(params, lhs, rhs, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_matmul_params_t *p = params;
    const int32_t k = p->k, n = p->n, blocks = mcu_matmul_blocks(p);
    const rq_t r = {vdupq_n_s32(p->output_multiplier), vdupq_n_s32(p->output_shift), vdupq_n_s32(p->act_min),
                    vdupq_n_s32(p->act_max), p->output_offset};
    for (int32_t blk = 0; blk < blocks; ++blk) {
        const mcu_matmul_block_t b = mcu_matmul_block(p, blk, lhs, rhs, output);
        for (int32_t i = 0; i < b.rows; i += 2) {
            const int8_t *a0 = b.lhs + i * k, *a1 = i + 1 < b.rows ? a0 + k : NULL;
            int8_t *o0 = b.out + i * n, *o1 = a1 != NULL ? o0 + n : NULL;
            if (p->rhs_transposed && k <= 32) {
                rows_nk_gather(a0, a1, b.rhs, k, n, p, &r, o0, o1);
            } else if (p->rhs_transposed) {
                rows_nk(a0, a1, b.rhs, k, n, p, o0, o1);
            } else {
                rows_kn(a0, a1, b.rhs, k, n, p, &r, o0, o1);
            }
        }
    }
    return MCU_OK;
#else
    (void)params;
    (void)lhs;
    (void)rhs;
    (void)output;
    return MCU_ERR_ARG;
#endif
}
