/* Int8 1x1 convolution with C_out <= C_in that may run in place: each input pixel is copied out before it is overwritten. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_conv2d_1x1_s8_inplace(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                       const int8_t *input, const int8_t *filter, const int32_t *bias,
                                       int8_t *scratch, int8_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || scratch == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv2d_params_t *p = params;
    if (!mcu_window_ok(&p->input, &p->output, p->stride_h, p->stride_w, p->dilation_h, p->dilation_w, p->pad_top,
                       p->pad_left) || !mcu_dims_ok(&p->filter) ||
        !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max) ||
        !mcu_pixel_stride_contiguous(p->output_pixel_stride, p->output.c)) {
        return MCU_ERR_ARG;
    }
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, c_out = p->output.c;
    /* Every output pixel reads a real input pixel at or after its own index, so output pixel q fits in the bytes
     * of input pixels <= q once pixel q is copied out. */
    if (p->output.n != p->input.n || p->filter.c != c_in || c_out != p->filter.n || p->filter.h != 1 ||
        p->filter.w != 1 || p->pad_top != 0 || p->pad_left != 0 || c_out > c_in ||
        (p->output.h - 1) * p->stride_h >= in_h || (p->output.w - 1) * p->stride_w >= in_w) {
        return MCU_ERR_SHAPE;
    }
    for (int32_t co = 0; co < c_out; ++co) {
        if (quant->multiplier[co] < 0 || quant->shift[co] < -31 || quant->shift[co] > 30) {
            return MCU_ERR_ARG;
        }
    }

    const int32_t in_off = p->input_offset;
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        for (int32_t y = 0; y < p->output.h; ++y) {
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int8_t *px = input + ((n * in_h + y * p->stride_h) * in_w + x * p->stride_w) * c_in;
                for (int32_t ci = 0; ci < c_in; ++ci) {
                    scratch[ci] = px[ci];
                }
                const int8_t *w_co = filter;
                for (int32_t co = 0; co < c_out; ++co) {
                    int32_t acc = bias != NULL ? bias[co] : 0;
                    for (int32_t ci = 0; ci < c_in; ++ci) {
                        acc += ((int32_t)scratch[ci] + in_off) * (int32_t)w_co[ci];
                    }
                    w_co += c_in;
                    acc = mcu_requantize(acc, quant->multiplier[co], quant->shift[co]);
                    acc = mcu_add_offset(acc, p->output_offset);
                    *out++ = (int8_t)mcu_clamp_i32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
    return MCU_OK;
}
