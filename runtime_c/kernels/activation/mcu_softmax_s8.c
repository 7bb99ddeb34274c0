/* Reference int8 softmax over the last axis via a 256-entry exp table; output scale 1/256, zero point -128. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_softmax_s8(const mcu_softmax_params_t *params, const uint16_t *exp_table,
                            const int8_t *input, int8_t *output)
{
    const mcu_status_t status = mcu_softmax_check(params, exp_table, input, output);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t cols = params->cols;
    for (int32_t r = 0; r < params->rows; ++r) {
        const int8_t *in = input + r * cols;
        int8_t *out = output + r * cols;
        int32_t max = in[0];
        for (int32_t i = 1; i < cols; ++i) {
            max = in[i] > max ? in[i] : max;
        }
        uint32_t sum = 0;
        for (int32_t i = 0; i < cols; ++i) {
            sum += exp_table[max - in[i]];
        }
        const uint32_t half = sum / 2u;
        for (int32_t i = 0; i < cols; ++i) {
            const uint32_t e = exp_table[max - in[i]];
            const int32_t q = (int32_t)(((e << 8) + half) / sum) - 128;
            out[i] = (int8_t)mcu_clamp_i32(q, MCU_Q7_MIN, MCU_Q7_MAX);
        }
    }
    return MCU_OK;
}
