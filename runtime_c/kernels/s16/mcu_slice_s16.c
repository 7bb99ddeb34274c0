/* Reference int16_t slice along one dim (slice, select, split, chunk, unbind, narrow): mcu_slice_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_slice_s16(const mcu_slice_params_t *params, const int16_t *input, int16_t *output)
{
    return mcu_slice_elems(params, input, output, sizeof *output);
}
