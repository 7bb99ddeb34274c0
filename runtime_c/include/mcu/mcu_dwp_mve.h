/* The assembly of mcu_dwconv2d_s8_mve_planar (its 3x3 rows, pairs of rows, gathers, scatters); not a public API. */
#ifndef MCU_DWP_MVE_H
#define MCU_DWP_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* rows rows of n int8 values at src, src + step, ... to d as int16 plus off: 8 a gather (16-bit offsets o),
 * tail-predicated; then src and d move on to the next row by sadv and dadv bytes. */
MCU_INLINE void gather16(const int8_t *src, int16_t *d, int32_t n, int32_t rows, uint16x8_t o, int32_t step8,
                         int32_t off, int32_t sadv, int32_t dadv)
{
    int16x8_t v;
    __asm__ volatile("3:\n\t"
                     "wlstp.16 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vldrb.s16 %q[v], [%[src], %q[o]]\n\t"
                     "vadd.i16 %q[v], %q[v], %[off]\n\t"
                     "vstrh.16 %q[v], [%[d]], #16\n\t"
                     "add %[src], %[src], %[step8]\n\t"
                     "letp lr, 1b\n"
                     "2:\n\t"
                     "add %[src], %[src], %[sadv]\n\t"
                     "add %[d], %[d], %[dadv]\n\t"
                     "subs %[rows], %[rows], #1\n\t"
                     "bne 3b\n"
                     : [src] "+l"(src), [d] "+l"(d), [rows] "+r"(rows), [v] "=&w"(v)
                     : [n] "r"(n), [o] "w"(o), [off] "r"(off), [step8] "r"(step8), [sadv] "r"(sadv),
                       [dadv] "r"(dadv)
                     : "lr", "cc", "memory");
}

/* rows rows of n int8 values (pitch apart: sadv bytes from a row's last step on) to out, out + step, ...: 8 a
 * scatter (16-bit offsets o), tail-predicated; out moves on by oadv bytes from a row's last step. */
MCU_INLINE void scatter16(const int8_t *stage, int8_t *out, int32_t n, int32_t rows, uint16x8_t o, int32_t step8,
                          int32_t sadv, int32_t oadv)
{
    int16x8_t v;
    __asm__ volatile("3:\n\t"
                     "wlstp.16 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vldrb.s16 %q[v], [%[s]], #8\n\t"
                     "vstrb.16 %q[v], [%[out], %q[o]]\n\t"
                     "add %[out], %[out], %[step8]\n\t"
                     "letp lr, 1b\n"
                     "2:\n\t"
                     "add %[s], %[s], %[sadv]\n\t"
                     "add %[out], %[out], %[oadv]\n\t"
                     "subs %[rows], %[rows], #1\n\t"
                     "bne 3b\n"
                     : [s] "+l"(stage), [out] "+l"(out), [rows] "+r"(rows), [v] "=&w"(v)
                     : [n] "r"(n), [o] "w"(o), [step8] "r"(step8), [sadv] "r"(sadv), [oadv] "r"(oadv)
                     : "lr", "cc", "memory");
}

/* What dwp_row3 reads (offsets fixed in its assembly). */
typedef struct {
    const int16_t *r0, *r1, *r2;     /* 0, 4, 8: the plane rows of window rows 0, 1, 2 */
    const int32_t *w;                /* 12: the 9 weights */
    int8_t *out;                     /* 16: the staging rows (contiguous, 4 pixels a step) */
    int32_t n;                       /* 20: steps (n >= 1) */
    int32_t bias, m, sh, zo, lo, hi; /* 24 .. 44 (sh < 0) */
    int32_t adv, rows;               /* 48: bytes from a row's last step to the next row, 52: rows (>= 1) */
    int32_t adv_out;                 /* 56 (dwp_pairs3_*): staging bytes from a pair's last step to the next */
    int32_t odd;                     /* 60 (dwp_pairs3_*): a last row after the pairs */
    const int8_t *f;                 /* 64 (dwp_pairs3_*, not w): the int8 weights, wcs bytes a column apart, */
    int32_t wcs, wrs;                /* 68, 72: wrs a row */
} dwp_row3_t;
typedef char dwp_row3_layout[offsetof(dwp_row3_t, wrs) == 72 ? 1 : -1];

/* A 3x3 window's rows of 4-pixel steps, all 9 weights in r4..r12: per window row two loads at immediate offsets
 * (A, B bytes) and one post-incremented (the tap at offset 0), each one VMLA; requantization as requant (shift
 * < 0), contiguous int8 store. 26 instructions per 36 MACs; n, adv and rows on the stack. */
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
    "ldr r1, [r0, #20]\n\t"                                                                                     \
    "ldr r2, [r0, #48]\n\t"                                                                                     \
    "ldr r3, [r0, #52]\n\t"                                                                                     \
    "push {r1-r3}\n\t"                                                                                          \
    "ldr r1, [r0, #12]\n\t"                                                                                     \
    "ldm r1, {r4-r12}\n\t"                                                                                      \
    "ldr r3, [r0, #16]\n\t"                                                                                     \
    "ldr r1, [r0, #4]\n\t"                                                                                      \
    "ldr r2, [r0, #8]\n\t"                                                                                      \
    "ldr r0, [r0]\n\t"                                                                                          \
    "2:\n\t"                                                                                                    \
    "ldr lr, [sp]\n\t"                                                                                          \
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
    "ldr lr, [sp, #4]\n\t"                                                                                      \
    "add r0, r0, lr\n\t"                                                                                        \
    "add r1, r1, lr\n\t"                                                                                        \
    "add r2, r2, lr\n\t"                                                                                        \
    "ldr lr, [sp, #8]\n\t"                                                                                      \
    "subs lr, lr, #1\n\t"                                                                                       \
    "str lr, [sp, #8]\n\t"                                                                                      \
    "bne 2b\n\t"                                                                                                \
    "add sp, sp, #12\n\t"                                                                                       \
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

/* Two output rows at once (3x3, stride 1, dilation 1, plane rows RB bytes apart, staging rows RB / 2): each of
 * the 4 input rows' 3 loads serves both rows' accumulators (q0, q1); multiplier in r12. 44 instructions per 72
 * MACs. Pointers start 8 bytes before the rows (pre-indexed loads); n, adv (input), pairs, adv (staging), odd on
 * the stack; odd: then a last row alone (26 instructions per 36 MACs). Weights read from f (LDRSB). */
#define DWP_TAP2(OFF, W0, W1) "vldrh.s32 q2, " OFF "\n\tvmla.s32 q0, q2, " W0 "\n\tvmla.s32 q1, q2, " W1 "\n\t"
#define DWP_TAP0(OFF, W) "vldrh.s32 q2, " OFF "\n\tvmla.s32 q0, q2, " W "\n\t"
#define DWP_TAP1(OFF, W) "vldrh.s32 q2, " OFF "\n\tvmla.s32 q1, q2, " W "\n\t"
#define DWP_REQ(Q) "vqdmulh.s32 " Q ", " Q ", r12\n\tvrshl.s32 " Q ", " Q ", q4\n\tvadd.i32 " Q ", " Q ", q5\n\t" \
                   "vmax.s32 " Q ", " Q ", q6\n\tvmin.s32 " Q ", " Q ", q7\n\t"
#define DWP_PAIRS(RB0, RB2, RB4, SP)                                                                             \
    "push {r4-r11, lr}\n\t"                                                                                     \
    "vpush {d8-d15}\n\t"                                                                                        \
    "ldr r1, [r0, #24]\n\tvdup.32 q3, r1\n\t"                                                                   \
    "ldr r1, [r0, #32]\n\tvdup.32 q4, r1\n\t"                                                                   \
    "ldr r1, [r0, #36]\n\tvdup.32 q5, r1\n\t"                                                                   \
    "ldr r1, [r0, #40]\n\tvdup.32 q6, r1\n\t"                                                                   \
    "ldr r1, [r0, #44]\n\tvdup.32 q7, r1\n\t"                                                                   \
    "ldr r1, [r0, #20]\n\t"                                                                                     \
    "ldr r2, [r0, #48]\n\t"                                                                                     \
    "ldr r3, [r0, #52]\n\t"                                                                                     \
    "ldr r4, [r0, #56]\n\t"                                                                                     \
    "ldr r5, [r0, #60]\n\t"                                                                                     \
    "push {r1-r5}\n\t"                                                                                          \
    "ldr r1, [r0, #64]\n\t"                                                                                     \
    "ldr r2, [r0, #68]\n\t"                                                                                     \
    "ldr r12, [r0, #72]\n\t"                                                                                    \
    "ldrsb r3, [r1]\n\tldrsb r4, [r1, r2]\n\tldrsb r5, [r1, r2, lsl #1]\n\tadd r1, r1, r12\n\t"                 \
    "ldrsb r6, [r1]\n\tldrsb r7, [r1, r2]\n\tldrsb r8, [r1, r2, lsl #1]\n\tadd r1, r1, r12\n\t"                 \
    "ldrsb r9, [r1]\n\tldrsb r10, [r1, r2]\n\tldrsb r11, [r1, r2, lsl #1]\n\t"                                   \
    "ldr r12, [r0, #28]\n\t"                                                                                    \
    "ldr r2, [r0, #16]\n\t"                                                                                     \
    "ldr r1, [r0, #4]\n\t"                                                                                      \
    "ldr r0, [r0]\n"                                                                                            \
    "2:\n\t"                                                                                                    \
    "ldr lr, [sp]\n\t"                                                                                          \
    "dls lr, lr\n"                                                                                              \
    "1:\n\t"                                                                                                    \
    "vmov q0, q3\n\t"                                                                                           \
    "vmov q1, q3\n\t" DWP_TAP0("[r0, #8]!", "r3") DWP_TAP0("[r0, #2]", "r4") DWP_TAP0("[r0, #4]", "r5")       \
    DWP_TAP2("[r0, #" RB0 "]", "r6", "r3") DWP_TAP2("[r0, #" RB2 "]", "r7", "r4")                              \
    DWP_TAP2("[r0, #" RB4 "]", "r8", "r5") DWP_TAP2("[r1, #8]!", "r9", "r6") DWP_TAP2("[r1, #2]", "r10", "r7") \
    DWP_TAP2("[r1, #4]", "r11", "r8") DWP_TAP1("[r1, #" RB0 "]", "r9") DWP_TAP1("[r1, #" RB2 "]", "r10")       \
    DWP_TAP1("[r1, #" RB4 "]", "r11") DWP_REQ("q0") DWP_REQ("q1")                                              \
    "vstrb.32 q1, [r2, #" SP "]\n\t"                                                                            \
    "vstrb.32 q0, [r2], #4\n\t"                                                                                 \
    "le lr, 1b\n\t"                                                                                             \
    "ldr lr, [sp, #4]\n\t"                                                                                      \
    "add r0, r0, lr\n\t"                                                                                        \
    "add r1, r1, lr\n\t"                                                                                        \
    "ldr lr, [sp, #12]\n\t"                                                                                     \
    "add r2, r2, lr\n\t"                                                                                        \
    "ldr lr, [sp, #8]\n\t"                                                                                      \
    "subs lr, lr, #1\n\t"                                                                                       \
    "str lr, [sp, #8]\n\t"                                                                                      \
    "bne 2b\n\t"                                                                                                \
    "ldr lr, [sp, #16]\n\t"                                                                                     \
    "cmp lr, #0\n\t"                                                                                            \
    "beq 3f\n\t"                                                                                                \
    "ldr lr, [sp]\n\t"                                                                                          \
    "dls lr, lr\n"                                                                                              \
    "4:\n\t"                                                                                                    \
    "vmov q0, q3\n\t" DWP_TAP0("[r0, #8]!", "r3") DWP_TAP0("[r0, #2]", "r4") DWP_TAP0("[r0, #4]", "r5")       \
    DWP_TAP0("[r0, #" RB0 "]", "r6") DWP_TAP0("[r0, #" RB2 "]", "r7") DWP_TAP0("[r0, #" RB4 "]", "r8")         \
    DWP_TAP0("[r1, #8]!", "r9") DWP_TAP0("[r1, #2]", "r10") DWP_TAP0("[r1, #4]", "r11") DWP_REQ("q0")          \
    "vstrb.32 q0, [r2], #4\n\t"                                                                                 \
    "le lr, 4b\n"                                                                                               \
    "3:\n\t"                                                                                                    \
    "add sp, sp, #20\n\t"                                                                                       \
    "vpop {d8-d15}\n\t"                                                                                         \
    "pop {r4-r11, pc}\n\t"

/* Phases of 32 entries: plane rows 64 bytes apart, staging rows 32. */
__attribute__((naked, noinline)) static void dwp_pairs3_64(const dwp_row3_t *a)
{
    (void)a;
    __asm__ volatile(DWP_PAIRS("64", "66", "68", "32"));
}

/* Phases of 64 entries: plane rows 128 bytes apart, staging rows 64. */
__attribute__((naked, noinline)) static void dwp_pairs3_128(const dwp_row3_t *a)
{
    (void)a;
    __asm__ volatile(DWP_PAIRS("128", "130", "132", "64"));
}
#undef DWP_PAIRS
#undef DWP_REQ
#undef DWP_TAP1
#undef DWP_TAP0
#undef DWP_TAP2
#endif /* MCU_HAVE_MVE */

#endif /* MCU_DWP_MVE_H */
