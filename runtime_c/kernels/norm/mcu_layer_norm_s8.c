/* Integer layer normalization over the last axis, int8 activations, no float (steps in mcu_norm.h). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_norm.h"

mcu_status_t mcu_layer_norm_s8(const mcu_norm_params_t *params, const int8_t *input, const int32_t *weight,
                               const int64_t *bias, int8_t *output)
{
    const mcu_status_t status = mcu_norm_check(params, input, weight, bias, output, 65536, (uint64_t)1 << 16);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t cols = params->cols, offset = params->input_offset;
    for (int32_t row = 0; row < params->rows; ++row) {
        const int8_t *x = input + (size_t)row * (size_t)cols;
        int8_t *y = output + (size_t)row * (size_t)cols;
        int32_t sum = 0;
        int64_t sq = 0;
        for (int32_t i = 0; i < cols; ++i) {
            const int32_t d = x[i] + offset;
            sum += d;
            sq += (int64_t)d * d;
        }
        const int64_t var = (int64_t)cols * sq - (int64_t)sum * sum;
        /* var == 0: every c_i is 0 (a constant row), and r54 would not fit */
        const int64_t r54 = var == 0 ? 0 : mcu_norm_r54(((uint64_t)var << params->var_shift) + (uint64_t)params->eps,
                                                        params->var_shift);
        for (int32_t i = 0; i < cols; ++i) {
            const int32_t c = cols * (x[i] + offset) - sum;
            y[i] = (int8_t)mcu_norm_out(c, r54, weight[i], bias[i], params->shift, params->act_min,
                                         params->act_max);
        }
    }
    return MCU_OK;
}
