/* Float32 transpose of a tensor of rank <= 4 (dims padded to 4 with leading 1s). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_transpose_f32(const mcu_transpose_params_t *params, const float *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    uint32_t seen = 0;
    for (int32_t i = 0; i < 4; ++i) {
        const int32_t a = params->perm[i];
        if (params->in_dims[i] < 1 || a < 0 || a > 3 || (seen & (1u << a)) != 0) {
            return MCU_ERR_ARG;
        }
        seen |= 1u << a;
    }

    /* Walk the output in order; st[i] is the input stride of output axis i. */
    const int32_t *d = params->in_dims;
    const int32_t in_stride[4] = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
    int32_t od[4], st[4];
    for (int32_t i = 0; i < 4; ++i) {
        od[i] = d[params->perm[i]];
        st[i] = in_stride[params->perm[i]];
    }
    float *out = output;
    for (int32_t i0 = 0; i0 < od[0]; ++i0) {
        for (int32_t i1 = 0; i1 < od[1]; ++i1) {
            for (int32_t i2 = 0; i2 < od[2]; ++i2) {
                const float *src = input + i0 * st[0] + i1 * st[1] + i2 * st[2];
                if (st[3] == 1) {
                    memcpy(out, src, (size_t)od[3] * sizeof *out);
                    out += od[3];
                } else {
                    for (int32_t i3 = 0; i3 < od[3]; ++i3) {
                        *out++ = src[i3 * st[3]];
                    }
                }
            }
        }
    }
    return MCU_OK;
}
