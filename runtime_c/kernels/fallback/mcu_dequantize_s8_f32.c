/* Float fallback entry: int8 -> float32 dequantization, (q - zero_point) * scale as torch computes it. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_dequantize_s8_f32(const mcu_dequantize_params_t *params, const int8_t *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->size < 1 || params->zero_point < -128 || params->zero_point > 127 || !(params->scale > 0.0f)) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < params->size; ++i) {
        output[i] = (float)((int32_t)input[i] - params->zero_point) * params->scale;
    }
    return MCU_OK;
}
