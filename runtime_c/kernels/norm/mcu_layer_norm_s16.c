/* Integer layer normalization over the last axis, int16 activations, all integer (steps in mcu_norm.h). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_norm.h"

mcu_status_t mcu_layer_norm_s16(const mcu_norm_params_t *params, const int16_t *input, const int32_t *weight,
                                const int64_t *bias, int16_t *output)
{
    return mcu_norm_run(params, input, weight, bias, output, 1, 0);
}
