/* Float fallback exit: float32 -> int8 quantization, round half to even like torch.round. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"

/* round_half_even(v) for v already clamped to [-512, 512]; v - (float)i is exact there. */
static int32_t round_half_even(float v)
{
    int32_t i = (int32_t)v; /* truncates toward zero */
    const float frac = v - (float)i;
    if (frac > 0.5f || (frac == 0.5f && (i & 1) != 0)) {
        i += 1;
    } else if (frac < -0.5f || (frac == -0.5f && (i & 1) != 0)) {
        i -= 1;
    }
    return i;
}

mcu_status_t mcu_quantize_f32_s8(const mcu_quantize_params_t *params, const float *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->size < 1 || params->zero_point < -128 || params->zero_point > 127 || !(params->inv_scale > 0.0f)) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < params->size; ++i) {
        float v = input[i] * params->inv_scale;
        if (v != v) {
            v = 0.0f; /* NaN */
        }
        /* Beyond +-512 the int8 clamp decides anyway; clamping first keeps the int conversion defined. */
        v = v < -512.0f ? -512.0f : (v > 512.0f ? 512.0f : v);
        output[i] = (int8_t)mcu_clamp_i32(round_half_even(v) + params->zero_point, MCU_Q7_MIN, MCU_Q7_MAX);
    }
    return MCU_OK;
}
