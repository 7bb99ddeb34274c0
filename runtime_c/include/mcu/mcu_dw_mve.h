/* The Helium depthwise tap loops and requantization of mcu_dwconv2d_s8_mve (inline assembly); not a public API.
 *
 *  - A pixel's 16 channels (two groups of 8, weights [C8 / 8][KH * KW][8]) over its window: per tap the input
 *    pointer from the table (post-incremented; rowstep bytes on to the next window row), two VLDRB.S16 of input
 *    and two of weights, 4 VMULL and 4 VADD into q0..q3 (even and odd channels of each group); 13 instructions
 *    per 16 MACs. GCC does not keep 4 accumulators, 3 pointers and the work registers in place itself.
 *  - Requantization when every shift is negative: VQDMULH, VRSHL (one rounding, as mcu_requantize), VQMOVNB/T
 *    to int16 in channel order, then offset (saturating) and clamp in int16 lanes.
 *  - mcu_dw_mve_run: a whole run of pixels (16 or 8 whole channels, a window 3 wide or any) in one block, its
 *    constants read from an mcu_dw_run_t.
 */
#ifndef MCU_DW_MVE_H
#define MCU_DW_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* A depthwise call's geometry: the table holds wt entries a window row, columns by residue modulo d (wq each). */
typedef struct {
    const int8_t *pad; /* C bytes of the input zero point */
    int32_t c, kh, kw, s, d, wq, wt;
    int32_t zo, lo, hi;
} dwk_t;

/* What mcu_dw_mve_run reads (offsets fixed in the assembly). */
typedef struct {
    const int8_t *wa, *wb;           /* 0, 4: the two groups' weights */
    const int32_t *bias, *m, *sh;    /* 8, 12, 16: lane-ordered, 16 channels */
    int32_t zo, lo, hi;              /* 20, 24, 28 */
    int32_t kh, rowstep, tstep, ostep; /* 32, 36, 40 (table bytes pixel to pixel), 44 (output bytes) */
    int32_t next;                    /* 48: bytes to the next pixel's mcu_dw_run_t (0: the same) */
} mcu_dw_run_t;

/* Accumulate 16 channels (two groups; T: the second's input loads predicated by p0) of n window rows of kw
 * taps: input pointers from the table at tp (post-incremented, then rowstep bytes to the next row), weights
 * from wa and wb. */
#define DW_LD(T, OFF) "vldrb" T ".s16 q4, [%[p], #" OFF "]\n\t"
#define DW_MAC(E, O)                                                                                             \
    "vmullb.s16 q7, q4, q6\n\t"                                                                                 \
    "vadd.i32 " E ", " E ", q7\n\t"                                                                             \
    "vmullt.s16 q7, q4, q6\n\t"                                                                                 \
    "vadd.i32 " O ", " O ", q7\n\t"
#define DW_TAP16(PST, T, EA, OA, EB, OB)                                                                                       \
    "ldr %[p], [%[tp]], #4\n\t"                                                                                 \
    "vldrb.s16 q6, [%[wa]], #8\n\t" DW_LD("", "0") DW_MAC(EA, OA)                                          \
    "vldrb.s16 q6, [%[wb]], #8\n\t" PST DW_LD(T, "8") DW_MAC(EB, OB)
#define DW_TAP8(PST, T, EA, OA)                                                                                        \
    "ldr %[p], [%[tp]], #4\n\t"                                                                                 \
    "vldrb.s16 q6, [%[wa]], #8\n\t" PST DW_LD(T, "0") DW_MAC(EA, OA)
#define DW_ROWS(TAP)                                                                                             \
    "1:\n\t"                                                                                                    \
    "dls lr, %[kw]\n"                                                                                           \
    "3:\n\t" TAP "le lr, 3b\n\t"                                                                                \
    "add %[tp], %[tp], %[rowstep]\n\t"                                                                          \
    "subs %[n], %[n], #1\n\t"                                                                                   \
    "bne 1b\n\t"
#define DW_ROWS3(TAP)                                                                                            \
    "1:\n\t" TAP TAP TAP "add %[tp], %[tp], %[rowstep]\n\t"                                                     \
    "subs %[n], %[n], #1\n\t"                                                                                   \
    "bne 1b\n\t"

MCU_INLINE void taps16(const uint32_t *tp, const int8_t *wa, const int8_t *wb, int32_t n, int32_t kw,
                       int32_t rowstep, uint32_t vpr, const int tail, int32x4_t a[4])
{
    int32x4_t ea = a[0], oa = a[1], eb = a[2], ob = a[3];
    const int8_t *p;
#define DW_OPERANDS                                                                                              \
    : [ea] "+&w"(ea), [oa] "+&w"(oa), [eb] "+&w"(eb), [ob] "+&w"(ob), [tp] "+&r"(tp), [wa] "+&l"(wa), [wb] "+&l"(wb), \
      [n] "+&r"(n), [p] "=&l"(p)                                                                                 \
    : [kw] "r"(kw), [rowstep] "r"(rowstep), [vpr] "r"(vpr)                                                      \
    : "lr", "q4", "q6", "q7", "cc", "memory"
    if (tail) {
        __asm__ volatile("vmsr p0, %[vpr]\n\t" DW_ROWS(DW_TAP16("vpst\n\t", "t", "%q[ea]", "%q[oa]", "%q[eb]", "%q[ob]")) DW_OPERANDS);
    } else if (kw == 3) {
        __asm__ volatile(DW_ROWS3(DW_TAP16("", "", "%q[ea]", "%q[oa]", "%q[eb]", "%q[ob]")) DW_OPERANDS);
    } else {
        __asm__ volatile(DW_ROWS(DW_TAP16("", "", "%q[ea]", "%q[oa]", "%q[eb]", "%q[ob]")) DW_OPERANDS);
    }
    a[0] = ea, a[1] = oa, a[2] = eb, a[3] = ob;
}

/* As taps16, one group (8 channels; tail: its input loads predicated by p0). */
MCU_INLINE void taps8(const uint32_t *tp, const int8_t *wa, int32_t n, int32_t kw, int32_t rowstep, uint32_t vpr,
                      const int tail, int32x4_t a[4])
{
    int32x4_t ea = a[0], oa = a[1], eb = a[2], ob = a[3]; /* eb, ob untouched */
    const int8_t *p, *wb = wa;
    if (tail) {
        __asm__ volatile("vmsr p0, %[vpr]\n\t" DW_ROWS(DW_TAP8("vpst\n\t", "t", "%q[ea]", "%q[oa]")) DW_OPERANDS);
    } else if (kw == 3) {
        __asm__ volatile(DW_ROWS3(DW_TAP8("", "", "%q[ea]", "%q[oa]")) DW_OPERANDS);
    } else {
        __asm__ volatile(DW_ROWS(DW_TAP8("", "", "%q[ea]", "%q[oa]")) DW_OPERANDS);
    }
    a[0] = ea, a[1] = oa;
}

/* Requantize, when every shift is negative, one group's accumulators E, O (lane-ordered multipliers at m + OFF,
 * m + OFF + 16 bytes, shifts likewise at sh): VQDMULH then VRSHL, one rounding as mcu_requantize. */
#define DW_REQ(E, O, OFF, M, SH)                                                                                 \
    "vldrw.u32 q4, [" M ", #" OFF "]\n\t"                                                                       \
    "vldrw.u32 q5, [" M ", #" OFF "+16]\n\t"                                                                    \
    "vldrw.u32 q6, [" SH ", #" OFF "]\n\t"                                                                      \
    "vldrw.u32 q7, [" SH ", #" OFF "+16]\n\t"                                                                   \
    "vqdmulh.s32 " E ", " E ", q4\n\t"                                                                          \
    "vqdmulh.s32 " O ", " O ", q5\n\t"                                                                          \
    "vrshl.s32 " E ", " E ", q6\n\t"                                                                            \
    "vrshl.s32 " O ", " O ", q7\n\t"
/* Narrow E, O to int16 lanes in channel order in Q (saturating), offset (saturating) and clamp (q6, q7). */
#define DW_NARROW(Q, E, O, ZO)                                                                                   \
    "vqmovnb.s32 " Q ", " E "\n\t"                                                                              \
    "vqmovnt.s32 " Q ", " O "\n\t"                                                                              \
    "vqadd.s16 " Q ", " Q ", " ZO "\n\t"                                                                         \
    "vmax.s16 " Q ", " Q ", q6\n\t"                                                                             \
    "vmin.s16 " Q ", " Q ", q7\n\t"
#define DW_CLAMP(LO, HI)                                                                                         \
    "vdup.16 q6, " LO "\n\t"                                                                                    \
    "vdup.16 q7, " HI "\n\t"
#define DW_OUT_OPERANDS                                                                                          \
    : [ea] "+&w"(a[0]), [oa] "+&w"(a[1]), [eb] "+&w"(a[2]), [ob] "+&w"(a[3])                                        \
    : [m] "r"(m), [sh] "r"(sh), [zo] "r"(k->zo), [lo] "r"(k->lo), [hi] "r"(k->hi), [out] "l"(out), [vpr] "r"(vpr) \
    : "q4", "q5", "q6", "q7", "memory"

/* Requantize (every shift negative), offset, clamp and store 16 channels (tail: the second 8 under p0 = vpr). */
MCU_INLINE void out16_down(int32x4_t a[4], const int32_t *m, const int32_t *sh, const dwk_t *k, uint32_t vpr,
                           const int tail, int8_t *out)
{
    if (tail) {
        __asm__ volatile(DW_REQ("%q[ea]", "%q[oa]", "0", "%[m]", "%[sh]") DW_REQ("%q[eb]", "%q[ob]", "32", "%[m]", "%[sh]") DW_CLAMP("%[lo]", "%[hi]") DW_NARROW("q4", "%q[ea]", "%q[oa]", "%[zo]")
                             DW_NARROW("q5", "%q[eb]", "%q[ob]", "%[zo]") "vstrb.16 q4, [%[out]]\n\t"
                                                         "vmsr p0, %[vpr]\n\t"
                                                         "vpst\n\t"
                                                         "vstrbt.16 q5, [%[out], #8]\n\t" DW_OUT_OPERANDS);
    } else {
        __asm__ volatile(DW_REQ("%q[ea]", "%q[oa]", "0", "%[m]", "%[sh]") DW_REQ("%q[eb]", "%q[ob]", "32", "%[m]", "%[sh]") DW_CLAMP("%[lo]", "%[hi]") DW_NARROW("q4", "%q[ea]", "%q[oa]", "%[zo]")
                             DW_NARROW("q5", "%q[eb]", "%q[ob]", "%[zo]") "vstrb.16 q4, [%[out]]\n\t"
                                                         "vstrb.16 q5, [%[out], #8]\n\t" DW_OUT_OPERANDS);
    }
}

/* As out16_down, 8 channels (tail: under p0 = vpr). */
MCU_INLINE void out8_down(int32x4_t a[4], const int32_t *m, const int32_t *sh, const dwk_t *k, uint32_t vpr,
                          const int tail, int8_t *out)
{
    if (tail) {
        __asm__ volatile(DW_REQ("%q[ea]", "%q[oa]", "0", "%[m]", "%[sh]") DW_CLAMP("%[lo]", "%[hi]") DW_NARROW("q4", "%q[ea]", "%q[oa]", "%[zo]") "vmsr p0, %[vpr]\n\t"
                                                                                      "vpst\n\t"
                                                                                      "vstrbt.16 q4, [%[out]]\n\t"
                             DW_OUT_OPERANDS);
    } else {
        __asm__ volatile(DW_REQ("%q[ea]", "%q[oa]", "0", "%[m]", "%[sh]") DW_CLAMP("%[lo]", "%[hi]") DW_NARROW("q4", "%q[ea]", "%q[oa]", "%[zo]") "vstrb.16 q4, [%[out]]\n\t"
                             DW_OUT_OPERANDS);
    }
}


/* Requantize one group's accumulators e, o (lane-ordered params at m, m + 4, sh, sh + 4) to int16 lanes in
 * channel order, any shifts (mcu_mve_requantize). */
MCU_INLINE int16x8_t mcu_dw_mve_narrow8(int32x4_t e, int32x4_t o, const int32_t *m, const int32_t *sh)
{
    const int32x4_t me = vldrwq_s32(m), mo = vldrwq_s32(m + 4), se = vldrwq_s32(sh), so = vldrwq_s32(sh + 4);
    e = mcu_mve_requantize(e, me, se);
    o = mcu_mve_requantize(o, mo, so);
    return vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), e), o);
}

/* Offset, clamp and store the channels of pr. */
MCU_INLINE void mcu_dw_mve_store8(int16x8_t y, const dwk_t *k, mve_pred16_t pr, int8_t *out)
{
    y = vqaddq_n_s16(y, (int16_t)k->zo);
    y = vminq_s16(vmaxq_s16(y, vdupq_n_s16((int16_t)k->lo)), vdupq_n_s16((int16_t)k->hi));
    vstrbq_p_s16(out, y, pr);
}

/* One output pixel, channels 0..15 (g2) or 0..7 of weights w (groups [KH * KW][8]), lane-ordered bias, m, sh;
 * the last 8 predicated by pr (tail); taps from the table at tp (KW consecutive entries a window row, rowstep
 * bytes on to the next). */
MCU_INLINE void mcu_dw_mve_pixel(const dwk_t *k, const uint32_t *tp, int32_t rowstep, const int8_t *w,
                                 const int32_t *bias, const int32_t *m, const int32_t *sh, mve_pred16_t pr,
                                 const int g2, const int tail, const int down, int8_t *out)
{
    const uint32_t vpr = pr;
    int32x4_t a[4] = {vldrwq_s32(bias), vldrwq_s32(bias + 4), vdupq_n_s32(0), vdupq_n_s32(0)};
    if (g2) {
        a[2] = vldrwq_s32(bias + 8), a[3] = vldrwq_s32(bias + 12);
        taps16(tp, w, w + 8 * k->kh * k->kw, k->kh, k->kw, rowstep, vpr, tail, a);
    } else {
        taps8(tp, w, k->kh, k->kw, rowstep, vpr, tail, a);
    }
    if (down && g2) {
        out16_down(a, m, sh, k, vpr, tail, out);
    } else if (down) {
        out8_down(a, m, sh, k, vpr, tail, out);
    } else {
        mcu_dw_mve_store8(mcu_dw_mve_narrow8(a[0], a[1], m, sh), k, g2 ? 0xffff : pr, out);
        if (g2) {
            mcu_dw_mve_store8(mcu_dw_mve_narrow8(a[2], a[3], m + 8, sh + 8), k, pr, out + 8);
        }
    }
}

/* npx pixels of 16 (g2) or 8 whole channels (every shift negative): pixel i's table from tb + i * r->tstep
 * bytes, its output at out + i * r->ostep, its constants r->next bytes on from pixel i - 1's; a window 3 wide unrolled, else kw taps a row. */
#define DW_RUN(ROWS, BIAS, REQ, NARROW, STORE)                                                                   \
    "5:\n\t"                                                                                                    \
    "ldr %[p], [%[r], #8]\n\t" BIAS                                                                             \
    "ldrd %[wa], %[wb], [%[r]]\n\t"                                                                             \
    "ldr %[n], [%[r], #32]\n\t"                                                                                 \
    "ldr %[rowstep], [%[r], #36]\n\t"                                                                           \
    "mov %[tp], %[tb]\n\t" ROWS                                                                                 \
    "ldrd %[wa], %[wb], [%[r], #12]\n\t" REQ                                                                    \
    "ldrd %[n], %[tp], [%[r], #24]\n\t"                                                                         \
    "ldr %[p], [%[r], #20]\n\t" DW_CLAMP("%[n]", "%[tp]") NARROW STORE                                          \
    "ldrd %[n], %[p], [%[r], #40]\n\t"                                                                          \
    "add %[tb], %[tb], %[n]\n\t"                                                                                \
    "add %[out], %[out], %[p]\n\t"                                                                              \
    "ldr %[n], [%[r], #48]\n\t"                                                                                 \
    "add %[r], %[r], %[n]\n\t"                                                                                  \
    "subs %[npx], %[npx], #1\n\t"                                                                               \
    "bne 5b\n\t"
#define DW_BIAS8                                                                                                 \
    "vldrw.u32 q0, [%[p]]\n\t"                                                                                  \
    "vldrw.u32 q1, [%[p], #16]\n\t"
#define DW_BIAS16 DW_BIAS8                                                                                       \
    "vldrw.u32 q2, [%[p], #32]\n\t"                                                                             \
    "vldrw.u32 q3, [%[p], #48]\n\t"
#define DW_REQ8 DW_REQ("q0", "q1", "0", "%[wa]", "%[wb]")
#define DW_REQ16 DW_REQ8 DW_REQ("q2", "q3", "32", "%[wa]", "%[wb]")
#define DW_NARROW8 DW_NARROW("q4", "q0", "q1", "%[p]")
#define DW_NARROW16 DW_NARROW8 DW_NARROW("q5", "q2", "q3", "%[p]")
#define DW_STORE8 "vstrb.16 q4, [%[out]]\n\t"
#define DW_STORE16 DW_STORE8 "vstrb.16 q5, [%[out], #8]\n\t"
#define DW_T16 DW_TAP16("", "", "q0", "q1", "q2", "q3")
#define DW_T8 DW_TAP8("", "", "q0", "q1")

#define DW_RUN_OPERANDS                                                                                          \
    : [tb] "+&r"(tb), [npx] "+&r"(npx), [out] "+&l"(out), [wa] "=&l"(wa), [wb] "=&l"(wb), [p] "=&l"(p),        \
      [tp] "=&r"(tp), [n] "=&r"(n), [rowstep] "=&r"(rowstep), [r] "+&r"(r)                                       \
    : [kw] "r"(kw)                                                                                              \
    : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory"

MCU_INLINE void mcu_dw_mve_run(const mcu_dw_run_t *r, const uint32_t *tb, int32_t npx, int32_t kw, const int g2,
                               int8_t *out)
{
    const int8_t *wa, *wb, *p;
    const uint32_t *tp;
    int32_t n, rowstep;
    if (g2 && kw == 3) {
        __asm__ volatile(DW_RUN(DW_ROWS3(DW_T16), DW_BIAS16, DW_REQ16, DW_NARROW16, DW_STORE16) DW_RUN_OPERANDS);
    } else if (g2) {
        __asm__ volatile(DW_RUN(DW_ROWS(DW_T16), DW_BIAS16, DW_REQ16, DW_NARROW16, DW_STORE16) DW_RUN_OPERANDS);
    } else if (kw == 3) {
        __asm__ volatile(DW_RUN(DW_ROWS3(DW_T8), DW_BIAS8, DW_REQ8, DW_NARROW8, DW_STORE8) DW_RUN_OPERANDS);
    } else {
        __asm__ volatile(DW_RUN(DW_ROWS(DW_T8), DW_BIAS8, DW_REQ8, DW_NARROW8, DW_STORE8) DW_RUN_OPERANDS);
    }
}

/* Pairs of pixels of 8 whole channels (every shift negative): npx pairs, pixel 2i's table from tb + 2i tstep
 * bytes and 2i + 1's tstep on (in wb), each weight load serving both (12 instructions a tap of 16 MACs). */
#define DW_TAPP                                                                                                  \
    "vldrb.s16 q6, [%[wa]], #8\n\t"                                                                             \
    "ldr %[p], [%[tp]], #4\n\t"                                                                                 \
    "vldrb.s16 q4, [%[p]]\n\t" DW_MAC("q0", "q1") "ldr %[p], [%[wb]], #4\n\t"                                   \
    "vldrb.s16 q4, [%[p]]\n\t" DW_MAC("q2", "q3")
#define DW_ROWSP(TAPS)                                                                                           \
    "1:\n\t" TAPS "add %[tp], %[tp], %[rowstep]\n\t"                                                            \
    "add %[wb], %[wb], %[rowstep]\n\t"                                                                          \
    "subs %[n], %[n], #1\n\t"                                                                                   \
    "bne 1b\n\t"
#define DW_LOOPP                                                                                                 \
    "dls lr, %[kw]\n"                                                                                           \
    "3:\n\t" DW_TAPP "le lr, 3b\n\t"
#define DW_RUNP(TAPS)                                                                                            \
    "5:\n\t"                                                                                                    \
    "ldr %[p], [%[r], #8]\n\t"                                                                                  \
    "vldrw.u32 q0, [%[p]]\n\t"                                                                                  \
    "vldrw.u32 q1, [%[p], #16]\n\t"                                                                             \
    "vmov q2, q0\n\t"                                                                                           \
    "vmov q3, q1\n\t"                                                                                           \
    "ldr %[wa], [%[r]]\n\t"                                                                                     \
    "ldr %[wb], [%[r], #40]\n\t"                                                                                \
    "ldr %[n], [%[r], #32]\n\t"                                                                                 \
    "ldr %[rowstep], [%[r], #36]\n\t"                                                                           \
    "mov %[tp], %[tb]\n\t"                                                                                      \
    "add %[wb], %[wb], %[tb]\n\t" DW_ROWSP(TAPS)                                                                \
    "ldrd %[wa], %[wb], [%[r], #12]\n\t"                                                                        \
    "vldrw.u32 q4, [%[wa]]\n\t"                                                                                 \
    "vldrw.u32 q5, [%[wa], #16]\n\t"                                                                            \
    "vldrw.u32 q6, [%[wb]]\n\t"                                                                                 \
    "vldrw.u32 q7, [%[wb], #16]\n\t"                                                                            \
    "vqdmulh.s32 q0, q0, q4\n\t"                                                                                \
    "vqdmulh.s32 q2, q2, q4\n\t"                                                                                \
    "vqdmulh.s32 q1, q1, q5\n\t"                                                                                \
    "vqdmulh.s32 q3, q3, q5\n\t"                                                                                \
    "vrshl.s32 q0, q0, q6\n\t"                                                                                  \
    "vrshl.s32 q2, q2, q6\n\t"                                                                                  \
    "vrshl.s32 q1, q1, q7\n\t"                                                                                  \
    "vrshl.s32 q3, q3, q7\n\t"                                                                                  \
    "ldrd %[n], %[tp], [%[r], #24]\n\t"                                                                         \
    "ldr %[p], [%[r], #20]\n\t" DW_CLAMP("%[n]", "%[tp]") DW_NARROW("q4", "q0", "q1", "%[p]")                   \
    DW_NARROW("q5", "q2", "q3", "%[p]") "vstrb.16 q4, [%[out]]\n\t"                                             \
    "ldrd %[n], %[p], [%[r], #40]\n\t"                                                                          \
    "add %[out], %[out], %[p]\n\t"                                                                              \
    "vstrb.16 q5, [%[out]]\n\t"                                                                                 \
    "add %[out], %[out], %[p]\n\t"                                                                              \
    "add %[tb], %[tb], %[n], lsl #1\n\t"                                                                        \
    "subs %[npx], %[npx], #1\n\t"                                                                               \
    "bne 5b\n\t"

MCU_INLINE void mcu_dw_mve_run_pairs8(const mcu_dw_run_t *r, const uint32_t *tb, int32_t npx, int32_t kw,
                                      int8_t *out)
{
    const int8_t *wa, *p;
    const uint32_t *tp, *wb;
    int32_t n, rowstep;
    if (kw == 3) {
        __asm__ volatile(DW_RUNP(DW_TAPP DW_TAPP DW_TAPP) DW_RUN_OPERANDS);
    } else {
        __asm__ volatile(DW_RUNP(DW_LOOPP) DW_RUN_OPERANDS);
    }
}
#undef DW_RUNP
#undef DW_LOOPP
#undef DW_ROWSP
#undef DW_TAPP
#undef DW_RUN_OPERANDS
#undef DW_T8
#undef DW_T16
#undef DW_STORE16
#undef DW_STORE8
#undef DW_NARROW16
#undef DW_NARROW8
#undef DW_REQ16
#undef DW_REQ8
#undef DW_BIAS16
#undef DW_BIAS8
#undef DW_RUN
#undef DW_OPERANDS
#undef DW_ROWS
#undef DW_ROWS3
#undef DW_TAP8
#undef DW_TAP16
#undef DW_MAC
#undef DW_LD
#undef DW_OUT_OPERANDS
#undef DW_CLAMP
#undef DW_NARROW
#undef DW_REQ
/* Every output row of a depthwise call (the checks done): mcu_dwconv2d_s8_mve, or (pixelwise, a window of at
 * most 12 taps) mcu_dwconv2d_3x3_s8_mve; MCU_ERR_SHAPE where one pixel's table would not fit.
 * (shared/mcu_dw_s8_mve.c, linked once) */
mcu_status_t mcu_dw_mve_rows(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant, const int8_t *input,
                             const int8_t *filter, const int32_t *bias, int8_t *scratch, int8_t *output,
                             int pixelwise);
#endif /* MCU_HAVE_MVE */

#endif /* MCU_DW_MVE_H */
