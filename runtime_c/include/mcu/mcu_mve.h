/* The Helium (MVE) GEMM core shared by the _mve conv, 1x1 conv and fully connected kernels; not a public API.
 *
 *  - A block is up to 3 output pixels (or fc rows) times all output channels, 4 channels at a time. Each
 *    quad is two passes of one pair of channels (c, c+1), (c+2, c+3) over the pixels' windows: 6 VMLADAVA
 *    accumulators (3 pixels x 2 channels, 16 MACs each) against 3 input and 2 weight loads per 16-tap chunk,
 *    in inline assembly (GCC does not keep 6 accumulators, 4 pointers and 2 counters in registers itself).
 *  - A window is `rows` rows of `chunks` whole 16-tap chunks (one row pointer per pixel and row, from a table
 *    rows[r * 3 + j]), then, with one row only, a tail of 1..15 taps read predicated (inactive lanes zero).
 *  - Short one-row windows skip the pair passes (every shift negative): up to 16 taps the block's 3 inputs stay
 *    in Q registers across all quads (12 VMLADAVA per 4 weight loads); 17..64 taps (from 16 output channels)
 *    a pixel's 2..4 chunks stay in Q registers while its quads stream the weights (one load per VMLADAVA, the
 *    4 sums moved into a vector by 2 VMOV): no per-pair pointer, counter and bias reloads.
 *  - Requantization is vectorised over the quad: the 4 accumulators of a pixel form one vector; when every
 *    shift is negative (nearly every layer) it is VQDMULH then VRSHL (one rounding of acc * mult, exactly
 *    mcu_requantize), else mcu_mve_requantize's both paths.
 *  - Constants (codegen/passes/select_kernels.py, prepare_mve): weights int8 [C4/2 pairs][chunks][2][16], K
 *    padded with zero taps to whole chunks; bias (folded), multiplier and shift int32 [C4] (C4 = C_out
 *    rounded up to 4; padded channels are computed but never stored).
 *  - The block and row loops are compiled once (kernels/shared/mcu_gemm_s8_mve.c), linked by each kernel
 *    that calls them.
 */
#ifndef MCU_MVE_H
#define MCU_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE

typedef struct {
    const int8_t *w;                     /* [C4/2][chunks (+1 with a tail)][2][16] */
    const int32_t *bias, *mult, *shift;  /* [C4] */
    int32_t c_out, rows, chunks;
    uint32_t tail;                       /* VPR mask of the tail's taps (vctp8q), 0 without a tail */
    int32_t zo, act_min, act_max;
    int down;                            /* every channel's shift < 0 */
    int32_t ostride;                     /* elements from one output pixel to the next (>= c_out) */
} mcu_mve_gemm_t;

/* What the quad assembly reads (offsets fixed in the assembly). */
typedef struct {
    const int8_t *const *rows; /* 0: row table, rows[r * 3 + j] */
    int32_t nrows;             /* 4 */
    const int8_t *w;           /* 8: advanced past the quad */
    const int32_t *bias;       /* 12: the quad's 4 biases */
    int32_t chunks;            /* 16 */
    int32_t *acc;              /* 20: 12 words, pixel j's channels c..c+3 at acc + 4 j */
    uint32_t tail;             /* 24 */
} mcu_mve_quad_t;

/* One pair of channels over the 3 windows: accumulators (p0 c, p0 c+1, p1 c, p1 c+1, p2 c, p2 c+1) in r0, r2,
 * r4, r6, r8, r10 (VMLADAVA needs even registers) start at the pair's biases (bias + BOFF); row pointers r1,
 * r3, r5; weights r7; row table r12; rows left r11; chunks lr. Stored at acc + A0, A0 + 16, A0 + 32. */
#define MCU_MVE_MLA6                                                                                         \
    "vldrb.8 q3, [r7], #16\n\t"                                                                             \
    "vmladava.s8 r0, q0, q3\n\t"                                                                            \
    "vmladava.s8 r4, q1, q3\n\t"                                                                            \
    "vmladava.s8 r8, q2, q3\n\t"                                                                            \
    "vldrb.8 q3, [r7], #16\n\t"                                                                             \
    "vmladava.s8 r2, q0, q3\n\t"                                                                            \
    "vmladava.s8 r6, q1, q3\n\t"                                                                            \
    "vmladava.s8 r10, q2, q3\n\t"
#define MCU_MVE_TAIL                                                                                         \
    "ldr r11, [r9, #24]\n\t"                                                                                 \
    "vmsr p0, r11\n\t"                                                                                       \
    "vpsttt\n\t"                                                                                             \
    "vldrbt.8 q0, [r1]\n\t"                                                                                  \
    "vldrbt.8 q1, [r3]\n\t"                                                                                  \
    "vldrbt.8 q2, [r5]\n\t" MCU_MVE_MLA6
#define MCU_MVE_PAIR(BOFF, A0, A1, A2, TAIL)                                                                 \
    "ldr r12, [r9, #0]\n\t"                                                                                  \
    "ldr r11, [r9, #4]\n\t"                                                                                  \
    "ldr lr, [r9, #12]\n\t"                                                                                  \
    "ldrd r0, r2, [lr, #" BOFF "]\n\t"                                                                       \
    "ldrd r4, r6, [lr, #" BOFF "]\n\t"                                                                       \
    "ldrd r8, r10, [lr, #" BOFF "]\n"                                                                        \
    "3:\n\t"                                                                                                 \
    "ldm r12!, {r1, r3, r5}\n\t"                                                                             \
    "ldr lr, [r9, #16]\n\t"                                                                                  \
    "wls lr, lr, 2f\n"                                                                                       \
    "1:\n\t"                                                                                                 \
    "vldrb.8 q0, [r1], #16\n\t"                                                                              \
    "vldrb.8 q1, [r3], #16\n\t"                                                                              \
    "vldrb.8 q2, [r5], #16\n\t" MCU_MVE_MLA6 "le lr, 1b\n"                                                   \
    "2:\n\t"                                                                                                 \
    "subs r11, r11, #1\n\t"                                                                                  \
    "bne 3b\n\t" TAIL                                                                                        \
    "ldr r12, [r9, #20]\n\t"                                                                                 \
    "strd r0, r2, [r12, #" A0 "]\n\t"                                                                        \
    "strd r4, r6, [r12, #" A1 "]\n\t"                                                                        \
    "strd r8, r10, [r12, #" A2 "]\n\t"
#define MCU_MVE_QUAD_ASM(TAIL)                                                                               \
    __asm__ volatile("ldr r7, [r9, #8]\n\t" MCU_MVE_PAIR("0", "0", "16", "32", TAIL)                         \
                         MCU_MVE_PAIR("8", "8", "24", "40", TAIL) "str r7, [r9, #8]\n\t"                     \
                     :                                                                                       \
                     : "r"(q)                                                                                \
                     : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r10", "r11", "r12", "lr", "q0", \
                       "q1", "q2", "q3", "cc", "memory")

/* Both pairs of a quad (the accumulation of mcu_mve_gemm_block); with a tail (rows == 1), its taps read
 * predicated (inactive lanes zero). */
MCU_INLINE void mcu_mve_quad(mcu_mve_quad_t *state, int tail)
{
    register mcu_mve_quad_t *q __asm__("r9") = state;
    if (tail) {
        MCU_MVE_QUAD_ASM(MCU_MVE_TAIL);
    } else {
        MCU_MVE_QUAD_ASM("");
    }
}
#undef MCU_MVE_QUAD_ASM
#undef MCU_MVE_TAIL
#undef MCU_MVE_PAIR
#undef MCU_MVE_MLA6

/* One window of 17..32 taps (rows 1, chunks + tail 2): 3 pixels' two chunks held in x0..x2 and y0..y2 across every
 * quad; a quad's 8 weight vectors (w, post-incremented by 128), 24 VMLADAVA from its biases b, stored at acc. */
MCU_INLINE void mcu_mve_quad32(int8x16_t x0, int8x16_t x1, int8x16_t x2, int8x16_t y0, int8x16_t y1, int8x16_t y2,
                               const int8_t **w, const int32_t *b, int32_t *acc)
{
    const int8_t *wp = *w;
#define MCU_MVE_MLA3(X0, X1, X2, RA, RB, RC)                                                                     \
    "vldrb.u8 q7, [%[w]], #16\n\t"                                                                              \
    "vmladava.s8 " RA ", %q[" X0 "], q7\n\t"                                                                    \
    "vmladava.s8 " RB ", %q[" X1 "], q7\n\t"                                                                    \
    "vmladava.s8 " RC ", %q[" X2 "], q7\n\t"
#define MCU_MVE_PAIR32(BOFF, A0, A1, A2)                                                                         \
    "ldrd r0, r2, [%[b], #" BOFF "]\n\t"                                                                        \
    "ldrd r4, r6, [%[b], #" BOFF "]\n\t"                                                                        \
    "ldrd r8, r10, [%[b], #" BOFF "]\n\t" MCU_MVE_MLA3("x0", "x1", "x2", "r0", "r4", "r8")                      \
        MCU_MVE_MLA3("x0", "x1", "x2", "r2", "r6", "r10") MCU_MVE_MLA3("y0", "y1", "y2", "r0", "r4", "r8")        \
            MCU_MVE_MLA3("y0", "y1", "y2", "r2", "r6", "r10")                                                    \
    "strd r0, r2, [%[acc], #" A0 "]\n\t"                                                                        \
    "strd r4, r6, [%[acc], #" A1 "]\n\t"                                                                        \
    "strd r8, r10, [%[acc], #" A2 "]\n\t"
    __asm__ volatile(MCU_MVE_PAIR32("0", "0", "16", "32") MCU_MVE_PAIR32("8", "8", "24", "40")
                     : [w] "+&r"(wp)
                     : [x0] "w"(x0), [x1] "w"(x1), [x2] "w"(x2), [y0] "w"(y0), [y1] "w"(y1), [y2] "w"(y2),
                       [b] "r"(b), [acc] "r"(acc)
                     : "r0", "r2", "r4", "r6", "r8", "r10", "q7", "memory");
#undef MCU_MVE_PAIR32
#undef MCU_MVE_MLA3
    *w = wp;
}

/* Requantize, offset and clamp pixel j's 4 accumulators; store the first channels (predicate p). */
MCU_INLINE void mcu_mve_out4(const int32_t *acc, int32x4_t m, int32x4_t sh, int32_t zo, int32x4_t vmin,
                             int32x4_t vmax, int down, mve_pred16_t p, int8_t *out)
{
    const int32x4_t a = vldrwq_s32(acc);
    int32x4_t y = down ? vrshlq_s32(vqdmulhq_s32(a, m), sh) : mcu_mve_requantize(a, m, sh);
    vstrbq_p_s32(out, vminq_s32(vmaxq_s32(vaddq_n_s32(y, zo), vmin), vmax), p);
}

/* The common quad: 3 pixels, 4 whole channels, every shift negative: requantize (VQDMULH, VRSHL), offset,
 * clamp and store the 12 accumulators (pixel j's at acc + 4 j) at out, out + os, out + 2 os. */
MCU_INLINE void mcu_mve_out12_down(const int32_t *acc, const int32_t *m, const int32_t *sh, int32_t zo, int32_t lo,
                                   int32_t hi, int8_t *out, int32_t os)
{
#define MCU_MVE_OUT4(OFF)                                                                                        \
    "vldrw.u32 q3, [%[acc], #" OFF "]\n\t"                                                                      \
    "vqdmulh.s32 q3, q3, q4\n\t"                                                                                \
    "vrshl.s32 q3, q3, q5\n\t"                                                                                  \
    "vadd.i32 q3, q3, %[zo]\n\t"                                                                                \
    "vmax.s32 q3, q3, q6\n\t"                                                                                   \
    "vmin.s32 q3, q3, q7\n\t"                                                                                   \
    "vstrb.32 q3, [%[out]]\n\t"
    __asm__ volatile("vldrw.u32 q4, [%[m]]\n\t"
                     "vldrw.u32 q5, [%[sh]]\n\t"
                     "vdup.32 q6, %[lo]\n\t"
                     "vdup.32 q7, %[hi]\n\t" MCU_MVE_OUT4("0") "add %[out], %[out], %[os]\n\t" MCU_MVE_OUT4("16")
                     "add %[out], %[out], %[os]\n\t" MCU_MVE_OUT4("32")
                     : [out] "+&l"(out)
                     : [acc] "r"(acc), [m] "r"(m), [sh] "r"(sh), [zo] "r"(zo), [lo] "r"(lo), [hi] "r"(hi),
                       [os] "r"(os)
                     : "q3", "q4", "q5", "q6", "q7", "memory");
#undef MCU_MVE_OUT4
}

/* One window of at most 16 taps (rows 1, chunks + tail 1): 3 pixels' inputs held in x0..x2 across every quad;
 * a quad's 4 weight vectors (w, post-incremented by 64), 12 VMLADAVA from its biases b, stored at acc. */
MCU_INLINE void mcu_mve_quad16(int8x16_t x0, int8x16_t x1, int8x16_t x2, const int8_t **w, const int32_t *b,
                               int32_t *acc)
{
    const int8_t *wp = *w;
#define MCU_MVE_PAIR16(BOFF, A0, A1, A2)                                                                         \
    "ldrd r0, r2, [%[b], #" BOFF "]\n\t"                                                                        \
    "ldrd r4, r6, [%[b], #" BOFF "]\n\t"                                                                        \
    "ldrd r8, r10, [%[b], #" BOFF "]\n\t"                                                                       \
    "vldrb.u8 q3, [%[w]], #16\n\t"                                                                              \
    "vmladava.s8 r0, %q[x0], q3\n\t"                                                                            \
    "vmladava.s8 r4, %q[x1], q3\n\t"                                                                            \
    "vmladava.s8 r8, %q[x2], q3\n\t"                                                                            \
    "vldrb.u8 q3, [%[w]], #16\n\t"                                                                              \
    "vmladava.s8 r2, %q[x0], q3\n\t"                                                                            \
    "vmladava.s8 r6, %q[x1], q3\n\t"                                                                            \
    "vmladava.s8 r10, %q[x2], q3\n\t"                                                                           \
    "strd r0, r2, [%[acc], #" A0 "]\n\t"                                                                        \
    "strd r4, r6, [%[acc], #" A1 "]\n\t"                                                                        \
    "strd r8, r10, [%[acc], #" A2 "]\n\t"
    __asm__ volatile(MCU_MVE_PAIR16("0", "0", "16", "32") MCU_MVE_PAIR16("8", "8", "24", "40")
                     : [w] "+&r"(wp)
                     : [x0] "w"(x0), [x1] "w"(x1), [x2] "w"(x2), [b] "r"(b), [acc] "r"(acc)
                     : "r0", "r2", "r4", "r6", "r8", "r10", "q3", "memory");
#undef MCU_MVE_PAIR16
    *w = wp;
}

MCU_INLINE void mcu_mve_block_body(const int8_t *const *rows, const mcu_mve_gemm_t *g, int32_t npix, int8_t *out,
                                   int down)
{
    int32_t acc[12] __attribute__((aligned(8)));
    mcu_mve_quad_t s = {rows, g->rows, g->w, g->bias, g->chunks, acc, g->tail};
    const int32_t c_out = g->c_out, zo = g->zo, os = g->ostride;
    const int tail = g->tail != 0;
    const int32_t *mult = g->mult, *shift = g->shift;
    int32_t c = 0;
    if (down && npix == 3 && g->rows == 1 && g->chunks + tail == 1) { /* <= 16 taps: inputs held */
        const mve_pred16_t p = tail ? (mve_pred16_t)g->tail : 0xffff;
        const int8x16_t x0 = vldrbq_z_s8(rows[0], p), x1 = vldrbq_z_s8(rows[1], p), x2 = vldrbq_z_s8(rows[2], p);
        for (; c + 4 <= c_out; c += 4, s.bias += 4) {
            mcu_mve_quad16(x0, x1, x2, &s.w, s.bias, acc);
            mcu_mve_out12_down(acc, mult + c, shift + c, zo, g->act_min, g->act_max, out + c, os);
        }
    } else if (down && npix == 3 && g->rows == 1 && g->chunks + tail == 2) { /* 17..32 taps: inputs held */
        const mve_pred16_t p = tail ? (mve_pred16_t)g->tail : 0xffff;
        const int8x16_t x0 = vldrbq_s8(rows[0]), x1 = vldrbq_s8(rows[1]), x2 = vldrbq_s8(rows[2]);
        const int8x16_t y0 = vldrbq_z_s8(rows[0] + 16, p), y1 = vldrbq_z_s8(rows[1] + 16, p);
        const int8x16_t y2 = vldrbq_z_s8(rows[2] + 16, p);
        for (; c + 4 <= c_out; c += 4, s.bias += 4) {
            mcu_mve_quad32(x0, x1, x2, y0, y1, y2, &s.w, s.bias, acc);
            mcu_mve_out12_down(acc, mult + c, shift + c, zo, g->act_min, g->act_max, out + c, os);
        }
    }
    if (down && npix == 3) { /* whole quads of 3 pixels: requantized in assembly */
        for (; c + 4 <= c_out; c += 4, s.bias += 4) {
            mcu_mve_quad(&s, tail);
            mcu_mve_out12_down(acc, mult + c, shift + c, zo, g->act_min, g->act_max, out + c, os);
        }
    }
    const int32x4_t vmin = vdupq_n_s32(g->act_min), vmax = vdupq_n_s32(g->act_max);
    for (; c < c_out; c += 4, s.bias += 4) {
        mcu_mve_quad(&s, tail);
        const mve_pred16_t p = vctp32q((uint32_t)(c_out - c));
        const int32x4_t m = vldrwq_s32(mult + c), sh = vldrwq_s32(shift + c);
        mcu_mve_out4(acc, m, sh, zo, vmin, vmax, down, p, out + c);
        if (npix > 1) {
            mcu_mve_out4(acc + 4, m, sh, zo, vmin, vmax, down, p, out + os + c);
            if (npix > 2) {
                mcu_mve_out4(acc + 8, m, sh, zo, vmin, vmax, down, p, out + 2 * os + c);
            }
        }
    }
}

/* Up to 3 pixels (npix 1..3; the row table always holds 3, a missing pixel repeating another) times all
 * channels; pixel j's outputs at out + j * g->ostride. (shared/mcu_gemm_s8_mve.c, linked once) */
void mcu_mve_gemm_block(const int8_t *const *rows, const mcu_mve_gemm_t *g, int32_t npix, int8_t *out);

/* One row (rows == 1: fc or 1x1 with a single pixel) times all channels, 4 at a time (the quad's two pairs):
 * 4 VMLADAVA per input load, where a 3-pixel block would waste two thirds of its work. */
void mcu_mve_gemv(const int8_t *x, const mcu_mve_gemm_t *g, int8_t *out);

/* The GEMM of a prepared kernel: windows of `rows` rows of k taps (k a multiple of 16 when rows > 1); output
 * pixels `ostride` elements apart (c_out: contiguous). */
MCU_INLINE mcu_mve_gemm_t mcu_mve_gemm_of(const int8_t *w, const int32_t *bias, const mcu_per_channel_quant_t *q,
                                          int32_t c_out, int32_t rows, int32_t k, int32_t zo, int32_t act_min,
                                          int32_t act_max, int32_t ostride)
{
    int down = 1;
    for (int32_t c = 0; c < c_out; ++c) {
        down = down && q->shift[c] < 0;
    }
    const mcu_mve_gemm_t g = {w,  bias,   q->multiplier, q->shift, c_out,   rows,
                              k >> 4, (k & 15) ? (uint32_t)vctp8q((uint32_t)(k & 15)) : 0u,
                              zo, act_min, act_max, down, ostride};
    return g;
}

#endif /* MCU_HAVE_MVE */

#endif /* MCU_MVE_H */
