/* The loop nest of every portable convolution, written once: regular, grouped and depthwise, with int8, int16
 * or float32 elements. A kernel source defines the names below, includes this file (which defines one static
 * function and #undefs them), checks its arguments and calls the function:
 *   MCU_CONV_LOOP                   the function's name
 *   MCU_PARAMS_T                    the params struct (mcu_conv2d_params_t or mcu_conv2d_f32_params_t)
 *   MCU_IN_T, MCU_W_T, MCU_BIAS_T, MCU_ACC_T, MCU_OUT_T   element types
 *   MCU_START(co)                   the accumulator's start for output channel co (the bias, or 0)
 *   MCU_MAC(acc, x, w)              acc plus one tap: input element x, weight w
 *   MCU_FINISH(acc, co)             the output element of channel co from its sum
 *   MCU_INPUT_OFFSET(p)             the input offset (p->input_offset; 0 for float)
 *   MCU_EXTRA_T (optional)          the element type of `extra`, a second input read at the output's index
 *                                   (a fused residual); without it `extra` is a const void * left unused
 * MCU_START and MCU_FINISH may use `bias`, `quant` and `p`; MCU_MAC may use `in_off`; MCU_FINISH may read
 * extra[out - output], the element at the output's own flat index.
 *
 * Output element (n, y, x, co) sums its window's taps inside the input, in (ky, kx, ci) order (the float
 * kernels depend on the order); taps in the padding are skipped. `kind` (mcu_util.h) picks the filter layout.
 * The weights of channel co, tap t (ky * KW + kx)
 * and input channel ci of its group sit at co * w_chan + t * w_tap + ci:
 *   - conv (OHWI, [C_out, KH, KW, C_in / groups]): w_chan = KH * KW * C_in / groups, w_tap = C_in / groups;
 *   - depthwise ([1, KH, KW, C_out]): w_chan = 1, w_tap = C_out, one input channel per group.
 * Channel co reads input channels [g * c_group, (g + 1) * c_group), g = co / (C_out / groups). Output pixels
 * are written in raster order, each from its own window (what codegen/memory.py's raster overlap relies on).
 * Pixel q's channels start at output + q * stride, stride = p->output_pixel_stride or C_out when that is 0 (the
 * caller has checked stride >= C_out); the elements between pixels are not written.
 */
#include <stdint.h>

#include "mcu/mcu_util.h"

#ifndef MCU_EXTRA_T
#define MCU_EXTRA_T void
#endif

static void MCU_CONV_LOOP(const MCU_PARAMS_T *p, const mcu_per_channel_quant_t *quant, const MCU_IN_T *input,
                          const MCU_W_T *filter, const MCU_BIAS_T *bias, const MCU_EXTRA_T *extra, MCU_OUT_T *output,
                          mcu_conv_kind_t kind)
{
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, c_out = p->output.c;
    const int32_t kh = p->filter.h, kw = p->filter.w;
    const int depthwise = kind == MCU_CONV_DEPTHWISE;
    const int32_t c_group = depthwise ? 1 : p->filter.c;
    const int32_t w_chan = depthwise ? 1 : kh * kw * c_group, w_tap = depthwise ? c_out : c_group;
    const int32_t dh = p->dilation_h, dw = p->dilation_w;
    const int32_t out_per_group = c_out / (c_in / c_group);
    const int32_t in_row_step = dh * in_w * c_in, in_col_step = dw * c_in;
    const int32_t in_off = MCU_INPUT_OFFSET(p);
    const int32_t pixel_skip = p->output_pixel_stride > 0 ? p->output_pixel_stride - c_out : 0;
    MCU_OUT_T *out = output;
    (void)quant;
    (void)bias;
    (void)extra;
    (void)in_off;

    for (int32_t n = 0; n < p->output.n; ++n) {
        const MCU_IN_T *in_n = input + n * in_h * in_w * c_in;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            int32_t ky0, ky1;
            mcu_tap_range(base_y, dh, kh, in_h, &ky0, &ky1);
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                int32_t kx0, kx1;
                mcu_tap_range(base_x, dw, kw, in_w, &kx0, &kx1);
                /* Offsets of the first valid tap in in_n / a channel's weights; only those taps are read. */
                const int32_t in_win = ((base_y + ky0 * dh) * in_w + base_x + kx0 * dw) * c_in;
                const int32_t w_win = (ky0 * kw + kx0) * w_tap;
                int32_t group_in = in_win, group_left = out_per_group; /* channel co's group: no division */
                for (int32_t co = 0; co < c_out; ++co) {
                    const MCU_W_T *w_co = filter + co * w_chan;
                    MCU_ACC_T acc = MCU_START(co);
                    int32_t in_row = group_in, w_row = w_win;
                    for (int32_t ky = ky0; ky < ky1; ++ky) {
                        int32_t in_px = in_row, w_px = w_row;
                        for (int32_t kx = kx0; kx < kx1; ++kx) {
                            const MCU_IN_T *x_t = in_n + in_px;
                            const MCU_W_T *w_t = w_co + w_px;
                            if (c_group == 1) { /* one input channel a tap (depthwise, or C_in 1) */
                                acc = MCU_MAC(acc, x_t[0], w_t[0]);
                            } else {
                                int32_t ci = 0;
                                for (; ci + 4 <= c_group; ci += 4) { /* unrolled; the sum keeps its order */
                                    acc = MCU_MAC(acc, x_t[ci], w_t[ci]);
                                    acc = MCU_MAC(acc, x_t[ci + 1], w_t[ci + 1]);
                                    acc = MCU_MAC(acc, x_t[ci + 2], w_t[ci + 2]);
                                    acc = MCU_MAC(acc, x_t[ci + 3], w_t[ci + 3]);
                                }
                                for (; ci < c_group; ++ci) {
                                    acc = MCU_MAC(acc, x_t[ci], w_t[ci]);
                                }
                            }
                            in_px += in_col_step;
                            w_px += w_tap;
                        }
                        in_row += in_row_step;
                        w_row += kw * w_tap;
                    }
                    *out = MCU_FINISH(acc, co);
                    ++out;
                    if (--group_left == 0) {
                        group_left = out_per_group;
                        group_in += c_group;
                    }
                }
                out += pixel_skip;
            }
        }
    }
}

#undef MCU_CONV_LOOP
#undef MCU_PARAMS_T
#undef MCU_IN_T
#undef MCU_W_T
#undef MCU_BIAS_T
#undef MCU_ACC_T
#undef MCU_OUT_T
#undef MCU_START
#undef MCU_MAC
#undef MCU_FINISH
#undef MCU_INPUT_OFFSET
#undef MCU_EXTRA_T
