/* DSP (SIMD32) int8 depthwise 3x3, stride 1: a channel pair at a time, input lines widened once into rings. */

/*  - Stream (packing.pack_dwk_line_stream, k = 3), 10 words a channel: per window row the int16 pairs
 *    E = (w_0, w_1) and O = (w_1, w_2), the folded bias, the 3-word record (mcu_rq3_record). The window is taken
 *    along the longer of the output's two axes (its rows, or its columns when it has more rows than columns:
 *    codegen transposes the taps to match).
 *  - Scratch: two rings (a channel pair's) of 3 lines of int16, one per input line of the channel (the zero
 *    point in the padding). Each input byte is widened once; a ring line then serves the 3 output lines its
 *    window covers.
 *  - Two outputs a step from a window line's pairs W_0 = (x[0], x[1]), W_1 = (x[2], x[3]):
 *      o0 += SMLAD(W_0, E) + SMLABT(W_1, O)    o1 += SMLATB(W_0, E) + SMLAD(W_1, O)
 *    12 multiply instructions for 18 MACs (the step() below is written for any odd window, as the stream is).
 *  - The output may be the input itself: output byte (y, x, c) is written after the input line holding input
 *    byte (y, x, c) is in the ring, and only channels c, c + 1 are written while they are read.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#define CH_WORDS(k) ((k) * ((k) - 1) + 4)

/* The layer along its window axis: `lines` output lines of `len` outputs; input line i at in + i * in_line,
 * its elements in_step apart; output alike. */
typedef struct {
    int32_t lines, len, in_lines, in_len, pad_line, pad_len;
    int32_t in_line, in_step, out_line, out_step;
    int32_t ring; /* int16 elements of a ring line: len + k rounded up to 2 */
} axes_t;

static axes_t axes_of(const mcu_conv2d_params_t *p)
{
    const int32_t c = p->input.c, os = mcu_out_stride(p->output_pixel_stride, c);
    axes_t a;
    if (p->output.h > p->output.w) { /* lines are columns */
        a = (axes_t){p->output.w, p->output.h, p->input.w, p->input.h, p->pad_left, p->pad_top,
                     c, p->input.w * c, os, p->output.w * os, 0};
    } else {
        a = (axes_t){p->output.h, p->output.w, p->input.h, p->input.w, p->pad_top, p->pad_left,
                     p->input.w * c, c, p->output.w * os, os, 0};
    }
    a.ring = (a.len + p->filter.w + 1) & ~1;
    return a;
}

#if MCU_DSP_ASM
/* dst[0 .. 2 pairs) = src[0], src[step], ... widened (unaligned stores where dst is): 7 instructions a pair. */
static __attribute__((naked, noinline)) void fill_pairs_asm(int16_t *dst, const int8_t *src, int32_t step,
                                                            int32_t pairs)
{
    (void)dst, (void)src, (void)step, (void)pairs;
    __asm__ volatile("push {r4, r5, lr}\n"
                     "1:\n\t"
                     "ldrsb r4, [r1]\n\t"
                     "ldrsb r5, [r1, r2]\n\t"
                     "add r1, r1, r2, lsl #1\n\t"
                     "pkhbt r4, r4, r5, lsl #16\n\t"
                     "str r4, [r0], #4\n\t"
                     "subs r3, r3, #1\n\t"
                     "bne 1b\n\t"
                     "pop {r4, r5, pc}\n");
}

/* Two channels' lines at once: d0 = bytes src[0], src[step], ... and d1 = the bytes after them (src + 1, ...),
 * widened: an LDRH a pixel, 10 instructions a pair of pixels. */
static __attribute__((naked, noinline)) void fill2_pairs_asm(int16_t *d0, int16_t *d1, const int8_t *src,
                                                             int32_t step, int32_t pairs)
{
    (void)d0, (void)d1, (void)src, (void)step, (void)pairs;
    __asm__ volatile("push {r4, r5, r6, lr}\n\t"
                     "ldr r6, [sp, #16]\n"
                     "1:\n\t"
                     "ldrh r4, [r2]\n\t"
                     "ldrh r5, [r2, r3]\n\t"
                     "add r2, r2, r3, lsl #1\n\t"
                     "pkhbt r4, r4, r5, lsl #16\n\t"
                     "sxtb16 r5, r4\n\t"
                     "sxtb16 r4, r4, ror #8\n\t"
                     "str r5, [r0], #4\n\t"
                     "str r4, [r1], #4\n\t"
                     "subs r6, r6, #1\n\t"
                     "bne 1b\n\t"
                     "pop {r4, r5, r6, pc}\n");
}
#endif

/* The interior of ring line dst (elements pad_len .. pad_len + in_len, clipped to the ring) = input line `line`
 * of the channel at in_c, or the zero point outside the input; the rest of the line stays the zero point
 * (ring_edges). */
static void fill(const axes_t *a, const int8_t *in_c, int32_t line, int16_t zp, int16_t *dst)
{
    const int32_t n = a->pad_len + a->in_len < a->ring ? a->in_len : a->ring - a->pad_len;
    int16_t *d = dst + a->pad_len;
    int32_t i = 0;
    if (line < 0 || line >= a->in_lines) {
        for (; i < n; ++i) {
            d[i] = zp;
        }
        return;
    }
    const int8_t *src = in_c + line * a->in_line;
#if MCU_DSP_ASM
    if (n >= 2) {
        fill_pairs_asm(d, src, a->in_step, n / 2);
        i = n & ~1;
    }
#endif
    for (; i < n; ++i) {
        d[i] = src[i * a->in_step];
    }
}

/* Every ring line's elements outside its interior (both rings: 2 k lines): the zero point, once a call. */
static void ring_edges(const axes_t *a, int lines, int16_t zp, int16_t *ring)
{
    const int32_t n = a->pad_len + a->in_len < a->ring ? a->pad_len + a->in_len : a->ring;
    for (int r = 0; r < lines; ++r, ring += a->ring) {
        for (int32_t i = 0; i < a->pad_len; ++i) {
            ring[i] = zp;
        }
        for (int32_t i = n; i < a->ring; ++i) {
            ring[i] = zp;
        }
    }
}

MCU_INLINE uint32_t pair_at(const int16_t *line, int32_t i)
{
    return mcu_read_u32(line + i);
}

/* Outputs x and x + 1 of a line (window rows row[r] + x) into o[0], o[1], from bias b and stream block w. */
MCU_INLINE void step(const int16_t *const *row, int32_t x, const int32_t *w, const int k, int32_t b, int32_t o[2])
{
    const int m = k / 2;
    int32_t o0 = b, o1 = b;
    for (int r = 0; r < k; ++r) {
        const int16_t *src = row[r] + x;
        const uint32_t *e = (const uint32_t *)(const void *)(w + r * (k - 1)), *od = e + m - 1;
        const uint32_t w0 = pair_at(src, 0);
        o1 = mcu_smlatb(w0, e[0], o1);
        o0 = mcu_smlad(w0, e[0], o0);
        for (int j = 1; j < m; ++j) {
            const uint32_t wj = pair_at(src, 2 * j);
            o0 = mcu_smlad(wj, e[j], o0);
            o1 = mcu_smlad(wj, od[j], o1);
        }
        const uint32_t wm = pair_at(src, 2 * m);
        o0 = mcu_smlabt(wm, od[m], o0);
        o1 = mcu_smlad(wm, od[m], o1);
    }
    o[0] = o0, o[1] = o1;
}

#if MCU_DSP_ASM
/* The 3x3 assembly's arguments: the window rows' ring lines at the first output, the channel's stream block, its
 * first output, the bytes between outputs, the steps (2 outputs each) and whether one output follows them. */
typedef struct {
    const int16_t *row[3];
    const int32_t *w;
    int8_t *out;
    int32_t out_step, steps, odd;
} ring3_t;

/* A step of 2 outputs for a fast channel (its record's sh >= 0) under the int8 clamp: per window row an LDRD of 2 pairs, an LDRD of the
 * row's E_0, O_1 and 4 multiplies; the record (SMMLA, ASR, SSAT each). Registers: r1-r3 the rows, r4 the block,
 * r5 out, r6 its step, r7 steps left, r8-r9 pairs, r10-r11 weights, r0 and r12 the outputs, lr the bias. */
#define MCU_RING_ROW(q, off, first0, first1)                                                                \
    "ldrd r8, r9, [" q "], #4\n\t"                                                                          \
    "ldrd r10, r11, [r4, #" off "]\n\t"                                                                     \
    "smlad r0, r8, r10, " first0 "\n\t"                                                                     \
    "smlatb r12, r8, r10, " first1 "\n\t"                                                                   \
    "smlabt r0, r9, r11, r0\n\t"                                                                            \
    "smlad r12, r9, r11, r12\n\t"
#define MCU_RING_STEP                                                                                      \
    MCU_RING_ROW("r1", "0", "lr", "lr") MCU_RING_ROW("r2", "8", "r0", "r12")                                \
    MCU_RING_ROW("r3", "16", "r0", "r12")                                                                  \
    "ldrd r10, r11, [r4, #28]\n\t"                                                                         \
    "ldr r8, [r4, #36]\n\t"                                                                                \
    "smmla r0, r0, r10, r8\n\t"                                                                            \
    "asr r0, r0, r11\n\t"                                                                                  \
    "ssat r0, #8, r0\n\t"                                                                                  \
    "smmla r12, r12, r10, r8\n\t"                                                                          \
    "asr r12, r12, r11\n\t"                                                                                \
    "ssat r12, #8, r12\n\t"                                                                                \
    "strb r0, [r5]\n\t"

/* One output line: its steps (31 instructions for 18 MACs), then the odd last output (a step's first). */
static __attribute__((naked, noinline)) void ring3_asm(const ring3_t *a)
{
    (void)a;
    __asm__ volatile("push {r0, r4-r11, lr}\n\t"
                     "ldmia r0, {r1-r7}\n\t"
                     "ldr lr, [r4, #24]\n\t"
                     "cmp r7, #0\n\t"
                     "beq 2f\n"
                     "1:\n\t"
                     MCU_RING_STEP
                     "strb r12, [r5, r6]\n\t"
                     "add r5, r5, r6, lsl #1\n\t"
                     "subs r7, r7, #1\n\t"
                     "bne 1b\n"
                     "2:\n\t"
                     "ldr r8, [sp]\n\t"
                     "ldr r8, [r8, #28]\n\t"
                     "cmp r8, #0\n\t"
                     "beq 3f\n\t"
                     MCU_RING_STEP
                     "3:\n\t"
                     "pop {r0, r4-r11, pc}\n");
}
#undef MCU_RING_ROW
#undef MCU_RING_STEP
#endif

/* One output line of the channel with stream block w: row[r] the ring line under window row r (an odd last
 * output is a step's first; the ring holds the pairs past it). */
MCU_INLINE void line_out(const axes_t *a, int16_t *const *row, const int32_t *w, const int k,
                         const mcu_rq_mode_t *mode, int8_t *out)
{
    const int32_t bias = w[k * (k - 1)];
    const int32_t *rec = w + k * (k - 1) + 1;
    int32_t x = 0, o[2];
    const int16_t *const *r = (const int16_t *const *)row;
    for (; x + 2 <= a->len; x += 2, out += 2 * a->out_step) {
        step(r, x, w, k, bias, o);
        out[0] = mcu_rq3_out(o[0], rec, mode);
        out[a->out_step] = mcu_rq3_out(o[1], rec, mode);
    }
    if (x < a->len) {
        step(r, x, w, k, bias, o);
        out[0] = mcu_rq3_out(o[0], rec, mode);
    }
}

#if MCU_DSP_ASM
/* Whether ring3_asm runs the channel of stream block w: a 3x3 window, the int8 clamp, a fast record. */
static int fast3(const mcu_conv2d_params_t *p, const int32_t *w)
{
    return p->filter.w == 3 && w[3 * 2 + 2] >= 0 && p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX;
}

/* channel()'s lines for a fast 3x3 channel (ring3_asm): the three ring lines rotate by pointer, each new line's
 * interior is widened by fill_pairs_asm. */
static void channel3(const axes_t *a, const int8_t *in_c, const int32_t *w, int16_t zp, int16_t *ring,
                     int8_t *out_c)
{
    ring3_t args = {{ring, ring + a->ring, ring + 2 * a->ring}, w, out_c, a->out_step, a->len / 2, a->len % 2};
    fill(a, in_c, -a->pad_line, zp, ring);
    fill(a, in_c, 1 - a->pad_line, zp, ring + a->ring);
    const int32_t n = a->pad_len + a->in_len < a->ring ? a->in_len : a->ring - a->pad_len;
    int32_t line = 2 - a->pad_line;
    const int8_t *src = in_c + line * a->in_line;
    for (int32_t y = 0; y < a->lines; ++y, ++line, src += a->in_line, args.out += a->out_line) {
        int16_t *d = (int16_t *)(uintptr_t)args.row[2] + a->pad_len;
        if (line < a->in_lines && n >= 2) {
            fill_pairs_asm(d, src, a->in_step, n / 2);
            if (n & 1) {
                d[n - 1] = src[(n - 1) * a->in_step];
            }
        } else {
            fill(a, in_c, line, zp, d - a->pad_len);
        }
        ring3_asm(&args);
        const int16_t *first = args.row[0];
        args.row[0] = args.row[1], args.row[1] = args.row[2], args.row[2] = first;
    }
}

/* channel3 for channels c and c + 1 at once (both fast): their lines widened together (fill2_pairs_asm) into
 * two rings of three lines. */
static void channel3x2(const axes_t *a, const int8_t *in_c, const int32_t *w, int16_t zp, int16_t *ring,
                       int8_t *out_c)
{
    int16_t *ring1 = ring + 3 * a->ring;
    ring3_t a0 = {{ring, ring + a->ring, ring + 2 * a->ring}, w, out_c, a->out_step, a->len / 2, a->len % 2};
    ring3_t a1 = {{ring1, ring1 + a->ring, ring1 + 2 * a->ring}, w + CH_WORDS(3), out_c + 1, a->out_step,
                  a->len / 2, a->len % 2};
    for (int32_t r = 0; r < 2; ++r) {
        fill(a, in_c, r - a->pad_line, zp, ring + r * a->ring);
        fill(a, in_c + 1, r - a->pad_line, zp, ring1 + r * a->ring);
    }
    const int32_t n = a->pad_len + a->in_len < a->ring ? a->in_len : a->ring - a->pad_len;
    int32_t line = 2 - a->pad_line;
    const int8_t *src = in_c + line * a->in_line;
    for (int32_t y = 0; y < a->lines; ++y, ++line, src += a->in_line) {
        int16_t *d0 = (int16_t *)(uintptr_t)a0.row[2], *d1 = (int16_t *)(uintptr_t)a1.row[2];
        if (line < a->in_lines && n >= 2) {
            fill2_pairs_asm(d0 + a->pad_len, d1 + a->pad_len, src, a->in_step, n / 2);
            if (n & 1) {
                d0[a->pad_len + n - 1] = src[(n - 1) * a->in_step];
                d1[a->pad_len + n - 1] = src[(n - 1) * a->in_step + 1];
            }
        } else {
            fill(a, in_c, line, zp, d0);
            fill(a, in_c + 1, line, zp, d1);
        }
        ring3_asm(&a0);
        ring3_asm(&a1);
        a0.out += a->out_line, a1.out += a->out_line;
        const int16_t *f0 = a0.row[0], *f1 = a1.row[0];
        a0.row[0] = a0.row[1], a0.row[1] = a0.row[2], a0.row[2] = f0;
        a1.row[0] = a1.row[1], a1.row[1] = a1.row[2], a1.row[2] = f1;
    }
}
#endif

/* Every line of channel c (stream block w): the ring filled a line ahead of the window, its lines rotating. */
static void channel(const mcu_conv2d_params_t *p, const axes_t *a, const int8_t *in_c, const int32_t *w,
                    const mcu_rq_mode_t *mode, int16_t *ring, int8_t *out_c)
{
    const int k = p->filter.w;
    const int16_t zp = (int16_t)(-p->input_offset);
#if MCU_DSP_ASM
    if (fast3(p, w)) {
        channel3(a, in_c, w, zp, ring, out_c);
        return;
    }
#endif
    int16_t *slot[3];
    for (int r = 0; r < k; ++r) {
        slot[r] = ring + r * a->ring;
    }
    for (int r = 0; r < k - 1; ++r) { /* input lines -pad .. k - 2 - pad */
        fill(a, in_c, r - a->pad_line, zp, slot[r]);
    }
    int16_t *row[3];
    for (int32_t y = 0, first = 0; y < a->lines; ++y, out_c += a->out_line) { /* window row r: slot first + r */
        for (int r = 0, i = first; r < k; ++r, i = i + 1 < k ? i + 1 : 0) {
            row[r] = slot[i];
        }
        first = first + 1 < k ? first + 1 : 0;
        fill(a, in_c, y + k - 1 - a->pad_line, zp, row[k - 1]);
        line_out(a, row, w, 3, mode, out_c);
    }
}

mcu_status_t mcu_dwconv2d_s8_dsp_ring(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                      const int8_t *input, const int8_t *filter, const int32_t *bias,
                                      int8_t *scratch, int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    (void)bias; /* folded into the filter stream */
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t k = p->filter.w;
    if (!mcu_dw_shapes_ok(p) || k != 3 || p->filter.h != k || p->stride_h != 1 ||
        p->stride_w != 1 || p->dilation_h != 1 || p->dilation_w != 1) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c = p->input.c;
    const int32_t *w = (const int32_t *)(const void *)filter;
    mcu_rq_mode_t mode = {p->act_min, p->act_max, p->output_offset, 1, 0};
    for (int32_t ch = 0; ch < c; ++ch) {
        const int32_t *rec = w + ch * CH_WORDS(k) + CH_WORDS(k) - 3;
        if (mcu_rq3_check(rec, 1) != MCU_OK) {
            return MCU_ERR_ARG;
        }
        mode.records_fast = mode.records_fast && rec[1] >= 0;
    }
    mode.fast = mode.records_fast && p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX;
    const axes_t a = axes_of(p);
    int16_t *ring = (int16_t *)(void *)(((uintptr_t)scratch + 3u) & ~(uintptr_t)3u);
    ring_edges(&a, 2 * k, (int16_t)(-p->input_offset), ring);
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * p->input.h * p->input.w * c;
        int8_t *out_n = output + n * p->output.h * p->output.w * mcu_out_stride(p->output_pixel_stride, c);
        for (int32_t ch = 0; ch < c; ++ch) {
#if MCU_DSP_ASM
            if (ch + 1 < c && fast3(p, w + ch * CH_WORDS(k)) && fast3(p, w + (ch + 1) * CH_WORDS(k))) {
                channel3x2(&a, in_n + ch, w + ch * CH_WORDS(k), (int16_t)(-p->input_offset), ring, out_n + ch);
                ++ch;
                continue;
            }
#endif
            channel(p, &a, in_n + ch, w + ch * CH_WORDS(k), &mode, ring, out_n + ch);
        }
    }
    return MCU_OK;
}
