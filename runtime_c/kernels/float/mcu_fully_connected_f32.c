/* Float32 fully connected layer: [batches, K] x [N, K]^T + bias, products summed from k = 0 up. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_fully_connected_f32(const mcu_fc_f32_params_t *params, const float *input, const float *weights,
                                     const float *bias, float *output)
{
    if (params == NULL || input == NULL || weights == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_fc_f32_params_t *p = params;
    if (p->batches < 1 || p->in_features < 1 || p->out_features < 1 || !(p->act_min <= p->act_max)) {
        return MCU_ERR_ARG;
    }
    const int32_t k_len = p->in_features;
    float *out = output;
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *in = input + b * k_len;
        for (int32_t o = 0; o < p->out_features; ++o) {
            const float *w = weights + o * k_len;
            float acc = 0.0f;
            int32_t k = 0;
            for (; k + 4 <= k_len; k += 4) { /* unrolled; the sum keeps its order */
                acc += in[k] * w[k];
                acc += in[k + 1] * w[k + 1];
                acc += in[k + 2] * w[k + 2];
                acc += in[k + 3] * w[k + 3];
            }
            for (; k < k_len; ++k) {
                acc += in[k] * w[k];
            }
            if (bias != NULL) {
                acc += bias[o];
            }
            acc = acc < p->act_min ? p->act_min : acc;
            *out++ = acc > p->act_max ? p->act_max : acc;
        }
    }
    return MCU_OK;
}
