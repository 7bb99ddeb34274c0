/* Float fallback entry: int16 -> float32 dequantization, q * scale (symmetric, zero point 0). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_dequantize_s16_f32(const mcu_dequantize_params_t *params, const int16_t *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->size < 1 || params->zero_point != 0 || !(params->scale > 0.0f)) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < params->size; ++i) {
        output[i] = (float)input[i] * params->scale;
    }
    return MCU_OK;
}
