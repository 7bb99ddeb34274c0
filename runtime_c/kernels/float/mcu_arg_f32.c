/* Float32 argmax / argmin along one dim: the first extreme wins, NaN is the extreme (torch's rules). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_arg_f32(const mcu_arg_params_t *params, const float *input, int32_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_arg_params_t *p = params;
    if (p->outer < 1 || p->len < 1 || p->inner < 1 || (p->op != 0 && p->op != 1)) {
        return MCU_ERR_ARG;
    }
    for (int32_t o = 0; o < p->outer; ++o) {
        for (int32_t i = 0; i < p->inner; ++i) {
            const float *x = input + (size_t)o * (size_t)p->len * (size_t)p->inner + i;
            float best = x[0];
            int32_t at = 0;
            for (int32_t k = 1; k < p->len && best == best; ++k) {
                const float v = x[(size_t)k * (size_t)p->inner];
                if (v != v || (p->op == 0 ? v > best : v < best)) {
                    best = v;
                    at = k;
                }
            }
            output[(size_t)o * (size_t)p->inner + i] = at;
        }
    }
    return MCU_OK;
}
