/* Geometry helpers shared by the kernels (int8 and float, portable and variants); not a public API. */
#ifndef MCU_UTIL_H
#define MCU_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_types.h"
#include "mcu/mcu_quant.h"

/* Every dim positive. */
static inline int mcu_dims_ok(const mcu_dims_t *d)
{
    return d->n > 0 && d->h > 0 && d->w > 0 && d->c > 0;
}

/* Taps t in [*lo, *hi) of a `taps`-long window at `base` with step `dil` such that 0 <= base + t*dil < size. */
static inline void mcu_tap_range(int32_t base, int32_t dil, int32_t taps, int32_t size, int32_t *lo, int32_t *hi)
{
    const int32_t first = base < 0 ? (dil - 1 - base) / dil : 0;
    int32_t end = size > base ? (size - base + dil - 1) / dil : 0;
    end = end < taps ? end : taps;
    *lo = first < end ? first : end;
    *hi = end;
}

/* A transposed conv's taps along one axis for output index o (pad the torch padding): k = *first, + stride, ...
 * < *end, each reading input index (o + pad - k) / stride, which falls by 1 a tap from its largest in-range value
 * (none: *first == *end). */
static inline void mcu_convt_taps(int32_t o, int32_t pad, int32_t stride, int32_t taps, int32_t in_size,
                                  int32_t *first, int32_t *end)
{
    const int32_t pos = o + pad; /* >= 0 */
    int32_t k = pos % stride;
    const int32_t excess = pos - k - (in_size - 1) * stride; /* > 0: the first taps read past the input */
    if (excess > 0) {
        k += (excess + stride - 1) / stride * stride;
    }
    const int32_t last = pos < taps - 1 ? pos : taps - 1;
    *first = k;
    *end = k <= last ? last + 1 : k;
}

/* One output coordinate's taps of a transposed conv: k0, k0 + stride, ... < k1, tap k0 reading input i0 and each
 * next tap the input before (mcu_convt_taps). */
typedef struct {
    int32_t k0, k1, i0;
} mcu_convt_span_t;

static inline mcu_convt_span_t mcu_convt_span(int32_t o, int32_t pad, int32_t stride, int32_t taps, int32_t in_size)
{
    mcu_convt_span_t s;
    mcu_convt_taps(o, pad, stride, taps, in_size, &s.k0, &s.k1);
    s.i0 = (o + pad - s.k0) / stride;
    return s;
}

/* A bilinear table of `size` (i0, i1, w1) triples indexing an axis of `in_size`, w1 in [0, 2^MCU_BILINEAR_BITS]. */
static inline int mcu_bilinear_taps_ok(const int16_t *taps, int32_t size, int32_t in_size)
{
    for (int32_t i = 0; i < 3 * size; i += 3) {
        if (taps[i] < 0 || taps[i] >= in_size || taps[i + 1] < 0 || taps[i + 1] >= in_size || taps[i + 2] < 0 ||
            taps[i + 2] > (1 << MCU_BILINEAR_BITS)) {
            return 0;
        }
    }
    return 1;
}

/* int8 offsets and activation range: input offset in [-127, 128] (minus an int8 zero point), output offset and
 * the clamp in int8, the clamp not empty. */
static inline int mcu_io_offsets_ok(int32_t in_off, int32_t out_off, int32_t act_min, int32_t act_max)
{
    return in_off >= -127 && in_off <= 128 && out_off >= -128 && out_off <= 127 && act_min >= -128 &&
           act_min <= act_max && act_max <= 127;
}

/* A matmul's batch layout: lhs batches all or 1, rhs batches 1 or serving rhs_group output batches each. */
static inline int mcu_matmul_layout_ok(const mcu_matmul_params_t *p)
{
    return (p->lhs_batches == p->batches || p->lhs_batches == 1) &&
           (p->rhs_batches == 1 || (p->rhs_group >= 1 && p->rhs_batches * p->rhs_group == p->batches)) &&
           (p->rhs_transposed == 0 || p->rhs_transposed == 1);
}

/* Where output batch b of a matmul reads its operands: its lhs and rhs batches' first elements, and rhs[t, j] at
 * t * row + j * col inside the rhs batch (row 1, col k when rhs_transposed). The layout every kernel that walks
 * batches shares. */
typedef struct {
    int32_t lhs, rhs, row, col;
} mcu_matmul_at_t;

static inline mcu_matmul_at_t mcu_matmul_at(const mcu_matmul_params_t *p, int32_t b)
{
    const mcu_matmul_at_t at = {p->lhs_batches == 1 ? 0 : b * p->m * p->k,
                                p->rhs_batches == 1 ? 0 : (b / p->rhs_group) * p->k * p->n,
                                p->rhs_transposed ? 1 : p->n, p->rhs_transposed ? p->k : 1};
    return at;
}

/* matmul pointers, scalar parameters and batch layout (mcu_matmul_s8 and its variants). */
static inline mcu_status_t mcu_matmul_check(const mcu_matmul_params_t *p, const void *lhs, const void *rhs,
                                            const void *output)
{
    if (p == NULL || lhs == NULL || rhs == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (p->batches < 1 || p->m < 1 || p->k < 1 || p->k > 32767 || p->n < 1 || p->lhs_offset < -127 ||
        p->lhs_offset > 128 || p->rhs_offset < -127 || p->rhs_offset > 128 || p->output_multiplier < 0 ||
        p->output_shift < -31 || p->output_shift > 30 ||
        !mcu_io_offsets_ok(0, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    return mcu_matmul_layout_ok(p) ? MCU_OK : MCU_ERR_SHAPE;
}

/* A matmul's output batches in blocks that read one rhs batch: rhs_group batches of M rows (contiguous lhs and
 * output rows) when the lhs has every batch, else one batch (a broadcast lhs). The optimized variants run each
 * block as one [rows, K] x rhs product. */
typedef struct {
    const int8_t *lhs, *rhs; /* the block's first lhs row and its rhs batch */
    int8_t *out;             /* the block's first output row */
    int32_t rows;            /* lhs (and output) rows in the block */
} mcu_matmul_block_t;

static inline int32_t mcu_matmul_blocks(const mcu_matmul_params_t *p)
{
    const int32_t per = p->rhs_batches == 1 ? p->batches : p->rhs_group;
    return p->lhs_batches == 1 ? p->batches : p->batches / per;
}

static inline mcu_matmul_block_t mcu_matmul_block(const mcu_matmul_params_t *p, int32_t blk, const int8_t *lhs,
                                                  const int8_t *rhs, int8_t *output)
{
    const int32_t per = p->rhs_batches == 1 ? p->batches : p->rhs_group;
    const int32_t b0 = p->lhs_batches == 1 ? blk : blk * per; /* the block's first output batch */
    mcu_matmul_block_t b = {lhs + (p->lhs_batches == 1 ? 0 : b0 * p->m * p->k),
                            rhs + (p->rhs_batches == 1 ? 0 : (b0 / p->rhs_group) * p->k * p->n),
                            output + b0 * p->m * p->n, p->lhs_batches == 1 ? p->m : per * p->m};
    return b;
}

/* int16 activations (a16w8): symmetric, so both offsets 0, and the clamp inside int16, not empty. */
static inline int mcu_io16_ok(int32_t in_off, int32_t out_off, int32_t act_min, int32_t act_max)
{
    return in_off == 0 && out_off == 0 && act_min >= -32768 && act_min <= act_max && act_max <= 32767;
}

/* mcu_matmul_s16's checks: mcu_matmul_check's with int16 activations (every offset 0, the clamp in int16); k up to
 * 32767 keeps the int64 sum exact. */
static inline mcu_status_t mcu_matmul_s16_check(const mcu_matmul_params_t *p, const void *lhs, const void *rhs,
                                                const void *output)
{
    if (p == NULL || lhs == NULL || rhs == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (p->batches < 1 || p->m < 1 || p->k < 1 || p->k > 32767 || p->n < 1 || p->lhs_offset != 0 ||
        p->rhs_offset != 0 || p->output_multiplier < 0 || p->output_shift < -31 || p->output_shift > 30 ||
        !mcu_io16_ok(0, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    return mcu_matmul_layout_ok(p) ? MCU_OK : MCU_ERR_SHAPE;
}

/* Every channel's requantization in range: multiplier >= 0, shift in [-31, 30]. */
static inline int mcu_quant_ok(const mcu_per_channel_quant_t *q, int32_t channels)
{
    for (int32_t c = 0; c < channels; ++c) {
        if (q->multiplier[c] < 0 || q->shift[c] < -31 || q->shift[c] > 30) {
            return 0;
        }
    }
    return 1;
}

/* int16-activation fully connected pointers and parameters (mcu_fully_connected_s16 and its DSP variants). */
static inline mcu_status_t mcu_fc_s16_check(const mcu_fc_params_t *p, const mcu_per_channel_quant_t *quant,
                                            const void *input, const void *weights, const void *output)
{
    if (p == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        weights == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (p->batches < 1 || p->in_features < 1 || p->out_features < 1 ||
        !mcu_io16_ok(p->input_offset, p->output_offset, p->act_min, p->act_max) ||
        !mcu_quant_ok(quant, p->out_features)) {
        return MCU_ERR_ARG;
    }
    return MCU_OK;
}

/* A conv's or pool's window geometry: input and output dims positive, strides and dilations >= 1, paddings >= 0. */
static inline int mcu_window_ok(const mcu_dims_t *in, const mcu_dims_t *out, int32_t stride_h, int32_t stride_w,
                                int32_t dilation_h, int32_t dilation_w, int32_t pad_top, int32_t pad_left)
{
    return mcu_dims_ok(in) && mcu_dims_ok(out) && stride_h >= 1 && stride_w >= 1 && dilation_h >= 1 &&
           dilation_w >= 1 && pad_top >= 0 && pad_left >= 0;
}

/* An output pixel stride a portable conv or pool honours: 0 (contiguous) or at least the pixel's channels. */
static inline int mcu_pixel_stride_ok(int32_t stride, int32_t channels)
{
    return stride == 0 || stride >= channels;
}

/* An output pixel stride that means contiguous output (what every variant kernel requires). */
static inline int mcu_pixel_stride_contiguous(int32_t stride, int32_t channels)
{
    return stride == 0 || stride == channels;
}

/* x clamped to [lo, hi] (a fused float ReLU / ReLU6); a NaN passes unchanged. */
static inline float mcu_clamp_float(float x, float lo, float hi)
{
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}

/* A conv params struct's (int8, int16 or float32) geometry: mcu_window_ok plus a valid filter and a pixel stride
 * the portable loop honours. */
#define MCU_CONV_GEOMETRY_OK(p)                                                                                 \
    (mcu_window_ok(&(p)->input, &(p)->output, (p)->stride_h, (p)->stride_w, (p)->dilation_h, (p)->dilation_w, \
                   (p)->pad_top, (p)->pad_left) && mcu_dims_ok(&(p)->filter) &&                               \
     mcu_pixel_stride_ok((p)->output_pixel_stride, (p)->output.c))

/* A conv's channels, filter [C_out, KH, KW, C_in / groups]: the groups divide C_in and C_out. */
static inline int mcu_conv_groups_ok(const mcu_dims_t *in, const mcu_dims_t *filter, const mcu_dims_t *out)
{
    return out->n == in->n && out->c == filter->n && in->c % filter->c == 0 && out->c % (in->c / filter->c) == 0;
}

/* A depthwise conv's channels, filter [1, KH, KW, C_out]: C_out a multiple of C_in (the channel multiplier). */
static inline int mcu_dw_shape_ok(const mcu_dims_t *in, const mcu_dims_t *filter, const mcu_dims_t *out)
{
    return out->n == in->n && filter->n == 1 && filter->c == out->c && out->c % in->c == 0;
}

/* The portable convolutions' filter layouts (mcu_conv_loop.h) and channel rules. */
typedef enum {
    MCU_CONV_REGULAR,  /* groups 1, OHWI [C_out, KH, KW, C_in] */
    MCU_CONV_GROUPED,  /* OHWI [C_out, KH, KW, C_in / groups] */
    MCU_CONV_DEPTHWISE /* [1, KH, KW, C_out], C_out a multiple of C_in */
} mcu_conv_kind_t;

static inline int mcu_conv_channels_ok(const mcu_dims_t *in, const mcu_dims_t *filter, const mcu_dims_t *out,
                                       mcu_conv_kind_t kind)
{
    if (kind == MCU_CONV_DEPTHWISE) {
        return mcu_dw_shape_ok(in, filter, out);
    }
    return mcu_conv_groups_ok(in, filter, out) && (kind == MCU_CONV_GROUPED || filter->c == in->c);
}

/* A pool's shapes: the same N and C in and out, and every window holding a valid tap; windows move
 * monotonically, so that holds iff it does for the first and the last ones. */
static inline int mcu_pool_shape_ok(const mcu_dims_t *in, const mcu_dims_t *out, int32_t kernel_h, int32_t kernel_w,
                                    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left)
{
    return out->n == in->n && out->c == in->c && pad_top < kernel_h && pad_left < kernel_w &&
           (out->h - 1) * stride_h - pad_top < in->h && (out->w - 1) * stride_w - pad_left < in->w;
}

/* A pool params struct's (int8, int16 or float32) geometry: the window (no dilation), a kernel of at least one
 * tap, a valid output pixel stride; and its shapes (mcu_pool_shape_ok). */
#define MCU_POOL_GEOMETRY_OK(p)                                                                                 \
    (mcu_window_ok(&(p)->input, &(p)->output, (p)->stride_h, (p)->stride_w, 1, 1, (p)->pad_top, (p)->pad_left) && \
     (p)->kernel_h >= 1 && (p)->kernel_w >= 1 && mcu_pixel_stride_ok((p)->output_pixel_stride, (p)->output.c))
#define MCU_POOL_SHAPE_OK(p)                                                                                    \
    mcu_pool_shape_ok(&(p)->input, &(p)->output, (p)->kernel_h, (p)->kernel_w, (p)->stride_h, (p)->stride_w,    \
                      (p)->pad_top, (p)->pad_left)

/* in broadcasts to out: every dim is positive and equals out's or is 1. */
static inline int mcu_broadcasts(const mcu_dims_t *in, const mcu_dims_t *out)
{
    return mcu_dims_ok(in) && (in->n == out->n || in->n == 1) && (in->h == out->h || in->h == 1) &&
           (in->w == out->w || in->w == 1) && (in->c == out->c || in->c == 1);
}

/* mcu_add_broadcast_s8's argument checks (its variants' too). */
static inline mcu_status_t mcu_add_broadcast_check(const mcu_add_broadcast_params_t *p, const void *input1,
                                                   const void *input2, const void *output)
{
    if (p == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_dims_t *o = &p->output;
    if (o->n < 1 || o->h < 1 || o->w < 1 || o->c < 1 || (p->subtract != 0 && p->subtract != 1) ||
        p->left_shift < 0 || p->left_shift > 23 || p->input1_offset < -127 || p->input1_offset > 128 ||
        p->input2_offset < -127 || p->input2_offset > 128 || p->output_offset < MCU_Q7_MIN ||
        p->output_offset > MCU_Q7_MAX || p->input1_multiplier < 0 || p->input2_multiplier < 0 ||
        p->output_multiplier < 0 || p->input1_shift < -31 || p->input1_shift > 30 || p->input2_shift < -31 ||
        p->input2_shift > 30 || p->output_shift < -31 || p->output_shift > 30 || p->act_min < MCU_Q7_MIN ||
        p->act_min > p->act_max || p->act_max > MCU_Q7_MAX) {
        return MCU_ERR_ARG;
    }
    return mcu_broadcasts(&p->input1, o) && mcu_broadcasts(&p->input2, o) ? MCU_OK : MCU_ERR_SHAPE;
}

/* mcu_add_broadcast_s16's checks (and its Helium variant's): mcu_add_broadcast_check's with int16 activations
 * (offsets 0, the clamp in int16) and left_shift <= 15, which keeps |in| << left_shift inside int32. */
static inline mcu_status_t mcu_add_broadcast_s16_check(const mcu_add_broadcast_params_t *p, const void *input1,
                                                       const void *input2, const void *output)
{
    if (p == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!mcu_dims_ok(&p->output) || (p->subtract != 0 && p->subtract != 1) || p->left_shift < 0 ||
        p->left_shift > 15 || p->input1_offset != 0 || p->input2_offset != 0 ||
        !mcu_io16_ok(0, p->output_offset, p->act_min, p->act_max) || p->input1_multiplier < 0 ||
        p->input2_multiplier < 0 || p->output_multiplier < 0 || p->input1_shift < -31 || p->input1_shift > 30 ||
        p->input2_shift < -31 || p->input2_shift > 30 || p->output_shift < -31 || p->output_shift > 30) {
        return MCU_ERR_ARG;
    }
    return mcu_broadcasts(&p->input1, &p->output) && mcu_broadcasts(&p->input2, &p->output) ? MCU_OK : MCU_ERR_SHAPE;
}

/* mcu_add_m16_s8's and mcu_add_h16_s8's argument checks (max_shift 24 and 15; their variants' too). */
static inline mcu_status_t mcu_add_m16_check(const mcu_add_m16_params_t *p, const void *input1, const void *input2,
                                             const void *output, int32_t max_shift)
{
    if (p == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_dims_t *o = &p->output;
    if (o->n < 1 || o->h < 1 || o->w < 1 || o->c < 1 || p->multiplier1 < -32767 || p->multiplier1 > 32767 ||
        p->multiplier2 < -32767 || p->multiplier2 > 32767 || p->shift < 1 || p->shift > max_shift ||
        p->bias < -(max_shift > 15 ? 0x40000000 : 32767) || p->bias > (max_shift > 15 ? 0x40000000 : 32767) ||
        p->act_min < MCU_Q7_MIN || p->act_min > p->act_max || p->act_max > MCU_Q7_MAX) {
        return MCU_ERR_ARG;
    }
    return mcu_broadcasts(&p->input1, o) && mcu_broadcasts(&p->input2, o) ? MCU_OK : MCU_ERR_SHAPE;
}

/* mcu_mul_s8's argument checks (its variants' too). */
static inline mcu_status_t mcu_mul_check(const mcu_mul_params_t *p, const void *input1, const void *input2,
                                         const void *output)
{
    if (p == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_dims_t *o = &p->output;
    if (o->n < 1 || o->h < 1 || o->w < 1 || o->c < 1 || p->input1_offset < -127 || p->input1_offset > 128 ||
        p->input2_offset < -127 || p->input2_offset > 128 || p->output_offset < MCU_Q7_MIN ||
        p->output_offset > MCU_Q7_MAX || p->output_multiplier < 0 || p->output_shift < -31 ||
        p->output_shift > 30 || p->act_min < MCU_Q7_MIN || p->act_min > p->act_max || p->act_max > MCU_Q7_MAX) {
        return MCU_ERR_ARG;
    }
    return mcu_broadcasts(&p->input1, o) && mcu_broadcasts(&p->input2, o) ? MCU_OK : MCU_ERR_SHAPE;
}

/* mcu_mul_h16_s8's argument checks (its variant's too): every shifted input and the multiplier fit int16. */
static inline mcu_status_t mcu_mul_h16_check(const mcu_mul_h16_params_t *p, const void *input1, const void *input2,
                                             const void *output)
{
    if (p == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_dims_t *o = &p->output;
    if (o->n < 1 || o->h < 1 || o->w < 1 || o->c < 1 || p->input1_offset < -127 || p->input1_offset > 128 ||
        p->input2_offset < -127 || p->input2_offset > 128 || p->shift1 < 0 || p->shift1 > 15 || p->shift2 < 0 ||
        p->shift2 > 15 || p->multiplier < 1 || p->multiplier > 32767 || p->shift < 0 || p->shift > 15 ||
        p->output_offset < MCU_Q7_MIN || p->output_offset > MCU_Q7_MAX || p->act_min < MCU_Q7_MIN ||
        p->act_min > p->act_max || p->act_max > MCU_Q7_MAX) {
        return MCU_ERR_ARG;
    }
    const int32_t r1 = p->input1_offset > 0 ? 127 + p->input1_offset : 128 - p->input1_offset;
    const int32_t r2 = p->input2_offset > 0 ? 127 + p->input2_offset : 128 - p->input2_offset;
    if ((r1 << p->shift1) > 32767 || (r2 << p->shift2) > 32767) {
        return MCU_ERR_ARG;
    }
    return mcu_broadcasts(&p->input1, o) && mcu_broadcasts(&p->input2, o) ? MCU_OK : MCU_ERR_SHAPE;
}

/* One output of mcu_mul_h16_s8 in C (its portable kernel, and the Helium variant's runs where neither input steps):
 * two VQRDMULH.S16 (the doubled product's rounded top half; the checked shifts never reach -32768 * -32768),
 * VRSHL, VQADD, the clamp. */
static inline int8_t mcu_mul_h16_element(const mcu_mul_h16_params_t *p, int32_t a, int32_t b)
{
    const int32_t x = (a + p->input1_offset) * (1 << p->shift1), y = (b + p->input2_offset) * (1 << p->shift2);
    const int32_t prod = (2 * x * y + (1 << 15)) >> 16, t = (2 * prod * p->multiplier + (1 << 15)) >> 16;
    const int32_t v = mcu_clamp_i32(((t + ((1 << p->shift) >> 1)) >> p->shift) + p->output_offset, -32768, 32767);
    return (int8_t)mcu_clamp_i32(v, p->act_min, p->act_max);
}

/* mcu_softmax_s8's argument checks (its variant's too): cols <= 65535 keeps the uint32 sum (and sum + e * 256)
 * from overflowing; exp_table[0] > 0 keeps it > 0. */
static inline mcu_status_t mcu_softmax_check(const mcu_softmax_params_t *p, const uint16_t *exp_table,
                                             const void *input, const void *output)
{
    if (p == NULL || exp_table == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    return p->rows < 1 || p->cols < 1 || p->cols > 65535 || exp_table[0] == 0 ? MCU_ERR_ARG : MCU_OK;
}

/* Element strides of d, 0 along broadcast dims: {n, h, w, c}. */
static inline void mcu_broadcast_strides(const mcu_dims_t *d, int32_t st[4])
{
    st[3] = d->c == 1 ? 0 : 1;
    st[2] = d->w == 1 ? 0 : d->c;
    st[1] = d->h == 1 ? 0 : d->w * d->c;
    st[0] = d->n == 1 ? 0 : d->h * d->w * d->c;
}

/* An average pool's output: the window's input sum over `taps` taps, less the zero point's share, divided by d
 * rounding half away from zero, back on the zero point and clamped (the portable kernel and every variant). */
static inline int8_t mcu_avg_pool_out(const mcu_pool2d_params_t *p, int32_t sum, int32_t taps, int32_t d)
{
    int32_t acc = sum - p->zero_point * taps;
    acc = acc >= 0 ? (acc + d / 2) / d : -((d / 2 - acc) / d);
    return (int8_t)mcu_clamp_i32(p->zero_point + acc, p->act_min, p->act_max);
}

/* dst[0 .. n) = src[0 .. n) a word at a time (GCC expands each 4-byte memcpy to what the core does: an unaligned
 * LDR/STR, bytes on the M0), not a call of newlib-nano's memcpy, which copies a byte at a time: for the short runs
 * of a slice or concat along channels. The empty asm keeps GCC from turning the loops back into that call. On
 * Helium, 16 bytes a step. */
static inline void mcu_copy_bytes(void *dst, const void *src, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
    /* Helium: 16 bytes a step in a tail-predicated loop (the last step's lanes past n inactive) */
    __asm__ volatile("wlstp.8 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vldrb.8 q0, [%[s]], #16\n\t"
                     "vstrb.8 q0, [%[d]], #16\n\t"
                     "letp lr, 1b\n"
                     "2:\n\t"
                     : [s] "+r"(s), [d] "+r"(d)
                     : [n] "r"(n)
                     : "lr", "q0", "memory");
#else
    for (; n >= 4; n -= 4, d += 4, s += 4) {
        uint32_t v;
        memcpy(&v, s, sizeof v);
#if defined(__GNUC__)
        __asm__("" : "+r"(v));
#endif
        memcpy(d, &v, sizeof v);
    }
    for (; n > 0; --n) {
        uint32_t v = *s++;
#if defined(__GNUC__)
        __asm__("" : "+r"(v));
#endif
        *d++ = (uint8_t)v;
    }
#endif
}

/* The copy of mcu_slice_s8 / _s16 / _f32 for elements of `elem` bytes: one run of `inner` elements per kept index,
 * the kept indices' runs as one where they are consecutive (step 1: a slice along the last dim, e.g. channels). */
static inline mcu_status_t mcu_slice_elems(const mcu_slice_params_t *params, const void *input, void *output,
                                           size_t elem)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_slice_params_t *p = params;
    if (p->outer < 1 || p->inner < 1 || p->out_len < 1 || p->step < 1 || p->start < 0 ||
        p->start + (int64_t)(p->out_len - 1) * p->step >= p->in_len) {
        return MCU_ERR_SHAPE;
    }
    const size_t run = (size_t)p->inner * elem;
    const uint8_t *in = (const uint8_t *)input + (size_t)p->start * run;
    uint8_t *out = (uint8_t *)output;
    const int32_t runs = p->step == 1 ? 1 : p->out_len;
    const size_t bytes = p->step == 1 ? (size_t)p->out_len * run : run;
    for (int32_t o = 0; o < p->outer; ++o) {
        const uint8_t *src = in + (size_t)o * (size_t)p->in_len * run;
        for (int32_t i = 0; i < runs; ++i) {
            mcu_copy_bytes(out, src, bytes);
            out += bytes;
            src += (size_t)p->step * run;
        }
    }
    return MCU_OK;
}

/* The row gather of mcu_gather_s8 / _s16 / _f32 for elements of `elem` bytes: every index checked before any
 * copy, so an index outside [0, rows) returns MCU_ERR_INDEX with nothing read outside the table. */
static inline mcu_status_t mcu_gather_elems(const mcu_gather_params_t *params, const void *table,
                                            const int32_t *indices, void *output, size_t elem)
{
    if (params == NULL || table == NULL || indices == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_gather_params_t *p = params;
    if (p->outer < 1 || p->rows < 1 || p->count < 1 || p->inner < 1) {
        return MCU_ERR_SHAPE;
    }
    for (int32_t i = 0; i < p->count; ++i) {
        if (indices[i] < 0 || indices[i] >= p->rows) {
            return MCU_ERR_INDEX;
        }
    }
    const size_t run = (size_t)p->inner * elem;
    uint8_t *out = (uint8_t *)output;
    for (int32_t o = 0; o < p->outer; ++o) {
        const uint8_t *src = (const uint8_t *)table + (size_t)o * (size_t)p->rows * run;
        for (int32_t i = 0; i < p->count; ++i) {
            memcpy(out, src + (size_t)indices[i] * run, run);
            out += run;
        }
    }
    return MCU_OK;
}

/* The row scatter of mcu_scatter_s8 / _s16 / _f32 for elements of `elem` bytes: every index checked before any
 * write (MCU_ERR_INDEX outside [0, rows)); the table copied to the output unless they are the same buffer. */
static inline mcu_status_t mcu_scatter_elems(const mcu_gather_params_t *params, const void *table,
                                             const int32_t *indices, const void *values, void *output, size_t elem)
{
    if (params == NULL || table == NULL || indices == NULL || values == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_gather_params_t *p = params;
    if (p->outer < 1 || p->rows < 1 || p->count < 1 || p->inner < 1) {
        return MCU_ERR_SHAPE;
    }
    for (int32_t i = 0; i < p->count; ++i) {
        if (indices[i] < 0 || indices[i] >= p->rows) {
            return MCU_ERR_INDEX;
        }
    }
    const size_t run = (size_t)p->inner * elem;
    if (output != table) {
        memcpy(output, table, (size_t)p->outer * (size_t)p->rows * run); /* the plan never overlaps them partly */
    }
    const uint8_t *src = (const uint8_t *)values;
    for (int32_t o = 0; o < p->outer; ++o) {
        uint8_t *dst = (uint8_t *)output + (size_t)o * (size_t)p->rows * run;
        for (int32_t i = 0; i < p->count; ++i) {
            memcpy(dst + (size_t)indices[i] * run, src, run);
            src += run;
        }
    }
    return MCU_OK;
}

/* The nearest upsampling of mcu_upsample_nearest_s8 / _f32 for elements of `elem` bytes (NHWC, integer factors). */
static inline mcu_status_t mcu_upsample_elems(const mcu_upsample_params_t *params, const void *input, void *output,
                                              size_t elem)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_upsample_params_t *p = params;
    const mcu_dims_t *d = &p->input;
    if (d->n < 1 || d->h < 1 || d->w < 1 || d->c < 1 || p->scale_h < 1 || p->scale_w < 1) {
        return MCU_ERR_ARG;
    }
    const size_t pixel = (size_t)d->c * elem, row = (size_t)(d->w * p->scale_w) * pixel;
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    for (int32_t n = 0; n < d->n; ++n) {
        for (int32_t y = 0; y < d->h; ++y) {
            const uint8_t *in_row = in + (size_t)(n * d->h + y) * (size_t)d->w * pixel;
            const uint8_t *first = out; /* the first of scale_h identical output rows */
            for (int32_t x = 0; x < d->w * p->scale_w; ++x) {
                memcpy(out, in_row + (size_t)(x / p->scale_w) * pixel, pixel);
                out += pixel;
            }
            for (int32_t r = 1; r < p->scale_h; ++r) {
                memcpy(out, first, row);
                out += row;
            }
        }
    }
    return MCU_OK;
}

/* The constant pad of mcu_pad_s8 / _s16 / _f32 for elements of `elem` bytes, `value` one padding element. */
static inline mcu_status_t mcu_pad_elems(const mcu_pad_params_t *params, const void *input, void *output, size_t elem,
                                         const void *value)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pad_params_t *p = params;
    if (p->outer < 1 || p->inner < 1 || p->in_len < 1 || p->before < 0 || p->after < 0) {
        return MCU_ERR_SHAPE;
    }
    const size_t run = (size_t)p->inner * elem, body = (size_t)p->in_len * run;
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    for (int32_t o = 0; o < p->outer; ++o) {
        for (size_t k = 0; k < (size_t)p->before * (size_t)p->inner; ++k, out += elem) {
            memcpy(out, value, elem);
        }
        memcpy(out, in, body);
        out += body;
        in += body;
        for (size_t k = 0; k < (size_t)p->after * (size_t)p->inner; ++k, out += elem) {
            memcpy(out, value, elem);
        }
    }
    return MCU_OK;
}

/* A transpose's walk (mcu_transpose_s8 / _s16 / _f32 and the Helium variant): od[i], st[i] and ost[i] are output
 * axis i's length and its input and output strides in elements; the innermost loop runs output axis `inner`, the
 * output's last, or the input's last where that is longer (reads in order, writes strided: a transpose within a
 * pixel, such as a channel shuffle, moves whole runs of channels), the loops outside it axes ax[0..2] in order. */
typedef struct {
    int32_t od[4], st[4], ost[4];
    int32_t inner, ax[3];
} mcu_transpose_plan_t;

/* The checks (NULL pointers, dims >= 1, perm a permutation of 0..3) and the walk of a transpose. */
static inline mcu_status_t mcu_transpose_plan(const mcu_transpose_params_t *params, const void *input,
                                              const void *output, mcu_transpose_plan_t *t)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    uint32_t seen = 0;
    for (int32_t i = 0; i < 4; ++i) {
        const int32_t a = params->perm[i];
        if (params->in_dims[i] < 1 || a < 0 || a > 3 || (seen & (1u << a)) != 0) {
            return MCU_ERR_ARG;
        }
        seen |= 1u << a;
    }
    const int32_t *d = params->in_dims;
    const int32_t in_stride[4] = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
    for (int32_t i = 0; i < 4; ++i) {
        t->od[i] = d[params->perm[i]];
        t->st[i] = in_stride[params->perm[i]];
    }
    t->ost[3] = 1;
    for (int32_t i = 2; i >= 0; --i) {
        t->ost[i] = t->ost[i + 1] * t->od[i + 1];
    }
    t->inner = 3;
    for (int32_t i = 0; i < 3; ++i) {
        t->inner = t->st[i] == 1 && t->od[i] > t->od[t->inner] ? i : t->inner;
    }
    for (int32_t i = 0, k = 0; i < 4; ++i) {
        if (i != t->inner) {
            t->ax[k++] = i;
        }
    }
    return MCU_OK;
}

/* The transpose of mcu_transpose_s8 / _f32 for elements of `elem` bytes: walks the output in order. */
static inline mcu_status_t mcu_transpose_elems(const mcu_transpose_params_t *params, const void *input, void *output,
                                               size_t elem)
{
    mcu_transpose_plan_t t;
    const mcu_status_t status = mcu_transpose_plan(params, input, output, &t);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t *od = t.od, *st = t.st, *ost = t.ost, *ax = t.ax, inner = t.inner;
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t n = (size_t)od[inner], sin = (size_t)st[inner] * elem, sout = (size_t)ost[inner] * elem;
    for (int32_t i0 = 0; i0 < od[ax[0]]; ++i0) {
        for (int32_t i1 = 0; i1 < od[ax[1]]; ++i1) {
            for (int32_t i2 = 0; i2 < od[ax[2]]; ++i2) {
                const uint8_t *src = in + (size_t)(i0 * st[ax[0]] + i1 * st[ax[1]] + i2 * st[ax[2]]) * elem;
                uint8_t *dst = out + (size_t)(i0 * ost[ax[0]] + i1 * ost[ax[1]] + i2 * ost[ax[2]]) * elem;
                if (sin == elem && sout == elem) {
                    mcu_copy_bytes(dst, src, n * elem);
                    continue;
                }
                for (size_t i3 = 0; i3 < n; ++i3, src += sin, dst += sout) {
                    memcpy(dst, src, elem);
                }
            }
        }
    }
    return MCU_OK;
}

/* The checks of every transposed conv kernel, in order: NULL pointers, geometry (dilation 1) and offsets
 * (MCU_ERR_ARG), channels (MCU_ERR_SHAPE), per-channel requantization (MCU_ERR_ARG). */
static inline mcu_status_t mcu_convt_check(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant,
                                           const void *input, const void *filter, const void *output)
{
    if (p == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (!MCU_CONV_GEOMETRY_OK(p) || p->dilation_h != 1 || p->dilation_w != 1 ||
        !mcu_io_offsets_ok(p->input_offset, p->output_offset, p->act_min, p->act_max)) {
        return MCU_ERR_ARG;
    }
    if (!mcu_conv_channels_ok(&p->input, &p->filter, &p->output, MCU_CONV_REGULAR)) {
        return MCU_ERR_SHAPE;
    }
    return mcu_quant_ok(quant, p->output.c) ? MCU_OK : MCU_ERR_ARG;
}

/* mcu_convt_check, and a variant's contiguous output pixels (the _dsp and _mve transposed convs). */
static inline mcu_status_t mcu_convt_variant_check(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant,
                                                   const void *input, const void *filter, const void *output)
{
    const mcu_status_t status = mcu_convt_check(p, quant, input, filter, output);
    if (status != MCU_OK) {
        return status;
    }
    return mcu_pixel_stride_contiguous(p->output_pixel_stride, p->output.c) ? MCU_OK : MCU_ERR_ARG;
}

#endif /* MCU_UTIL_H */
