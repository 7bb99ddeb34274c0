/* Inline helpers shared by the optimized kernel variants (*_fast.c, *_dsp.c, *_mve.c); not a public API.
 *
 *  - Argument checks identical to the portable kernels', so every variant fails the same way.
 *  - Prepared requantization records (built at compile time by codegen/passes/select_kernels.py,
 *    `rq_records`): per output channel c, rec[4c..4c+3] = {mult, sh, round_lo, round_hi}.
 *      sh >= 0 ("fast"): out + output_offset = hi32(round + acc * mult) >> sh, where
 *        round = 2^(31+sh) + output_offset * 2^(32+sh). This equals mcu_requantize(acc, mult, shift) +
 *        output_offset exactly for shift = -(sh+1) <= -1: both are one floor of acc * mult + 2^(31+sh) over
 *        2^(32+sh), and the offset is a whole multiple of the divisor.
 *      sh < 0 ("slow", shift >= 0 or a round that does not fit): round_lo holds the original shift and
 *        the kernel calls mcu_requantize.
 *  - DSP (SIMD32) intrinsics through arm_acle.h, with plain C stand-ins when the core lacks them, so a
 *    _dsp kernel computes the same (slowly) anywhere. Helium comes from arm_mve.h only when present.
 *  - The cores of the variants, in order below: window gathering (im2col), the DSP widening GEMM and
 *    depthwise taps (hot loops in inline assembly: LDM/LDRD and fused rotations that GCC does not emit),
 *    the scalar GEMM (two MACs per SMLAL), and the Helium GEMM (3 pixels x 2 channels of VMLADAVA) with
 *    its exact vector requantization.
 */
#ifndef MCU_OPT_H
#define MCU_OPT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
#define MCU_HAVE_DSP 1
#else
#define MCU_HAVE_DSP 0
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
#define MCU_HAVE_MVE 1
#else
#define MCU_HAVE_MVE 0
#endif

#if defined(__GNUC__)
#define MCU_INLINE static inline __attribute__((always_inline))
#else
#define MCU_INLINE static inline
#endif

/* Most K = KH*KW*C_in an im2col variant accepts: its row scratch lives on the stack (see mcu_kernels.h). */
#define MCU_OPT_MAX_K 1024

/* ---- Argument checks (the portable kernels' rules) ------------------------------------------------ */

/* Pointers and scalar parameters of a conv (the shape agreement is checked by the caller). */
MCU_INLINE mcu_status_t mcu_conv_check(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *q,
                                       const void *input, const void *filter, const void *output)
{
    if (p == NULL || q == NULL || q->multiplier == NULL || q->shift == NULL || input == NULL || filter == NULL ||
        output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!mcu_dims_ok(&p->input) || !mcu_dims_ok(&p->filter) || !mcu_dims_ok(&p->output) || p->stride_h < 1 ||
        p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 || p->pad_top < 0 || p->pad_left < 0 ||
        !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    return MCU_OK;
}

/* Add pointers and parameters (as the portable mcu_add_s8 checks them). */
MCU_INLINE mcu_status_t mcu_add_check(const mcu_add_params_t *p, const void *input1, const void *input2,
                                      const void *output)
{
    if (p == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (p->size < 1 || p->left_shift < 0 || p->left_shift > 23 || p->input1_offset < -127 ||
        p->input1_offset > 128 || p->input2_offset < -127 || p->input2_offset > 128 ||
        !mcu_io_offsets_ok(0, p->output_offset, p->act_min, p->act_max) || p->input1_multiplier < 0 ||
        p->input2_multiplier < 0 || p->output_multiplier < 0 || p->input1_shift < -31 || p->input1_shift > 30 ||
        p->input2_shift < -31 || p->input2_shift > 30 || p->output_shift < -31 || p->output_shift > 30) {
        return MCU_ERR_ARG;
    }
    return MCU_OK;
}

/* Conv dims agreement (as the portable mcu_conv2d_s8 checks it). */
MCU_INLINE int mcu_conv_shapes_ok(const mcu_conv2d_params_t *p)
{
    return p->output.n == p->input.n && p->filter.c == p->input.c && p->output.c == p->filter.n;
}

/* A 3x3 depthwise conv with channel multiplier 1. */
MCU_INLINE int mcu_dw3x3_shapes_ok(const mcu_conv2d_params_t *p)
{
    return p->output.n == p->input.n && p->filter.n == 1 && p->filter.c == p->output.c &&
           p->output.c == p->input.c && p->filter.h == 3 && p->filter.w == 3 && p->input.c <= MCU_OPT_MAX_K;
}

/* The 9 taps of a 3x3 window at (base_y, base_x) of image in_n with c channels: each points at its pixel's
 * channel 0, or at pad (c bytes of the value a padded tap must read) when it lies in the padding. */
MCU_INLINE void mcu_dw3x3_taps(const mcu_conv2d_params_t *p, const int8_t *in_n, int32_t base_y, int32_t base_x,
                               const int8_t *pad, const int8_t *tap[9])
{
    const int32_t in_h = p->input.h, in_w = p->input.w, c = p->input.c;
    int32_t col[3];
    for (int32_t kx = 0; kx < 3; ++kx) {
        const int32_t ix = base_x + kx * p->dilation_w;
        col[kx] = ix >= 0 && ix < in_w ? ix * c : -1;
    }
    for (int32_t ky = 0; ky < 3; ++ky) {
        const int32_t iy = base_y + ky * p->dilation_h;
        const int row_ok = iy >= 0 && iy < in_h;
        const int8_t *row = in_n + (row_ok ? iy * in_w * c : 0);
        for (int32_t kx = 0; kx < 3; ++kx) {
            tap[ky * 3 + kx] = row_ok && col[kx] >= 0 ? row + col[kx] : pad;
        }
    }
}

/* FC pointers and scalar parameters. */
MCU_INLINE mcu_status_t mcu_fc_check(const mcu_fc_params_t *p, const mcu_per_channel_quant_t *q, const void *input,
                                     const void *weights, const void *output)
{
    if (p == NULL || q == NULL || q->multiplier == NULL || q->shift == NULL || input == NULL || weights == NULL ||
        output == NULL) {
        return MCU_ERR_ARG;
    }
    if (p->batches < 1 || p->in_features < 1 || p->out_features < 1 ||
        !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    return MCU_OK;
}

/* Per-channel quant in the portable form: multiplier >= 0, shift in [-31, 30]. */
MCU_INLINE mcu_status_t mcu_quant_check(const mcu_per_channel_quant_t *q, int32_t channels)
{
    for (int32_t c = 0; c < channels; ++c) {
        if (q->multiplier[c] < 0 || q->shift[c] < -31 || q->shift[c] > 30) {
            return MCU_ERR_ARG;
        }
    }
    return MCU_OK;
}

/* Prepared records (quant->multiplier): multiplier >= 0, sh <= 30, a slow channel's shift in [-31, 30]. */
MCU_INLINE mcu_status_t mcu_records_check(const int32_t *rec, int32_t channels)
{
    for (int32_t c = 0; c < channels; ++c, rec += 4) {
        if (rec[0] < 0 || rec[1] > 30 || (rec[1] < 0 && (rec[2] < -31 || rec[2] > 30))) {
            return MCU_ERR_ARG;
        }
    }
    return MCU_OK;
}

/* ---- Requantization from prepared records ------------------------------------------------------------ */

/* The record of one multiplier/shift at run time (codegen's rq_records builds them at compile time). */
MCU_INLINE void mcu_rq_record(int32_t mult, int32_t shift, int32_t out_off, int32_t rec[4])
{
    const int32_t e = -shift;
    rec[0] = mult;
    if (e >= 1 && e <= 24) {
        const int64_t round = ((int64_t)1 << (30 + e)) + (int64_t)out_off * ((int64_t)1 << (31 + e));
        rec[1] = e - 1;
        rec[2] = (int32_t)(uint32_t)(uint64_t)round;
        rec[3] = (int32_t)(round >> 32);
    } else {
        rec[1] = -1;
        rec[2] = shift;
        rec[3] = 0;
    }
}

typedef struct {
    int32_t act_min, act_max, output_offset;
    int records_fast; /* every channel's record is fast (sh >= 0) */
    int fast;         /* records_fast and the clamp is the int8 range: requantize, then SSAT */
} mcu_rq_mode_t;

MCU_INLINE mcu_rq_mode_t mcu_rq_mode(const int32_t *rec, int32_t channels, int32_t out_off, int32_t act_min,
                                     int32_t act_max)
{
    mcu_rq_mode_t m = {act_min, act_max, out_off, 1, 0};
    for (int32_t c = 0; c < channels && m.records_fast; ++c) {
        m.records_fast = rec[4 * c + 1] >= 0;
    }
    m.fast = m.records_fast && act_min == MCU_Q7_MIN && act_max == MCU_Q7_MAX;
    return m;
}

MCU_INLINE int32_t mcu_sat8(int32_t x)
{
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
    return __builtin_arm_ssat(x, 8);
#else
    return mcu_clamp_i32(x, MCU_Q7_MIN, MCU_Q7_MAX);
#endif
}

/* hi32(round + acc * mult) >> sh for a fast channel. */
MCU_INLINE int32_t mcu_rq_fast(int32_t acc, const int32_t *rec)
{
    const uint64_t round = ((uint64_t)(uint32_t)rec[3] << 32) | (uint32_t)rec[2];
    const uint64_t v = round + (uint64_t)((int64_t)acc * rec[0]);
    return (int32_t)(uint32_t)(v >> 32) >> rec[1];
}

/* The int8 output of accumulator acc for the channel of record rec. */
MCU_INLINE int8_t mcu_rq_out(int32_t acc, const int32_t *rec, const mcu_rq_mode_t *m, const int fast)
{
    if (fast) {
        return (int8_t)mcu_sat8(mcu_rq_fast(acc, rec));
    }
    int32_t y;
    if (rec[1] >= 0) {
        y = mcu_rq_fast(acc, rec);
    } else {
        y = mcu_add_offset(mcu_requantize(acc, rec[0], rec[2]), m->output_offset);
    }
    return (int8_t)mcu_clamp_i32(y, m->act_min, m->act_max);
}

/* ---- Word access ----------------------------------------------------------------------------------------- */

MCU_INLINE uint32_t mcu_read_u32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The first n (1..3) bytes at p as a little-endian word, the rest zero; never reads past p + n. */
MCU_INLINE uint32_t mcu_read_tail(const int8_t *p, int32_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    uint32_t v = b[0];
    if (n > 1) {
        v |= (uint32_t)b[1] << 8;
    }
    if (n > 2) {
        v |= (uint32_t)b[2] << 16;
    }
    return v;
}

/* An empty asm that claims to change v: keeps GCC from turning a short copy/fill loop into a libc call
 * (newlib-nano's memcpy/memset copy a byte at a time). */
#if defined(__GNUC__)
#define MCU_OPAQUE(v) __asm__("" : "+r"(v))
#else
#define MCU_OPAQUE(v) ((void)0)
#endif

/* dst[0..n) = src[0..n) (no overlap). */
MCU_INLINE void mcu_copy_s8(int8_t *dst, const int8_t *src, int32_t n)
{
#if MCU_HAVE_MVE
    for (; n > 0; n -= 16, src += 16, dst += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
    }
#else
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t v = mcu_read_u32(src + i);
        MCU_OPAQUE(v);
        memcpy(dst + i, &v, sizeof v);
    }
    for (; i < n; ++i) {
        int32_t v = src[i];
        MCU_OPAQUE(v);
        dst[i] = (int8_t)v;
    }
#endif
}

/* dst[0..n) = value. */
MCU_INLINE void mcu_fill_s8(int8_t *dst, int8_t value, int32_t n)
{
#if MCU_HAVE_MVE
    const int8x16_t v = vdupq_n_s8(value);
    for (; n > 0; n -= 16, dst += 16) {
        vstrbq_p_s8(dst, v, vctp8q((uint32_t)n));
    }
#else
    uint32_t v = (uint32_t)(uint8_t)value * 0x01010101u;
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        MCU_OPAQUE(v);
        memcpy(dst + i, &v, sizeof v);
    }
    for (; i < n; ++i) {
        MCU_OPAQUE(v);
        dst[i] = (int8_t)v;
    }
#endif
}

/* dst[0..n) = 0 for an aligned word buffer. */
MCU_INLINE void mcu_zero_u32(uint32_t *dst, int32_t n)
{
    uint32_t zero = 0;
    for (int32_t i = 0; i < n; ++i) {
        MCU_OPAQUE(zero);
        dst[i] = zero;
    }
}

/* The int8 window of output pixel (y, x) of image in_n, taps in OHWI order, padding as zero_point; row ky
 * (kw * c_in values) starts at win + ky * row_stride. */
MCU_INLINE void mcu_im2col_rows_s8(const mcu_conv2d_params_t *p, const int8_t *in_n, int32_t y, int32_t x,
                                   int8_t zero_point, int32_t row_stride, int8_t *win)
{
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, kh = p->filter.h, kw = p->filter.w;
    const int32_t base_y = y * p->stride_h - p->pad_top, base_x = x * p->stride_w - p->pad_left;
    int32_t kx0, kx1;
    mcu_tap_range(base_x, p->dilation_w, kw, in_w, &kx0, &kx1);
    for (int32_t ky = 0; ky < kh; ++ky, win += row_stride) {
        const int32_t iy = base_y + ky * p->dilation_h;
        const int inside = iy >= 0 && iy < in_h;
        const int32_t lo = inside ? kx0 : kw, hi = inside ? kx1 : kw;
        const int32_t first = (iy * in_w + base_x + lo * p->dilation_w) * c_in; /* tap lo, if any */
        mcu_fill_s8(win, zero_point, lo * c_in);
        if (p->dilation_w == 1 && hi > lo) {
            mcu_copy_s8(win + lo * c_in, in_n + first, (hi - lo) * c_in);
        } else {
            for (int32_t kx = lo; kx < hi; ++kx) {
                mcu_copy_s8(win + kx * c_in, in_n + first + (kx - lo) * p->dilation_w * c_in, c_in);
            }
        }
        mcu_fill_s8(win + hi * c_in, zero_point, (kw - hi) * c_in);
    }
}

/* The window packed densely (rows of kw * c_in). */
MCU_INLINE void mcu_im2col_s8(const mcu_conv2d_params_t *p, const int8_t *in_n, int32_t y, int32_t x,
                              int8_t zero_point, int8_t *win)
{
    mcu_im2col_rows_s8(p, in_n, y, x, zero_point, p->filter.w * p->input.c, win);
}

/* ---- SIMD32 (DSP extension) with C stand-ins ------------------------------------------------------------ */

MCU_INLINE uint32_t mcu_ror8(uint32_t x)
{
    return (x >> 8) | (x << 24);
}

#if MCU_HAVE_DSP
#define mcu_sxtab16(a, x) ((uint32_t)__sxtab16((int16x2_t)(a), (int8x4_t)(x)))
#define mcu_smlad(x, y, acc) __smlad((int16x2_t)(x), (int16x2_t)(y), (acc))
#define mcu_smlabb(x, y, acc) __smlabb((int32_t)(x), (int32_t)(y), (acc))
#define mcu_smlatt(x, y, acc) __smlatt((int32_t)(x), (int32_t)(y), (acc))
#else
MCU_INLINE int32_t mcu_lo16(uint32_t x)
{
    return (int32_t)(int16_t)(uint16_t)(x & 0xFFFFu);
}

MCU_INLINE int32_t mcu_hi16(uint32_t x)
{
    return (int32_t)(int16_t)(uint16_t)(x >> 16);
}

/* (lo16(a) + sext(byte0 x), hi16(a) + sext(byte2 x)), each halfword wrapping. */
MCU_INLINE uint32_t mcu_sxtab16(uint32_t a, uint32_t x)
{
    const uint32_t lo = (uint32_t)(mcu_lo16(a) + (int8_t)(uint8_t)(x & 0xFFu)) & 0xFFFFu;
    const uint32_t hi = (uint32_t)(mcu_hi16(a) + (int8_t)(uint8_t)((x >> 16) & 0xFFu)) & 0xFFFFu;
    return lo | (hi << 16);
}

/* acc + lo*lo + hi*hi, wrapping like SMLAD. */
MCU_INLINE int32_t mcu_smlad(uint32_t x, uint32_t y, int32_t acc)
{
    const uint32_t s = (uint32_t)(mcu_lo16(x) * mcu_lo16(y)) + (uint32_t)(mcu_hi16(x) * mcu_hi16(y));
    return (int32_t)((uint32_t)acc + s);
}

MCU_INLINE int32_t mcu_smlabb(uint32_t x, uint32_t y, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcu_lo16(x) * mcu_lo16(y)));
}

MCU_INLINE int32_t mcu_smlatt(uint32_t x, uint32_t y, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcu_hi16(x) * mcu_hi16(y)));
}
#endif

/* GCC's Cortex-M tuning never forms LDM/LDRD or SXTAB16 with rotation, which halve the hot loops' instruction
 * counts (the measure here is instructions); those loops are inline assembly on Thumb-2 cores with the DSP
 * extension, C elsewhere. Local labels 1-5 are used inside each block. */
#if MCU_HAVE_DSP && defined(__GNUC__) && defined(__thumb2__)
#define MCU_DSP_ASM 1
#else
#define MCU_DSP_ASM 0
#endif

/* dst (words) = the n int8 at src plus off, as int16 pairs in SXTB16 order: each group of 4 values
 * x0..x3 becomes the words (x0, x2), (x1, x3). A tail group reads only the bytes that exist; its
 * padding lanes hold off (the packed weights are zero there). src may be unaligned, dst is not. */
MCU_INLINE void mcu_dsp_expand(const int8_t *src, int32_t n, int32_t off, uint32_t *dst)
{
    const uint32_t off2 = ((uint32_t)off & 0xFFFFu) * 0x00010001u;
    int32_t i = 0;
#if MCU_DSP_ASM
    int32_t pairs = n >> 3;
    if (pairs > 0) {
        __asm__ volatile(
            "1:\n\t"
            "ldr r4, [%[src]], #4\n\t"
            "ldr r6, [%[src]], #4\n\t"
            "sxtab16 r5, %[off2], r4, ror #8\n\t"
            "sxtab16 r4, %[off2], r4\n\t"
            "sxtab16 r7, %[off2], r6, ror #8\n\t"
            "sxtab16 r6, %[off2], r6\n\t"
            "stmia %[dst]!, {r4, r5, r6, r7}\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n\t"
            : [src] "+r"(src), [dst] "+r"(dst), [n] "+r"(pairs)
            : [off2] "r"(off2)
            : "r4", "r5", "r6", "r7", "cc", "memory");
        i = n & ~7;
        src -= i;
    }
#endif
    for (; i + 4 <= n; i += 4) {
        const uint32_t v = mcu_read_u32(src + i);
        *dst++ = mcu_sxtab16(off2, v);
        *dst++ = mcu_sxtab16(off2, mcu_ror8(v));
    }
    if (i < n) {
        const uint32_t v = mcu_read_tail(src + i, n - i);
        dst[0] = mcu_sxtab16(off2, v);
        dst[1] = mcu_sxtab16(off2, mcu_ror8(v));
    }
}

/* What one 1x4 block reads besides x and w: the quad's bias and records, and where its 4 outputs go. */
typedef struct {
    const int32_t *bias;  /* 0: the quad's 4 biases (advances in mcu_dsp_gemm_row) */
    const int32_t *rec;   /* 4: its 4 records (advances) */
    int8_t *out;          /* 8: its 4 outputs (advances) */
    int32_t *acc;         /* 12: where mcu_dsp_dot_1x4 leaves the accumulators */
    const uint32_t *x;    /* 16: the widened row */
    int32_t groups;       /* 20: groups of 4 taps in the row */
    int32_t quads;        /* 24: quads left (counts down) */
} mcu_dsp_quad_t;

#if MCU_DSP_ASM
/* Accumulators r8-r11 (channel 0..3), x words r12/lr, weight words r4-r7; %[n] = groups, %[q] the quad. */
#define MCU_DSP_GROUP                                                                                      \
    "ldrd r12, lr, [%[x]], #8\n\t"                                                                         \
    "ldmia %[w]!, {r4, r5, r6, r7}\n\t"                                                                    \
    "smlad r8, r12, r4, r8\n\t"                                                                            \
    "smlad r8, lr, r5, r8\n\t"                                                                             \
    "smlad r9, r12, r6, r9\n\t"                                                                            \
    "smlad r9, lr, r7, r9\n\t"                                                                             \
    "ldmia %[w]!, {r4, r5, r6, r7}\n\t"                                                                    \
    "smlad r10, r12, r4, r10\n\t"                                                                          \
    "smlad r10, lr, r5, r10\n\t"                                                                           \
    "smlad r11, r12, r6, r11\n\t"                                                                          \
    "smlad r11, lr, r7, r11\n\t"
/* %[n] groups: n & 1 and n & 2 first (shifted out into the carry), then 4 at a time. */
#define MCU_DSP_GROUPS                                                                                     \
    "lsrs %[n], %[n], #1\n\t"                                                                              \
    "bcc 2f\n\t" MCU_DSP_GROUP "2:\n\t"                                                                    \
    "lsrs %[n], %[n], #1\n\t"                                                                              \
    "bcc 5f\n\t" MCU_DSP_GROUP MCU_DSP_GROUP "5:\n\t"                                                      \
    "cmp %[n], #0\n\t"                                                                                     \
    "beq 3f\n"                                                                                             \
    "1:\n\t" MCU_DSP_GROUP MCU_DSP_GROUP MCU_DSP_GROUP MCU_DSP_GROUP "subs %[n], %[n], #1\n\t"               \
    "bne 1b\n"                                                                                             \
    "3:\n\t"
#define MCU_DSP_DOT                                                                                        \
    "ldr r12, [%[q]]\n\t"                                                                                  \
    "ldm r12, {r8, r9, r10, r11}\n\t" MCU_DSP_GROUPS
/* out = ssat8(hi32(round + acc * mult) >> sh) with record {mult r4, sh r5, round r6:r7}. */
#define MCU_DSP_RQ(acc)                                                                                    \
    "ldmia r12!, {r4, r5, r6, r7}\n\t"                                                                     \
    "smlal r6, r7, " acc ", r4\n\t"                                                                        \
    "asr r7, r7, r5\n\t"                                                                                   \
    "ssat r7, #8, r7\n\t"                                                                                  \
    "strb r7, [lr], #1\n\t"
/* Every quad of a row: widen-free dot (x reloaded, bias/rec/out advanced through %[q]), then requantize. */
#define MCU_DSP_ROW_RQ                                                                                     \
    "4:\n\t"                                                                                               \
    "ldr %[x], [%[q], #16]\n\t"                                                                            \
    "ldr %[n], [%[q], #20]\n\t"                                                                            \
    "ldr r12, [%[q]]\n\t"                                                                                  \
    "ldm r12!, {r8, r9, r10, r11}\n\t"                                                                     \
    "str r12, [%[q]]\n\t" MCU_DSP_GROUPS                                                                  \
    "ldr r12, [%[q], #4]\n\t"                                                                              \
    "ldr lr, [%[q], #8]\n\t" MCU_DSP_RQ("r8") MCU_DSP_RQ("r9") MCU_DSP_RQ("r10")                           \
        MCU_DSP_RQ("r11") "str r12, [%[q], #4]\n\t"                                                        \
    "str lr, [%[q], #8]\n\t"                                                                               \
    "ldr r12, [%[q], #24]\n\t"                                                                             \
    "subs r12, r12, #1\n\t"                                                                                \
    "str r12, [%[q], #24]\n\t"                                                                             \
    "bne 4b\n\t"
/* The fast-mode requantization of four accumulators, records at %[rec], outputs to %[out] (both advance). */
#define MCU_DSP_RQ1(acc)                                                                                   \
    "ldmia %[rec]!, {r4, r5, r6, r7}\n\t"                                                                  \
    "smlal r6, r7, " acc ", r4\n\t"                                                                        \
    "asr r7, r7, r5\n\t"                                                                                   \
    "ssat r7, #8, r7\n\t"                                                                                  \
    "strb r7, [%[out]], #1\n\t"
#define MCU_DSP_RQ4(a, b, c, d) MCU_DSP_RQ1(a) MCU_DSP_RQ1(b) MCU_DSP_RQ1(c) MCU_DSP_RQ1(d)
#define MCU_DSP_CLOBBERS "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory"
#endif

/* acc[j] = bias[j] + dot(x, w_j), j = 0..3, over `groups` groups of 4 int16 (two words each); w holds the
 * four channels interleaved per group: x words (a, b) meet w words (c0a, c0b, c1a, c1b, c2a, ...).
 * Returns w advanced past the quad. */
MCU_INLINE const int8_t *mcu_dsp_dot_1x4(const uint32_t *x, const int8_t *w, int32_t groups, const int32_t *bias,
                                         int32_t acc[4])
{
#if MCU_DSP_ASM
    const mcu_dsp_quad_t q = {bias, NULL, NULL, acc, x, groups, 1};
    int32_t n = groups;
    __asm__ volatile(MCU_DSP_DOT "ldr r12, [%[q], #12]\n\t"
                                 "stm r12, {r8, r9, r10, r11}\n\t"
                     : [x] "+r"(x), [w] "+r"(w), [n] "+l"(n)
                     : [q] "r"(&q)
                     : MCU_DSP_CLOBBERS);
#else
    int32_t a0 = bias[0], a1 = bias[1], a2 = bias[2], a3 = bias[3];
    for (int32_t g = 0; g < groups; ++g, x += 2, w += 32) {
        a0 = mcu_smlad(x[0], mcu_read_u32(w), a0);
        a0 = mcu_smlad(x[1], mcu_read_u32(w + 4), a0);
        a1 = mcu_smlad(x[0], mcu_read_u32(w + 8), a1);
        a1 = mcu_smlad(x[1], mcu_read_u32(w + 12), a1);
        a2 = mcu_smlad(x[0], mcu_read_u32(w + 16), a2);
        a2 = mcu_smlad(x[1], mcu_read_u32(w + 20), a2);
        a3 = mcu_smlad(x[0], mcu_read_u32(w + 24), a3);
        a3 = mcu_smlad(x[1], mcu_read_u32(w + 28), a3);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
#endif
    return w;
}

/* Depthwise 3x3, 4 channels: acc[j] = bias[j] + sum_t (x_t[j] + off) * w_t[j], where x_t is the word at
 * address base + tab[t] (4 int8 channels) and w holds per tap the int16 words (w0, w2), (w1, w3). tab holds
 * offsets from a window base, or absolute addresses with base = the channel offset. */
MCU_INLINE void mcu_dsp_dw_taps(intptr_t base, const intptr_t tab[9], const int8_t *w, uint32_t off2,
                                const int32_t *bias, int32_t acc[4])
{
    int32_t a0 = bias[0], a1 = bias[1], a2 = bias[2], a3 = bias[3];
    for (int32_t t = 0; t < 9; ++t, w += 8) {
        const uint32_t v = mcu_read_u32((const void *)(base + tab[t]));
        const uint32_t e = mcu_sxtab16(off2, v), o = mcu_sxtab16(off2, mcu_ror8(v));
        const uint32_t we = mcu_read_u32(w), wo = mcu_read_u32(w + 4);
        a0 = mcu_smlabb(e, we, a0);
        a2 = mcu_smlatt(e, we, a2);
        a1 = mcu_smlabb(o, wo, a1);
        a3 = mcu_smlatt(o, wo, a3);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* What mcu_dsp_dw_pixel reads besides the taps: per group of 4 channels the biases, records and outputs
 * (advanced group by group), the group count, and input_offset twice as int16. */
typedef struct {
    const int32_t *bias;
    const int32_t *rec;
    int8_t *out;
    int32_t groups;
    uint32_t off2;
} mcu_dsp_dw_t;

/* All whole groups of one output pixel in fast mode: the taps of mcu_dsp_dw_taps (base advancing 4 channels
 * per group), then the records' requantization, group after group. */
MCU_INLINE void mcu_dsp_dw_pixel(intptr_t base, const intptr_t tab[9], const int8_t *w, mcu_dsp_dw_t *q)
{
#if MCU_DSP_ASM
#define MCU_DSP_DW_TAP(i)                                                                                  \
    "ldr r4, [%[t], #" #i "]\n\t"                                                                          \
    "ldr r4, [%[p], r4]\n\t"                                                                               \
    "ldrd r6, r7, [%[w]], #8\n\t"                                                                          \
    "sxtab16 r5, r12, r4, ror #8\n\t"                                                                      \
    "sxtab16 r4, r12, r4\n\t"                                                                              \
    "smlabb r8, r4, r6, r8\n\t"                                                                            \
    "smlatt r10, r4, r6, r10\n\t"                                                                          \
    "smlabb r9, r5, r7, r9\n\t"                                                                            \
    "smlatt r11, r5, r7, r11\n\t"
    __asm__ volatile("4:\n\t"
                     "ldr r12, [%[q]]\n\t"
                     "ldm r12!, {r8, r9, r10, r11}\n\t"
                     "str r12, [%[q]]\n\t"
                     "ldr r12, [%[q], #16]\n\t" MCU_DSP_DW_TAP(0) MCU_DSP_DW_TAP(4) MCU_DSP_DW_TAP(8)
                         MCU_DSP_DW_TAP(12) MCU_DSP_DW_TAP(16) MCU_DSP_DW_TAP(20) MCU_DSP_DW_TAP(24)
                             MCU_DSP_DW_TAP(28) MCU_DSP_DW_TAP(32) "ldr r12, [%[q], #4]\n\t"
                     "ldr lr, [%[q], #8]\n\t" MCU_DSP_RQ("r8") MCU_DSP_RQ("r9")
                         MCU_DSP_RQ("r10") MCU_DSP_RQ("r11") "str r12, [%[q], #4]\n\t"
                     "str lr, [%[q], #8]\n\t"
                     "adds %[p], %[p], #4\n\t"
                     "ldr r12, [%[q], #12]\n\t"
                     "subs r12, r12, #1\n\t"
                     "str r12, [%[q], #12]\n\t"
                     "bne 4b\n\t"
                     : [p] "+r"(base), [w] "+r"(w)
                     : [t] "r"(tab), [q] "r"(q)
                     : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory");
#undef MCU_DSP_DW_TAP
#else
    for (int32_t g = 0; g < q->groups; ++g, w += 72, base += 4, q->bias += 4, q->rec += 16, q->out += 4) {
        int32_t acc[4];
        mcu_dsp_dw_taps(base, tab, w, q->off2, q->bias, acc);
        for (int32_t j = 0; j < 4; ++j) {
            q->out[j] = (int8_t)mcu_sat8(mcu_rq_fast(acc[j], q->rec + 4 * j));
        }
    }
#endif
}

/* out[j] = requantized acc[j] for j = 0..3 with records rec (4 channels). */
MCU_INLINE void mcu_dsp_rq4(const int32_t acc[4], const int32_t *rec, const mcu_rq_mode_t *m, int8_t *out)
{
#if MCU_DSP_ASM
    if (m->fast) {
        __asm__ volatile("ldm %[acc], {r8, r9, r10, r11}\n\t" MCU_DSP_RQ4("r8", "r9", "r10", "r11")
                         : [rec] "+r"(rec), [out] "+r"(out)
                         : [acc] "r"(acc)
                         : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "memory");
        return;
    }
#endif
    for (int32_t j = 0; j < 4; ++j) {
        out[j] = mcu_rq_out(acc[j], rec + 4 * j, m, 0);
    }
}

/* One output row of a GEMM: out[c] = rq(bias[c] + dot(x, w_c)) for c < c_out, with x an expanded row of
 * `groups` groups, w packed per 4 channels (c_out rounded up to 4, zero rows), bias and records padded
 * likewise. Whole quads in the fast modes run entirely in assembly. */
MCU_INLINE void mcu_dsp_gemm_row(const uint32_t *x, int32_t groups, const int8_t *w, const int32_t *bias,
                                 const int32_t *rec, int32_t c_out, const mcu_rq_mode_t *m, int8_t *out)
{
    int32_t c = 0;
#if MCU_DSP_ASM
    if (m->fast && c_out >= 4) {
        mcu_dsp_quad_t q = {bias, rec, out, NULL, x, groups, c_out / 4};
        const uint32_t *xp = x;
        int32_t n = groups;
        __asm__ volatile(MCU_DSP_ROW_RQ
                         : [x] "+r"(xp), [w] "+r"(w), [n] "+l"(n)
                         : [q] "r"(&q)
                         : MCU_DSP_CLOBBERS);
        c = c_out & ~3;
        bias += c;
        rec += 4 * c;
    }
#endif
    for (; c < c_out; c += 4, bias += 4, rec += 16) {
        int32_t acc[4];
        w = mcu_dsp_dot_1x4(x, w, groups, bias, acc);
        const int32_t n = c_out - c < 4 ? c_out - c : 4;
        for (int32_t j = 0; j < n; ++j) {
            out[c + j] = mcu_rq_out(acc[j], rec + 4 * j, m, 0);
        }
    }
}

/* ---- Scalar GEMM row (the _fast variants) ------------------------------------------------------------ */

/* One SMLAL does two MACs: with W = w_a + w_b * 2^24 (fits int32 for |w| <= 127) the 64-bit sum of x * W is
 * S_a + S_b * 2^24, and S_a comes back as the low 24 bits sign-extended as long as |S_a| < 2^23, which
 * select_kernels checks per channel (128 * sum |w_a| < 2^23) before choosing a _fast GEMM. */
MCU_INLINE void mcu_fast_split(int64_t s, int32_t *a, int32_t *b)
{
    const int32_t lo = (int32_t)((uint32_t)s << 8) >> 8;
    *a = lo;
    *b = (int32_t)((s - lo) >> 24);
}

/* out[c] = rq(bias[c] + sum_k x[k] * w[c][k]) for c < c_out: x an int8 row of k values (the offset is in
 * the folded bias), w packed per 4 channels as [k][2] words (w0 + w1 * 2^24, w2 + w3 * 2^24), c_out padded
 * to 4 (zero rows, padded bias/records). */
MCU_INLINE void mcu_fast_gemm_row(const int8_t *x, int32_t k, const int8_t *w, const int32_t *bias,
                                  const int32_t *rec, int32_t c_out, const mcu_rq_mode_t *m, int8_t *out)
{
    for (int32_t c = 0; c < c_out; c += 4, bias += 4, rec += 16) {
        int64_t s01 = 0, s23 = 0;
        const int8_t *xp = x, *end = x + k;
        for (; xp + 2 <= end; xp += 2, w += 16) {
            const int32_t x0 = xp[0], x1 = xp[1];
            s01 += (int64_t)x0 * (int32_t)mcu_read_u32(w);
            s23 += (int64_t)x0 * (int32_t)mcu_read_u32(w + 4);
            s01 += (int64_t)x1 * (int32_t)mcu_read_u32(w + 8);
            s23 += (int64_t)x1 * (int32_t)mcu_read_u32(w + 12);
        }
        if (xp < end) {
            s01 += (int64_t)xp[0] * (int32_t)mcu_read_u32(w);
            s23 += (int64_t)xp[0] * (int32_t)mcu_read_u32(w + 4);
            w += 8;
        }
        int32_t acc[4];
        mcu_fast_split(s01, &acc[0], &acc[1]);
        mcu_fast_split(s23, &acc[2], &acc[3]);
        for (int32_t j = 0; j < 4; ++j) { /* int32 wrap-around like the folded bias */
            acc[j] = (int32_t)((uint32_t)acc[j] + (uint32_t)bias[j]);
        }
        const int32_t n = c_out - c < 4 ? c_out - c : 4;
        if (m->fast && n == 4) {
            out[c] = mcu_rq_out(acc[0], rec, m, 1);
            out[c + 1] = mcu_rq_out(acc[1], rec + 4, m, 1);
            out[c + 2] = mcu_rq_out(acc[2], rec + 8, m, 1);
            out[c + 3] = mcu_rq_out(acc[3], rec + 12, m, 1);
        } else {
            for (int32_t j = 0; j < n; ++j) {
                out[c + j] = mcu_rq_out(acc[j], rec + 4 * j, m, 0);
            }
        }
    }
}

/* ---- Helium GEMM row (the _mve variants) ------------------------------------------------------------- */

#if MCU_HAVE_MVE
/* mcu_requantize on 4 lanes, exactly. shift >= 0: VQRDMULH of the saturated acc * 2^shift is
 * floor((x * mult + 2^30) / 2^31); shift < 0: VQDMULH is floor(acc * mult / 2^31) (mult >= 0 never saturates)
 * and VRSHL's rounding right shift by e completes floor((acc * mult + 2^(30+e)) / 2^(31+e)). */
MCU_INLINE int32x4_t mcu_mve_requantize(int32x4_t acc, int32x4_t mult, int32x4_t shift)
{
    const int32x4_t zero = vdupq_n_s32(0);
    const int32x4_t up = vqrdmulhq_s32(vqshlq_s32(acc, vmaxq_s32(shift, zero)), mult);
    const int32x4_t down = vrshlq_s32(vqdmulhq_s32(acc, mult), vminq_s32(shift, zero));
    return vpselq_s32(up, down, vcmpgeq_n_s32(shift, 0));
}

/* What a Helium GEMM call needs besides the input rows. */
typedef struct {
    const int8_t *w;       /* per pair of channels, per 16 taps: the two channels' 16 weights (zero padded) */
    const int32_t *bias;   /* padded to an even channel count */
    const int32_t *mult;   /* per pair of channels {m0, m1, m0, m1} (the lanes of two pixels) */
    const int32_t *shift;  /* likewise */
    int32_t c_out;         /* output channels */
    int32_t rows, chunks;  /* an input window is `rows` rows of `chunks` whole 16-tap chunks, */
    int32_t tail;          /* then (one row only) `tail` taps read predicated, 0..15 */
    int32_t zo, act_min, act_max;
    uint32_t offsets[4];   /* output byte offsets of the lanes: {0, 1, c_out, c_out + 1} */
} mcu_mve_gemm_t;

/* The 3x2 block's accumulation (see mcu_mve_gemm_3x2): q points at its state struct, held in r9. */
MCU_INLINE void mcu_mve_rows_3x2(void *state)
{
    register void *q __asm__("r9") = state;
    /* accumulators (p0 c, p0 c+1, p1 c, p1 c+1, p2 c, p2 c+1) in r0, r2, r4, r6, r8, r10 (VMLADAVA needs
     * even registers); row pointers r1, r3, r5; weights r7; row table r12; rows left r11; chunks lr. */
    __asm__ volatile(
        "ldr r12, [r9, #0]\n\t"
        "ldr r11, [r9, #4]\n\t"
        "ldr r7, [r9, #8]\n\t"
        "ldr lr, [r9, #12]\n\t"
        "ldrd r0, r2, [lr]\n\t"
        "ldrd r4, r6, [lr]\n\t"
        "ldrd r8, r10, [lr]\n"
        "3:\n\t"
        "ldm r12!, {r1, r3, r5}\n\t"
        "ldr lr, [r9, #16]\n\t"
        "wls lr, lr, 2f\n"
        "1:\n\t"
        "vldrb.8 q0, [r1], #16\n\t"
        "vldrb.8 q1, [r3], #16\n\t"
        "vldrb.8 q2, [r5], #16\n\t"
        "vldrb.8 q3, [r7], #16\n\t"
        "vmladava.s8 r0, q0, q3\n\t"
        "vmladava.s8 r4, q1, q3\n\t"
        "vmladava.s8 r8, q2, q3\n\t"
        "vldrb.8 q3, [r7], #16\n\t"
        "vmladava.s8 r2, q0, q3\n\t"
        "vmladava.s8 r6, q1, q3\n\t"
        "vmladava.s8 r10, q2, q3\n\t"
        "le lr, 1b\n"
        "2:\n\t"
        "subs r11, r11, #1\n\t"
        "bne 3b\n\t"
        "str r7, [r9, #8]\n\t"
        "ldr r12, [r9, #20]\n\t"
        "stm r12, {r0, r2, r4, r6, r8, r10}\n\t"
        :
        : "r"(q)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r10", "r11", "r12", "lr", "q0", "q1", "q2",
          "q3", "cc", "memory");
}

/* Three output pixels times all channels, two channels at a time: 6 VMLADAVA accumulators per 16 taps
 * against 5 loads. row[r][j] is row r of pixel j's window; pixel j (< npix, 2 or 3; see mcu_mve_gemv for
 * one) goes to out + j * c_out.
 * Not inlined (static, so each kernel file has its own copy): its loops keep their values in registers. */
static __attribute__((noinline, unused)) void mcu_mve_gemm_3x2(const int8_t *const (*row)[3],
                                                              const mcu_mve_gemm_t *g, int32_t npix, int8_t *out)
{
    const int32_t c_out = g->c_out, zo = g->zo, done = g->chunks * 16;
    const uint32x4_t offsets = vldrwq_u32(g->offsets);
    const int32x4_t vmin = vdupq_n_s32(g->act_min), vmax = vdupq_n_s32(g->act_max);
    const mve_pred16_t tail_p = vctp8q((uint32_t)g->tail);
    const uint32_t pix_a = npix > 1 ? 0xFFFFu : 0x00FFu; /* lanes (p0 c, p0 c+1, p1 c, p1 c+1) */
    const uint32_t pix_b = npix > 2 ? 0x00FFu : 0x0000u; /* lanes (p2 c, p2 c+1) */
    struct {
        const int8_t *const (*row)[3];
        int32_t rows;
        const int8_t *w;
        const int32_t *bias;
        int32_t chunks;
        int32_t *acc;
    } s;
    int32_t acc[8] = {0};
    s.row = row;
    s.rows = g->rows;
    s.w = g->w;
    s.bias = g->bias;
    s.chunks = g->chunks;
    s.acc = acc;
    const int32_t *mult = g->mult, *shift = g->shift;
    for (int32_t c = 0; c < c_out; c += 2, s.bias += 2, mult += 4, shift += 4) {
        mcu_mve_rows_3x2(&s);
        if (g->tail) {
            const int8x16_t wa = vldrbq_s8(s.w), wb = vldrbq_s8(s.w + 16);
            for (int32_t j = 0; j < 3; ++j) {
                const int8x16_t v = vldrbq_z_s8(row[0][j] + done, tail_p);
                acc[2 * j] = vmladavaq_s8(acc[2 * j], v, wa);
                acc[2 * j + 1] = vmladavaq_s8(acc[2 * j + 1], v, wb);
            }
            s.w += 32;
        }
        const int32x4_t m = vldrwq_s32(mult), sh = vldrwq_s32(shift);
        int32x4_t ya = mcu_mve_requantize(vldrwq_s32(acc), m, sh);
        int32x4_t yb = mcu_mve_requantize(vldrwq_s32(acc + 4), m, sh);
        ya = vminq_s32(vmaxq_s32(vaddq_n_s32(ya, zo), vmin), vmax);
        yb = vminq_s32(vmaxq_s32(vaddq_n_s32(yb, zo), vmin), vmax);
        const uint32_t ch = c + 1 < c_out ? 0xFFFFu : 0x0F0Fu; /* drop channel c+1 past the end */
        vstrbq_scatter_offset_p_s32(out + c, offsets, ya, (mve_pred16_t)(pix_a & ch));
        vstrbq_p_s32(out + 2 * c_out + c, yb, (mve_pred16_t)(pix_b & ch));
    }
}

/* One output pixel (row[r] for r < rows) times all channels, four at a time (two pairs of the layout). */
static __attribute__((noinline, unused)) void mcu_mve_gemv(const int8_t *const *row, const mcu_mve_gemm_t *g,
                                                          int8_t *out)
{
    const int32_t c_out = g->c_out, zo = g->zo, done = g->chunks * 16;
    const int32x4_t vmin = vdupq_n_s32(g->act_min), vmax = vdupq_n_s32(g->act_max);
    const mve_pred16_t tail_p = vctp8q((uint32_t)g->tail);
    static const uint32_t quad[4] = {0, 1, 4, 5}; /* where c..c+3 sit in the quant repeated per pair */
    const uint32x4_t lanes = vldrwq_u32(quad);
    const int8_t *w = g->w;
    const int32_t pair_bytes = 32 * (g->rows * g->chunks + (g->tail != 0));
    for (int32_t c = 0; c < c_out; c += 4) {
        const int two = c + 2 < c_out; /* a second pair exists */
        const int8_t *w2 = two ? w + pair_bytes : w;
        int32_t a0 = g->bias[c], a1 = g->bias[c + 1], a2 = two ? g->bias[c + 2] : 0, a3 = two ? g->bias[c + 3] : 0;
        for (int32_t r = 0; r < g->rows; ++r) {
            const int8_t *xp = row[r];
            for (int32_t i = g->chunks; i > 0; --i, xp += 16, w += 32, w2 += 32) {
                const int8x16_t v = vldrbq_s8(xp);
                a0 = vmladavaq_s8(a0, v, vldrbq_s8(w));
                a1 = vmladavaq_s8(a1, v, vldrbq_s8(w + 16));
                a2 = vmladavaq_s8(a2, v, vldrbq_s8(w2));
                a3 = vmladavaq_s8(a3, v, vldrbq_s8(w2 + 16));
            }
        }
        if (g->tail) {
            const int8x16_t v = vldrbq_z_s8(row[0] + done, tail_p);
            a0 = vmladavaq_s8(a0, v, vldrbq_s8(w));
            a1 = vmladavaq_s8(a1, v, vldrbq_s8(w + 16));
            a2 = vmladavaq_s8(a2, v, vldrbq_s8(w2));
            a3 = vmladavaq_s8(a3, v, vldrbq_s8(w2 + 16));
            w += 32;
        }
        w += pair_bytes; /* past the second pair */
        int32x4_t acc = vdupq_n_s32(a0);
        acc = vsetq_lane_s32(a1, acc, 1);
        acc = vsetq_lane_s32(a2, acc, 2);
        acc = vsetq_lane_s32(a3, acc, 3);
        const mve_pred16_t p = vctp32q((uint32_t)(c_out - c)); /* also keeps the gathers inside the arrays */
        const int32x4_t m = vldrwq_gather_shifted_offset_z_s32(g->mult + 2 * c, lanes, p);
        const int32x4_t sh = vldrwq_gather_shifted_offset_z_s32(g->shift + 2 * c, lanes, p);
        int32x4_t y = mcu_mve_requantize(acc, m, sh);
        y = vminq_s32(vmaxq_s32(vaddq_n_s32(y, zo), vmin), vmax);
        vstrbq_p_s32(out + c, y, p);
    }
}

/* The GEMM description of a prepared Helium kernel (see mcu_kernels.h): windows of `rows` rows of k taps. */
MCU_INLINE mcu_mve_gemm_t mcu_mve_gemm(const int8_t *w, const int32_t *bias, const mcu_per_channel_quant_t *q,
                                       int32_t c_out, int32_t rows, int32_t k, int32_t zo, int32_t act_min,
                                       int32_t act_max)
{
    const mcu_mve_gemm_t g = {w, bias, q->multiplier, q->shift, c_out, rows, k >> 4, k & 15, zo, act_min, act_max,
                              {0u, 1u, (uint32_t)c_out, (uint32_t)c_out + 1u}};
    return g;
}
#endif

#endif /* MCU_OPT_H */
