/* Reference int16 2-d max pooling (NHWC); padded taps are skipped, so padding never wins. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_maxpool2d_s16(const mcu_pool2d_params_t *params, const int16_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool2d_params_t *p = params;
    if (!mcu_window_ok(&p->input, &p->output, p->stride_h, p->stride_w, 1, 1, p->pad_top, p->pad_left) ||
        p->kernel_h < 1 || p->kernel_w < 1 || !mcu_io16_ok(p->zero_point, 0, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_pool_shape_ok(&p->input, &p->output, p->kernel_h, p->kernel_w, p->stride_h, p->stride_w, p->pad_top,
                           p->pad_left)) {
        return MCU_ERR_SHAPE;
    }

    const int32_t in_h = p->input.h, in_w = p->input.w, c = p->input.c;
    int16_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int16_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t base_y = y * p->stride_h - p->pad_top;
            int32_t ky0, ky1;
            mcu_tap_range(base_y, 1, p->kernel_h, in_h, &ky0, &ky1);
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int32_t base_x = x * p->stride_w - p->pad_left;
                int32_t kx0, kx1;
                mcu_tap_range(base_x, 1, p->kernel_w, in_w, &kx0, &kx1);
                const int32_t in_win = ((base_y + ky0) * in_w + base_x + kx0) * c;
                for (int32_t ch = 0; ch < c; ++ch) {
                    int32_t best = MCU_Q15_MIN;
                    for (int32_t row = in_win + ch, ky = ky0; ky < ky1; ++ky, row += in_w * c) {
                        for (int32_t px = row, kx = kx0; kx < kx1; ++kx, px += c) {
                            best = in_n[px] > best ? in_n[px] : best;
                        }
                    }
                    *out++ = (int16_t)mcu_clamp_i32(best, p->act_min, p->act_max);
                }
            }
        }
    }
    return MCU_OK;
}
