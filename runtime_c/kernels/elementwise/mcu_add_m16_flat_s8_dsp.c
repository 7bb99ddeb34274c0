/* DSP int8 add of two same-shaped tensors (in place allowed) in mcu_add_m16_s8's arithmetic: mcu_add16_dsp.h. */
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#define MCU_ADD16_FLAT 1
#include "mcu/mcu_add16_dsp.h"

mcu_status_t mcu_add_m16_flat_s8_dsp(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                     int8_t *output)
{
    return add16_dsp(params, input1, input2, output);
}
