/* Float fallback exit: float32 -> int16 quantization (zero point 0), round half to even like torch.round. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"

/* round_half_even(v) for v already clamped to [-65536, 65536]; v - (float)i is exact there. */
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

mcu_status_t mcu_quantize_f32_s16(const mcu_quantize_params_t *params, const float *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->size < 1 || params->zero_point != 0 || !(params->inv_scale > 0.0f)) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < params->size; ++i) {
        float v = input[i] * params->inv_scale;
        if (v != v) {
            v = 0.0f; /* NaN */
        }
        /* Beyond +-65536 the int16 clamp decides anyway; clamping first keeps the int conversion defined. */
        v = v < -65536.0f ? -65536.0f : (v > 65536.0f ? 65536.0f : v);
        output[i] = (int16_t)mcu_clamp_i32(round_half_even(v), MCU_Q15_MIN, MCU_Q15_MAX);
    }
    return MCU_OK;
}
