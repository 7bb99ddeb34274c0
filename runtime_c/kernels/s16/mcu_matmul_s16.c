/* Reference int16 batched matrix multiplication of two activations, int64 accumulator (a16w8 attention). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_matmul_s16(const mcu_matmul_params_t *params, const int16_t *lhs, const int16_t *rhs,
                            int16_t *output)
{
    const mcu_status_t status = mcu_matmul_s16_check(params, lhs, rhs, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_matmul_params_t *p = params;

    const int32_t m = p->m, k = p->k, n = p->n;
    int16_t *out = output;
    for (int32_t b = 0; b < p->batches; ++b) {
        const mcu_matmul_at_t at = mcu_matmul_at(p, b);
        const int16_t *a = lhs + at.lhs, *bm = rhs + at.rhs;
        const int32_t row = at.row, col = at.col;
        for (int32_t i = 0; i < m; ++i) {
            for (int32_t j = 0; j < n; ++j) {
                int64_t acc = 0;
                for (int32_t t = 0; t < k; ++t) {
                    acc += (int32_t)a[i * k + t] * (int32_t)bm[t * row + j * col];
                }
                const int32_t r = mcu_requantize64(acc, p->output_multiplier, p->output_shift);
                *out++ = (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
            }
        }
    }
    return MCU_OK;
}
