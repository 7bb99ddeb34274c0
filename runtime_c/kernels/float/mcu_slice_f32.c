/* Reference float slice along one dim (slice, select, split, chunk, unbind, narrow): mcu_slice_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_slice_f32(const mcu_slice_params_t *params, const float *input, float *output)
{
    return mcu_slice_elems(params, input, output, sizeof *output);
}
