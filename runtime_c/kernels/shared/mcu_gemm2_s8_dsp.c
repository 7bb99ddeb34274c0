/* The DSP 2x2 GEMM core of the _dsp convs (mcu_opt.h): widening two pixels, and one pixel pair x all channels. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_opt.h"

#if MCU_DSP_ASM
/* 4 taps of both pixels widened: {a (t0, t2), a (t1, t3), b (t0, t2), b (t1, t3)} */
#define MCU_DSP_EXPAND_STEP                                                                                \
    "ldr r4, [%[a]], #4\n\t"                                                                               \
    "ldr r6, [%[b]], #4\n\t"                                                                               \
    "sxtb16 r5, r4, ror #8\n\t"                                                                            \
    "sxtb16 r4, r4\n\t"                                                                                    \
    "sxtb16 r7, r6, ror #8\n\t"                                                                            \
    "sxtb16 r6, r6\n\t"                                                                                    \
    "stmia %[d]!, {r4, r5, r6, r7}\n\t"
#endif

/* 4 taps of both pixels, as words va and vb, widened into dst[0..3] (as MCU_DSP_EXPAND_STEP) */
MCU_INLINE void widen2(uint32_t va, uint32_t vb, uint32_t *dst)
{
    mcu_widen8(va, dst);
    mcu_widen8(vb, dst + 2);
}

uint32_t *mcu_dsp_expand2(const int8_t *a, const int8_t *b, int32_t n, uint32_t *dst)
{
    const int32_t i = n & ~3;
#if MCU_DSP_ASM
    int32_t steps = n >> 2;
    if (steps > 0) {
        const int8_t *pa = a, *pb = b;
        __asm__ volatile("lsrs %[n], %[n], #1\n\t"
                         "bcc 2f\n\t"
                         MCU_DSP_EXPAND_STEP
                         "2:\n\t"
                         "cbz %[n], 3f\n"
                         "1:\n\t"
                         MCU_DSP_EXPAND_STEP MCU_DSP_EXPAND_STEP
                         "subs %[n], %[n], #1\n\t"
                         "bne 1b\n"
                         "3:\n\t"
                         : [a] "+r"(pa), [b] "+r"(pb), [d] "+r"(dst), [n] "+l"(steps)
                         :
                         : "r4", "r5", "r6", "r7", "cc", "memory");
    }
#else
    for (int32_t j = 0; j < i; j += 4, dst += 4) {
        widen2(mcu_read_u32(a + j), mcu_read_u32(b + j), dst);
    }
#endif
    if (i < n) {
        widen2(mcu_read_tail(a + i, n - i), mcu_read_tail(b + i, n - i), dst);
        dst += 4;
    }
    return dst;
}
#undef MCU_DSP_EXPAND_STEP

mcu_status_t mcu_dsp_g2_open(mcu_dsp_g2_t *g, const int8_t *filter, uint32_t *x, int32_t steps, int32_t c_out,
                             int32_t output_offset, int32_t act_min, int32_t act_max, mcu_rq_mode_t *m)
{
    const int32_t step_bytes = (int32_t)mcu_read_u32(filter);
    if (step_bytes != 8 && step_bytes != 16) {
        return MCU_ERR_ARG;
    }
    g->x = x;
    g->steps = steps;
    g->step_bytes = step_bytes;
    g->stream = filter + 4;
    g->entry = (MCU_DSP_G2_CHUNK - mcu_dsp_g2_first(steps)) * (step_bytes == 8 ? 56 : 40) + 1;
    /* the records of channel c at pair c / 2's end: both of a whole pair at once (any negative multiplier or
     * shift sets its OR's sign; a shift outside [0, 30] takes mcu_rq3_check's full test), then a last one alone */
    const int32_t pair_words = mcu_dsp_g2_pair_bytes(steps, step_bytes) / 4;
    const int32_t *rec = (const int32_t *)(const void *)(g->stream + 4 * pair_words - 24);
    int32_t mults = 0, shifts = 0;
    for (int32_t c = 0; c + 1 < c_out; c += 2, rec += pair_words) {
        mults |= rec[0] | rec[3];
        shifts |= rec[1] | rec[4];
        if (((uint32_t)rec[1] > 30u || (uint32_t)rec[4] > 30u) && mcu_rq3_check(rec, 2) != MCU_OK) {
            return MCU_ERR_ARG;
        }
    }
    if (c_out % 2 == 1) {
        mults |= rec[0];
        shifts |= rec[1];
        if (mcu_rq3_check(rec, 1) != MCU_OK) {
            return MCU_ERR_ARG;
        }
    }
    if (mults < 0) {
        return MCU_ERR_ARG;
    }
    *m = (mcu_rq_mode_t){act_min, act_max, output_offset, shifts >= 0, 0};
    m->fast = m->records_fast && act_min == MCU_Q7_MIN && act_max == MCU_Q7_MAX;
    return MCU_OK;
}

/* One pair in C, any mode: its four outputs (channel 1's only when two), the stream past it returned. */
static __attribute__((noinline)) const int8_t *pair_c(const mcu_dsp_g2_t *g, const int8_t *w, int8_t *out,
                                                       int32_t stride, int two, const mcu_rq_mode_t *m)
{
    const int32_t *b = (const int32_t *)(const void *)w;
    int32_t acc[4] = {b[0], b[1], b[0], b[1]};
    const uint32_t *x = g->x;
    const int32_t steps = g->steps, wide = g->step_bytes == 16;
    int32_t left = mcu_dsp_g2_first(steps) + 1; /* steps up to the next control word, step 0 included */
    w += 8;
    for (int32_t s = 0; s < steps; ++s, x += 4, w += g->step_bytes) {
        uint32_t c[4]; /* c0 (w0, w2), c0 (w1, w3), c1 (w0, w2), c1 (w1, w3) */
        if (wide) {
            memcpy(c, w, sizeof c);
        } else {
            widen2(mcu_read_u32(w), mcu_read_u32(w + 4), c);
        }
        acc[0] = mcu_smlad(x[1], c[1], mcu_smlad(x[0], c[0], acc[0]));
        acc[1] = mcu_smlad(x[1], c[3], mcu_smlad(x[0], c[2], acc[1]));
        acc[2] = mcu_smlad(x[3], c[1], mcu_smlad(x[2], c[0], acc[2]));
        acc[3] = mcu_smlad(x[3], c[3], mcu_smlad(x[2], c[2], acc[3]));
        if (--left == 0) { /* past a control word */
            w += 4;
            left = MCU_DSP_G2_CHUNK;
        }
    }
    const int32_t *rec = (const int32_t *)(const void *)w;
    for (int32_t j = 3; j >= 0; --j) { /* pixel 1 first: it may repeat pixel 0 (stride 0) */
        if (two || !(j & 1)) {
            out[(j >> 1) * stride + (j & 1)] = mcu_rq3_out(acc[j], rec + 3 * (j & 1), m);
        }
    }
    return w + 24;
}

#if MCU_DSP_ASM
/* The weights of one step into r0-r3 as int16 pairs (r0/r1 channel 0, r2/r3 channel 1): int8 words widened, or
 * int16 words loaded. */
#define MCU_DSP_G2_WEIGHTS8                                                                                \
    "ldmia.w lr!, {r0, r2}\n\t"                                                                            \
    "sxtb16 r1, r0, ror #8\n\t"                                                                            \
    "sxtb16 r0, r0\n\t"                                                                                    \
    "sxtb16 r3, r2, ror #8\n\t"                                                                            \
    "sxtb16 r2, r2\n\t"
#define MCU_DSP_G2_WEIGHTS16 "ldmia.w lr!, {r0, r1, r2, r3}\n\t"
#define MCU_DSP_G2_STEP(weights) /* 56 or 40 bytes of code (mcu_dsp_g2_open) */                             \
    "ldmia.w r12!, {r4, r5, r6, r7}\n\t" weights                                                           \
    "smlad r8, r4, r0, r8\n\t"                                                                             \
    "smlad r8, r5, r1, r8\n\t"                                                                             \
    "smlad r9, r4, r2, r9\n\t"                                                                             \
    "smlad r9, r5, r3, r9\n\t"                                                                             \
    "smlad r10, r6, r0, r10\n\t"                                                                           \
    "smlad r10, r7, r1, r10\n\t"                                                                           \
    "smlad r11, r6, r2, r11\n\t"                                                                           \
    "smlad r11, r7, r3, r11\n\t"
#define MCU_DSP_G2_STEP4(w) MCU_DSP_G2_STEP(w) MCU_DSP_G2_STEP(w) MCU_DSP_G2_STEP(w) MCU_DSP_G2_STEP(w)

/* Every whole pair of the stream at g->w, up to the one whose last control word is -1, in fast mode;
 * g->x[4 * steps] must hold g. The flags of that control word's CMP decide the pair loop (nothing in
 * between sets them). Not inlined: GCC saves the registers it takes. */
#define MCU_DSP_G2_PAIRS_ASM(weights)                                                                       \
    "ldr r0, [r12, #16]\n\t" /* the entry address, into x[-1] */                                            \
    "adr r1, 2f\n\t"                                                                                        \
    "add r0, r0, r1\n\t"                                                                                    \
    "ldr r2, [r12, #0]\n\t"                                                                                 \
    "str r0, [r2, #-4]\n\t"                                                                                 \
    "ldr lr, [r12, #4]\n"                                                                                   \
    "1:\n\t" /* a pair: step 0 from the biases, then enter the body */                                      \
    "ldmia lr!, {r8, r9}\n\t"                                                                               \
    "ldr r12, [r12, #0]\n\t"                                                                                \
    "ldmia.w r12!, {r4, r5, r6, r7}\n\t" weights                                                            \
    "smlad r10, r6, r0, r8\n\t"                                                                             \
    "smlad r10, r7, r1, r10\n\t"                                                                            \
    "smlad r11, r6, r2, r9\n\t"                                                                             \
    "smlad r11, r7, r3, r11\n\t"                                                                            \
    "smlad r8, r4, r0, r8\n\t"                                                                              \
    "smlad r8, r5, r1, r8\n\t"                                                                              \
    "smlad r9, r4, r2, r9\n\t"                                                                              \
    "smlad r9, r5, r3, r9\n\t"                                                                              \
    "ldr r0, [r12, #-20]\n\t"                                                                               \
    "bx r0\n\t"                                                                                             \
    ".balign 4\n"                                                                                           \
    "2:\n\t" /* MCU_DSP_G2_CHUNK steps */                                                                   \
    MCU_DSP_G2_STEP4(weights) MCU_DSP_G2_STEP4(weights) MCU_DSP_G2_STEP4(weights) MCU_DSP_G2_STEP4(weights) \
    "ldr r0, [lr], #4\n\t"                                                                                  \
    "cmp r0, #0\n\t"                                                                                        \
    "beq 2b\n\t"                                                                                            \
    "ldr r12, [r12]\n\t" /* the state, after x */                                                           \
    "ldmia lr!, {r1, r2, r3, r4, r5, r6}\n\t"                                                               \
    "ldrd r0, r7, [r12, #8]\n\t"                                                                            \
    "smmla r8, r8, r1, r3\n\t"                                                                              \
    "smmla r10, r10, r1, r3\n\t"                                                                            \
    "smmla r9, r9, r4, r6\n\t"                                                                              \
    "smmla r11, r11, r4, r6\n\t"                                                                            \
    "asr r8, r8, r2\n\t"                                                                                    \
    "asr r10, r10, r2\n\t"                                                                                  \
    "asr r9, r9, r5\n\t"                                                                                    \
    "asr r11, r11, r5\n\t"                                                                                  \
    "ssat r8, #8, r8\n\t"                                                                                   \
    "ssat r10, #8, r10\n\t"                                                                                 \
    "ssat r9, #8, r9\n\t"                                                                                   \
    "ssat r11, #8, r11\n\t"                                                                                 \
    "strb r10, [r0, r7]\n\t"                                                                                \
    "strb r8, [r0], #1\n\t"                                                                                 \
    "strb r11, [r0, r7]\n\t"                                                                                \
    "strb r9, [r0], #1\n\t"                                                                                 \
    "str r0, [r12, #8]\n\t"                                                                                 \
    "bpl 1b\n\t"                                                                                            \
    "str lr, [r12, #4]\n\t"

#define MCU_DSP_G2_CLOBBERS                                                                                \
    "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "lr", "cc", "memory"

static __attribute__((noinline)) void pairs_asm8(mcu_dsp_g2_t *g)
{
    register mcu_dsp_g2_t *st __asm__("r12") = g;
    __asm__ volatile(MCU_DSP_G2_PAIRS_ASM(MCU_DSP_G2_WEIGHTS8) : "+r"(st) : : MCU_DSP_G2_CLOBBERS);
}

static __attribute__((noinline)) void pairs_asm16(mcu_dsp_g2_t *g)
{
    register mcu_dsp_g2_t *st __asm__("r12") = g;
    __asm__ volatile(MCU_DSP_G2_PAIRS_ASM(MCU_DSP_G2_WEIGHTS16) : "+r"(st) : : MCU_DSP_G2_CLOBBERS);
}
#undef MCU_DSP_G2_CLOBBERS
#undef MCU_DSP_G2_PAIRS_ASM
#undef MCU_DSP_G2_STEP4
#undef MCU_DSP_G2_STEP
#undef MCU_DSP_G2_WEIGHTS16
#undef MCU_DSP_G2_WEIGHTS8
#endif

void mcu_dsp_g2_run(mcu_dsp_g2_t *g, int8_t *out0, int32_t stride, int32_t c_out, const mcu_rq_mode_t *m)
{
    const int8_t *w = g->stream;
    int32_t c = 0;
#if MCU_DSP_ASM
    if (m->fast && c_out >= 2) {
        g->w = w;
        g->out = out0;
        g->stride = stride;
        g->x[4 * g->steps] = (uint32_t)(uintptr_t)g;
        if (g->step_bytes == 8) { /* direct calls: the static stack bound (mcu.build.stack) follows them */
            pairs_asm8(g);
        } else {
            pairs_asm16(g);
        }
        w = g->w;
        c = c_out & ~1;
    }
#endif
    for (; c < c_out; c += 2) {
        w = pair_c(g, w, out0 + c, stride, c + 1 < c_out, m);
    }
}

