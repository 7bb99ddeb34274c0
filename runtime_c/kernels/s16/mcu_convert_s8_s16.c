/* int8 -> int16 requantization at a precision boundary (one rounding, ties to even). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"

/* From this many elements on, the 256 int8 values are requantized once into a table (512 B of stack) and every
 * element is looked up; below it the table's 256 requantizations cost more than they save. */
#define MCU_CONVERT_TABLE_MIN 512

static inline int16_t mcu_convert_one(int8_t x, const mcu_convert_params_t *p)
{
    const int32_t r = mcu_requantize_round((int32_t)x + p->input_offset, p->multiplier, p->shift);
    return (int16_t)mcu_clamp_i32(mcu_add_offset(r, p->output_offset), MCU_Q15_MIN, MCU_Q15_MAX);
}

mcu_status_t mcu_convert_s8_s16(const mcu_convert_params_t *params, const int8_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_convert_params_t *p = params;
    if (p->size < 1 || p->input_offset < -127 || p->input_offset > 128 || p->output_offset != 0 ||
        p->multiplier < 0 || p->shift < -31 || p->shift > 30) {
        return MCU_ERR_ARG;
    }
    if (p->size < MCU_CONVERT_TABLE_MIN) {
        for (int32_t i = 0; i < p->size; ++i) {
            output[i] = mcu_convert_one(input[i], p);
        }
        return MCU_OK;
    }
    /* an int8 input has 256 values: requantize each once, then look every element up */
    int16_t table[256];
    for (int32_t v = -128; v < 128; ++v) {
        table[v + 128] = mcu_convert_one((int8_t)v, p);
    }
    for (int32_t i = 0; i < p->size; ++i) {
        output[i] = table[input[i] + 128];
    }
    return MCU_OK;
}
