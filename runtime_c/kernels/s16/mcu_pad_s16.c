/* Reference int16_t constant pad along one dim: mcu_pad_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_pad_s16(const mcu_pad_params_t *params, const int16_t *input, int16_t *output)
{
    const int16_t value = params != NULL ? (int16_t)params->value : 0;
    return mcu_pad_elems(params, input, output, sizeof *output, &value);
}
