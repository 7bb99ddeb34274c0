/* Helium (MVE) int8 depthwise convolution, any window, stride and dilation, channel multiplier 1. */

/*  - The work is the shared driver's (kernels/shared/mcu_dw_s8_mve.c, mcu/mcu_dw_mve.h): 16 channels (two groups
 *    of 8) a pixel and pass, output rows in order (the in-place ring of the 3x3 variants).
 *  - Each output row (in chunks of columns) first gets a table of column pointers, window row by window row:
 *    the input pixel's channel 0, or the C bytes of the zero point where the tap lies in the padding (the bias
 *    is folded). Columns are ordered by residue modulo the dilation, so a pixel's taps in a window row are
 *    consecutive entries. After each pass the table moves on by the pass's channels.
 *  - Pixels of 16 whole channels with negative shifts at dilation 1 run in one assembly block (mcu_dw_mve_run);
 *    a last 8 or fewer channels, dilation or shifts >= 0 pixel by pixel.
 */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_dw_mve.h"
#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_dwconv2d_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                 const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                                 int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_dw_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    if (mcu_quant_check(quant, (p->input.c + 7) & ~7) != MCU_OK) { /* lane order permutes channels, not values */
        return MCU_ERR_ARG;
    }
    return mcu_dw_mve_rows(p, quant, input, filter, bias, scratch, output, 0);
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)scratch, (void)output;
    return MCU_ERR_ARG;
#endif
}
