/* Reference int16-activation fully connected layer: [B, K] x [N, K]^T, int64 accumulator, per-feature requantization. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_fully_connected_s16(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int16_t *input, const int8_t *weights, const int64_t *bias,
                                     int16_t *output)
{
    const mcu_status_t status = mcu_fc_s16_check(params, quant, input, weights, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_fc_params_t *p = params;

    const int32_t k_len = p->in_features, n_out = p->out_features;
    int16_t *out = output;
    for (int32_t b = 0; b < p->batches; ++b) {
        const int16_t *in = input + b * k_len;
        const int8_t *w = weights;
        for (int32_t o = 0; o < n_out; ++o) {
            int64_t acc = bias != NULL ? bias[o] : 0;
            for (int32_t k = 0; k < k_len; ++k) {
                acc += (int32_t)in[k] * (int32_t)w[k];
            }
            w += k_len;
            const int32_t r = mcu_requantize64(acc, quant->multiplier[o], quant->shift[o]);
            *out++ = (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
        }
    }
    return MCU_OK;
}
