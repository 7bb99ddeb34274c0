/* Float32 nearest-neighbour upsampling by integer factors (NHWC), as mcu_upsample_nearest_f32. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_upsample_nearest_f32(const mcu_upsample_params_t *params, const float *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_upsample_params_t *p = params;
    const mcu_dims_t *d = &p->input;
    if (d->n < 1 || d->h < 1 || d->w < 1 || d->c < 1 || p->scale_h < 1 || p->scale_w < 1) {
        return MCU_ERR_ARG;
    }

    const int32_t c = d->c, out_w = d->w * p->scale_w;
    float *out = output;
    for (int32_t n = 0; n < d->n; ++n) {
        for (int32_t y = 0; y < d->h; ++y) {
            const float *in_row = input + (n * d->h + y) * d->w * c;
            float *first = out; /* the first of scale_h identical output rows */
            for (int32_t x = 0; x < out_w; ++x) {
                memcpy(out, in_row + (x / p->scale_w) * c, (size_t)c * sizeof(float));
                out += c;
            }
            for (int32_t r = 1; r < p->scale_h; ++r) {
                memcpy(out, first, (size_t)(out_w * c) * sizeof(float));
                out += out_w * c;
            }
        }
    }
    return MCU_OK;
}
