/* Helium (MVE) int8 depthwise convolution, a channel at a time: lanes are 4 output pixels, weights scalars. */

/*  - The lane axis is the longer of the output's rows and columns (a narrow image runs down its columns: only
 *    the strides and the weights' order change).
 *  - Per channel, a ring of (KH - 1) * dilation_h + 1 planar int16 rows of the input, zero point subtracted,
 *    padding 0, each filled once by gather loads (lane stride C); a row's columns split by residue modulo the
 *    stride (phases of lq entries), so every tap of 4 output pixels is one contiguous VLDRH.S32 and one VMLA by
 *    the weight in a general register. Rows outside the input read a row of zeros.
 *  - Requantization by the channel's scalar multiplier and shift (mcu_mve_requantize's sequence), offset,
 *    clamp, scatter store (lane stride C) predicated on the row's last pixels.
 *  - In place (stride 1, output dims == input dims, pad_top <= (KH - 1) * dilation_h): output row y of a channel
 *    is written after every input row it or a later row reads has been copied to the ring.
 */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* A call's geometry in the lane frame (rows, columns: columns are the lane axis). */
typedef struct {
    int32_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    int32_t irs, ics, ors, ocs, wrs, wcs; /* byte strides of a row and a column: input, output, filter */
    int32_t lq, rl, ring;                 /* entries of a phase, of a row (sw * lq), rows of the ring */
    int32_t zo, lo, hi, off;
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
    g.lq = mcu_dwp_phase_entries(p), g.rl = g.sw * g.lq, g.ring = (g.kh - 1) * g.dh + 1;
    g.zo = p->output_offset, g.lo = p->act_min, g.hi = p->act_max, g.off = p->input_offset;
    return g;
}

/* Input row r of a channel (at in) into ring row dst: column j = q * sw + ph at dst[ph * lq + q]; only the
 * columns inside the input are written (the rest stay 0). */
static void fill_row(const dwp_t *g, const int8_t *in, int16_t *dst)
{
    const int32_t sw = g->sw, step = sw * g->ics;
    for (int32_t ph = 0; ph < sw; ++ph) {
        const int32_t q0 = (g->pl - ph + sw - 1) / sw > 0 ? (g->pl - ph + sw - 1) / sw : 0;
        int32_t q1 = (g->iw + g->pl - ph + sw - 1) / sw;
        q1 = q1 < g->lq ? q1 : g->lq;
        const int8_t *src = in + (q0 * sw + ph - g->pl) * g->ics;
        int16_t *d = dst + ph * g->lq + q0;
        if (7 * step < 65536) { /* 8 lanes, 16-bit offsets */
            const uint16x8_t o = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)step);
            for (int32_t n = q1 - q0; n > 0; n -= 8, src += 8 * step, d += 8) {
                const mve_pred16_t pr = vctp16q((uint32_t)n);
                const int16x8_t v = vldrbq_gather_offset_z_s16(src, o, pr);
                vstrhq_p_s16(d, vaddq_n_s16(v, (int16_t)g->off), pr);
            }
        } else {
            const uint32x4_t o = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)step);
            for (int32_t n = q1 - q0; n > 0; n -= 4, src += 4 * step, d += 4) {
                const mve_pred16_t pr = vctp32q((uint32_t)n);
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

/* One output row of a channel: ring rows rp[0..kh), weights w (kh * kw), taps at toff[kx] entries on. KH, KW,
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

/* What dwp_row3 reads (offsets fixed in its assembly). */
typedef struct {
    const int16_t *r0, *r1, *r2;     /* 0, 4, 8: the ring rows of window rows 0, 1, 2 */
    const int32_t *w;                /* 12: the 9 weights */
    int8_t *out;                     /* 16: the staging row (contiguous, 4 pixels a step) */
    int32_t n;                       /* 20: steps (n >= 1) */
    int32_t bias, m, sh, zo, lo, hi; /* 24 .. 44 (sh < 0) */
} dwp_row3_t;
typedef char dwp_row3_layout[offsetof(dwp_row3_t, hi) == 44 ? 1 : -1];

/* A 3x3 window's row of 4-pixel steps, all 9 weights in r4..r12: per window row two loads at immediate offsets
 * (A, B bytes) and one post-incremented (the tap at offset 0), each one VMLA; requantization as requant (shift
 * < 0), contiguous int8 store. 26 instructions per 36 MACs. */
#define DWP_ROW(R, W0, W1, W2, A, B)                                                                             \
    "vldrh.s32 q1, [" R ", #" A "]\n\t"                                                                         \
    "vmla.s32 q0, q1, " W1 "\n\t"                                                                               \
    "vldrh.s32 q1, [" R ", #" B "]\n\t"                                                                         \
    "vmla.s32 q0, q1, " W2 "\n\t"                                                                               \
    "vldrh.s32 q1, [" R "], #8\n\t"                                                                             \
    "vmla.s32 q0, q1, " W0 "\n\t"
#define DWP_ROW3(A, B)                                                                                           \
    "push {r4-r11, lr}\n\t"                                                                                     \
    "vpush {d8-d15}\n\t"                                                                                        \
    "ldr r1, [r0, #24]\n\tvdup.32 q2, r1\n\t"                                                                   \
    "ldr r1, [r0, #28]\n\tvdup.32 q3, r1\n\t"                                                                   \
    "ldr r1, [r0, #32]\n\tvdup.32 q4, r1\n\t"                                                                   \
    "ldr r1, [r0, #36]\n\tvdup.32 q5, r1\n\t"                                                                   \
    "ldr r1, [r0, #40]\n\tvdup.32 q6, r1\n\t"                                                                   \
    "ldr r1, [r0, #44]\n\tvdup.32 q7, r1\n\t"                                                                   \
    "ldr r1, [r0, #12]\n\t"                                                                                     \
    "ldm r1, {r4-r12}\n\t"                                                                                      \
    "ldr r3, [r0, #16]\n\t"                                                                                     \
    "ldr lr, [r0, #20]\n\t"                                                                                     \
    "ldr r1, [r0, #4]\n\t"                                                                                      \
    "ldr r2, [r0, #8]\n\t"                                                                                      \
    "ldr r0, [r0]\n\t"                                                                                          \
    "dls lr, lr\n"                                                                                              \
    "1:\n\t"                                                                                                    \
    "vmov q0, q2\n\t" DWP_ROW("r0", "r4", "r5", "r6", A, B) DWP_ROW("r1", "r7", "r8", "r9", A, B)             \
    DWP_ROW("r2", "r10", "r11", "r12", A, B)                                                                     \
    "vqdmulh.s32 q0, q0, q3\n\t"                                                                                \
    "vrshl.s32 q0, q0, q4\n\t"                                                                                  \
    "vadd.i32 q0, q0, q5\n\t"                                                                                   \
    "vmax.s32 q0, q0, q6\n\t"                                                                                   \
    "vmin.s32 q0, q0, q7\n\t"                                                                                   \
    "vstrb.32 q0, [r3], #4\n\t"                                                                                 \
    "le lr, 1b\n\t"                                                                                             \
    "vpop {d8-d15}\n\t"                                                                                         \
    "pop {r4-r11, pc}\n\t"

/* Stride 1: taps at entries 0, 1, 2. */
__attribute__((naked, noinline)) static void dwp_row3_s1(const dwp_row3_t *a)
{
    (void)a;
    __asm__ volatile(DWP_ROW3("2", "4"));
}

/* Stride 2 (phases of DWP_LQ2 entries): taps at phase 0 entry 0, phase 1 entry 0, phase 0 entry 1. */
__attribute__((naked, noinline)) static void dwp_row3_s2(const dwp_row3_t *a)
{
    (void)a;
    __asm__ volatile(DWP_ROW3("128", "2"));
}
#undef DWP_ROW3
#undef DWP_ROW

/* The staging row (ow pixels) to the output at lane stride ocs. */
static void scatter_row(const dwp_t *g, const int8_t *stage, int8_t *out)
{
    if (7 * g->ocs < 65536) {
        const uint16x8_t o = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)g->ocs);
        for (int32_t x = 0; x < g->ow; x += 8, out += 8 * g->ocs) {
            vstrbq_scatter_offset_p_s16(out, o, vldrbq_s16(stage + x), vctp16q((uint32_t)(g->ow - x)));
        }
        return;
    }
    const uint32x4_t o = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)g->ocs);
    for (int32_t x = 0; x < g->ow; x += 4, out += 4 * g->ocs) {
        vstrbq_scatter_offset_p_s32(out, o, vldrbq_s32(stage + x), vctp32q((uint32_t)(g->ow - x)));
    }
}

/* One output row in C (rp: its window's ring rows). */
static void row_c(const dwp_t *g, const int16_t *const *rp, const int32_t *w, const int32_t *toff, int32_t bias,
                  int32_t m, int32_t sh, int8_t *out)
{
    const int k = g->kh == g->kw && g->dw == 1 ? g->kw : 0;
    if (k == 5 && g->sw == 1) {
        out_row(g, rp, w, toff, bias, m, sh, out, 5, 5, 1, 1);
    } else if (k == 5 && g->sw == 2) {
        out_row(g, rp, w, toff, bias, m, sh, out, 5, 5, 2, 1);
    } else if (k == 7 && g->sw == 1) {
        out_row(g, rp, w, toff, bias, m, sh, out, 7, 7, 1, 1);
    } else if (k == 7 && g->sw == 2) {
        out_row(g, rp, w, toff, bias, m, sh, out, 7, 7, 2, 1);
    } else {
        out_row(g, rp, w, toff, bias, m, sh, out, 0, 0, 0, 0);
    }
}

/* Every output row of one channel (input, output and filter at the channel). */
static void channel(const dwp_t *g, const int8_t *in, const int8_t *filter, int32_t bias, int32_t m, int32_t sh,
                    int16_t *ring, const int16_t *zero, const int32_t *toff, int8_t *stage, int8_t *out)
{
    int32_t w[MCU_DWP_MAX_TAPS];
    for (int32_t i = 0, t = 0; i < g->kh; ++i) {
        for (int32_t j = 0; j < g->kw; ++j) {
            w[t++] = filter[i * g->wrs + j * g->wcs];
        }
    }
    const int fast = sh < 0 && g->kh == 3 && g->kw == 3 && g->dw == 1 &&
                     (g->sw == 1 || (g->sw == 2 && g->lq == MCU_DWP_LQ2));
    dwp_row3_t a = {0, 0, 0, w, stage, (g->ow + 3) / 4, bias, m, sh, g->zo, g->lo, g->hi};
    const int16_t *rp[MCU_DWP_MAX_K];
    int32_t next = 0; /* the next input row to copy */
    for (int32_t y = 0; y < g->oh; ++y, out += g->ors) {
        const int32_t top = y * g->sh - g->pt, last = top + (g->kh - 1) * g->dh;
        next = next > top ? next : top; /* rows a stride skips are never copied */
        for (; next <= last && next < g->ih; ++next) {
            fill_row(g, in + next * g->irs, ring + (next % g->ring) * g->rl);
        }
        for (int32_t i = 0; i < g->kh; ++i) {
            const int32_t r = top + i * g->dh;
            rp[i] = r >= 0 && r < g->ih ? ring + (r % g->ring) * g->rl : zero;
        }
        if (!fast) {
            row_c(g, rp, w, toff, bias, m, sh, out);
            continue;
        }
        a.r0 = rp[0], a.r1 = rp[1], a.r2 = rp[2];
        if (g->sw == 1) {
            dwp_row3_s1(&a);
        } else {
            dwp_row3_s2(&a);
        }
        scatter_row(g, stage, out);
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
        p->filter.h * p->filter.w > MCU_DWP_MAX_TAPS) {
        return MCU_ERR_SHAPE;
    }
    if (mcu_quant_check(quant, c) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const dwp_t g = frame(p);
    int16_t *zero = (int16_t *)(void *)scratch, *ring = zero + g.rl;
    int8_t *stage = (int8_t *)(ring + g.ring * g.rl);
    mcu_fill_s8(scratch, 0, mcu_dwconv2d_s8_mve_planar_scratch_bytes(p));
    int32_t toff[MCU_DWP_MAX_K];
    for (int32_t j = 0; j < g.kw; ++j) {
        toff[j] = ((j * g.dw) % g.sw) * g.lq + (j * g.dw) / g.sw;
    }
    const int32_t in_n = p->input.h * p->input.w * c, out_n = p->output.h * p->output.w * c;
    for (int32_t n = 0; n < p->output.n; ++n) {
        for (int32_t ch = 0; ch < c; ++ch) {
            channel(&g, input + n * in_n + ch, filter + ch, bias != NULL ? bias[ch] : 0, quant->multiplier[ch],
                    quant->shift[ch], ring, zero, toff, stage, output + n * out_n + ch);
        }
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)scratch, (void)output;
    return MCU_ERR_ARG;
#endif
}
