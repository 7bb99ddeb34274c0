/* Reference int16 2-d average pooling (NHWC), rounding half away from zero; padded taps are skipped. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_quant.h"

mcu_status_t mcu_avgpool2d_s16(const mcu_pool2d_params_t *params, const int16_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool2d_params_t *p = params;
    /* At most 65536 taps keeps the int32 sum of int16 values exact: |acc| <= 2^16 * 2^15. */
    if (!mcu_window_ok(&p->input, &p->output, p->stride_h, p->stride_w, 1, 1, p->pad_top, p->pad_left) ||
        p->kernel_h < 1 || p->kernel_w < 1 || p->kernel_h > 65536 / p->kernel_w || p->divisor < 0 ||
        !mcu_io16_ok(p->zero_point, 0, p->act_min, p->act_max)) {
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
                const uint32_t d = (uint32_t)(p->divisor > 0 ? p->divisor : (ky1 - ky0) * (kx1 - kx0));
                const int32_t in_win = ((base_y + ky0) * in_w + base_x + kx0) * c;
                for (int32_t ch = 0; ch < c; ++ch) {
                    int32_t acc = 0;
                    for (int32_t row = in_win + ch, ky = ky0; ky < ky1; ++ky, row += in_w * c) {
                        for (int32_t px = row, kx = kx0; kx < kx1; ++kx, px += c) {
                            acc += in_n[px];
                        }
                    }
                    /* |acc| <= 2^31 and d / 2 < 2^30, so the magnitude's rounded quotient fits uint32; beyond
                     * 2^15 the int16 clamp decides. */
                    const uint32_t mag = acc < 0 ? 0u - (uint32_t)acc : (uint32_t)acc;
                    const uint32_t qm = (mag + d / 2u) / d;
                    const int32_t q = qm > 32768u ? 32768 : (int32_t)qm;
                    *out++ = (int16_t)mcu_clamp_i32(acc < 0 ? -q : q, p->act_min, p->act_max);
                }
            }
        }
    }
    return MCU_OK;
}
