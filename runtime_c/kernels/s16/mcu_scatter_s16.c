/* Row scatter of int16_t elements by run-time indices (index_put, index_copy: a KV cache row): mcu_scatter_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_scatter_s16(const mcu_gather_params_t *params, const int16_t *table, const int32_t *indices,
                             const int16_t *values, int16_t *output)
{
    return mcu_scatter_elems(params, table, indices, values, output, sizeof *output);
}
