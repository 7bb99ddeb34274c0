/* Helium (MVE) int8 1x1 convolution without padding: input rows in place, 3 pixels x 2 channels per VMLADAVA block. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

mcu_status_t mcu_conv2d_1x1_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                   const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_conv_shapes_ok(p) || p->filter.h != 1 || p->filter.w != 1 || p->pad_top != 0 || p->pad_left != 0 ||
        (p->output.h - 1) * p->stride_h >= p->input.h || (p->output.w - 1) * p->stride_w >= p->input.w) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c_in = p->input.c, c_out = p->output.c, oh = p->output.h, ow = p->output.w;
    if (mcu_quant_check(quant, c_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const mcu_mve_gemm_t g = mcu_mve_gemm(filter, bias, quant, c_out, 1, c_in, p->output_offset, p->act_min,
                                          p->act_max);
    const int32_t pixels = p->output.n * oh * ow;
    for (int32_t i = 0; i < pixels; i += 3) {
        const int8_t *row[1][3];
        for (int32_t j = 0; j < 3; ++j) { /* output pixel i + j (pixel i again past the end) */
            const int32_t q = i + j < pixels ? i + j : i, n = q / (oh * ow), y = q / ow % oh, x = q % ow;
            row[0][j] = input + ((n * p->input.h + y * p->stride_h) * p->input.w + x * p->stride_w) * c_in;
        }
        if (pixels - i == 1) {
            mcu_mve_gemv(row[0], &g, output + i * c_out);
        } else {
            mcu_mve_gemm_3x2(row, &g, pixels - i, output + i * c_out);
        }
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)output;
    return MCU_ERR_ARG;
#endif
}
