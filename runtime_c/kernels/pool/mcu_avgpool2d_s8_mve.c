/* Helium (MVE) int8 average pooling: 32 channels a pass summed in int16 lanes, rounded 4 lanes at a time. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* Channels per pass (4 int16x8 accumulators fed by widening loads), and taps per flush to the int32 totals:
 * 256 * -128 and 256 * 127 fit int16. The totals are then rounded as the portable kernel does, 4 lanes at a time
 * through an exact reciprocal multiply (see finish). */
#define CHUNK 32
#define FLUSH 256

/* tot[0 .. 32) = the four accumulators (int16 lanes, widened through a stack copy), plus tot when `add`. */
static void flush(int16x8_t a0, int16x8_t a1, int16x8_t a2, int16x8_t a3, int32_t *tot, int add)
{
    int16_t buf[CHUNK];
    vstrhq_s16(buf, a0);
    vstrhq_s16(buf + 8, a1);
    vstrhq_s16(buf + 16, a2);
    vstrhq_s16(buf + 24, a3);
    for (int32_t j = 0; j < CHUNK; j += 4) {
        const int32x4_t v = vldrhq_s32(buf + j);
        vstrwq_s32(tot + j, add ? vaddq_s32(vldrwq_s32(tot + j), v) : v);
    }
}

/* tot[j] = the sum of channel j (of in_n) over the window's taps, rows ky0..ky1, columns kx0..kx1 (input pixels),
 * for the first nv vectors of 8 channels; the last of them loads only the lanes in `last` (others read 0). Rows
 * as wide as the input are contiguous: one run (a global pool). The window has at least one tap. */
MCU_INLINE void window_sums(const int8_t *in_n, int32_t in_w, int32_t c, int32_t ky0, int32_t ky1, int32_t kx0,
                            int32_t kx1, const int nv, const int predicated, mve_pred16_t last, int32_t *tot)
{
    int16x8_t a0 = vdupq_n_s16(0), a1 = a0, a2 = a0, a3 = a0;
    int32_t left = FLUSH, rows = ky1 - ky0, width = kx1 - kx0, flushed = 0;
    if (width == in_w) {
        width *= rows;
        rows = 1;
    }
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *px = in_n + ((ky0 + r) * in_w + kx0) * c;
        int32_t w = width;
        while (w > 0) {
            int32_t s = w < left ? w : left;
            w -= s;
            left -= s;
            for (; s > 0; --s, px += c) { /* one tap: each vector's 8 channels widened and added */
#define MCU_LOAD(k) (predicated && (k) == nv - 1 ? vldrbq_z_s16(px + 8 * (k), last) : vldrbq_s16(px + 8 * (k)))
                a0 = vaddq_s16(a0, MCU_LOAD(0));
                a1 = nv > 1 ? vaddq_s16(a1, MCU_LOAD(1)) : a1;
                a2 = nv > 2 ? vaddq_s16(a2, MCU_LOAD(2)) : a2;
                a3 = nv > 3 ? vaddq_s16(a3, MCU_LOAD(3)) : a3;
#undef MCU_LOAD
            }
            if (left == 0) {
                flush(a0, a1, a2, a3, tot, flushed);
                flushed = 1;
                a0 = a1 = a2 = a3 = vdupq_n_s16(0);
                left = FLUSH;
            }
        }
    }
    if (left != FLUSH) {
        flush(a0, a1, a2, a3, tot, flushed);
    }
}

/* out[j] = clamp(zp + round_half_away((tot[j] - zp * count) / d)) for j < nc. */
static void finish(const mcu_pool2d_params_t *p, const int32_t *tot, int32_t nc, int32_t count, int32_t d,
                   int8_t *out)
{
    const int32_t zp = p->zero_point;
    /* n = |acc| + d / 2 <= 255 * count + d / 2. With m = ceil(2^32 / d) = (2^32 + e) / d, 0 <= e < d, the high
     * word of n * m is floor(n / d + n * e / (d * 2^32)) = floor(n / d) whenever n * e < 2^32, so n * d < 2^32. */
    if (d >= 2 && ((uint64_t)(255 * (int64_t)count + d / 2) * (uint64_t)d >> 32) == 0) {
        const uint32_t m = 0xFFFFFFFFu / (uint32_t)d + 1u;
        const int32x4_t vmin = vdupq_n_s32(p->act_min), vmax = vdupq_n_s32(p->act_max);
        for (int32_t j = 0; j < nc; j += 4) {
            const mve_pred16_t pred = vctp32q((uint32_t)(nc - j));
            const int32x4_t acc = vsubq_n_s32(vldrwq_s32(tot + j), zp * count);
            const uint32x4_t n = vaddq_n_u32(vreinterpretq_u32_s32(vabsq_s32(acc)), (uint32_t)(d / 2));
            const int32x4_t q = vreinterpretq_s32_u32(vmulhq_u32(n, vdupq_n_u32(m)));
            const int32x4_t y = vpselq_s32(vnegq_s32(q), q, vcmpltq_n_s32(acc, 0));
            vstrbq_p_s32(out + j, vminq_s32(vmaxq_s32(vaddq_n_s32(y, zp), vmin), vmax), pred);
        }
        return;
    }
    for (int32_t j = 0; j < nc; ++j) {
        out[j] = mcu_avg_pool_out(p, tot[j], count, d);
    }
}
#endif

mcu_status_t mcu_avgpool2d_s8_mve(const mcu_pool2d_params_t *params, const int8_t *input, int8_t *output)
{
#if MCU_HAVE_MVE
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
                    const int32_t nc = c - c0 < CHUNK ? c - c0 : CHUNK;
                    int32_t tot[CHUNK];
                    const int8_t *in_c = in_n + c0;
                    if (nc == CHUNK) {
                        window_sums(in_c, in_w, c, ky0, ky1, kx0, kx1, 4, 0, 0, tot);
                    } else {
                        const mve_pred16_t last = vctp16q((uint32_t)(((nc - 1) & 7) + 1));
                        switch ((nc + 7) >> 3) {
                        case 1:
                            window_sums(in_c, in_w, c, ky0, ky1, kx0, kx1, 1, 1, last, tot);
                            break;
                        case 2:
                            window_sums(in_c, in_w, c, ky0, ky1, kx0, kx1, 2, 1, last, tot);
                            break;
                        case 3:
                            window_sums(in_c, in_w, c, ky0, ky1, kx0, kx1, 3, 1, last, tot);
                            break;
                        default:
                            window_sums(in_c, in_w, c, ky0, ky1, kx0, kx1, 4, 1, last, tot);
                            break;
                        }
                    }
                    finish(p, tot, nc, count, d, out + c0);
                }
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)input, (void)output;
    return MCU_ERR_ARG;
#endif
}
