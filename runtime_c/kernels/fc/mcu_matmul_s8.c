/* Reference int8 batched matrix multiplication of two activations ([.., M, K] x [.., K, N] or its [.., N, K]). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_matmul_s8(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                           int8_t *output)
{
    const mcu_status_t status = mcu_matmul_check(params, lhs, rhs, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_matmul_params_t *p = params;

    const int32_t m = p->m, k = p->k, n = p->n;
    int8_t *out = output;
    for (int32_t b = 0; b < p->batches; ++b) {
        const mcu_matmul_at_t at = mcu_matmul_at(p, b);
        const int8_t *a = lhs + at.lhs, *bm = rhs + at.rhs;
        const int32_t row = at.row, col = at.col;
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
