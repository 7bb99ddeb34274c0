/* Reference int16 -> int16 elementwise function through a 513-entry table with linear interpolation. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_lut_s16(const mcu_lut_params_t *params, const int16_t *table, const int16_t *input,
                         int16_t *output)
{
    if (params == NULL || table == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->size < 1) {
        return MCU_ERR_ARG;
    }
    /* Element i is read before it is written, so output may alias input exactly. */
    for (int32_t i = 0; i < params->size; ++i) {
        const int32_t u = (int32_t)input[i] + 32768;
        const int32_t j = u >> 7, f = u & 127;
        const int32_t t0 = table[j];
        /* Between t0 and table[j + 1], so inside int16. */
        output[i] = (int16_t)(t0 + ((((int32_t)table[j + 1] - t0) * f + 64) >> 7));
    }
    return MCU_OK;
}
