/* The Helium depthwise driver shared by mcu_dwconv2d_s8_mve and mcu_dwconv2d_3x3_s8_mve (mcu/mcu_dw_mve.h). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_dw_mve.h"
#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
#define DW_TABLE 512 /* column pointers on the stack (geometry.DW_MVE_TABLE) */
#define DW_PASSES 16 /* 16-channel passes of a pixel run together (pixelwise) */

/* Output pixels [0, npx) of a chunk (pixel x's taps from t + idx(x * s) on), channels ch..ch+15 (g2) or
 * ch..ch+7, the last ones predicated by pr (tail). */
MCU_INLINE void pass(const dwk_t *k, const uint32_t *t, int32_t npx, const int8_t *w, const int32_t *bias,
                     const int32_t *m, const int32_t *sh, mve_pred16_t pr, const int g2, const int tail,
                     const int down, int8_t *out)
{
    const int32_t rowstep = 4 * (k->wt - k->kw), s = k->s, d = k->d;
    int32_t res = 0, q = 0; /* x * s = q * d + res */
    for (int32_t x = 0; x < npx; ++x, out += k->c) {
        mcu_dw_mve_pixel(k, t + res * k->wq + q, rowstep, w, bias, m, sh, pr, g2, tail, down, out);
        for (res += s; res >= d; res -= d) {
            ++q;
        }
    }
}

/* n table entries first, first + step, ... */
static void fill_run(uint32_t *t, int32_t n, uint32_t first, uint32_t step)
{
    uint32x4_t v = vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0, 1), step), first);
    for (int32_t i = 0; i < n; i += 4, v = vaddq_n_u32(v, 4 * step)) {
        vstrwq_p_u32(t + i, v, vctp32q((uint32_t)(n - i)));
    }
}

/* The table of a chunk of output row base_y's pixels whose first window starts at input column j0 and whose
 * windows span wp columns: window row r's column j at t[r * wt + (j % d) * wq + j / d]. */
static void fill_table(uint32_t *t, const dwk_t *k, const mcu_conv2d_params_t *p, const int8_t *in_n,
                       int32_t base_y, int32_t j0, int32_t wp)
{
    const int32_t in_h = p->input.h, in_w = p->input.w, c = k->c, d = k->d;
    const uint32_t pad = (uint32_t)(uintptr_t)k->pad;
    const int32_t lo = j0 < 0 ? -j0 : 0, hi = in_w - j0 < wp ? in_w - j0 : wp; /* columns [lo, hi) inside */
    for (int32_t r = 0; r < k->kh; ++r, t += k->wt) {
        const int32_t iy = base_y + r * p->dilation_h;
        const int row_ok = iy >= 0 && iy < in_h;
        if (d == 1) { /* padding, inside, padding */
            const int32_t a = row_ok && lo < wp ? lo : wp, e = row_ok && hi > a ? hi : a;
            fill_run(t, a, pad, 0);
            fill_run(t + a, e - a, (uint32_t)(uintptr_t)(in_n + (iy * in_w + j0 + a) * c), (uint32_t)c);
            fill_run(t + e, wp - e, pad, 0);
            continue;
        }
        for (int32_t res = 0; res < d && res < wp; ++res) { /* columns j = q d + res at t[res wq + q] */
            const int32_t nq = (wp - res + d - 1) / d;
            int32_t q0 = lo > res ? (lo - res + d - 1) / d : 0, q1 = hi > res ? (hi - res + d - 1) / d : 0;
            q1 = row_ok ? (q1 < nq ? q1 : nq) : 0;
            q0 = q0 < q1 ? q0 : q1;
            uint32_t *tr = t + res * k->wq;
            fill_run(tr, q0, pad, 0);
            fill_run(tr + q0, q1 - q0, (uint32_t)(uintptr_t)(in_n + (iy * in_w + j0 + q0 * d + res) * c),
                     (uint32_t)(d * c));
            fill_run(tr + q1, nq - q1, pad, 0);
        }
    }
}

/* Every pass over a chunk: 16 channels at a time, then 8, the last predicated. */
static void chunk(const dwk_t *k, uint32_t *t, int32_t npx, const mcu_per_channel_quant_t *quant,
                  const int8_t *filter, const int32_t *bias, const int down, int8_t *out)
{
    const int32_t c = k->c, taps = k->kh * k->kw, entries = k->kh * k->wt;
    mcu_dw_run_t r = {filter, filter + 8 * taps, bias, quant->multiplier, quant->shift, k->zo, k->lo, k->hi,
                      k->kh, 4 * (k->wt - k->kw), 4 * k->s, c, 0};
    for (int32_t ch = 0; ch < c;) {
        const int32_t left = c - ch, g2 = left > 8, step = g2 ? 16 : 8;
        const int tail = left < step;
        if (!tail && down && k->d == 1 && !g2 && npx > 1) { /* 8 channels: pixels in pairs */
            mcu_dw_mve_run_pairs8(&r, t, npx >> 1, k->kw, out + ch);
            if (npx & 1) {
                mcu_dw_mve_run(&r, t + (npx - 1) * k->s, 1, k->kw, 0, out + ch + (npx - 1) * c);
            }
        } else if (!tail && down && k->d == 1) { /* the common case, and the others */
            mcu_dw_mve_run(&r, t, npx, k->kw, g2, out + ch);
        } else {
            const mve_pred16_t pr = vctp16q((uint32_t)(g2 ? left - 8 : left));
            pass(k, t, npx, r.wa, r.bias, r.m, r.sh, pr, g2, tail, down, out + ch);
        }
        ch += step;
        r.wa += step * taps, r.wb += step * taps, r.bias += step, r.m += step, r.sh += step;
        for (int32_t i = 0; i < entries; i += 4) { /* the table moves on to the next pass's channels */
            vstrwq_u32(t + i, vaddq_n_u32(vldrwq_u32(t + i), (uint32_t)step));
        }
    }
}

/* Pixelwise (the 3x3 variant): each pixel finished before the next, from a table of its own. With every shift
 * negative and whole 16-channel passes (at most DW_PASSES), one run takes all of a pixel's passes: its table
 * once per pass, moved on 16 channels each, and the constants of each pass; else chunk() pass by pass.
 * (Not inlined: its 1.6 KB of tables stay off the any-window kernel's stack.) */
__attribute__((noinline)) static void pixels(const dwk_t *k, const uint32_t *t, int32_t npx,
                                             const mcu_per_channel_quant_t *quant, const int8_t *filter,
                                             const int32_t *bias, const int down, int8_t *out)
{
    const int32_t taps = k->kh * k->kw, c = k->c, np = c / 16;
    const int fast = down && (c & 15) == 0 && np <= DW_PASSES;
    dwk_t k1 = *k; /* one pixel: its taps consecutive */
    k1.s = 1, k1.d = 1, k1.wq = k->kw, k1.wt = k->kw;
    mcu_dw_run_t runs[DW_PASSES];
    for (int32_t i = 0; fast && i < np; ++i) {
        const int32_t ch = 16 * i;
        const mcu_dw_run_t r = {filter + ch * taps, filter + (ch + 8) * taps, bias + ch, quant->multiplier + ch,
                                quant->shift + ch, k->zo, k->lo, k->hi, k->kh, 0, 4 * taps, 16,
                                (int32_t)sizeof(mcu_dw_run_t)};
        runs[i] = r;
    }
    for (int32_t x = 0, j = 0; x < npx; ++x, j += k->s, out += c) {
        uint32_t t1[DW_PASSES * 12];
        const uint32_t *src = t + (j % k->d) * k->wq + j / k->d;
        for (int32_t r = 0, i = 0; r < k->kh; ++r, src += k->wt) {
            for (int32_t kx = 0; kx < k->kw; ++kx) {
                t1[i++] = src[kx];
            }
        }
        if (!fast) {
            chunk(&k1, t1, 1, quant, filter, bias, down, out);
            continue;
        }
        for (int32_t i = taps; i < np * taps; ++i) {
            t1[i] = t1[i - taps] + 16u;
        }
        mcu_dw_mve_run(runs, t1, np, k->kw, 1, out);
    }
}

/* One output row: chunks of at most `most` pixels, each with its table; pixelwise: every channel of a pixel
 * before the next (its KH * KW <= 12 entries copied to a table of its own), else pass by pass. */
static void row(const dwk_t *k, const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant,
                const int8_t *in_n, const int8_t *filter, const int32_t *bias, int32_t base_y, int32_t most,
                const int down, const int pixelwise, int8_t *out)
{
    uint32_t t[DW_TABLE + 4];
    for (int32_t xa = 0; xa < p->output.w; xa += most) {
        const int32_t npx = p->output.w - xa < most ? p->output.w - xa : most;
        const int32_t wp = (npx - 1) * k->s + (k->kw - 1) * k->d + 1;
        fill_table(t, k, p, in_n, base_y, xa * k->s - p->pad_left, wp);
        if (!pixelwise || k->c <= 16) {
            chunk(k, t, npx, quant, filter, bias, down, out + xa * k->c);
            continue;
        }
        pixels(k, t, npx, quant, filter, bias, down, out + xa * k->c);
    }
}

mcu_status_t mcu_dw_mve_rows(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant, const int8_t *input,
                             const int8_t *filter, const int32_t *bias, int8_t *scratch, int8_t *output,
                             int pixelwise)
{
    const int32_t c = p->input.c, in_h = p->input.h, in_w = p->input.w, kh = p->filter.h, kw = p->filter.w;
    int down = 1; /* every shift < 0: VQDMULH then a rounding shift is mcu_requantize exactly */
    for (int32_t ch = 0; ch < ((c + 7) & ~7); ++ch) {
        down = down && quant->shift[ch] < 0;
    }
    const int32_t s = p->stride_w, d = p->dilation_w;
    /* the widest chunk whose table fits: npx pixels span (npx - 1) s + (kw - 1) d + 1 columns, rounded up to d */
    int32_t most = p->output.w;
    for (; most > 0; most = most > 8 ? most / 2 : most - 1) {
        const int32_t wp = (most - 1) * s + (kw - 1) * d + 1;
        if (kh * d * ((wp + d - 1) / d) <= DW_TABLE) {
            break;
        }
    }
    if (most == 0 || (pixelwise && kh * kw > 12)) {
        return MCU_ERR_SHAPE;
    }
    int8_t *pad = scratch; /* C bytes: a padded tap reads the zero point (the bias is folded) */
    mcu_fill_s8(pad, (int8_t)(-p->input_offset), c);
    const int32_t wp = (most - 1) * s + (kw - 1) * d + 1, wq = (wp + d - 1) / d;
    const dwk_t k = {pad, c, kh, kw, s, d, wq, d * wq, p->output_offset, p->act_min, p->act_max};
    mcu_dw_rows_t rows = mcu_dw_rows_open(p, input, output, scratch + c); /* in place: a ring of rows */
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, mcu_dw_rows_next(&rows)) {
            row(&k, p, quant, in_n, filter, bias, y * p->stride_h - p->pad_top, most, down, pixelwise,
                mcu_dw_rows_out(&rows));
        }
    }
    mcu_dw_rows_close(&rows);
    return MCU_OK;
}
#endif
