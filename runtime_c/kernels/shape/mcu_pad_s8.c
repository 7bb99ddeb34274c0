/* Reference int8_t constant pad along one dim (F.pad, constant mode, not folded into a conv): mcu_pad_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_pad_s8(const mcu_pad_params_t *params, const int8_t *input, int8_t *output)
{
    const int8_t value = params != NULL ? (int8_t)params->value : 0;
    return mcu_pad_elems(params, input, output, sizeof *output, &value);
}
