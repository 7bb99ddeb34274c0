/* DSP int16-activation fully connected layer, int8 weights widened by SXTB16: one row x 4 output features of SMLAD. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt_s16.h"

mcu_status_t mcu_fully_connected_s16_dsp(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                         const int16_t *input, const int8_t *weights, const int64_t *bias,
                                         int8_t *scratch, int16_t *output)
{
    return mcu_fc_s16_dsp_run(params, quant, input, weights, bias, scratch, output, 0);
}
