/* Reference int8 2-d transposed convolution (groups 1), gather form: only the taps that land on an input. */
/* Each output pixel sums only the taps that land on an input pixel, so the work is the true MACs (no zero-stuffed
 * input). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

static inline int8_t mcu_convt_finish(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant,
                                      int32_t acc, int32_t co)
{
    return (int8_t)mcu_clamp_i32(
        mcu_add_offset(mcu_requantize(acc, quant->multiplier[co], quant->shift[co]), p->output_offset), p->act_min,
        p->act_max);
}

mcu_status_t mcu_conv_transpose2d_s8(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    const mcu_status_t status = mcu_convt_check(p, quant, input, filter, output);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, c_out = p->output.c;
    const int32_t kh = p->filter.h, kw = p->filter.w, sh = p->stride_h, sw = p->stride_w;
    const int32_t in_off = p->input_offset, w_chan = kh * kw * c_in;
    const int32_t pixel_skip = p->output_pixel_stride > 0 ? p->output_pixel_stride - c_out : 0;
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c_in;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const mcu_convt_span_t sy = mcu_convt_span(y, p->pad_top, sh, kh, in_h);
            for (int32_t x = 0; x < p->output.w; ++x) {
                const mcu_convt_span_t sx = mcu_convt_span(x, p->pad_left, sw, kw, in_w);
                int32_t co = 0;
                for (; co + 4 <= c_out; co += 4) { /* 4 channels share each input element */
                    const int8_t *w0 = filter + co * w_chan;
                    int32_t acc[4];
                    for (int32_t j = 0; j < 4; ++j) {
                        acc[j] = bias != NULL ? bias[co + j] : 0;
                    }
                    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
                    for (int32_t ky = sy.k0, iy = sy.i0; ky < sy.k1; ky += sh, --iy) {
                        for (int32_t kx = sx.k0, ix = sx.i0; kx < sx.k1; kx += sw, --ix) {
                            const int8_t *x_t = in_n + (iy * in_w + ix) * c_in;
                            const int8_t *w_t = w0 + (ky * kw + kx) * c_in;
                            for (int32_t ci = 0; ci < c_in; ++ci) {
                                const int32_t v = (int32_t)x_t[ci] + in_off;
                                a0 += v * w_t[ci];
                                a1 += v * w_t[ci + w_chan];
                                a2 += v * w_t[ci + 2 * w_chan];
                                a3 += v * w_t[ci + 3 * w_chan];
                            }
                        }
                    }
                    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
                    for (int32_t j = 0; j < 4; ++j) {
                        *out++ = mcu_convt_finish(p, quant, acc[j], co + j);
                    }
                }
                for (; co < c_out; ++co) {
                    const int8_t *w_co = filter + co * w_chan;
                    int32_t acc = bias != NULL ? bias[co] : 0;
                    for (int32_t ky = sy.k0, iy = sy.i0; ky < sy.k1; ky += sh, --iy) {
                        for (int32_t kx = sx.k0, ix = sx.i0; kx < sx.k1; kx += sw, --ix) {
                            const int8_t *x_t = in_n + (iy * in_w + ix) * c_in;
                            const int8_t *w_t = w_co + (ky * kw + kx) * c_in;
                            for (int32_t ci = 0; ci < c_in; ++ci) {
                                acc += ((int32_t)x_t[ci] + in_off) * w_t[ci];
                            }
                        }
                    }
                    *out++ = mcu_convt_finish(p, quant, acc, co);
                }
                out += pixel_skip;
            }
        }
    }
    return MCU_OK;
}
