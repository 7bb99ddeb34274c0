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
 *    The DSP conv and depthwise variants keep 3 words {mult, sh, rh} (`rq3_records`): for shift <= -2 the
 *    round's low word is 0, so hi32(round + acc * mult) = rh + hi32(acc * mult), one SMMLA.
 *  - DSP (SIMD32) intrinsics through arm_acle.h, with plain C stand-ins when the core lacks them, so a
 *    _dsp kernel computes the same (slowly) anywhere. Helium comes from arm_mve.h only when present.
 *  - The cores of the variants, in order below: window gathering (im2col), the DSP GEMM row of the fully
 *    connected layer, the DSP 2x2 GEMM of the convs (2 pixels x 2 channels of SMLAD, its constants in one
 *    filter stream) and the DSP depthwise (4 channels of SMLABB/SMLATT per word, interior runs a group at a
 *    time), all with hot loops in inline assembly (LDM/LDRD, fused rotations, computed entries that GCC does
 *    not emit); the scalar GEMM (two MACs per SMLAL); Helium's exact vector requantization (the Helium GEMM
 *    core is in mcu_mve.h).
 *  - What is not inline is compiled once: the DSP GEMM's pixel-pair widening and pair loop are in
 *    kernels/shared/mcu_gemm2_s8_dsp.c, which the registry (`links`) has the manifest list once for every
 *    kernel that calls them; the depthwise's assembly runs are used by one kernel and stay static here.
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

/* ---- Argument checks (the portable kernels' rules) ------------------------------------------------ */

/* Elements from one output pixel to the next: output_pixel_stride, or the channels when it is 0 (contiguous). */
MCU_INLINE int32_t mcu_out_stride(int32_t output_pixel_stride, int32_t channels)
{
    return output_pixel_stride != 0 ? output_pixel_stride : channels;
}

/* An int8 average pool variant's arguments, as mcu_avgpool2d_s8 checks them (any output_pixel_stride >= C: both
 * variants write pixel q at output + q * mcu_out_stride, as the portable kernel). */
MCU_INLINE mcu_status_t mcu_avgpool_check(const mcu_pool2d_params_t *p, const int8_t *input, const int8_t *output)
{
    if (p == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!MCU_POOL_GEOMETRY_OK(p) || p->divisor < 0 || !mcu_io_offsets_ok(0, p->zero_point, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    return MCU_POOL_SHAPE_OK(p) ? MCU_OK : MCU_ERR_SHAPE;
}

/* Output pixel (y, x)'s valid window taps as absolute input rows [*y0, *y1) and columns [*x0, *x1). */
MCU_INLINE void mcu_pool_window(const mcu_pool2d_params_t *p, int32_t y, int32_t x, int32_t *y0, int32_t *y1,
                                int32_t *x0, int32_t *x1)
{
    const int32_t top = y * p->stride_h - p->pad_top, left = x * p->stride_w - p->pad_left;
    mcu_tap_range(top, 1, p->kernel_h, p->input.h, y0, y1);
    mcu_tap_range(left, 1, p->kernel_w, p->input.w, x0, x1);
    *y0 += top;
    *y1 += top;
    *x0 += left;
    *x1 += left;
}

/* Pointers and scalar parameters of a conv (the shape agreement is checked by the caller); `strided`: the kernel
 * writes pixel q at output + q * mcu_out_stride (any output_pixel_stride >= C_out, as the portable kernels), else
 * it takes a contiguous output only. */
MCU_INLINE mcu_status_t mcu_conv_args(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *q,
                                      const void *input, const void *filter, const void *output, const int strided)
{
    if (p == NULL || q == NULL || q->multiplier == NULL || q->shift == NULL || input == NULL || filter == NULL ||
        output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!mcu_dims_ok(&p->input) || !mcu_dims_ok(&p->filter) || !mcu_dims_ok(&p->output) || p->stride_h < 1 ||
        p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 || p->pad_top < 0 || p->pad_left < 0 ||
        !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max) ||
        !(strided ? mcu_pixel_stride_ok(p->output_pixel_stride, p->output.c)
                  : mcu_pixel_stride_contiguous(p->output_pixel_stride, p->output.c))) {
        return MCU_ERR_ARG;
    }
    return MCU_OK;
}

/* A conv variant that writes contiguous output only (the 3x3 depthwise variants, whose rows may wait in a ring). */
MCU_INLINE mcu_status_t mcu_conv_check(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *q,
                                       const void *input, const void *filter, const void *output)
{
    return mcu_conv_args(p, q, input, filter, output, 0);
}

/* A conv variant that honours output_pixel_stride (registry `strided`: a channel concat's slice). */
MCU_INLINE mcu_status_t mcu_conv_check_strided(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *q,
                                               const void *input, const void *filter, const void *output)
{
    return mcu_conv_args(p, q, input, filter, output, 1);
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
           p->output.c == p->input.c && p->filter.h == 3 && p->filter.w == 3;
}

/* A depthwise conv with channel multiplier 1, any window. */
MCU_INLINE int mcu_dw_shapes_ok(const mcu_conv2d_params_t *p)
{
    return p->output.n == p->input.n && p->filter.n == 1 && p->filter.c == p->output.c &&
           p->output.c == p->input.c;
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

/* A 3x3 depthwise variant running in place (mcu_dw3x3_inplace_fits, its output over its input, at or below
 * it): output row r (flattened n, y) goes to slot r % (pad_top + 1) of a ring of rows in its scratch; rows
 * after r read no input row before r + 1 - pad_top, so once row r is done, output row r - pad_top leaves its
 * slot (the next one) for its place. Off (output apart, or the raster gap below): rows go to their place. */
typedef struct {
    int8_t *output, *ring;
    int32_t row_bytes, rows, delay, r, slot;
    int on;
} mcu_dw_rows_t;

MCU_INLINE mcu_dw_rows_t mcu_dw_rows_open(const mcu_conv2d_params_t *p, const int8_t *input, int8_t *output,
                                          int8_t *ring)
{
    const int32_t row_bytes = p->output.w * p->output.c, bytes = p->output.n * p->output.h * row_bytes;
    const uintptr_t i = (uintptr_t)input, o = (uintptr_t)output;
    mcu_dw_rows_t d = {output, ring, row_bytes, p->pad_top + 1, p->pad_top, 0, 0, 0};
    d.on = mcu_dw3x3_inplace_fits(p) && o < i + (uintptr_t)bytes && i < o + (uintptr_t)bytes;
    return d;
}

/* Where output row d->r goes. */
MCU_INLINE int8_t *mcu_dw_rows_out(const mcu_dw_rows_t *d)
{
    return d->on ? d->ring + d->slot * d->row_bytes : d->output + d->r * d->row_bytes;
}

/* Output row d->r is done. */
MCU_INLINE void mcu_dw_rows_next(mcu_dw_rows_t *d)
{
    if (d->on) {
        d->slot = d->slot + 1 == d->rows ? 0 : d->slot + 1;
        if (d->r >= d->delay) {
            memcpy(d->output + (d->r - d->delay) * d->row_bytes, d->ring + d->slot * d->row_bytes,
                   (size_t)d->row_bytes);
        }
    }
    ++d->r;
}

/* Every row is done: the ones still in the ring go to their places, oldest first. */
MCU_INLINE void mcu_dw_rows_close(mcu_dw_rows_t *d)
{
    for (int32_t k = d->r > d->delay ? d->r - d->delay : 0; d->on && k < d->r; ++k) {
        memcpy(d->output + k * d->row_bytes, d->ring + (k % d->rows) * d->row_bytes, (size_t)d->row_bytes);
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

/* Three-word records (codegen's rq3_records; the 2x2 DSP GEMM and the DSP depthwise): per channel
 * {mult, sh, rh}. sh >= 1 ("fast"): out + output_offset = (rh + hi32(acc * mult)) >> sh, one SMMLA and one ASR:
 * for shift <= -2 the 4-word record's round has a zero low word (round = rh * 2^32), so this is the same floor.
 * sh < 0 ("slow": shift >= -1, or a round that does not fit): rh holds the original shift. */
MCU_INLINE void mcu_rq3_record(int32_t mult, int32_t shift, int32_t out_off, int32_t rec[3])
{
    const int32_t e = -shift;
    rec[0] = mult;
    if (e >= 2 && e <= 24) {
        rec[1] = e - 1;
        rec[2] = (int32_t)(((int64_t)1 << (e - 2)) + (int64_t)out_off * ((int64_t)1 << (e - 1)));
    } else {
        rec[1] = -1;
        rec[2] = shift;
    }
}

MCU_INLINE mcu_status_t mcu_rq3_check(const int32_t *rec, int32_t channels)
{
    for (int32_t c = 0; c < channels; ++c, rec += 3) {
        if (rec[0] < 0 || rec[1] > 30 || (rec[1] < 0 && (rec[2] < -31 || rec[2] > 30))) {
            return MCU_ERR_ARG;
        }
    }
    return MCU_OK;
}

MCU_INLINE mcu_rq_mode_t mcu_rq3_mode(const int32_t *rec, int32_t channels, int32_t out_off, int32_t act_min,
                                      int32_t act_max)
{
    mcu_rq_mode_t m = {act_min, act_max, out_off, 1, 0};
    for (int32_t c = 0; c < channels && m.records_fast; ++c) {
        m.records_fast = rec[3 * c + 1] >= 0;
    }
    m.fast = m.records_fast && act_min == MCU_Q7_MIN && act_max == MCU_Q7_MAX;
    return m;
}

/* (rh + hi32(acc * mult)) >> sh for a fast channel (SMMLA wraps like the 64-bit sum). */
MCU_INLINE int32_t mcu_rq3_fast(int32_t acc, const int32_t *rec)
{
    const uint64_t v = ((uint64_t)(uint32_t)rec[2] << 32) + (uint64_t)((int64_t)acc * rec[0]);
    return (int32_t)(uint32_t)(v >> 32) >> rec[1];
}

MCU_INLINE int8_t mcu_rq3_out(int32_t acc, const int32_t *rec, const mcu_rq_mode_t *m)
{
    if (m->fast) {
        return (int8_t)mcu_sat8(mcu_rq3_fast(acc, rec));
    }
    const int32_t y = rec[1] >= 0 ? mcu_rq3_fast(acc, rec)
                                  : mcu_add_offset(mcu_requantize(acc, rec[0], rec[2]), m->output_offset);
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

/* Would writing output bytes [lo, hi) of a block clobber input still to be read, [first, end): the block's first
 * input byte up to the input's end (a 1x1 conv reads its pixels in raster order)? Only where the planner slid
 * the output over its dying input by less than the in-place reading's gap (codegen/memory.py raster_gap). */
MCU_INLINE int mcu_block_clobbers(const int8_t *lo, const int8_t *hi, const int8_t *first, const int8_t *end)
{
    return (uintptr_t)hi > (uintptr_t)first && (uintptr_t)lo < (uintptr_t)end;
}

/* dst[0..n) = src[0..n) (no overlap). */
MCU_INLINE void mcu_copy_s8(int8_t *dst, const int8_t *src, int32_t n)
{
#if MCU_HAVE_MVE
    for (; n >= 16; n -= 16, src += 16, dst += 16) {
        vstrbq_s8(dst, vldrbq_s8(src));
    }
    if (n > 0) {
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

/* ---- SIMD32 (DSP extension) with C stand-ins ---------------------------------------------------------- */

MCU_INLINE uint32_t mcu_ror8(uint32_t x)
{
    return (x >> 8) | (x << 24);
}

#if MCU_HAVE_DSP
#define mcu_sxtab16(a, x) ((uint32_t)__sxtab16((int16x2_t)(a), (int8x4_t)(x)))
#define mcu_smlad(x, y, acc) __smlad((int16x2_t)(x), (int16x2_t)(y), (acc))
#define mcu_smlabb(x, y, acc) __smlabb((int32_t)(x), (int32_t)(y), (acc))
#define mcu_smlabt(x, y, acc) __smlabt((int32_t)(x), (int32_t)(y), (acc))
#define mcu_smlatb(x, y, acc) __smlatb((int32_t)(x), (int32_t)(y), (acc))
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

/* acc + one halfword of x times one of y (B: bottom, T: top), wrapping like SMLABB / SMLABT / SMLATB / SMLATT. */
MCU_INLINE int32_t mcu_smlabb(uint32_t x, uint32_t y, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcu_lo16(x) * mcu_lo16(y)));
}

MCU_INLINE int32_t mcu_smlabt(uint32_t x, uint32_t y, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcu_lo16(x) * mcu_hi16(y)));
}

MCU_INLINE int32_t mcu_smlatb(uint32_t x, uint32_t y, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcu_hi16(x) * mcu_lo16(y)));
}

MCU_INLINE int32_t mcu_smlatt(uint32_t x, uint32_t y, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(mcu_hi16(x) * mcu_hi16(y)));
}

#endif

/* acc + lo*lo + hi*hi into 64 bits (SMLALD): the int16 kernels' dot products. */
#if MCU_HAVE_DSP
#define mcu_smlald(x, y, acc) __smlald((int16x2_t)(x), (int16x2_t)(y), (acc))
#else
MCU_INLINE int64_t mcu_smlald(uint32_t x, uint32_t y, int64_t acc)
{
    return acc + (int64_t)((int32_t)(int16_t)(uint16_t)(x & 0xFFFFu) * (int32_t)(int16_t)(uint16_t)(y & 0xFFFFu)) +
           (int64_t)((int32_t)(int16_t)(uint16_t)(x >> 16) * (int32_t)(int16_t)(uint16_t)(y >> 16));
}
#endif

/* The low halfwords of x and y as one word (x's low, y's low), and the high halfwords (x's high, y's high):
 * PKHBT x, y, LSL #16 and PKHTB y, x, ASR #16 (GCC does not form them from the C). */
MCU_INLINE uint32_t mcu_pack_lo(uint32_t x, uint32_t y)
{
#if MCU_HAVE_DSP && defined(__GNUC__) && defined(__thumb2__)
    uint32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(x), "r"(y));
    return r;
#else
    return (x & 0xFFFFu) | (y << 16);
#endif
}

MCU_INLINE uint32_t mcu_pack_hi(uint32_t x, uint32_t y)
{
#if MCU_HAVE_DSP && defined(__GNUC__) && defined(__thumb2__)
    uint32_t r;
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(y), "r"(x));
    return r;
#else
    return (y & 0xFFFF0000u) | (x >> 16);
#endif
}

/* acc + the high word of x * y (SMMLA; wrapping), the high word of x * y + 2^31 (SMMULR: x * y / 2^32 rounded,
 * ties up), the saturated sum and difference (QADD, QSUB). */
#if MCU_HAVE_DSP && defined(__GNUC__) && defined(__thumb2__)
MCU_INLINE int32_t mcu_smmla(int32_t x, int32_t y, int32_t acc)
{
    int32_t r;
    __asm__("smmla %0, %1, %2, %3" : "=r"(r) : "r"(x), "r"(y), "r"(acc));
    return r;
}

MCU_INLINE int32_t mcu_smmulr(int32_t x, int32_t y)
{
    int32_t r;
    __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(x), "r"(y));
    return r;
}
#else
MCU_INLINE int32_t mcu_smmla(int32_t x, int32_t y, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(((int64_t)x * y) >> 32));
}

MCU_INLINE int32_t mcu_smmulr(int32_t x, int32_t y)
{
    return (int32_t)(((int64_t)x * y + ((int64_t)1 << 31)) >> 32);
}
#endif

/* x saturated to int16 (SSAT #16). */
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
#define mcu_ssat16(x) ((int32_t)__builtin_arm_ssat((x), 16))
#else
#define mcu_ssat16(x) mcu_clamp_i32((x), MCU_Q15_MIN, MCU_Q15_MAX)
#endif

#if MCU_HAVE_DSP
#define mcu_qadd(x, y) __qadd((x), (y))
#define mcu_qsub(x, y) __qsub((x), (y))
#else
#define mcu_qadd(x, y) mcu_sat_i32((int64_t)(x) + (y))
#define mcu_qsub(x, y) mcu_sat_i32((int64_t)(x) - (y))
#endif

#if MCU_HAVE_DSP
#define mcu_sxtb16(x) ((uint32_t)__sxtb16((int8x4_t)(x)))
#else
#define mcu_sxtb16(x) mcu_sxtab16(0u, (x))
#endif

/* An int8 word (v0, v1, v2, v3) as two int16 pairs in SXTB16 order: (v0, v2), (v1, v3). Two operands widened
 * the same way pair up lane by lane, so SMLAD sums their products without reordering. */
MCU_INLINE void mcu_widen8(uint32_t v, uint32_t out[2])
{
    out[0] = mcu_sxtb16(v);
    out[1] = mcu_sxtb16(mcu_ror8(v));
}

/* GCC's Cortex-M tuning never forms LDM/LDRD or SXTAB16 with rotation, which halve the hot loops' instruction
 * counts (the measure here is instructions); those loops are inline assembly on Thumb-2 cores with the DSP
 * extension, C elsewhere. Local labels 1-5 are used inside each block. */
#if MCU_HAVE_DSP && defined(__GNUC__) && defined(__thumb2__)
#define MCU_DSP_ASM 1
#else
#define MCU_DSP_ASM 0
#endif

/* mcu_sxtab16(a, mcu_ror8(x)) as one SXTAB16 with its rotation. */
#if MCU_DSP_ASM
MCU_INLINE uint32_t mcu_sxtab16_ror8(uint32_t a, uint32_t x)
{
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
#else
#define mcu_sxtab16_ror8(a, x) mcu_sxtab16((a), mcu_ror8(x))
#endif

/* ---- DSP 2x2 GEMM (the _dsp conv variants) ---------------------------------------------------------- */

/* Two output pixels times two channels per block, SMLAD on int16 pairs, one step = 4 taps:
 *  - x (mcu_dsp_expand2): per step {p0 (t0, t2), p0 (t1, t3), p1 (t0, t2), p1 (t1, t3)}, the raw int8 inputs
 *    widened (the bias is folded); S steps. The assembly also uses the word before them (its entry address)
 *    and the word after them (the address of the state below): x has S * 4 + 2 words from x - 1 on.
 *  - The filter (select_kernels.pack_g2_stream): a header word, the weight bytes per step (8 or 16), then per
 *    pair of channels: the folded biases {b0, b1}; per step either the int8 words {c0 (w0, w1, w2, w3),
 *    c1 (w0, w1, w2, w3)} (int8 in flash, as CMSIS-NN: SXTB16 of a word and of it rotated by 8 give (w0, w2)
 *    and (w1, w3), the lanes of x's words) or the int16 words {c0 (w0, w2), c0 (w1, w3), c1 (w0, w2),
 *    c1 (w1, w3)} (widened at compile time: codegen widens a layer whose output has many pixels, where the 4
 *    SXTB16 a step cost most); control words after step 0 when S = 1, else after steps 0 + r and every
 *    MCU_DSP_G2_CHUNK (16) steps from there, where the S - 1 steps after the first come in chunks, the first
 *    of r = S - 1 - 16 * ceil((S - 1) / 16) + 16: 0 inside the pair, at its end 1, or -1 for the last whole
 *    pair; then both channels' 3-word records (mcu_rq3_record). An odd C_out pads the last pair with a zero
 *    channel.
 *  - Assembly (fast mode, whole pairs): step 0 starts pixel 1's accumulators from the biases; the others take
 *    10 instructions each (two LDM, eight SMLAD; 14 with four SXTB16 for int8 weights) in a 16-step body
 *    entered Duff-style at step 16 - r, the control word read after each chunk; then per output SMMLA, ASR,
 *    SSAT, STRB. The loop takes all 14 registers: what lives from block to block is in the state, whose
 *    address comes back from the word after x, or in the stream.
 */
#define MCU_DSP_G2_CHUNK 16 /* steps per chunk of the stream and of the assembly's loop body */

typedef struct {
    uint32_t *x;          /* 0: the widened pixel pair */
    const int8_t *w;      /* 4: the stream at the next pair (advances) */
    int8_t *out;          /* 8: pixel 0's output of the next pair (advances 2) */
    int32_t stride;       /* 12: pixel 1's outputs are at out + stride (0: pixel 1 repeats pixel 0) */
    int32_t entry;        /* 16: bytes from the step body to where step 1 enters it, + 1 (Thumb) */
    int32_t steps;        /* 20: S >= 1 */
    int32_t step_bytes;   /* 24: weight bytes per step: 8 (int8 words) or 16 (int16 words) */
    const int8_t *stream; /* 28: the first pair */
    int32_t stride2;      /* 32: the 3-row GEMM (mcu_dsp_g3_run): row 2's outputs are at out + stride2 */
    int32_t entry3;       /* 36: the 3-row GEMM: as entry, in its step body */
} mcu_dsp_g2_t;

/* Control words of one pair: one per chunk of the steps after the first, at least one. */
MCU_INLINE int32_t mcu_dsp_g2_ctrls(int32_t steps)
{
    return steps > 1 ? (steps - 2) / MCU_DSP_G2_CHUNK + 1 : 1;
}

/* Steps after the first before the first control word (0 when S = 1). */
MCU_INLINE int32_t mcu_dsp_g2_first(int32_t steps)
{
    return steps > 1 ? steps - 1 - MCU_DSP_G2_CHUNK * ((steps - 2) / MCU_DSP_G2_CHUNK) : 0;
}

/* Bytes of one pair in the stream. */
MCU_INLINE int32_t mcu_dsp_g2_pair_bytes(int32_t steps, int32_t step_bytes)
{
    return 8 + step_bytes * steps + 4 * mcu_dsp_g2_ctrls(steps) + 24;
}

/* The state of a GEMM over x (S * 4 + 2 words from x - 1 on) and the filter (its header word: the weight bytes
 * per step, 8 or 16; then the stream); checks the records of its c_out channels (as mcu_rq3_check) and sets the
 * mode from the output offset and clamp. Code bytes of one step of the assembly's body: two LDM.W and eight
 * SMLAD, and four SXTB16 for int8. (shared/mcu_gemm2_s8_dsp.c, compiled once for every kernel that opens one) */
mcu_status_t mcu_dsp_g2_open(mcu_dsp_g2_t *g, const int8_t *filter, uint32_t *x, int32_t steps, int32_t c_out,
                             int32_t output_offset, int32_t act_min, int32_t act_max, mcu_rq_mode_t *m);

/* A compact conv window (mcu_dsp_conv_compact in mcu_kernels.h, beside the scratch sizes it decides) is widened
 * whole: its K taps in one run, padded to a step at the end, not row by row. */

/* dst = the steps of the n int8 values at a (pixel 0) and b (pixel 1); a tail step reads only the bytes that
 * exist (its other lanes are 0, against zero weights). Returns dst past the ceil(n / 4) steps.
 * (shared/mcu_gemm2_s8_dsp.c, linked once for every kernel that calls it) */
uint32_t *mcu_dsp_expand2(const int8_t *a, const int8_t *b, int32_t n, uint32_t *dst);

#if MCU_DSP_ASM
/* The compact windows of two pixels whose window rows are 9 bytes (3 rows, e.g. 3x3 RGB): a (pixel 0) and b
 * (pixel 1) point at row 0, rows rs apart; 27 taps in 7 steps. Rows are stitched across their ends with BFI
 * and PKHBT; it reads the byte before rows 1 and 2 and the one after row 2 (against zero weights), so the
 * caller makes sure those exist. */
MCU_INLINE void mcu_dsp_expand2_9x3(const int8_t *a, const int8_t *b, int32_t rs, uint32_t *d)
{
#define MCU_DSP_X2 /* the step's words of pixel 0 in r4, of pixel 1 in r6 */                               \
    "sxtb16 r5, r4, ror #8\n\t"                                                                            \
    "sxtb16 r4, r4\n\t"                                                                                    \
    "sxtb16 r7, r6, ror #8\n\t"                                                                            \
    "sxtb16 r6, r6\n\t"                                                                                    \
    "stmia %[d]!, {r4, r5, r6, r7}\n\t"
    __asm__ volatile("ldr r4, [%[a]]\n\t"
                     "ldr r6, [%[b]]\n\t" MCU_DSP_X2
                     "ldr r4, [%[a], #4]\n\t"
                     "ldr r6, [%[b], #4]\n\t" MCU_DSP_X2
                     "add r8, %[a], %[rs]\n\t"
                     "add r9, %[b], %[rs]\n\t"
                     "ldrb r10, [%[a], #8]\n\t"
                     "ldr r4, [r8, #-1]\n\t"
                     "bfi r4, r10, #0, #8\n\t"
                     "ldrb r10, [%[b], #8]\n\t"
                     "ldr r6, [r9, #-1]\n\t"
                     "bfi r6, r10, #0, #8\n\t" MCU_DSP_X2
                     "ldr r4, [r8, #3]\n\t"
                     "ldr r6, [r9, #3]\n\t" MCU_DSP_X2
                     "add r10, r8, %[rs]\n\t"
                     "add r11, r9, %[rs]\n\t"
                     "ldr r4, [r8, #7]\n\t"
                     "ldr r5, [r10, #-2]\n\t"
                     "pkhbt r4, r4, r5\n\t"
                     "ldr r6, [r9, #7]\n\t"
                     "ldr r7, [r11, #-2]\n\t"
                     "pkhbt r6, r6, r7\n\t" MCU_DSP_X2
                     "ldr r4, [r10, #2]\n\t"
                     "ldr r6, [r11, #2]\n\t" MCU_DSP_X2
                     "ldr r4, [r10, #6]\n\t"
                     "ldr r6, [r11, #6]\n\t" MCU_DSP_X2
                     : [d] "+r"(d)
                     : [a] "r"(a), [b] "r"(b), [rs] "r"(rs)
                     : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "memory");
#undef MCU_DSP_X2
}
#endif

/* One pixel pair: out0 (pixel 0) and out0 + stride (pixel 1) get all c_out channels from the widened pair
 * g->x (the word after its steps may be overwritten) and the stream w. (shared/mcu_gemm2_s8_dsp.c) */
void mcu_dsp_g2_run(mcu_dsp_g2_t *g, int8_t *out0, int32_t stride, int32_t c_out, const mcu_rq_mode_t *m);

/* Three rows x two channels per block (the fully connected GEMM, mcu_fully_connected_gemm_s8_dsp), over the same
 * int8 stream: each weight step widened once serves 3 rows, 20 instructions a step (two LDM for the weights, four
 * SXTB16, three LDM for x, twelve SMLAD) for 24 MACs, against 14 for 16. Fast mode, int8 stream (step_bytes 8),
 * whole pairs only (even c_out); x (mcu_dsp_expand3): per step {a (t0, t2), a (t1, t3), b ..., c ...}, the three
 * rows widened, S * 6 + 2 words from x - 1 on (the entry address before, the state's address after). Registers:
 * all 14, as the 2-row core. (shared/mcu_gemm3_s8_dsp.c; the assembly only on Thumb-2 cores with the DSP
 * extension, MCU_DSP_ASM) */
void mcu_dsp_expand3(const int8_t *a, const int8_t *b, const int8_t *c, int32_t n, uint32_t *dst);
#if MCU_DSP_ASM
void mcu_dsp_g3_run(mcu_dsp_g2_t *g, int8_t *out0, int32_t stride);
#endif

/* The any-window DSP depthwise's filter stream (packing.pack_dw_pair_stream): bytes per group of 4 channels of a
 * kh x kw window (4 biases, 4 words per pair of taps of a row, 4 3-word records). */
#define MCU_DSP_DWK_GROUP_BYTES(kh, kw) (64 + 16 * (kh) * (((kw) + 1) / 2))

/* ---- DSP depthwise 3x3 (the _dsp depthwise variant) ---------------------------------------------------- */

/* The filter stream (packing.pack_dw_stream), per group of 4 channels (C rounded up to 4, zero channels): the
 * folded biases b0..b3; per tap t = ky * 3 + kx the int8 word (w_c0, w_c1, w_c2, w_c3), which SXTB16 and SXTB16
 * ROR 8 widen to (w_c0, w_c2), (w_c1, w_c3), the lanes of the input word widened the same way; the four 3-word
 * records (mcu_rq3_record). 25 words. With MCU_DSP_DW_WIDE (mcu_dwconv2d_3x3_s8_dsp_wide.c: where the flash
 * budget pays for it) each tap holds those two int16 words instead, read with one LDRD: 34 words. */
#ifndef MCU_DSP_DW_WIDE
#define MCU_DSP_DW_WIDE 0
#endif
#if MCU_DSP_DW_WIDE
#define MCU_DSP_DW_GROUP_BYTES 136
#define MCU_DSP_DW_RECORDS 88 /* the records' offset in a group */
#define MCU_DSP_DW_BACK "#136"
#else
#define MCU_DSP_DW_GROUP_BYTES 100
#define MCU_DSP_DW_RECORDS 52
#define MCU_DSP_DW_BACK "#100"
#endif

/* Channel c's record in the stream. */
MCU_INLINE const int32_t *mcu_dsp_dw_record(const int8_t *w, int32_t c)
{
    return (const int32_t *)(const void *)(w + (c / 4) * MCU_DSP_DW_GROUP_BYTES + MCU_DSP_DW_RECORDS + (c % 4) * 12);
}

/* Weight j (channel j of the group) of tap t in the group g. */
MCU_INLINE int32_t mcu_dsp_dw_weight(const int8_t *g, int32_t t, int32_t j)
{
#if MCU_DSP_DW_WIDE
    int16_t w;
    memcpy(&w, g + 16 + t * 8 + (j & 1) * 4 + (j >> 1) * 2, sizeof w);
    return w;
#else
    return g[16 + t * 4 + j];
#endif
}

/* Channels [c, c + n) (n <= 4, c % 4 == 0) of one pixel in C, any mode: tap[t] points at channel c of tap t
 * (or at padding); g is the channels' group in the stream. */
MCU_INLINE void mcu_dsp_dw_group_c(const int8_t *const tap[9], int32_t n, const int8_t *g, const mcu_rq_mode_t *m,
                                   int8_t *out)
{
    const int32_t *bias = (const int32_t *)(const void *)g;
    for (int32_t j = 0; j < n; ++j) {
        uint32_t acc = (uint32_t)bias[j]; /* wraps like the folded bias */
        for (int32_t t = 0; t < 9; ++t) {
            acc += (uint32_t)(tap[t][j] * mcu_dsp_dw_weight(g, t, j));
        }
        out[j] = mcu_rq3_out((int32_t)acc, (const int32_t *)(const void *)(g + MCU_DSP_DW_RECORDS + 12 * j), m);
    }
}

#if MCU_DSP_ASM
/* One tap's weights of one group into r6 (w_c0, w_c2) and r7 (w_c1, w_c3): one int8 word widened, or two int16
 * words as they are. */
#if MCU_DSP_DW_WIDE
#define MCU_DSP_DWW "ldrd r6, r7, [%[w]], #8\n\t"
#else
#define MCU_DSP_DWW                                                                                        \
    "ldr r7, [%[w]], #4\n\t"                                                                               \
    "sxtb16 r6, r7\n\t"                                                                                    \
    "sxtb16 r7, r7, ror #8\n\t"
#endif
/* One tap of one group (4 channels): the word at addr widened, against the tap's weights. */
#define MCU_DSP_DWT(addr)                                                                                  \
    "ldr r5, " addr "\n\t"                                                                                 \
    "sxtb16 r4, r5\n\t"                                                                                    \
    "sxtb16 r5, r5, ror #8\n\t" MCU_DSP_DWW                                                                \
    "smlabb r8, r4, r6, r8\n\t"                                                                            \
    "smlatt r10, r4, r6, r10\n\t"                                                                          \
    "smlabb r9, r5, r7, r9\n\t"                                                                            \
    "smlatt r11, r5, r7, r11\n\t"
/* The biases, then the 9 taps of the window at %[p] (rows %[rs] apart, columns %[cs]); %[p] comes back. */
#define MCU_DSP_DW9                                                                                        \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t" MCU_DSP_DWROW "add %[p], %[p], %[rs]\n\t" MCU_DSP_DWROW            \
    "add %[p], %[p], %[rs]\n\t" MCU_DSP_DWROW "sub %[p], %[p], %[rs], lsl #1\n\t"
#define MCU_DSP_DWROW MCU_DSP_DWT("[%[p]]") MCU_DSP_DWT("[%[p], %[cs]]") MCU_DSP_DWT("[%[p], %[cs], lsl #1]")
/* Requantize the 4 accumulators with the group's 4 records (12 words) to out + 0..3, in three LDM of 4: each
 * accumulator register joins the free ones once its output is stored. */
#define MCU_DSP_DWRQ4                                                                                      \
    "ldmia %[w]!, {r4, r5, r6, r7}\n\t"  /* m0 sh0 rh0 m1 */                                               \
    "smmla r8, r8, r4, r6\n\t"                                                                             \
    "asr r8, r8, r5\n\t"                                                                                   \
    "ssat r8, #8, r8\n\t"                                                                                  \
    "strb r8, [%[out], #0]\n\t"                                                                            \
    "ldmia %[w]!, {r4, r5, r6, r8}\n\t"  /* sh1 rh1 m2 sh2 */                                              \
    "smmla r9, r9, r7, r5\n\t"                                                                             \
    "asr r9, r9, r4\n\t"                                                                                   \
    "ssat r9, #8, r9\n\t"                                                                                  \
    "strb r9, [%[out], #1]\n\t"                                                                            \
    "ldmia %[w]!, {r4, r5, r7, r9}\n\t"  /* rh2 m3 sh3 rh3 */                                              \
    "smmla r10, r10, r6, r4\n\t"                                                                           \
    "asr r10, r10, r8\n\t"                                                                                 \
    "ssat r10, #8, r10\n\t"                                                                                \
    "strb r10, [%[out], #2]\n\t"                                                                           \
    "smmla r11, r11, r5, r9\n\t"                                                                           \
    "asr r11, r11, r7\n\t"                                                                                 \
    "ssat r11, #8, r11\n\t"                                                                                \
    "strb r11, [%[out], #3]\n\t"

/* (Both not inlined, static: all registers go to their loops.)
 * Whole groups [0, groups) of one pixel, fast mode: tap (ky, kx) of channel 0 at p + ky * rs + kx * cs, group
 * g at + 4 g; w the stream of group 0; 4 outputs per group from out on. Per group and tap: two LDR, four SXTB16
 * (input and weights), four SMLAxy; per output SMMLA, ASR, SSAT, STRB. */
static __attribute__((noinline, unused)) void mcu_dsp_dw_pixel_asm(const int8_t *p, int32_t cs, int32_t rs,
                                                                   const int8_t *w, int8_t *out, int32_t groups)
{
    const int8_t *end = p + 4 * groups;
    __asm__ volatile("1:\n\t" MCU_DSP_DW9 MCU_DSP_DWRQ4
                     "adds %[out], %[out], #4\n\t"
                     "adds %[p], %[p], #4\n\t"
                     "cmp %[p], %[end]\n\t"
                     "bne 1b\n\t"
                     : [p] "+r"(p), [w] "+r"(w), [out] "+r"(out)
                     : [cs] "r"(cs), [rs] "r"(rs), [end] "r"(end)
                     : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "cc", "memory");
}

/* One group over a run of pixels of an output row, fast mode, dilation_w 1, stride_w 1 or 2 (stride2): the
 * group's channels of pixel i's tap (ky, kx) at p + i * stride_w * c + ky * rs + kx * c; w the group's stream;
 * its 4 outputs at out + i * c, up to out_end. The stream pointer steps back one group per pixel. */
static __attribute__((noinline, unused)) void mcu_dsp_dw_run_asm(const int8_t *p, int32_t c, int32_t rs,
                                                                 const int8_t *w, int8_t *out, const int8_t *out_end,
                                                                 int stride2)
{
#define MCU_DSP_DW_RUN(step)                                                                               \
    __asm__ volatile("1:\n\t" MCU_DSP_DW9 MCU_DSP_DWRQ4                                                     \
                     "sub %[w], %[w], " MCU_DSP_DW_BACK "\n\t"                                             \
                     "add %[p], %[p], " step "\n\t"                                                        \
                     "add %[out], %[out], %[cs]\n\t"                                                       \
                     "cmp %[out], %[end]\n\t"                                                              \
                     "bne 1b\n\t"                                                                          \
                     : [p] "+r"(p), [w] "+r"(w), [out] "+r"(out)                                           \
                     : [cs] "r"(c), [rs] "r"(rs), [end] "r"(out_end)                                       \
                     : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "cc", "memory")
    if (stride2) {
        MCU_DSP_DW_RUN("%[cs], lsl #1");
    } else {
        MCU_DSP_DW_RUN("%[cs]");
    }
#undef MCU_DSP_DW_RUN
}

/* Whole groups [0, groups) of one pixel (a border one), fast mode: tap t of group g at tab[t] + 4 g, tab[t]
 * pointing at channel 0 of its input pixel or at padding (a row of zero points); one more LDR per tap. */
static __attribute__((noinline, unused)) void mcu_dsp_dw_tab_asm(const int8_t *const tab[9], const int8_t *w,
                                                                 int8_t *out, int32_t groups)
{
    int32_t g = 0;
    const int32_t end = 4 * groups;
#define MCU_DSP_DWTT(t)                                                                                    \
    "ldr r5, [%[tab], #" #t "]\n\t" MCU_DSP_DWT("[r5, %[g]]")
    __asm__ volatile("1:\n\t"
                     "ldmia %[w]!, {r8, r9, r10, r11}\n\t" MCU_DSP_DWTT(0) MCU_DSP_DWTT(4) MCU_DSP_DWTT(8)
                         MCU_DSP_DWTT(12) MCU_DSP_DWTT(16) MCU_DSP_DWTT(20) MCU_DSP_DWTT(24) MCU_DSP_DWTT(28)
                             MCU_DSP_DWTT(32) MCU_DSP_DWRQ4
                     "adds %[out], %[out], #4\n\t"
                     "adds %[g], %[g], #4\n\t"
                     "cmp %[g], %[end]\n\t"
                     "bne 1b\n\t"
                     : [g] "+r"(g), [w] "+r"(w), [out] "+r"(out)
                     : [tab] "r"(tab), [end] "r"(end)
                     : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "cc", "memory");
#undef MCU_DSP_DWTT
}
#undef MCU_DSP_DWRQ4
#undef MCU_DSP_DWROW
#undef MCU_DSP_DW9
#undef MCU_DSP_DWT
#undef MCU_DSP_DWW

#endif

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

/* The two split words of a tap from its int8 word (bytes w1, w0, w2, w3 - [w2 < 0]): w0 + w1 * 2^24 by SBFX and
 * an ADD of the word shifted left by 24; w2 + w3 * 2^24 by SBFX and BFI: w2 sign-extended to 24 bits under the
 * top byte, which the packing lowered by one for a negative w2 to make up for the borrow. */
MCU_INLINE void mcu_fast_words(uint32_t v, int32_t *a, int32_t *b)
{
    *a = (int32_t)((uint32_t)((int32_t)(v << 16) >> 24) + (v << 24));
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2
    uint32_t lo;
    __asm__("sbfx %1, %0, #16, #8\n\tbfi %0, %1, #0, #24" : "+r"(v), "=&r"(lo));
    *b = (int32_t)v;
#else
    *b = (int32_t)((v & 0xFF000000u) | ((uint32_t)((int32_t)(v << 8) >> 24) & 0x00FFFFFFu));
#endif
}

#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__arm__)
/* ARMv7-M (the Cortex-M3 and up): the scalar GEMM's 4-tap loops in assembly, 16 and 31 instructions a loop where
 * GCC's C takes 24-26 and 36 (it loads word by word and keeps moving the 64-bit sums between registers). */
#define MCU_FAST_ASM 1
/* %[x] the next 4 inputs, %[w] their weights, sums in %[al]:%[ah] (channels 0, 1) and %[bl]:%[bh] (2, 3). */
#define MCU_FAST_WIDE_TAP2(wa, wb, wc, wd)                                                                 \
    "ldrsb r8, [%[x]], #1\n\t"                                                                             \
    "smlal %[al], %[ah], " wa ", r8\n\t"                                                                   \
    "smlal %[bl], %[bh], " wb ", r8\n\t"                                                                   \
    "ldrsb r8, [%[x]], #1\n\t"                                                                             \
    "smlal %[al], %[ah], " wc ", r8\n\t"                                                                   \
    "smlal %[bl], %[bh], " wd ", r8\n\t"
#define MCU_FAST_WIDE_LOOP                                                                                 \
    "1:\n\t"                                                                                               \
    "ldmia %[w]!, {r4, r5, r6, r7}\n\t" MCU_FAST_WIDE_TAP2("r4", "r5", "r6", "r7")                          \
    "ldmia %[w]!, {r4, r5, r6, r7}\n\t" MCU_FAST_WIDE_TAP2("r4", "r5", "r6", "r7")                          \
    "cmp %[x], %[end]\n\t"                                                                                 \
    "bne 1b\n\t"
/* One tap from the int8 word wr (mcu_fast_words): SBFX + ADD LSL 24, SBFX + BFI. */
#define MCU_FAST_INT8_TAP(wr)                                                                              \
    "ldrsb r8, [%[x]], #1\n\t"                                                                             \
    "sbfx r9, " wr ", #8, #8\n\t"                                                                          \
    "add r9, r9, " wr ", lsl #24\n\t"                                                                      \
    "smlal %[al], %[ah], r9, r8\n\t"                                                                       \
    "sbfx r9, " wr ", #16, #8\n\t"                                                                         \
    "bfi " wr ", r9, #0, #24\n\t"                                                                          \
    "smlal %[bl], %[bh], " wr ", r8\n\t"
#define MCU_FAST_INT8_LOOP                                                                                 \
    "1:\n\t"                                                                                               \
    "ldmia %[w]!, {r4, r5, r6, r7}\n\t" MCU_FAST_INT8_TAP("r4") MCU_FAST_INT8_TAP("r5")                    \
        MCU_FAST_INT8_TAP("r6") MCU_FAST_INT8_TAP("r7")                                                    \
    "cmp %[x], %[end]\n\t"                                                                                 \
    "bne 1b\n\t"
#endif

/* One tap of 4 channels from its int8 word: s01 += x * (w0 + w1 * 2^24), s23 += x * (w2 + w3 * 2^24). */
MCU_INLINE void mcu_fast_tap(int32_t x, uint32_t v, int64_t *s01, int64_t *s23)
{
    int32_t a, b;
    mcu_fast_words(v, &a, &b);
    *s01 += (int64_t)x * a;
    *s23 += (int64_t)x * b;
}

/* out[c] = rq(bias[c] + sum_k x[k] * w[c][k]) for c < c_out: x an int8 row of k values (the offset is in
 * the folded bias); c_out padded to 4 (zero rows, padded bias/records). The filter: a header word, the weight
 * bytes per tap of 4 channels, then per 4 channels and tap either (8) the split words w0 + w1 * 2^24 and
 * w2 + w3 * 2^24 as int32 (widened at compile time: 4 instructions a tap on the M3, MCU_FAST_ASM), or (4) one
 * int8 word that mcu_fast_words turns into the same two (7.75). */
MCU_INLINE void mcu_fast_gemm_row(const int8_t *x, int32_t k, const int8_t *filter, const int32_t *bias,
                                  const int32_t *rec, int32_t c_out, const mcu_rq_mode_t *m, int8_t *out)
{
    const uint32_t *w = (const uint32_t *)(const void *)filter; /* 4-byte aligned: its header word, then taps */
    const int wide = *w++ == 8u;
    for (int32_t c = 0; c < c_out; c += 4, bias += 4, rec += 16) {
        int64_t s01 = 0, s23 = 0;
        const int8_t *xp = x, *end = x + k;
#if MCU_FAST_ASM
        if (k >= 4) { /* whole 4-tap groups; the C loops below do the rest */
            const int8_t *end4 = x + (k & ~3);
            uint32_t al = 0, ah = 0, bl = 0, bh = 0;
            if (wide) {
                __asm__ volatile(MCU_FAST_WIDE_LOOP
                                 : [x] "+r"(xp), [w] "+r"(w), [al] "+r"(al), [ah] "+r"(ah), [bl] "+r"(bl), [bh] "+r"(bh)
                                 : [end] "r"(end4)
                                 : "r4", "r5", "r6", "r7", "r8", "cc", "memory");
            } else {
                __asm__ volatile(MCU_FAST_INT8_LOOP
                                 : [x] "+r"(xp), [w] "+r"(w), [al] "+r"(al), [ah] "+r"(ah), [bl] "+r"(bl), [bh] "+r"(bh)
                                 : [end] "r"(end4)
                                 : "r4", "r5", "r6", "r7", "r8", "r9", "cc", "memory");
            }
            s01 = (int64_t)(((uint64_t)ah << 32) | al);
            s23 = (int64_t)(((uint64_t)bh << 32) | bl);
        }
#endif
        if (wide) {
            for (; xp + 4 <= end; xp += 4, w += 8) {
                const int32_t x0 = xp[0], x1 = xp[1], x2 = xp[2], x3 = xp[3];
                s01 += (int64_t)x0 * (int32_t)w[0];
                s23 += (int64_t)x0 * (int32_t)w[1];
                s01 += (int64_t)x1 * (int32_t)w[2];
                s23 += (int64_t)x1 * (int32_t)w[3];
                s01 += (int64_t)x2 * (int32_t)w[4];
                s23 += (int64_t)x2 * (int32_t)w[5];
                s01 += (int64_t)x3 * (int32_t)w[6];
                s23 += (int64_t)x3 * (int32_t)w[7];
            }
            for (; xp < end; ++xp, w += 2) {
                s01 += (int64_t)xp[0] * (int32_t)w[0];
                s23 += (int64_t)xp[0] * (int32_t)w[1];
            }
        } else {
            for (; xp + 4 <= end; xp += 4, w += 4) {
                mcu_fast_tap(xp[0], w[0], &s01, &s23);
                mcu_fast_tap(xp[1], w[1], &s01, &s23);
                mcu_fast_tap(xp[2], w[2], &s01, &s23);
                mcu_fast_tap(xp[3], w[3], &s01, &s23);
            }
            for (; xp < end; ++xp, ++w) {
                mcu_fast_tap(xp[0], w[0], &s01, &s23);
            }
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

/* ---- Helium requantization (the _mve variants) ------------------------------------------------------- */

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

/* The int8 adds' table loop (mcu_add_s8_mve, mcu_add_broadcast_s8_mve) where the requantization only shifts down:
 * for `blocks` groups of 4 lanes, o = clamp(rshl(qdmulh(t1[a] +sat t2[b], mult), shift) + zo, vmin, vmax), a and b
 * int8 gather offsets into the tables (entry 0 at t1, t2); 12 instructions per 4 lanes (GCC does not post-increment
 * these loads). Advances *a, *b and *o past what it wrote. */
MCU_INLINE void mcu_mve_add_tables_down(const int8_t **a, const int8_t **b, int8_t **o, int32_t blocks,
                                        const int32_t *t1, const int32_t *t2, int32x4_t mult, int32x4_t shift,
                                        int32x4_t vmin, int32x4_t vmax, int32_t zo)
{
    const int8_t *pa = *a, *pb = *b;
    int8_t *po = *o;
    int32_t k[16] __attribute__((aligned(8)));
    vstrwq_s32(k, mult);
    vstrwq_s32(k + 4, shift);
    vstrwq_s32(k + 8, vmin);
    vstrwq_s32(k + 12, vmax);
    __asm__ volatile("vldrw.u32 q4, [%[k]]\n\t"
                     "vldrw.u32 q5, [%[k], #16]\n\t"
                     "vldrw.u32 q6, [%[k], #32]\n\t"
                     "vldrw.u32 q7, [%[k], #48]\n\t"
                     "wls lr, %[n], 2f\n"
                     "1:\n\t"
                     "vldrb.s32 q0, [%[a]], #4\n\t"
                     "vldrb.s32 q1, [%[b]], #4\n\t"
                     "vldrw.u32 q2, [%[t1], q0, uxtw #2]\n\t"
                     "vldrw.u32 q3, [%[t2], q1, uxtw #2]\n\t"
                     "vqadd.s32 q2, q2, q3\n\t"
                     "vqdmulh.s32 q2, q2, q4\n\t"
                     "vrshl.s32 q2, q2, q5\n\t"
                     "vadd.i32 q2, q2, %[zo]\n\t"
                     "vmax.s32 q2, q2, q6\n\t"
                     "vmin.s32 q2, q2, q7\n\t"
                     "vstrb.32 q2, [%[o]], #4\n\t"
                     "le lr, 1b\n"
                     "2:\n\t"
                     : [a] "+l"(pa), [b] "+l"(pb), [o] "+l"(po) /* the widening loads need r0-r7 */
                     : [k] "r"(k), [n] "r"(blocks), [t1] "r"(t1), [t2] "r"(t2), [zo] "r"(zo)
                     : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
    *a = pa;
    *b = pb;
    *o = po;
}
#endif

#endif /* MCU_OPT_H */
