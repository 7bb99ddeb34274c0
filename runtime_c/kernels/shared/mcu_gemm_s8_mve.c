/* The Helium GEMM core of the _mve convs and fully connected kernel (mcu_mve.h): a block of pixels, one row. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_mve.h"

#if MCU_HAVE_MVE
/* One pixel's whole quads when its window is 2..4 chunks (K <= 64, one row): its chunks held in Q registers,
 * per quad 2 bias loads, 4 chunks x (4 weight loads, 4 VMLADAVA), the 4 sums moved into a vector (2 VMOV) and
 * requantized (every shift negative). The weights, biases, multipliers and shifts of quads done are passed. */
#define MCU_MVE_CH(X, RA, RB)                                                                                    \
    "vldrb.u8 q4, [%[w]], #16\n\t"                                                                              \
    "vmladava.s8 " RA ", %q[" X "], q4\n\t"                                                                     \
    "vldrb.u8 q4, [%[w]], #16\n\t"                                                                              \
    "vmladava.s8 " RB ", %q[" X "], q4\n\t"
#define MCU_MVE_HELD(CHUNKS)                                                                                     \
    "1:\n\t"                                                                                                    \
    "ldrd r0, r2, [%[b]], #8\n\t"                                                                               \
    "ldrd r4, r6, [%[b]], #8\n\t" CHUNKS("r0", "r2") CHUNKS("r4", "r6")                                         \
    "vmov q4[2], q4[0], r0, r4\n\t"                                                                             \
    "vmov q4[3], q4[1], r2, r6\n\t"                                                                             \
    "vldrw.u32 q5, [%[m]], #16\n\t"                                                                             \
    "vqdmulh.s32 q4, q4, q5\n\t"                                                                                \
    "vldrw.u32 q5, [%[sh]], #16\n\t"                                                                            \
    "vrshl.s32 q4, q4, q5\n\t"                                                                                  \
    "vadd.i32 q4, q4, %[zo]\n\t"                                                                                \
    "vmax.s32 q4, q4, %q[lo]\n\t"                                                                               \
    "vmin.s32 q4, q4, %q[hi]\n\t"                                                                               \
    "vstrb.32 q4, [%[out]], #4\n\t"                                                                             \
    "subs %[nq], %[nq], #1\n\t"                                                                                 \
    "bne 1b\n\t"
#define MCU_MVE_C2(A, B) MCU_MVE_CH("x0", A, B) MCU_MVE_CH("x1", A, B)
#define MCU_MVE_C3(A, B) MCU_MVE_C2(A, B) MCU_MVE_CH("x2", A, B)
#define MCU_MVE_C4(A, B) MCU_MVE_C3(A, B) MCU_MVE_CH("x3", A, B)
#define MCU_MVE_HELD_OPERANDS                                                                                    \
    : [w] "+&r"(w), [b] "+&r"(b), [m] "+&r"(m), [sh] "+&r"(sh), [out] "+&l"(out), [nq] "+&r"(nq)                \
    : [x0] "w"(x0), [x1] "w"(x1), [x2] "w"(x2), [x3] "w"(x3), [lo] "w"(lo), [hi] "w"(hi), [zo] "r"(g->zo)       \
    : "r0", "r2", "r4", "r6", "q4", "q5", "cc", "memory"

__attribute__((noinline)) static void gemv_held(const int8_t *x, const mcu_mve_gemm_t *g, int8_t *out)
{
    const int32_t n = g->chunks + (g->tail != 0);
    const mve_pred16_t last = g->tail ? (mve_pred16_t)g->tail : 0xffff;
    const int8x16_t x0 = vldrbq_z_s8(x, n == 1 ? last : 0xffff), x1 = vldrbq_z_s8(x + 16, n == 2 ? last : 0xffff);
    const int8x16_t x2 = vldrbq_z_s8(x + 32, n == 3 ? last : (n < 3 ? 0 : 0xffff));
    const int8x16_t x3 = vldrbq_z_s8(x + 48, n == 4 ? last : 0);
    const int32x4_t lo = vdupq_n_s32(g->act_min), hi = vdupq_n_s32(g->act_max);
    const int8_t *w = g->w;
    const int32_t *b = g->bias, *m = g->mult, *sh = g->shift;
    int32_t nq = g->c_out >> 2;
    if (n == 2) {
        __asm__ volatile(MCU_MVE_HELD(MCU_MVE_C2) MCU_MVE_HELD_OPERANDS);
    } else if (n == 3) {
        __asm__ volatile(MCU_MVE_HELD(MCU_MVE_C3) MCU_MVE_HELD_OPERANDS);
    } else {
        __asm__ volatile(MCU_MVE_HELD(MCU_MVE_C4) MCU_MVE_HELD_OPERANDS);
    }
}
#undef MCU_MVE_HELD_OPERANDS
#undef MCU_MVE_C4
#undef MCU_MVE_C3
#undef MCU_MVE_C2
#undef MCU_MVE_HELD
#undef MCU_MVE_CH

void mcu_mve_gemm_block(const int8_t *const *rows, const mcu_mve_gemm_t *g, int32_t npix, int8_t *out)
{
    const int32_t n = g->chunks + (g->tail != 0);
    if (g->down && g->rows == 1 && n >= (npix == 3 ? 3 : 2) && n <= 4 && (g->c_out & 3) == 0 && g->c_out >= 16) {
        for (int32_t j = 0; j < npix; ++j) {
            gemv_held(rows[j], g, out + j * g->ostride);
        }
        return;
    }
    if (g->down) {
        mcu_mve_block_body(rows, g, npix, out, 1);
    } else {
        mcu_mve_block_body(rows, g, npix, out, 0);
    }
}

void mcu_mve_gemv(const int8_t *x, const mcu_mve_gemm_t *g, int8_t *out)
{
    const int32_t c_out = g->c_out, zo = g->zo, done = g->chunks * 16;
    const int32x4_t vmin = vdupq_n_s32(g->act_min), vmax = vdupq_n_s32(g->act_max);
    const mve_pred16_t tail_p = (mve_pred16_t)g->tail;
    const int32_t pair_bytes = 32 * (g->chunks + (g->tail != 0));
    const int8_t *w = g->w;
    for (int32_t c = 0; c < c_out; c += 4) {
        const int8_t *w2 = w + pair_bytes;
        int32_t a0 = g->bias[c], a1 = g->bias[c + 1], a2 = g->bias[c + 2], a3 = g->bias[c + 3];
        const int8_t *xp = x;
        for (int32_t i = g->chunks; i > 0; --i, xp += 16, w += 32, w2 += 32) {
            const int8x16_t v = vldrbq_s8(xp);
            a0 = vmladavaq_s8(a0, v, vldrbq_s8(w));
            a1 = vmladavaq_s8(a1, v, vldrbq_s8(w + 16));
            a2 = vmladavaq_s8(a2, v, vldrbq_s8(w2));
            a3 = vmladavaq_s8(a3, v, vldrbq_s8(w2 + 16));
        }
        if (g->tail) {
            const int8x16_t v = vldrbq_z_s8(x + done, tail_p);
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
        const int32x4_t m = vldrwq_s32(g->mult + c), sh = vldrwq_s32(g->shift + c);
        const int32x4_t y = g->down ? vrshlq_s32(vqdmulhq_s32(acc, m), sh) : mcu_mve_requantize(acc, m, sh);
        vstrbq_p_s32(out + c, vminq_s32(vmaxq_s32(vaddq_n_s32(y, zo), vmin), vmax), vctp32q((uint32_t)(c_out - c)));
    }
}
#endif
