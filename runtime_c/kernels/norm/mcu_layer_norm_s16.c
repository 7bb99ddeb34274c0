/* Integer layer normalization over the last axis, int16 activations, all integer (steps in mcu_norm.h). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_norm.h"

mcu_status_t mcu_layer_norm_s16(const mcu_norm_params_t *params, const int16_t *input, const int32_t *weight,
                                const int64_t *bias, int16_t *output)
{
    const mcu_status_t status = mcu_norm_check(params, input, weight, bias, output, 16384, (uint64_t)1 << 30);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t rows = params->rows, cols = params->cols, offset = params->input_offset;
    const int32_t shift32 = params->shift - 32, act_min = params->act_min, act_max = params->act_max;
    const int32_t var_shift = params->var_shift;
    const int64_t eps = params->eps;
    for (int32_t r = 0; r < rows; ++r) {
        const int16_t *x = input + (size_t)r * (size_t)cols;
        int16_t *y = output + (size_t)r * (size_t)cols;
        int32_t sum = 0;
        int64_t sq = 0;
        for (int32_t i = 0; i < cols; ++i) {
            sum += x[i];
            sq += (int64_t)x[i] * x[i];
        }
        /* the offset cancels: c_i = cols * x_i - sum, V = cols * sum x^2 - sum^2 */
        (void)offset;
        const int64_t var = (int64_t)cols * sq - (int64_t)sum * sum;
        const int32_t k = -sum;
        const mcu_norm_row_t row = mcu_norm_row(var, eps, var_shift);
        if (row.a >= 0) { /* c << a = (cols << a) x + (k << a), exact modulo 2^32 and |c << a| < 2^31 */
            const uint32_t n2 = (uint32_t)cols << row.a, k2 = (uint32_t)k << row.a;
            for (int32_t i = 0; i < cols; ++i) {
                const int32_t c = (int32_t)(n2 * (uint32_t)(int32_t)x[i] + k2);
                y[i] = (int16_t)mcu_norm_out(c, row.r31, weight[i], bias[i], shift32, act_min, act_max);
            }
        } else {
            const int32_t s = -row.a, half = (int32_t)1 << (s - 1);
            for (int32_t i = 0; i < cols; ++i) {
                const int32_t c = (cols * x[i] + k + half) >> s;
                y[i] = (int16_t)mcu_norm_out(c, row.r31, weight[i], bias[i], shift32, act_min, act_max);
            }
        }
    }
    return MCU_OK;
}
