/* Reference int8 elementwise add with TFLite rescaling of both inputs to a common scale. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_add_s8(const mcu_add_params_t *params, const int8_t *input1, const int8_t *input2,
                        int8_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_add_params_t *p = params;
    /* |in + offset| <= 255, so a left shift up to 23 keeps the shifted input inside int32. */
    if (p->size < 1 || p->left_shift < 0 || p->left_shift > 23 || p->input1_offset < -127 ||
        p->input1_offset > 128 || p->input2_offset < -127 || p->input2_offset > 128 ||
        p->output_offset < MCU_Q7_MIN || p->output_offset > MCU_Q7_MAX || p->input1_multiplier < 0 ||
        p->input2_multiplier < 0 || p->output_multiplier < 0 || p->input1_shift < -31 || p->input1_shift > 30 ||
        p->input2_shift < -31 || p->input2_shift > 30 || p->output_shift < -31 || p->output_shift > 30 ||
        p->act_min < MCU_Q7_MIN || p->act_min > p->act_max || p->act_max > MCU_Q7_MAX) {
        return MCU_ERR_ARG;
    }

    /* Element i is read before it is written, so output may alias either input exactly. The sum saturates (like
     * Arm's QADD) instead of overflowing when both inputs are scaled up. */
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t a1 = mcu_add_rescale(input1[i], p->input1_offset, p->left_shift, p->input1_multiplier,
                                           p->input1_shift);
        const int32_t a2 = mcu_add_rescale(input2[i], p->input2_offset, p->left_shift, p->input2_multiplier,
                                           p->input2_shift);
        const int32_t out = mcu_add_output((int64_t)a1 + a2, p->output_multiplier, p->output_shift, p->output_offset);
        output[i] = (int8_t)mcu_clamp_i32(out, p->act_min, p->act_max);
    }
    return MCU_OK;
}
