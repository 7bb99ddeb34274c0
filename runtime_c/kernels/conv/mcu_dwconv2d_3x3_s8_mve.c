/* Helium (MVE) int8 depthwise 3x3 convolution, channel multiplier 1, pixel by pixel (any stride and dilation). */

/* The any-window kernel's driver (kernels/shared/mcu_dw_s8_mve.c) with every channel of a pixel finished before
 * the next (its 9 tap pointers copied from the row's table to one of its own, 16 channels a pass), so the output
 * may follow its input by one pixel (the raster gap of blocks of 1). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_dw_mve.h"
#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_dwconv2d_3x3_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int8_t *input, const int8_t *filter, const int32_t *bias,
                                     int8_t *scratch, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_dw3x3_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    if (mcu_quant_check(quant, (p->input.c + 7) & ~7) != MCU_OK) { /* lane order permutes channels, not values */
        return MCU_ERR_ARG;
    }
    return mcu_dw_mve_rows(p, quant, input, filter, bias, scratch, output, 1);
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)scratch, (void)output;
    return MCU_ERR_ARG;
#endif
}
