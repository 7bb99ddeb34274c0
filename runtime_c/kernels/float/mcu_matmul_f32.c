/* Float32 matrix product of two tensors (batched, a batch of 1 broadcast), sums in order. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_matmul_f32(const mcu_matmul_f32_params_t *params, const float *lhs, const float *rhs,
                            float *output)
{
    if (params == NULL || lhs == NULL || rhs == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_matmul_f32_params_t *p = params;
    if (p->batches < 1 || p->m < 1 || p->k < 1 || p->n < 1 || !(p->act_min <= p->act_max) ||
        (p->lhs_batches != p->batches && p->lhs_batches != 1) ||
        (p->rhs_batches != 1 && (p->rhs_group < 1 || p->rhs_batches * p->rhs_group != p->batches)) ||
        (p->rhs_transposed != 0 && p->rhs_transposed != 1)) {
        return MCU_ERR_ARG;
    }
    const int32_t m = p->m, k = p->k, n = p->n;
    const int32_t col = p->rhs_transposed ? k : 1, row = p->rhs_transposed ? 1 : n; /* rhs[t, j] at t * row + j * col */
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *a = lhs + (p->lhs_batches == 1 ? 0 : b) * m * k;
        const float *c = rhs + (p->rhs_batches == 1 ? 0 : b / p->rhs_group) * k * n;
        float *out = output + b * m * n;
        for (int32_t i = 0; i < m; ++i) {
            for (int32_t j = 0; j < n; ++j) {
                float acc = 0.0f;
                for (int32_t t = 0; t < k; ++t) {
                    acc = acc + a[i * k + t] * c[t * row + j * col];
                }
                out[i * n + j] = mcu_clamp_float(acc, p->act_min, p->act_max);
            }
        }
    }
    return MCU_OK;
}
