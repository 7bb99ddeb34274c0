/* DSP int8 add / subtract with 16-bit multipliers (mcu_add_m16_s8's arithmetic): SMLAD and SSAT, 4 a step. */
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_add16_dsp.h"

mcu_status_t mcu_add_m16_s8_dsp(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                int8_t *output)
{
    return add16_dsp(params, input1, input2, output);
}
