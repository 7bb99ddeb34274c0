/* Float32 sum, mean, max, min or product over any axes of a 4-d tensor, the box in row-major order. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_reduce_f32(const mcu_reduce_f32_params_t *params, const float *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_reduce_f32_params_t *p = params;
    const int32_t in[4] = {p->input.n, p->input.h, p->input.w, p->input.c};
    const int32_t od[4] = {p->output.n, p->output.h, p->output.w, p->output.c};
    if (!(p->divisor > 0.0f) || p->op < MCU_REDUCE_SUM || p->op > MCU_REDUCE_PROD) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < 4; ++i) {
        if (in[i] < 1 || od[i] < 1) {
            return MCU_ERR_ARG;
        }
        if (od[i] != in[i] && od[i] != 1) {
            return MCU_ERR_SHAPE;
        }
    }

    /* Input strides; the box of one output element spans rd[i] = in[i] along reduced axes, 1 elsewhere. */
    const int32_t st[4] = {in[1] * in[2] * in[3], in[2] * in[3], in[3], 1};
    int32_t rd[4];
    for (int32_t i = 0; i < 4; ++i) {
        rd[i] = od[i] == in[i] ? 1 : in[i];
    }
    float *out = output;
    for (int32_t o0 = 0; o0 < od[0]; ++o0) {
        for (int32_t o1 = 0; o1 < od[1]; ++o1) {
            for (int32_t o2 = 0; o2 < od[2]; ++o2) {
                for (int32_t o3 = 0; o3 < od[3]; ++o3) {
                    const float *base = input + o0 * st[0] + o1 * st[1] + o2 * st[2] + o3;
                    float acc = p->op == MCU_REDUCE_SUM ? 0.0f : (p->op == MCU_REDUCE_PROD ? 1.0f : base[0]);
                    for (int32_t r0 = 0; r0 < rd[0]; ++r0) {
                        for (int32_t r1 = 0; r1 < rd[1]; ++r1) {
                            for (int32_t r2 = 0; r2 < rd[2]; ++r2) {
                                const float *px = base + r0 * st[0] + r1 * st[1] + r2 * st[2];
                                for (int32_t r3 = 0; r3 < rd[3]; ++r3) {
                                    const float v = px[r3];
                                    switch (p->op) {
                                    case MCU_REDUCE_MAX:
                                        acc = (v > acc || v != v) && acc == acc ? v : acc;
                                        break;
                                    case MCU_REDUCE_MIN:
                                        acc = (v < acc || v != v) && acc == acc ? v : acc;
                                        break;
                                    case MCU_REDUCE_PROD:
                                        acc *= v;
                                        break;
                                    default:
                                        acc += v;
                                        break;
                                    }
                                }
                            }
                        }
                    }
                    *out++ = p->op == MCU_REDUCE_SUM ? acc / p->divisor : acc;
                }
            }
        }
    }
    return MCU_OK;
}
