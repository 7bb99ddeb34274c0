/* Float32 concatenation along one axis: a copy of each input's rows into the output's. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_concat_f32(const mcu_concat_f32_params_t *params, const float *const inputs[], float *output)
{
    if (params == NULL || inputs == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_concat_f32_params_t *p = params;
    if (p->num_inputs < 1 || p->num_inputs > MCU_CONCAT_MAX_INPUTS || p->outer < 1) {
        return MCU_ERR_ARG;
    }
    int32_t row = 0;
    for (int32_t i = 0; i < p->num_inputs; ++i) {
        if (inputs[i] == NULL || p->sizes[i] < 1) {
            return MCU_ERR_ARG;
        }
        row += p->sizes[i];
    }
    int32_t start = 0;
    for (int32_t i = 0; i < p->num_inputs; ++i) {
        for (int32_t o = 0; o < p->outer; ++o) {
            mcu_copy_bytes(output + o * row + start, inputs[i] + o * p->sizes[i], (size_t)p->sizes[i] * sizeof *output);
        }
        start += p->sizes[i];
    }
    return MCU_OK;
}
