/* int8 fully connected layer with int4 weights (two per byte, unpacked on the fly). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_s4.h"

mcu_status_t mcu_fully_connected_s4(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                    const int8_t *input, const int8_t *weights, const int32_t *bias, int8_t *output)
{
    const mcu_fc_params_t *p = params;
    mcu_status_t status = mcu_fc_check(p, quant, input, weights, output);
    if (status != MCU_OK || bias == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t k = p->in_features, n_out = p->out_features;
    if (mcu_quant_check(quant, n_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    for (int32_t b = 0; b < p->batches; ++b) {
        mcu_s4_gemm_row(input + b * k, k, weights, bias, quant, n_out, p->output_offset, p->act_min,
                        p->act_max, output + b * n_out);
    }
    return MCU_OK;
}
