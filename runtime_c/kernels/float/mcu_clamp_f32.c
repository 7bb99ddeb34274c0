/* Float32 clamp (ReLU, ReLU6, or any clamp that could not fuse into its producer). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_clamp_f32(const mcu_clamp_f32_params_t *params, const float *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->size < 1 || !(params->act_min <= params->act_max)) {
        return MCU_ERR_ARG;
    }
    const float lo = params->act_min, hi = params->act_max;
    for (int32_t i = 0; i < params->size; ++i) {
        float v = input[i];
        v = v < lo ? lo : v;
        output[i] = v > hi ? hi : v;
    }
    return MCU_OK;
}
