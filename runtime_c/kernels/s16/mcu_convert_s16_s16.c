/* int16 -> int16 requantization between two scales, e.g. a sigmoid's fixed 1/32768 output into an observed add. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_convert_s16_s16(const mcu_convert_params_t *params, const int16_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_convert_params_t *p = params;
    if (p->size < 1 || p->input_offset != 0 || p->output_offset != 0 || p->multiplier < 0 || p->shift < -31 ||
        p->shift > 30) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t r = mcu_requantize_round((int32_t)input[i], p->multiplier, p->shift);
        output[i] = (int16_t)mcu_clamp_i32(r, MCU_Q15_MIN, MCU_Q15_MAX);
    }
    return MCU_OK;
}
