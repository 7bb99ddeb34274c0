/* Reference int8 fully connected layer: [B, K] x [N, K]^T, per-output-feature requantization. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_fully_connected_s8(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                    const int8_t *input, const int8_t *weights, const int32_t *bias,
                                    int8_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        weights == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_fc_params_t *p = params;
    if (p->batches < 1 || p->in_features < 1 || p->out_features < 1 ||
        !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    const int32_t k_len = p->in_features, n_out = p->out_features;
    for (int32_t o = 0; o < n_out; ++o) {
        if (quant->multiplier[o] < 0 || quant->shift[o] < -31 || quant->shift[o] > 30) {
            return MCU_ERR_ARG;
        }
    }

    const int32_t in_off = p->input_offset;
    int8_t *out = output;
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *in = input + b * k_len;
        const int8_t *w = weights;
        for (int32_t o = 0; o < n_out; ++o) {
            int32_t acc = bias != NULL ? bias[o] : 0;
            for (int32_t k = 0; k < k_len; ++k) {
                acc += ((int32_t)in[k] + in_off) * (int32_t)w[k];
            }
            w += k_len;
            acc = mcu_add_offset(mcu_requantize(acc, quant->multiplier[o], quant->shift[o]), p->output_offset);
            *out++ = (int8_t)mcu_clamp_i32(acc, p->act_min, p->act_max);
        }
    }
    return MCU_OK;
}
