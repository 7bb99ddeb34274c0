/* Helium (MVE) int8 depthwise convolution, a channel at a time: lanes are 4 output pixels, weights scalars. */

/*  - The lane axis is the longer of the output's rows and columns (a narrow image runs down its columns: only
 *    the strides and the weights' order change).
 *  - Per channel, bands of output rows (mcu_dwp_band_rows): the band's input rows as planar int16 rows, zero
 *    point subtracted, padding 0, filled by gather loads (lane stride C), the rows it shares with the band
 *    before moved up rather than read again; a row's columns split by residue modulo the stride (phases of lq
 *    entries), so every tap of 4 output pixels is one contiguous VLDRH.S32 and one VMLA by the weight in a
 *    general register.
 *  - Requantization by the channel's scalar multiplier and shift (mcu_mve_requantize's sequence), offset,
 *    clamp. A 3x3 window (every row of a band in one assembly block) stores to a staging row, then scattered
 *    (lane stride C); other windows in C, scattered directly.
 *  - In place (output == input: stride 1, output dims == input dims): a band's output rows are written after
 *    every input row it or a later band reads is in the plane (rows shared with the next band move with it).
 */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_dwp_mve.h"
#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* A call's geometry in the lane frame (rows, columns: columns are the lane axis). */
typedef struct {
    int32_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    int32_t irs, ics, ors, ocs, wrs, wcs; /* byte strides of a row and a column: input, output, filter */
    int32_t lq, rl, span, band;           /* entries of a phase, of a row (sw * lq); window rows; band rows */
    int32_t zo, lo, hi, off;
    int32_t fn[MCU_DWP_MAX_S], fsrc[MCU_DWP_MAX_S], fdst[MCU_DWP_MAX_S]; /* per phase: columns to fill, where */
} dwp_t;

static dwp_t frame(const mcu_conv2d_params_t *p)
{
    const int32_t c = p->input.c, swap = p->output.w < p->output.h;
    dwp_t g;
    g.ih = swap ? p->input.w : p->input.h, g.iw = swap ? p->input.h : p->input.w;
    g.oh = swap ? p->output.w : p->output.h, g.ow = swap ? p->output.h : p->output.w;
    g.kh = swap ? p->filter.w : p->filter.h, g.kw = swap ? p->filter.h : p->filter.w;
    g.sh = swap ? p->stride_w : p->stride_h, g.sw = swap ? p->stride_h : p->stride_w;
    g.dh = swap ? p->dilation_w : p->dilation_h, g.dw = swap ? p->dilation_h : p->dilation_w;
    g.pt = swap ? p->pad_left : p->pad_top, g.pl = swap ? p->pad_top : p->pad_left;
    g.irs = swap ? c : p->input.w * c, g.ics = swap ? p->input.w * c : c;
    g.ors = swap ? c : p->output.w * c, g.ocs = swap ? p->output.w * c : c;
    g.wrs = swap ? c : p->filter.w * c, g.wcs = swap ? p->filter.w * c : c;
    g.lq = mcu_dwp_phase_entries(p), g.rl = g.sw * g.lq, g.span = (g.kh - 1) * g.dh + 1;
    g.band = mcu_dwp_band_rows(p);
    g.zo = p->output_offset, g.lo = p->act_min, g.hi = p->act_max, g.off = p->input_offset;
    for (int32_t ph = 0; ph < g.sw; ++ph) { /* columns j = q * sw + ph inside the input: q in [q0, q1) */
        const int32_t q0 = (g.pl - ph + g.sw - 1) / g.sw > 0 ? (g.pl - ph + g.sw - 1) / g.sw : 0;
        const int32_t q1 = (g.iw + g.pl - ph + g.sw - 1) / g.sw;
        g.fn[ph] = (q1 < g.lq ? q1 : g.lq) - q0;
        g.fn[ph] = g.fn[ph] > 0 ? g.fn[ph] : 0;
        g.fsrc[ph] = (q0 * g.sw + ph - g.pl) * g.ics, g.fdst[ph] = ph * g.lq + q0;
    }
    return g;
}

/* rows input rows of a channel (from in, irs bytes apart) into plane rows from dst on: column j = q * sw + ph at
 * [ph * lq + q]; only the columns inside the input are written (the rest stay 0). */
static void fill_rows(const dwp_t *g, const int8_t *in, int16_t *dst, int32_t rows)
{
    const int32_t sw = g->sw, step = sw * g->ics;
    const uint16x8_t o16 = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)step);
    for (int32_t ph = 0; ph < sw; ++ph) {
        const int32_t n = g->fn[ph], it = (n + 7) / 8;
        if (7 * step < 65536) { /* 8 lanes, 16-bit offsets */
            gather16(in + g->fsrc[ph], dst + g->fdst[ph], n, rows, o16, 8 * step, g->off, g->irs - 8 * it * step,
                     2 * g->rl - 16 * it);
            continue;
        }
        const uint32x4_t o = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)step);
        for (int32_t r = 0; r < rows; ++r) {
            const int8_t *src = in + r * g->irs + g->fsrc[ph];
            int16_t *d = dst + r * g->rl + g->fdst[ph];
            for (int32_t k = n; k > 0; k -= 4, src += 4 * step, d += 4) {
                const mve_pred16_t pr = vctp32q((uint32_t)k);
                const int32x4_t v = vldrbq_gather_offset_z_s32(src, o, pr);
                vstrhq_p_s32(d, vaddq_n_s32(v, g->off), pr);
            }
        }
    }
}

/* mcu_requantize of 4 lanes by one channel's multiplier m and shift sh, offset, clamp. */
MCU_INLINE int32x4_t requant(int32x4_t a, int32_t m, int32_t sh, const dwp_t *g)
{
    a = sh < 0 ? vrshlq_n_s32(vqdmulhq_n_s32(a, m), sh) : vqrdmulhq_n_s32(vqshlq_r_s32(a, sh), m);
    a = vaddq_n_s32(a, g->zo);
    return vminq_s32(vmaxq_s32(a, vdupq_n_s32(g->lo)), vdupq_n_s32(g->hi));
}

/* One output row of a channel: plane rows rp[0..kh), weights w (kh * kw), taps at toff[kx] entries on. KH, KW,
 * SW, DW: compile-time where nonzero (the common windows), else g's. */
MCU_INLINE void out_row(const dwp_t *g, const int16_t *const *rp, const int32_t *w, const int32_t *toff,
                        int32_t bias, int32_t m, int32_t sh, int8_t *out, const int KH, const int KW, const int SW,
                        const int DW)
{
    const int32_t kh = KH ? KH : g->kh, kw = KW ? KW : g->kw, lq = g->lq;
    const uint32x4_t oo = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)g->ocs);
    for (int32_t x = 0; x < g->ow; x += 4, out += 4 * g->ocs) {
        int32x4_t a = vdupq_n_s32(bias);
#pragma GCC unroll 7
        for (int32_t i = 0; i < kh; ++i) {
            const int16_t *r = rp[i] + x;
#pragma GCC unroll 7
            for (int32_t j = 0; j < kw; ++j) {
                const int32_t t = SW ? ((j * DW) % SW) * lq + (j * DW) / SW : toff[j];
                a = vmlaq_n_s32(a, vldrhq_s32(r + t), w[i * kw + j]);
            }
        }
        vstrbq_scatter_offset_p_s32(out, oo, requant(a, m, sh, g), vctp32q((uint32_t)(g->ow - x)));
    }
}

/* rows staging rows (ow pixels, pitch bytes apart) to output rows (ors apart) at lane stride ocs: 8 a scatter
 * (16-bit offsets), tail-predicated. */
static void scatter_rows(const dwp_t *g, const int8_t *stage, int32_t pitch, int8_t *out, int32_t rows)
{
    const int32_t it = (g->ow + 7) / 8;
    if (7 * g->ocs < 65536) {
        const uint16x8_t o = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)g->ocs);
        scatter16(stage, out, g->ow, rows, o, 8 * g->ocs, pitch - 8 * it, g->ors - 8 * it * g->ocs);
        return;
    }
    const uint32x4_t o = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)g->ocs);
    for (int32_t r = 0; r < rows; ++r, stage += pitch, out += g->ors) {
        int8_t *q = out;
        for (int32_t x = 0; x < g->ow; x += 4, q += 4 * g->ocs) {
            vstrbq_scatter_offset_p_s32(q, o, vldrbq_s32(stage + x), vctp32q((uint32_t)(g->ow - x)));
        }
    }
}

/* One output row in C (rp: its window's plane rows). */
static void row_c(const dwp_t *g, const int16_t *const *rp, const int32_t *w, const int32_t *toff, int32_t bias,
                  int32_t m, int32_t sh, int8_t *out)
{
    if (g->kh == 3 && g->kw == 3 && g->sw == 1 && g->dw == 1) { /* the picked geometry's channels with a shift >= 0 */
        out_row(g, rp, w, toff, bias, m, sh, out, 3, 3, 1, 1);
    } else {
        out_row(g, rp, w, toff, bias, m, sh, out, 0, 0, 0, 0);
    }
}

/* Plane rows [from, to) of a band whose row 0 is input row top: the input's rows filled, others zero (rows that
 * may hold data, bit i of *dirty, rows past 64 always). */
static void band_rows(const dwp_t *g, const int8_t *in, int16_t *plane, int32_t top, int32_t from, int32_t to,
                      uint64_t *dirty)
{
    int32_t a = -top > from ? -top : from, e = g->ih - top < to ? g->ih - top : to; /* inside: [a, e) */
    e = e > a ? e : a;
    for (int32_t i = from; i < to; i = i + 1 == a ? e : i + 1) {
        if (i >= a && i < e) {
            continue;
        }
        if (i >= 64 || (*dirty >> i) & 1u) {
            mcu_fill_s8((int8_t *)(void *)(plane + i * g->rl), 0, 2 * g->rl);
            *dirty &= i < 64 ? ~((uint64_t)1 << i) : ~(uint64_t)0;
        }
    }
    if (e > a) {
        fill_rows(g, in + (top + a) * g->irs, plane + a * g->rl, e - a);
        *dirty |= (e < 64 ? ((uint64_t)1 << e) - 1 : ~(uint64_t)0) & (a < 64 ? ~(((uint64_t)1 << a) - 1) : 0);
    }
}

/* Rows [src, src + n) of the plane to rows [0, n) (src > 0: upwards, so overlap is safe); the dirty bits too. */
static void move_rows(const dwp_t *g, int16_t *plane, int32_t src, int32_t n, uint64_t *dirty)
{
    const int16_t *from = plane + src * g->rl;
    int16x8_t v;
    __asm__ volatile("wlstp.16 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vldrh.16 %q[v], [%[from]], #16\n\t"
                     "vstrh.16 %q[v], [%[to]], #16\n\t"
                     "letp lr, 1b\n"
                     "2:\n"
                     : [from] "+r"(from), [to] "+r"(plane), [v] "=&w"(v)
                     : [n] "r"(n * g->rl)
                     : "lr", "memory");
    const uint64_t low = n < 64 ? ((uint64_t)1 << n) - 1 : ~(uint64_t)0; /* rows [0, n) now rows [src, src + n)'s */
    *dirty = src < 64 ? ((*dirty >> src) & low) | (*dirty & ~low) : ~(uint64_t)0;
}

/* The output rows [y0, y0 + nb) of a band from its plane (in C, or 3x3 in assembly through the staging rows:
 * in pairs where the phases have 32 or 64 entries at stride 1, else row by row). */
static void band_out(const dwp_t *g, const int16_t *plane, const int8_t *f, const int32_t *w, const int32_t *toff,
                     int32_t bias, int32_t m, int32_t sh, int32_t nb, int8_t *stage, int8_t *out)
{
    const int32_t n = (g->ow + 3) / 4, rs = g->dh * g->rl;
    if (!(sh < 0 && g->kh == 3 && g->kw == 3 && g->dw == 1 && (g->sw == 1 || g->lq == MCU_DWP_LQ2))) {
        for (int32_t y = 0; y < nb; ++y) {
            const int16_t *rp[MCU_DWP_MAX_K];
            for (int32_t i = 0; i < g->kh; ++i) {
                rp[i] = plane + (y * g->sh + i * g->dh) * g->rl;
            }
            row_c(g, rp, w, toff, bias, m, sh, out + y * g->ors);
        }
        return;
    }
    if (g->sw == 1 && g->sh == 1 && g->dh == 1 && (g->lq == 32 || g->lq == 64) && nb >= 2) {
        const int32_t pitch = g->lq; /* mcu_dwp_stage_pitch */
        const dwp_row3_t a = {plane - 4, plane + 2 * g->rl - 4, 0, w, stage, n, bias, m, sh, g->zo, g->lo, g->hi,
                              2 * 2 * g->rl - 8 * n, nb / 2, 2 * pitch - 4 * n, nb & 1, f, g->wcs, g->wrs};
        if (g->lq == 32) {
            dwp_pairs3_64(&a);
        } else {
            dwp_pairs3_128(&a);
        }
        scatter_rows(g, stage, pitch, out, nb);
        return;
    }
    const dwp_row3_t a = {plane, plane + rs, plane + 2 * rs, w, stage, n, bias, m, sh, g->zo, g->lo, g->hi,
                          2 * g->sh * g->rl - 8 * n, nb, 0, 0, f, g->wcs, g->wrs};
    if (g->sw == 1) {
        dwp_row3_s1(&a);
    } else {
        dwp_row3_s2(&a);
    }
    scatter_rows(g, stage, 4 * n, out, nb);
}

/* Every output row of one channel (input, output and filter at the channel), band by band. (Not inlined: its
 * tables stay off the fast path's stack frame.) */
__attribute__((noinline)) static void planar_channel(const dwp_t *g, const int8_t *in, const int8_t *filter,
                                              int32_t bias, int32_t m, int32_t sh, int16_t *plane,
                                              const int32_t *toff, int8_t *stage, uint64_t *dirty, int8_t *out)
{
    int32_t w[MCU_DWP_MAX_TAPS];
    for (int32_t i = 0, t = 0; i < g->kh; ++i) {
        for (int32_t j = 0; j < g->kw; ++j) {
            w[t++] = filter[i * g->wrs + j * g->wcs];
        }
    }
    int32_t have = 0;                                        /* plane rows of the band before */
    for (int32_t y0 = 0; y0 < g->oh; y0 += g->band) {
        const int32_t nb = g->oh - y0 < g->band ? g->oh - y0 : g->band, need = (nb - 1) * g->sh + g->span;
        const int32_t keep = have - g->band * g->sh; /* its last rows are this band's first */
        if (keep > 0) {
            move_rows(g, plane, g->band * g->sh, keep, dirty);
        }
        band_rows(g, in, plane, y0 * g->sh - g->pt, keep > 0 ? keep : 0, need, dirty);
        band_out(g, plane, filter, w, toff, bias, m, sh, nb, stage, out + y0 * g->ors);
        have = need;
    }
}

/* Whether every channel runs the fast way (channels_one_band): one band, a 3x3 window in pairs at stride 1,
 * 16-bit gather and scatter offsets. */
static int one_band(const dwp_t *g)
{
    return g->band >= g->oh && g->oh >= 2 && g->kh == 3 && g->kw == 3 && g->sw == 1 && g->sh == 1 && g->dw == 1 &&
           g->dh == 1 && (g->lq == 32 || g->lq == 64) && 7 * g->ics < 65536 && 7 * g->ocs < 65536;
}

/* Every channel of one batch item on a one_band geometry: the plane's rows inside the input are the same for
 * every channel (the others stay 0), so per channel only its weights, fill, rows (in pairs, a last odd one alone) and scatter. A
 * channel with a shift >= 0 goes through planar_channel(). */
__attribute__((noinline)) static void channels_one_band(const dwp_t *g, const mcu_per_channel_quant_t *quant,
                                                        const int8_t *in, const int8_t *filter, const int32_t *bias,
                                                        int32_t c, int16_t *plane, const int32_t *toff,
                                                        int8_t *stage, uint64_t *dirty, int8_t *out)
{
    const int32_t a = g->pt, e = g->ih + g->pt < g->span + g->oh - 1 ? g->ih + g->pt : g->span + g->oh - 1;
    const int32_t n = (g->ow + 3) / 4, it = (g->fn[0] + 7) / 8, pitch = g->lq;
    const uint16x8_t o16 = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)g->ics);
    const uint16x8_t so = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)g->ocs);
    const int32_t sit = (g->ow + 7) / 8, sadv = pitch - 8 * sit, oadv = g->ors - 8 * sit * g->ocs;
    dwp_row3_t pairs = {plane - 4, plane + 2 * g->rl - 4, 0, NULL, stage, n, 0, 0, 0, g->zo, g->lo, g->hi,
                        4 * g->rl - 8 * n, g->oh / 2, 2 * pitch - 4 * n, g->oh & 1, filter, g->wcs, g->wrs};
    *dirty |= e > a ? (((uint64_t)1 << e) - 1) & ~(((uint64_t)1 << a) - 1) : 0; /* e <= 64: one band's rows */
    for (int32_t ch = 0; ch < c; ++ch, ++in, ++out) {
        const int32_t m = quant->multiplier[ch], sh = quant->shift[ch], b = bias != NULL ? bias[ch] : 0;
        if (sh >= 0) {
            planar_channel(g, in, filter + ch, b, m, sh, plane, toff, stage, dirty, out);
            continue;
        }
        if (e > a) {
            gather16(in + g->fsrc[0], plane + a * g->rl + g->fdst[0], g->fn[0], e - a, o16, 8 * g->ics, g->off,
                     g->irs - 8 * it * g->ics, 2 * g->rl - 16 * it);
        }
        pairs.bias = b, pairs.m = m, pairs.sh = sh, pairs.f = filter + ch;
        if (g->lq == 32) {
            dwp_pairs3_64(&pairs);
        } else {
            dwp_pairs3_128(&pairs);
        }
        scatter16(stage, out, g->ow, g->oh, so, 8 * g->ocs, sadv, oadv);
    }
}
#endif

mcu_status_t mcu_dwconv2d_s8_mve_planar(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                                        int8_t *scratch, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t c = p->input.c;
    if (p->output.c != c || p->filter.h > MCU_DWP_MAX_K || p->filter.w > MCU_DWP_MAX_K ||
        p->stride_h > MCU_DWP_MAX_S || p->stride_w > MCU_DWP_MAX_S) {
        return MCU_ERR_SHAPE;
    }
    if (mcu_quant_check(quant, c) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const dwp_t g = frame(p);
    int16_t *plane = (int16_t *)(void *)scratch;
    int8_t *stage = (int8_t *)(plane + ((g.band - 1) * g.sh + g.span) * g.rl);
    mcu_fill_s8(scratch, 0, mcu_dwconv2d_s8_mve_planar_scratch_bytes(p));
    int32_t toff[MCU_DWP_MAX_K];
    uint64_t dirty = 0; /* plane rows that may hold input (the scratch starts zero) */
    for (int32_t j = 0; j < g.kw; ++j) {
        toff[j] = ((j * g.dw) % g.sw) * g.lq + (j * g.dw) / g.sw;
    }
    const int32_t in_n = p->input.h * p->input.w * c, out_n = p->output.h * p->output.w * c;
    for (int32_t n = 0; n < p->output.n; ++n) {
        if (one_band(&g)) {
            channels_one_band(&g, quant, input + n * in_n, filter, bias, c, plane, toff, stage, &dirty,
                              output + n * out_n);
            continue;
        }
        for (int32_t ch = 0; ch < c; ++ch) {
            planar_channel(&g, input + n * in_n + ch, filter + ch, bias != NULL ? bias[ch] : 0, quant->multiplier[ch],
                    quant->shift[ch], plane, toff, stage, &dirty, output + n * out_n + ch);
        }
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)scratch, (void)output;
    return MCU_ERR_ARG;
#endif
}
