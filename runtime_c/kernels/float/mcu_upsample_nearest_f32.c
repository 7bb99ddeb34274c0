/* Float32 nearest-neighbour upsampling by integer factors (NHWC): mcu_upsample_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_upsample_nearest_f32(const mcu_upsample_params_t *params, const float *input, float *output)
{
    return mcu_upsample_elems(params, input, output, sizeof *output);
}
