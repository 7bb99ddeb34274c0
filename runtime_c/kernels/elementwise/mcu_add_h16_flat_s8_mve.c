/* Helium int8 add of two same-shaped tensors (in place allowed) in mcu_add_h16_s8's arithmetic: mcu_add16_mve.h. */
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#define MCU_ADD16_FLAT 1
#include "mcu/mcu_add16_mve.h"

mcu_status_t mcu_add_h16_flat_s8_mve(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                     int8_t *output)
{
    return add16_mve(params, input1, input2, output);
}
