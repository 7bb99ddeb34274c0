/* Float32 softmax over the last axis, with its own exp (no libm): e_i = exp(x_i - max), out_i = e_i / sum. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_fmath.h"
#include "mcu/mcu_kernels.h"

mcu_status_t mcu_softmax_f32(const mcu_softmax_params_t *params, const float *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->rows < 1 || params->cols < 1) {
        return MCU_ERR_ARG;
    }
    const int32_t cols = params->cols;
    for (int32_t r = 0; r < params->rows; ++r) {
        const float *in = input + r * cols;
        float *out = output + r * cols;
        float max = in[0];
        for (int32_t i = 1; i < cols; ++i) {
            max = in[i] > max ? in[i] : max;
        }
        float sum = 0.0f;
        for (int32_t i = 0; i < cols; ++i) {
            out[i] = mcu_expf(in[i] - max); /* in[i] is read before out[i] is written: in place is safe */
            sum += out[i];
        }
        for (int32_t i = 0; i < cols; ++i) {
            out[i] = out[i] / sum;
        }
    }
    return MCU_OK;
}
