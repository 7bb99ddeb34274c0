/* DSP (SIMD32) int8 average pooling: 16 channels a pass in eight 16-bit lane pairs, one SXTAB16 per 2 values. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* Channels per pass (4 words of a pixel, each summed into two lane pairs: bytes 0/2 and 1/3), and taps per flush
 * to the int32 totals: 256 * -128 and 256 * 127 fit int16. */
#define CHUNK 16
#define FLUSH 256

/* tot[4k + j] += lane j of word k's pairs, for the first `words` words. */
static void flush(const uint32_t *a, int32_t words, int32_t *tot)
{
    for (int32_t k = 0; k < words; ++k, tot += 4) {
        tot[0] += (int16_t)(a[2 * k] & 0xFFFFu);
        tot[1] += (int16_t)(a[2 * k + 1] & 0xFFFFu);
        tot[2] += (int16_t)(a[2 * k] >> 16);
        tot[3] += (int16_t)(a[2 * k + 1] >> 16);
    }
}

/* The pairs of `n` (<= FLUSH) taps px, px + c, ...: 4 words of each (words == 4) or the first `tail` bytes of
 * one (words == 1), summed into zeroed pairs a[0 .. 2 * words) and then flushed to tot. */
MCU_INLINE void run(const int8_t *px, int32_t c, int32_t n, const int32_t words, int32_t tail, int32_t *tot)
{
    uint32_t a[8] = {0};
    if (words == 4) {
        uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
        for (; n > 0; --n, px += c) {
            const uint32_t w0 = mcu_read_u32(px), w1 = mcu_read_u32(px + 4);
            const uint32_t w2 = mcu_read_u32(px + 8), w3 = mcu_read_u32(px + 12);
            a0 = mcu_sxtab16(a0, w0);
            a1 = mcu_sxtab16_ror8(a1, w0);
            a2 = mcu_sxtab16(a2, w1);
            a3 = mcu_sxtab16_ror8(a3, w1);
            a4 = mcu_sxtab16(a4, w2);
            a5 = mcu_sxtab16_ror8(a5, w2);
            a6 = mcu_sxtab16(a6, w3);
            a7 = mcu_sxtab16_ror8(a7, w3);
        }
        a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, a[4] = a4, a[5] = a5, a[6] = a6, a[7] = a7;
    } else {
        for (; n > 0; --n, px += c) {
            const uint32_t w = tail >= 4 ? mcu_read_u32(px) : mcu_read_tail(px, tail);
            a[0] = mcu_sxtab16(a[0], w);
            a[1] = mcu_sxtab16_ror8(a[1], w);
        }
    }
    flush(a, words, tot);
}

/* tot[0 .. 4 * words) = the sums over the window (rows ky0..ky1, columns kx0..kx1) of the channels at in_c.
 * A window as wide as the input is one contiguous run of taps (a global pool). */
MCU_INLINE void window_sums(const int8_t *in_c, int32_t in_w, int32_t c, const int32_t *win, const int32_t words,
                            int32_t tail, int32_t *tot)
{
    int32_t rows = win[1] - win[0], width = win[3] - win[2];
    if (width == in_w) {
        width *= rows;
        rows = 1;
    }
    for (int32_t j = 0; j < 4 * words; ++j) {
        tot[j] = 0;
    }
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *px = in_c + ((win[0] + r) * in_w + win[2]) * c;
        for (int32_t left = width; left > 0; left -= FLUSH, px += FLUSH * c) {
            run(px, c, left < FLUSH ? left : FLUSH, words, tail, tot);
        }
    }
}

/* out[j] for j < nc from the window sums tot[j]: the portable kernel's rounding. */
static void finish(const mcu_pool2d_params_t *p, const int32_t *tot, int32_t nc, int32_t count, int32_t d,
                   int8_t *out)
{
    for (int32_t j = 0; j < nc; ++j) {
        out[j] = mcu_avg_pool_out(p, tot[j], count, d);
    }
}

mcu_status_t mcu_avgpool2d_s8_dsp(const mcu_pool2d_params_t *params, const int8_t *input, int8_t *output)
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
                int32_t win[4], tot[CHUNK];
                mcu_pool_window(p, y, x, &win[0], &win[1], &win[2], &win[3]);
                const int32_t count = (win[1] - win[0]) * (win[3] - win[2]), d = p->divisor > 0 ? p->divisor : count;
                int32_t c0 = 0;
                for (; c - c0 >= CHUNK; c0 += CHUNK) {
                    window_sums(in_n + c0, in_w, c, win, 4, 4, tot);
                    finish(p, tot, CHUNK, count, d, out + c0);
                }
                for (; c0 < c; c0 += 4) {
                    const int32_t nc = c - c0 < 4 ? c - c0 : 4;
                    window_sums(in_n + c0, in_w, c, win, 1, nc, tot);
                    finish(p, tot, nc, count, d, out + c0);
                }
            }
        }
    }
    return MCU_OK;
}
