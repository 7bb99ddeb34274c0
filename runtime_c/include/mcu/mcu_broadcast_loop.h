/* The loop of every broadcasting elementwise kernel of two inputs, written once (int8 add/sub and mul, int16 mul,
 * float32 add/sub and mul). A kernel source defines the names below, includes this file (which defines one static
 * function and #undefs them), checks its arguments and calls the function:
 *   MCU_BROADCAST_LOOP              the function's name
 *   MCU_PARAMS_T                    the params struct (with mcu_dims_t input1, input2, output: broadcast dims)
 *   MCU_IN_T, MCU_OUT_T             element types
 *   MCU_ELEMENT(x1, x2)             the output element from the two inputs' elements; may use `p`
 * Output elements are written in order (n, h, w, c); an input dim of 1 repeats along that axis.
 */
#include <stdint.h>

#include "mcu/mcu_util.h"

static void MCU_BROADCAST_LOOP(const MCU_PARAMS_T *p, const MCU_IN_T *input1, const MCU_IN_T *input2,
                               MCU_OUT_T *output)
{
    const mcu_dims_t *o = &p->output;
    int32_t s1[4], s2[4];
    mcu_broadcast_strides(&p->input1, s1);
    mcu_broadcast_strides(&p->input2, s2);
    MCU_OUT_T *out = output;
    for (int32_t n = 0; n < o->n; ++n) {
        for (int32_t h = 0; h < o->h; ++h) {
            for (int32_t w = 0; w < o->w; ++w) {
                const MCU_IN_T *a = input1 + n * s1[0] + h * s1[1] + w * s1[2];
                const MCU_IN_T *b = input2 + n * s2[0] + h * s2[1] + w * s2[2];
                for (int32_t c = 0; c < o->c; ++c) {
                    *out++ = MCU_ELEMENT(a[c * s1[3]], b[c * s2[3]]);
                }
            }
        }
    }
}

#undef MCU_BROADCAST_LOOP
#undef MCU_PARAMS_T
#undef MCU_IN_T
#undef MCU_OUT_T
#undef MCU_ELEMENT
