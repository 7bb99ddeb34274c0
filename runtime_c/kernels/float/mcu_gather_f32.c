/* Row gather of float elements by run-time indices (embedding, index_select, x[idx]): mcu_gather_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_gather_f32(const mcu_gather_params_t *params, const float *table, const int32_t *indices,
                            float *output)
{
    return mcu_gather_elems(params, table, indices, output, sizeof *output);
}
