/* The loop nest of every portable 2-d pool, written once: max and average, with int8, int16 or float32
 * elements. A kernel source defines the names below, includes this file (which defines one static function and
 * #undefs them), checks its arguments and calls the function:
 *   MCU_POOL_LOOP                  the function's name
 *   MCU_PARAMS_T                   the params struct (mcu_pool2d_params_t or mcu_pool2d_f32_params_t)
 *   MCU_IN_T, MCU_ACC_T, MCU_OUT_T element types
 *   MCU_START(first)               the accumulator's start, given the window's first valid tap (max: that tap)
 *   MCU_TAP(acc, x)                acc with one more tap x (max: the larger; average: the sum)
 *   MCU_FINISH(acc, taps, d)       the output element, from acc, the count of valid taps and the divisor d
 *                                  (p->divisor, or the count when that is 0); may use `p`
 * Taps in the padding are skipped, so padding never wins a max nor counts in an average by the valid taps;
 * each window's taps are visited row by row (the float average's sum depends on the order). Output pixels are
 * written in raster order, each from its own window (codegen/memory.py's raster overlap relies on it). Pixel q's
 * channels start at output + q * stride, stride = p->output_pixel_stride or C when that is 0 (the caller has
 * checked stride >= C); the elements between pixels are not written.
 */
#include <stdint.h>

#include "mcu/mcu_util.h"

static void MCU_POOL_LOOP(const MCU_PARAMS_T *p, const MCU_IN_T *input, MCU_OUT_T *output)
{
    const int32_t in_h = p->input.h, in_w = p->input.w, c = p->input.c;
    const int32_t pixel_skip = p->output_pixel_stride > 0 ? p->output_pixel_stride - c : 0;
    MCU_OUT_T *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const MCU_IN_T *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            int32_t ky0, ky1;
            mcu_tap_range(base_y, 1, p->kernel_h, in_h, &ky0, &ky1);
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                int32_t kx0, kx1;
                mcu_tap_range(base_x, 1, p->kernel_w, in_w, &kx0, &kx1);
                const int32_t taps = (ky1 - ky0) * (kx1 - kx0);
                const int32_t d = p->divisor > 0 ? p->divisor : taps;
                const int32_t in_win = ((base_y + ky0) * in_w + base_x + kx0) * c;
                (void)taps; /* a max uses neither */
                (void)d;
                for (int32_t ch = 0; ch < c; ++ch) {
                    MCU_ACC_T acc = MCU_START(in_n[in_win + ch]);
                    for (int32_t row = in_win + ch, ky = ky0; ky < ky1; ++ky, row += in_w * c) {
                        for (int32_t px = row, kx = kx0; kx < kx1; ++kx, px += c) {
                            acc = MCU_TAP(acc, in_n[px]);
                        }
                    }
                    *out++ = MCU_FINISH(acc, taps, d);
                }
                out += pixel_skip;
            }
        }
    }
}

#undef MCU_POOL_LOOP
#undef MCU_PARAMS_T
#undef MCU_IN_T
#undef MCU_ACC_T
#undef MCU_OUT_T
#undef MCU_START
#undef MCU_TAP
#undef MCU_FINISH
