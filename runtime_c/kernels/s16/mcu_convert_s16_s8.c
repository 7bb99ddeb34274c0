/* int16 -> int8 requantization at a precision boundary (one rounding, ties to even, as mcu_requantize_round). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_convert_s16_s8(const mcu_convert_params_t *params, const int16_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_convert_params_t *p = params;
    if (p->size < 1 || p->input_offset != 0 || p->output_offset < MCU_Q7_MIN || p->output_offset > MCU_Q7_MAX ||
        p->multiplier < 0 || p->shift < -31 || p->shift > 30) {
        return MCU_ERR_ARG;
    }
    if (p->shift > -1) {
        for (int32_t i = 0; i < p->size; ++i) {
            const int32_t r = mcu_requantize_round((int32_t)input[i], p->multiplier, p->shift);
            output[i] = (int8_t)mcu_clamp_i32(mcu_add_offset(r, p->output_offset), MCU_Q7_MIN, MCU_Q7_MAX);
        }
        return MCU_OK;
    }
    /* mcu_requantize_round's arithmetic when the product's rounding point is in its high word (right >= 32):
     * |x * multiplier| < 2^46, so the result is the high word of prod + half shifted right, and a tie is
     * the low word equal to half's and the high word's bits below the point equal to half's. */
    const int32_t hi_shift = 31 - p->shift - 32;                              /* 0 .. 30 */
    const int64_t half = (int64_t)1 << (31 - p->shift - 1);
    const uint32_t half_lo = (uint32_t)half, half_hi = (uint32_t)(half >> 32);
    const uint32_t hi_mask = ((uint32_t)1 << hi_shift) - 1u;
    for (int32_t i = 0; i < p->size; ++i) {
        const int64_t prod = (int64_t)input[i] * p->multiplier;
        int32_t r = (int32_t)((prod + half) >> 32) >> hi_shift;
        if ((uint32_t)prod == half_lo && ((uint32_t)(prod >> 32) & hi_mask) == half_hi) {
            r &= ~(int32_t)1; /* a tie: to even */
        }
        output[i] = (int8_t)mcu_clamp_i32(mcu_add_offset(r, p->output_offset), MCU_Q7_MIN, MCU_Q7_MAX);
    }
    return MCU_OK;
}
