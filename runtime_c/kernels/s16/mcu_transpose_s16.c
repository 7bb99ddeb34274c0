/* Reference int16 transpose of a tensor of rank <= 4 (dims padded to 4 with leading 1s). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_transpose_s16(const mcu_transpose_params_t *params, const int16_t *input, int16_t *output)
{
    return mcu_transpose_elems(params, input, output, sizeof *output);
}
