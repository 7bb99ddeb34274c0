/* Row gather of int8_t elements by run-time indices (embedding, index_select, x[idx]): mcu_gather_elems. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

mcu_status_t mcu_gather_s8(const mcu_gather_params_t *params, const int8_t *table, const int32_t *indices,
                           int8_t *output)
{
    return mcu_gather_elems(params, table, indices, output, sizeof *output);
}
