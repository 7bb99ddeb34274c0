/* Reference int16 elementwise add (TFLite 16x8): both inputs rescaled to a common scale, then to the output's. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_add_s16(const mcu_add_params_t *params, const int16_t *input1, const int16_t *input2,
                         int16_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_add_params_t *p = params;
    /* |in| <= 2^15, so a left shift up to 15 keeps the shifted input inside int32. */
    if (p->size < 1 || p->left_shift < 0 || p->left_shift > 15 || p->input1_offset != 0 || p->input2_offset != 0 ||
        p->output_offset != 0 || p->input1_multiplier < 0 || p->input2_multiplier < 0 || p->output_multiplier < 0 ||
        p->input1_shift < -31 || p->input1_shift > 30 || p->input2_shift < -31 || p->input2_shift > 30 ||
        p->output_shift < -31 || p->output_shift > 30 || p->act_min < MCU_Q15_MIN || p->act_min > p->act_max ||
        p->act_max > MCU_Q15_MAX) {
        return MCU_ERR_ARG;
    }

    /* Element i is read before it is written, so output may alias either input exactly. */
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t a1 = mcu_add_rescale(input1[i], 0, p->left_shift, p->input1_multiplier, p->input1_shift);
        const int32_t a2 = mcu_add_rescale(input2[i], 0, p->left_shift, p->input2_multiplier, p->input2_shift);
        const int32_t r = mcu_add_output((int64_t)a1 + a2, p->output_multiplier, p->output_shift, 0);
        output[i] = (int16_t)mcu_clamp_i32(r, p->act_min, p->act_max);
    }
    return MCU_OK;
}
