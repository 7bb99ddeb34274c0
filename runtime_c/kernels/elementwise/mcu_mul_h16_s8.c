/* Reference int8 multiply with broadcasting in Helium's int16 arithmetic (mcu_mul_h16_s8_mve's twin in C). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"

#define MCU_BROADCAST_LOOP broadcast_loop
#define MCU_PARAMS_T mcu_mul_h16_params_t
#define MCU_IN_T int8_t
#define MCU_OUT_T int8_t
#define MCU_ELEMENT(x1, x2) mcu_mul_h16_element(p, x1, x2)
#include "mcu/mcu_broadcast_loop.h"

mcu_status_t mcu_mul_h16_s8(const mcu_mul_h16_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output)
{
    const mcu_status_t status = mcu_mul_h16_check(params, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    broadcast_loop(params, input1, input2, output);
    return MCU_OK;
}
