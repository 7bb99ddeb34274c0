/* Helium (MVE) int8 fully connected layer: 3 input rows x 4 output features per VMLADAVA block, offset folded. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_mve.h"

mcu_status_t mcu_fully_connected_s8_mve(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                        const int8_t *input, const int8_t *weights, const int32_t *bias,
                                        int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_fc_params_t *p = params;
    mcu_status_t status = mcu_fc_check(p, quant, input, weights, output);
    if (status != MCU_OK || bias == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t k = p->in_features, n_out = p->out_features;
    if (mcu_quant_check(quant, n_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const mcu_mve_gemm_t g = mcu_mve_gemm_of(weights, bias, quant, n_out, 1, k, p->output_offset, p->act_min,
                                             p->act_max, n_out);
    for (int32_t b = 0; b < p->batches; b += 3) {
        const int32_t npix = p->batches - b < 3 ? p->batches - b : 3;
        const int8_t *rows[3];
        for (int32_t j = 0; j < 3; ++j) {
            rows[j] = input + (j < npix ? b + j : b) * k;
        }
        if (npix == 1) {
            mcu_mve_gemv(rows[0], &g, output + b * n_out);
        } else {
            mcu_mve_gemm_block(rows, &g, npix, output + b * n_out);
        }
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)weights, (void)bias, (void)output;
    return MCU_ERR_ARG;
#endif
}
