/* Helium int8 look-up table: 16 lanes a vector, each lane's entry gathered from the table (VLDRB gather). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_lut_s8_mve(const mcu_lut_params_t *params, const int8_t *table, const int8_t *input,
                            int8_t *output)
{
#if MCU_HAVE_MVE
    if (params == NULL || table == NULL || input == NULL || output == NULL || params->size < 1) {
        return MCU_ERR_ARG;
    }
    /* The table comes rotated by 128 (entry v & 0xFF holds the portable entry v + 128), so the raw bytes are the
     * gather's unsigned offsets. Two vectors a step, then a tail-predicated loop; each step reads its lanes before
     * it writes them, so output may alias input exactly. */
    const int8_t *in = input;
    int8_t *out = output;
    const int32_t size = params->size, pairs = size >> 5, rest = size & 31;
    __asm__ volatile("wls lr, %[pairs], 2f\n"
                     "1:\n\t"
                     "vldrb.u8 q0, [%[in]], #16\n\t"
                     "vldrb.u8 q1, [%[in]], #16\n\t"
                     "vldrb.u8 q2, [%[t], q0]\n\t"
                     "vldrb.u8 q3, [%[t], q1]\n\t"
                     "vstrb.8 q2, [%[out]], #16\n\t"
                     "vstrb.8 q3, [%[out]], #16\n\t"
                     "le lr, 1b\n"
                     "2:\n\t"
                     "wlstp.8 lr, %[rest], 4f\n"
                     "3:\n\t"
                     "vldrb.u8 q0, [%[in]], #16\n\t"
                     "vldrb.u8 q2, [%[t], q0]\n\t"
                     "vstrb.8 q2, [%[out]], #16\n\t"
                     "letp lr, 3b\n"
                     "4:\n"
                     : [in] "+r"(in), [out] "+r"(out)
                     : [t] "r"(table), [pairs] "r"(pairs), [rest] "r"(rest)
                     : "lr", "q0", "q1", "q2", "q3", "memory");
    return MCU_OK;
#else
    (void)params, (void)table, (void)input, (void)output;
    return MCU_ERR_ARG;
#endif
}
