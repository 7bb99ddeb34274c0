/* Scalar int8 average pooling: four channels per word summed at once in 16-bit lanes (SWAR), then the portable rounding. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* Channels per pass, and taps per flush of the 16-bit lanes: (x + 128) <= 255, 257 * 255 < 2^16. */
#define CHUNK 64
#define FLUSH 257

mcu_status_t mcu_avgpool2d_s8_fast(const mcu_pool2d_params_t *params, const int8_t *input, int8_t *output)
{
    const mcu_pool2d_params_t *p = params;
    const mcu_status_t status = mcu_avgpool_check(p, input, output);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t in_h = p->input.h, in_w = p->input.w, c = p->input.c;
    const int32_t os = mcu_out_stride(p->output_pixel_stride, c); /* output pixel q at output + q * os */
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            for (int32_t x = 0; x < p->output.w; ++x, out += os) {
                int32_t ky0, ky1, kx0, kx1;
                mcu_pool_window(p, y, x, &ky0, &ky1, &kx0, &kx1);
                const int32_t count = (ky1 - ky0) * (kx1 - kx0), d = p->divisor > 0 ? p->divisor : count;
                for (int32_t c0 = 0; c0 < c; c0 += CHUNK) {
                    const int32_t nc = c - c0 < CHUNK ? c - c0 : CHUNK, words = (nc + 3) / 4;
                    uint32_t even[CHUNK / 4] = {0}, odd[CHUNK / 4] = {0}; /* lanes: sums of x + 128 */
                    int32_t total[CHUNK] = {0};
                    int32_t taps = 0;
                    for (int32_t iy = ky0; iy < ky1; ++iy) {
                        for (int32_t ix = kx0; ix < kx1; ++ix) {
                            const int8_t *px = in_n + (iy * in_w + ix) * c + c0;
                            for (int32_t g = 0; g < words; ++g) {
                                const int32_t left = nc - 4 * g;
                                const uint32_t word = left >= 4 ? mcu_read_u32(px + 4 * g) : mcu_read_tail(px + 4 * g, left);
                                const uint32_t v = word ^ 0x80808080u;
                                even[g] += v & 0x00FF00FFu;
                                odd[g] += (v >> 8) & 0x00FF00FFu;
                            }
                            if (++taps == FLUSH) {
                                for (int32_t j = 0; j < nc; ++j) {
                                    const uint32_t lanes = (j & 1 ? odd : even)[j / 4];
                                    total[j] += (int32_t)((lanes >> (j & 2 ? 16 : 0)) & 0xFFFFu);
                                }
                                for (int32_t g = 0; g < words; ++g) {
                                    even[g] = odd[g] = 0;
                                }
                                taps = 0;
                            }
                        }
                    }
                    for (int32_t j = 0; j < nc; ++j) {
                        /* lane of channel j: byte j % 4 of each word, bytes 0/2 in `even`, 1/3 in `odd` */
                        const uint32_t lanes = (j & 1 ? odd : even)[j / 4];
                        const int32_t acc = total[j] + (int32_t)((lanes >> (j & 2 ? 16 : 0)) & 0xFFFFu);
                        out[c0 + j] = mcu_avg_pool_out(p, acc - 128 * count, count, d); /* sum of x */
                    }
                }
            }
        }
    }
    return MCU_OK;
}
