/* Reference int16 concatenation along one axis, requantizing inputs whose scale differs from the output's. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_concat_s16(const mcu_concat_params_t *params, const int16_t *const inputs[], int16_t *output)
{
    if (params == NULL || inputs == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_concat_params_t *p = params;
    if (p->num_inputs < 1 || p->num_inputs > MCU_CONCAT_MAX_INPUTS || p->outer < 1 || p->output_offset != 0) {
        return MCU_ERR_ARG;
    }
    int32_t row = 0;
    for (int32_t i = 0; i < p->num_inputs; ++i) {
        if (inputs[i] == NULL || p->sizes[i] < 1 || p->input_offset[i] != 0 || p->multiplier[i] < 0 ||
            p->shift[i] < -31 || p->shift[i] > 30) {
            return MCU_ERR_ARG;
        }
        row += p->sizes[i];
    }

    int32_t start = 0; /* where input i's slice begins in an output row */
    for (int32_t i = 0; i < p->num_inputs; ++i) {
        const int32_t size = p->sizes[i];
        const int copy = p->multiplier[i] == ((int32_t)1 << 30) && p->shift[i] == 1;
        for (int32_t o = 0; o < p->outer; ++o) {
            const int16_t *in = inputs[i] + o * size;
            int16_t *out = output + o * row + start;
            if (copy) {
                mcu_copy_bytes(out, in, (size_t)size * sizeof *out);
                continue;
            }
            for (int32_t j = 0; j < size; ++j) {
                const int32_t r = mcu_requantize_round(in[j], p->multiplier[i], p->shift[i]);
                out[j] = (int16_t)mcu_clamp_i32(r, MCU_Q15_MIN, MCU_Q15_MAX);
            }
        }
        start += size;
    }
    return MCU_OK;
}
