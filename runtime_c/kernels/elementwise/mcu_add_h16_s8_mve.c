/* Helium int8 add / subtract in int16 lanes (mcu_add_h16_s8's arithmetic): 16 elements a step. */
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_add16_mve.h"

mcu_status_t mcu_add_h16_s8_mve(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                int8_t *output)
{
    return add16_mve(params, input1, input2, output);
}
