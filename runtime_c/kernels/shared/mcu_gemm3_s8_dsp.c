/* The DSP 3x2 GEMM core of the fully connected GEMM (mcu_opt.h): widening three rows, three rows x all channels. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_opt.h"

void mcu_dsp_expand3(const int8_t *a, const int8_t *b, const int8_t *c, int32_t n, uint32_t *dst)
{
    const int32_t i = n & ~3;
    for (int32_t j = 0; j < i; j += 4, dst += 6) {
        mcu_widen8(mcu_read_u32(a + j), dst);
        mcu_widen8(mcu_read_u32(b + j), dst + 2);
        mcu_widen8(mcu_read_u32(c + j), dst + 4);
    }
    if (i < n) {
        mcu_widen8(mcu_read_tail(a + i, n - i), dst);
        mcu_widen8(mcu_read_tail(b + i, n - i), dst + 2);
        mcu_widen8(mcu_read_tail(c + i, n - i), dst + 4);
    }
}

#if MCU_DSP_ASM
/* One step of 3 rows (accumulators r6/r7 row 0 channel 0/1, r8/r9 row 1, r10/r11 row 2): the int8 weight words
 * widened into r0-r3 as in the 2-row core, each row's x into r4/r5. 80 bytes of code. */
#define MCU_DSP_G3_ROW(c0, c1)                                                                             \
    "ldmia.w r12!, {r4, r5}\n\t"                                                                           \
    "smlad " c0 ", r4, r0, " c0 "\n\t"                                                                     \
    "smlad " c0 ", r5, r1, " c0 "\n\t"                                                                     \
    "smlad " c1 ", r4, r2, " c1 "\n\t"                                                                     \
    "smlad " c1 ", r5, r3, " c1 "\n\t"
#define MCU_DSP_G3_STEP                                                                                    \
    "ldmia.w lr!, {r0, r2}\n\t"                                                                            \
    "sxtb16 r1, r0, ror #8\n\t"                                                                            \
    "sxtb16 r0, r0\n\t"                                                                                    \
    "sxtb16 r3, r2, ror #8\n\t"                                                                            \
    "sxtb16 r2, r2\n\t" MCU_DSP_G3_ROW("r6", "r7") MCU_DSP_G3_ROW("r8", "r9") MCU_DSP_G3_ROW("r10", "r11")
#define MCU_DSP_G3_STEP4 MCU_DSP_G3_STEP MCU_DSP_G3_STEP MCU_DSP_G3_STEP MCU_DSP_G3_STEP
/* out = ssat8((rh + hi32(acc * mult)) >> sh) of the three rows of one channel, record {mult r0, sh r1, rh r2} */
#define MCU_DSP_G3_RQ(a, b, c)                                                                             \
    "ldmia lr!, {r0, r1, r2}\n\t"                                                                          \
    "smmla " a ", " a ", r0, r2\n\t"                                                                       \
    "smmla " b ", " b ", r0, r2\n\t"                                                                       \
    "smmla " c ", " c ", r0, r2\n\t"                                                                       \
    "asr " a ", " a ", r1\n\t"                                                                             \
    "asr " b ", " b ", r1\n\t"                                                                             \
    "asr " c ", " c ", r1\n\t"                                                                             \
    "ssat " a ", #8, " a "\n\t"                                                                            \
    "ssat " b ", #8, " b "\n\t"                                                                            \
    "ssat " c ", #8, " c "\n\t"

/* Every pair of the stream at g->w (all whole), as the 2-row core's loop: step 0 starts rows 1 and 2 from the
 * biases before row 0 adds to them, then the 16-step body entered at g->entry3, the control words, and per
 * channel the 3 outputs. */
static __attribute__((noinline)) void triples_asm8(mcu_dsp_g2_t *g)
{
    register mcu_dsp_g2_t *st __asm__("r12") = g;
    __asm__ volatile("ldr r0, [r12, #36]\n\t" /* the entry address, into x[-1] */
                     "adr r1, 2f\n\t"
                     "add r0, r0, r1\n\t"
                     "ldr r2, [r12, #0]\n\t"
                     "str r0, [r2, #-4]\n\t"
                     "ldr lr, [r12, #4]\n"
                     "1:\n\t"
                     "ldmia lr!, {r6, r7}\n\t"
                     "ldr r12, [r12, #0]\n\t"
                     "ldmia.w lr!, {r0, r2}\n\t"
                     "sxtb16 r1, r0, ror #8\n\t"
                     "sxtb16 r0, r0\n\t"
                     "sxtb16 r3, r2, ror #8\n\t"
                     "sxtb16 r2, r2\n\t"
                     "ldrd r4, r5, [r12, #8]\n\t"
                     "smlad r8, r4, r0, r6\n\t"
                     "smlad r8, r5, r1, r8\n\t"
                     "smlad r9, r4, r2, r7\n\t"
                     "smlad r9, r5, r3, r9\n\t"
                     "ldrd r4, r5, [r12, #16]\n\t"
                     "smlad r10, r4, r0, r6\n\t"
                     "smlad r10, r5, r1, r10\n\t"
                     "smlad r11, r4, r2, r7\n\t"
                     "smlad r11, r5, r3, r11\n\t"
                     "ldrd r4, r5, [r12], #24\n\t"
                     "smlad r6, r4, r0, r6\n\t"
                     "smlad r6, r5, r1, r6\n\t"
                     "smlad r7, r4, r2, r7\n\t"
                     "smlad r7, r5, r3, r7\n\t"
                     "ldr r0, [r12, #-28]\n\t"
                     "bx r0\n\t"
                     ".balign 4\n"
                     "2:\n\t" MCU_DSP_G3_STEP4 MCU_DSP_G3_STEP4 MCU_DSP_G3_STEP4 MCU_DSP_G3_STEP4
                     "ldr r0, [lr], #4\n\t"
                     "cmp r0, #0\n\t"
                     "beq 2b\n\t"
                     "ldr r12, [r12]\n\t" /* the state, after x */
                     MCU_DSP_G3_RQ("r6", "r8", "r10") MCU_DSP_G3_RQ("r7", "r9", "r11")
                     "ldrd r0, r1, [r12, #8]\n\t"
                     "ldr r2, [r12, #32]\n\t"
                     "strb r8, [r0, r1]\n\t"
                     "strb r10, [r0, r2]\n\t"
                     "strb r6, [r0], #1\n\t"
                     "strb r9, [r0, r1]\n\t"
                     "strb r11, [r0, r2]\n\t"
                     "strb r7, [r0], #1\n\t"
                     "str r0, [r12, #8]\n\t"
                     "bpl 1b\n\t"
                     "str lr, [r12, #4]\n\t"
                     : "+r"(st)
                     :
                     : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "lr", "cc",
                       "memory");
}
#undef MCU_DSP_G3_RQ
#undef MCU_DSP_G3_STEP4
#undef MCU_DSP_G3_STEP
#undef MCU_DSP_G3_ROW

void mcu_dsp_g3_run(mcu_dsp_g2_t *g, int8_t *out0, int32_t stride)
{
    g->w = g->stream;
    g->out = out0;
    g->stride = stride;
    g->stride2 = 2 * stride;
    g->entry3 = (MCU_DSP_G2_CHUNK - mcu_dsp_g2_first(g->steps)) * 80 + 1;
    g->x[6 * g->steps] = (uint32_t)(uintptr_t)g;
    triples_asm8(g);
}
#endif
