/* Reference int8 -> int8 elementwise function through a 256-entry look-up table. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_lut_s8(const mcu_lut_params_t *params, const int8_t *table, const int8_t *input,
                        int8_t *output)
{
    if (params == NULL || table == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->size < 1) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < params->size; ++i) {
        output[i] = table[(int32_t)input[i] + 128];
    }
    return MCU_OK;
}
