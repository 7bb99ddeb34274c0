/* Reference int8 batched matrix multiplication of two activations ([.., M, K] x [.., K, N] or its [.., N, K]). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_matmul_s8(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                           int8_t *output)
{
    if (params == NULL || lhs == NULL || rhs == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_matmul_params_t *p = params;
    if (p->batches < 1 || p->m < 1 || p->k < 1 || p->k > 32767 || p->n < 1 || p->lhs_offset < -127 ||
        p->lhs_offset > 128 || p->rhs_offset < -127 || p->rhs_offset > 128 || p->output_offset < MCU_Q7_MIN ||
        p->output_offset > MCU_Q7_MAX || p->output_multiplier < 0 || p->output_shift < -31 ||
        p->output_shift > 30 || p->act_min < MCU_Q7_MIN || p->act_min > p->act_max || p->act_max > MCU_Q7_MAX) {
        return MCU_ERR_ARG;
    }
    if ((p->lhs_batches != p->batches && p->lhs_batches != 1) ||
        (p->rhs_batches != 1 && (p->rhs_group < 1 || p->rhs_batches * p->rhs_group != p->batches)) ||
        (p->rhs_transposed != 0 && p->rhs_transposed != 1)) {
        return MCU_ERR_SHAPE;
    }

    const int32_t m = p->m, k = p->k, n = p->n;
    const int32_t lhs_step = p->lhs_batches == 1 ? 0 : m * k, rhs_step = p->rhs_batches == 1 ? 0 : k * n;
    const int32_t col = p->rhs_transposed ? k : 1, row = p->rhs_transposed ? 1 : n; /* rhs[t, j] at t * row + j * col */
    int8_t *out = output;
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *a = lhs + b * lhs_step;
        const int8_t *bm = rhs + (b / p->rhs_group) * rhs_step;
        for (int32_t i = 0; i < m; ++i) {
            for (int32_t j = 0; j < n; ++j) {
                int32_t acc = 0;
                for (int32_t t = 0; t < k; ++t) {
                    acc += ((int32_t)a[i * k + t] + p->lhs_offset) * ((int32_t)bm[t * row + j * col] + p->rhs_offset);
                }
                acc = mcu_add_offset(mcu_requantize(acc, p->output_multiplier, p->output_shift), p->output_offset);
                *out++ = (int8_t)mcu_clamp_i32(acc, p->act_min, p->act_max);
            }
        }
    }
    return MCU_OK;
}
