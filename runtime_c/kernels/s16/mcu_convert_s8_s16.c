/* int8 -> int16 requantization at a precision boundary (one rounding, ties to even). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_convert_s8_s16(const mcu_convert_params_t *params, const int8_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_convert_params_t *p = params;
    if (p->size < 1 || p->input_offset < -127 || p->input_offset > 128 || p->output_offset != 0 ||
        p->multiplier < 0 || p->shift < -31 || p->shift > 30) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t r = mcu_requantize_round((int32_t)input[i] + p->input_offset, p->multiplier, p->shift);
        output[i] = (int16_t)mcu_clamp_i32(mcu_add_offset(r, p->output_offset), MCU_Q15_MIN, MCU_Q15_MAX);
    }
    return MCU_OK;
}
