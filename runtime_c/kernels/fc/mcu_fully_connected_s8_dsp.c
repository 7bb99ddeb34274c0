/* DSP (SIMD32) int8 fully connected layer: each input row widened to int16, SMLAD with int16 weights. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_fully_connected_s8_dsp(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                        const int8_t *input, const int8_t *weights, const int32_t *bias,
                                        int8_t *scratch, int8_t *output)
{
    const mcu_fc_params_t *p = params;
    mcu_status_t status = mcu_fc_check(p, quant, input, weights, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t k = p->in_features, n_out = p->out_features;
    if (mcu_records_check(quant->multiplier, n_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const mcu_rq_mode_t mode = mcu_rq_mode(quant->multiplier, n_out, p->output_offset, p->act_min, p->act_max);
    const int32_t groups = (k + 3) / 4;
    uint32_t *row = (uint32_t *)(void *)scratch; /* one input row widened to int16: 2 * K4 bytes */

    for (int32_t b = 0; b < p->batches; ++b) {
        mcu_dsp_expand(input + b * k, k, p->input_offset, row);
        mcu_dsp_gemm_row(row, groups, weights, bias, quant->multiplier, n_out, &mode, output + b * n_out);
    }
    return MCU_OK;
}
