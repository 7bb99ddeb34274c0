/* Scalar int8 look-up table: 16 elements a step, each a byte load, a table load and a byte store. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

mcu_status_t mcu_lut_s8_fast(const mcu_lut_params_t *params, const int8_t *table, const int8_t *input,
                             int8_t *output)
{
    if (params == NULL || table == NULL || input == NULL || output == NULL || params->size < 1) {
        return MCU_ERR_ARG;
    }
    /* t[v] for a signed v is entry v + 128; element i is read before it is written, so output may alias input */
    const int8_t *t = table + 128;
    const int8_t *in = input;
    int8_t *out = output;
    const int8_t *end16 = input + (params->size & ~15);
    while (in < end16) {
        out[0] = t[in[0]];
        out[1] = t[in[1]];
        out[2] = t[in[2]];
        out[3] = t[in[3]];
        out[4] = t[in[4]];
        out[5] = t[in[5]];
        out[6] = t[in[6]];
        out[7] = t[in[7]];
        out[8] = t[in[8]];
        out[9] = t[in[9]];
        out[10] = t[in[10]];
        out[11] = t[in[11]];
        out[12] = t[in[12]];
        out[13] = t[in[13]];
        out[14] = t[in[14]];
        out[15] = t[in[15]];
        in += 16;
        out += 16;
    }
    for (const int8_t *end = input + params->size; in < end;) {
        *out++ = t[*in++];
    }
    return MCU_OK;
}
