/* Integer RMS normalization over the last axis, int8 activations, all integer (steps in mcu_norm.h). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_norm.h"

mcu_status_t mcu_rms_norm_s8(const mcu_norm_params_t *params, const int8_t *input, const int32_t *weight,
                             const int64_t *bias, int8_t *output)
{
    return mcu_norm_run(params, input, weight, bias, output, 0, 1);
}
