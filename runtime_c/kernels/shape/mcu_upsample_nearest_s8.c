/* Reference int8 nearest-neighbour upsampling by integer factors (NHWC): mcu_upsample_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_upsample_nearest_s8(const mcu_upsample_params_t *params, const int8_t *input, int8_t *output)
{
    return mcu_upsample_elems(params, input, output, sizeof *output);
}
