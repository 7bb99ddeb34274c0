/* Helium (MVE) int16 matmul of two activations: 8-lane VMLALDAVA dot products into 64 bits, the rhs gathered. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

#if MCU_HAVE_MVE
/* sum_t a[t] * b[t * row] over t < k, 8 lanes at a time and a predicated tail: b's lanes are contiguous (row 1:
 * a transposed rhs, q @ k^T reading k's rows) or gathered at row-element steps (a [K, N] rhs, attention @ v). */
MCU_INLINE int64_t dot(const int16_t *a, const int16_t *b, int32_t k, int32_t row, uint16x8_t steps)
{
    int64_t acc = 0;
    int32_t t = 0;
    if (row == 1) {
        for (; t + 8 <= k; t += 8) {
            acc = vmlaldavaq_s16(acc, vldrhq_s16(a + t), vldrhq_s16(b + t));
        }
    } else {
        for (; t + 8 <= k; t += 8) {
            acc = vmlaldavaq_s16(acc, vldrhq_s16(a + t), vldrhq_gather_shifted_offset_s16(b + t * row, steps));
        }
    }
    if (t < k) {
        const mve_pred16_t p = vctp16q((uint32_t)(k - t));
        const int16x8_t x = vldrhq_z_s16(a + t, p);
        const int16x8_t y = row == 1 ? vldrhq_z_s16(b + t, p) : vldrhq_gather_shifted_offset_z_s16(b + t * row, steps, p);
        acc = vmlaldavaq_p_s16(acc, x, y, p);
    }
    return acc;
}

/* out[j] for j < n, each row j of b (k <= 8 elements, contiguous: a transposed rhs) against a's row held in one
 * register: a decode step's q @ k^T, one load and one VMLALDAV an output. */
MCU_INLINE void short_rows(const mcu_matmul_params_t *p, const int16_t *a, const int16_t *b, int16_t *out)
{
    const int32_t k = p->k;
    const mve_pred16_t pk = vctp16q((uint32_t)k);
    const int16x8_t x = vldrhq_z_s16(a, pk);
    for (int32_t j = 0; j < p->n; ++j, b += k) {
        const int32_t r = mcu_requantize64(vmlaldavq_s16(x, vldrhq_z_s16(b, pk)), p->output_multiplier,
                                           p->output_shift);
        out[j] = (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
    }
}
#endif

mcu_status_t mcu_matmul_s16_mve(const mcu_matmul_params_t *params, const int16_t *lhs, const int16_t *rhs,
                                int16_t *output)
{
#if MCU_HAVE_MVE
    const mcu_status_t status = mcu_matmul_s16_check(params, lhs, rhs, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_matmul_params_t *p = params;
    const int32_t m = p->m, k = p->k, n = p->n;
    const int32_t lhs_step = p->lhs_batches == 1 ? 0 : m * k, rhs_step = p->rhs_batches == 1 ? 0 : k * n;
    const int32_t col = p->rhs_transposed ? k : 1, row = p->rhs_transposed ? 1 : n; /* rhs[t, j] at t * row + j * col */
    /* lane l of a gathered rhs chunk: element l * row (row <= 8191 keeps 7 * row inside the 16-bit offsets) */
    const uint16x8_t steps = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)(row == 1 || row > 8191 ? 0 : row));
    int16_t *out = output;
    for (int32_t b = 0; b < p->batches; ++b) {
        const int16_t *a = lhs + b * lhs_step;
        const int16_t *bm = rhs + (p->rhs_batches == 1 ? 0 : b / p->rhs_group) * rhs_step;
        for (int32_t i = 0; i < m; ++i, a += k) {
            if (p->rhs_transposed && k <= 8) {
                short_rows(p, a, bm, out);
                out += n;
                continue;
            }
            for (int32_t j = 0; j < n; ++j) {
                int64_t acc;
                if (row <= 8191) {
                    acc = dot(a, bm + j * col, k, row, steps);
                } else {
                    acc = 0;
                    for (int32_t t = 0; t < k; ++t) {
                        acc += (int32_t)a[t] * (int32_t)bm[t * row + j * col];
                    }
                }
                const int32_t r = mcu_requantize64(acc, p->output_multiplier, p->output_shift);
                *out++ = (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)lhs, (void)rhs, (void)output;
    return MCU_ERR_ARG;
#endif
}
