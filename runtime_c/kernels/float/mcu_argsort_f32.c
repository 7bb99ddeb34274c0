/* Float32 argsort along one dim: a stable insertion sort of int32 indices, as torch's stable sort. */
/* Ties keep index order; NaN sorts last ascending and first descending. O(len^2) moves: meant for the short dims
 * of an MCU. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

/* a goes strictly before b in the order */
static int before(float a, float b, int32_t descending)
{
    if (a != a) {
        return descending && b == b;
    }
    if (b != b) {
        return !descending;
    }
    return descending ? a > b : a < b;
}

mcu_status_t mcu_argsort_f32(const mcu_argsort_params_t *params, const float *input, int32_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_argsort_params_t *p = params;
    if (p->outer < 1 || p->len < 1 || p->inner < 1 || (p->descending != 0 && p->descending != 1)) {
        return MCU_ERR_ARG;
    }
    const size_t step = (size_t)p->inner;
    for (int32_t o = 0; o < p->outer; ++o) {
        for (int32_t i = 0; i < p->inner; ++i) {
            const size_t base = (size_t)o * (size_t)p->len * step + (size_t)i;
            const float *x = input + base;
            int32_t *out = output + base;
            for (int32_t k = 0; k < p->len; ++k) {
                const float v = x[(size_t)k * step];
                int32_t j = k;
                while (j > 0 && before(v, x[(size_t)out[(size_t)(j - 1) * step] * step], p->descending)) {
                    out[(size_t)j * step] = out[(size_t)(j - 1) * step];
                    --j;
                }
                out[(size_t)j * step] = k;
            }
        }
    }
    return MCU_OK;
}
