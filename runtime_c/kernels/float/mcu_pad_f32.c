/* Float32 constant pad along one dim: mcu_pad_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_pad_f32(const mcu_pad_params_t *params, const float *input, float *output)
{
    const float value = params != NULL ? params->value_f32 : 0.0f;
    return mcu_pad_elems(params, input, output, sizeof *output, &value);
}
