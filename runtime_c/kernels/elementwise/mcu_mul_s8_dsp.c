/* DSP int8 multiply with broadcasting: 4 products a step from int16 pairs, requantized by SMMLA. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*  - Per run, 4 products a step from int16 pairs (SXTAB16, SMULBB/SMULTT), each requantized by SMMLA and PKHTB
 *    (mcu_ew.h); the second operand's run widened once (prescaled) and reused while it repeats. */

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_ew.h"

#define CHUNK 512 /* elements of a run per pass: input2's widened run is 1 KB of stack */

typedef struct {
    int32_t o1, o2, kb, ka, m, rh, lo, hi; /* kb + ka = jp: kb (<= 7) in the widened operand, ka on the product;
                                            * rh = 2^15 + output_offset * 2^16 */
    int fast;                              /* the clamp is int8's */
    int wide32;                            /* (fast, ka > 0, assembly) the row widened to int32 (x2 + o2) * 2^jp */
} mul_q_t;

/* One output from x1 and w = (x2 + o2) * 2^kb (mcu_ew.h, the DSP form). */
MCU_INLINE int8_t mul_elem(const mul_q_t *q, int32_t x1, int32_t w)
{
    const int32_t hi = (int32_t)(((int64_t)((x1 + q->o1) * w * (1 << q->ka)) * q->m) >> 32);
    return (int8_t)mcu_clamp_i32((hi + q->rh) >> 16, q->lo, q->hi);
}

/* w[0 .. n rounded down to 4) = (b[i * step] + o2) * 2^kb in SXTB16 order per 4: (0, 2), (1, 3). */
static void widen(const mul_q_t *q, const int8_t *b, int32_t step, int32_t n, int16_t *w)
{
    for (int32_t i = 0; i + 4 <= n; i += 4, w += 4) {
        const int8_t *s = b + i * step;
        w[0] = (int16_t)((s[0] + q->o2) * (1 << q->kb));
        w[1] = (int16_t)((s[2 * step] + q->o2) * (1 << q->kb));
        w[2] = (int16_t)((s[step] + q->o2) * (1 << q->kb));
        w[3] = (int16_t)((s[3 * step] + q->o2) * (1 << q->kb));
    }
}

/* w[0 .. n rounded down to 4) = (b[i * step] + o2) * 2^(kb + ka), int32 in order. */
static void widen32(const mul_q_t *q, const int8_t *b, int32_t step, int32_t n, int32_t *w)
{
    for (int32_t i = 0; i < (n & ~3); ++i) {
        w[i] = (b[i * step] + q->o2) * (1 << (q->kb + q->ka));
    }
}

#if MCU_DSP_ASM
/* The loops below run `runs` runs of `blocks` steps against one widened row: %[n] comes in as runs << 16 | blocks;
 * the row's start and the step count wait on the stack, the run count in lr. */
#define RUNS_PRE(HALF)                                                                                    \
    "sub sp, sp, #8\n\t"                                                                                  \
    "lsr lr, %[n], #16\n\t"                                                                               \
    "uxth %[n], %[n]\n\t" HALF                                                                            \
    "str %[w], [sp]\n\t"                                                                                  \
    "str %[n], [sp, #4]\n"                                                                                \
    "4:\n"
#define RUNS_POST                                                                                         \
    "subs lr, lr, #1\n\t"                                                                                 \
    "beq 5f\n\t"                                                                                          \
    "ldr %[w], [sp]\n\t"                                                                                  \
    "ldr %[n], [sp, #4]\n\t"                                                                              \
    "b 4b\n"                                                                                              \
    "5:\n\t"                                                                                              \
    "add sp, sp, #8\n\t"

/* out[0 .. 4 * blocks) from a and the int32 row w (wide32): each input byte SXTAB'd and multiplied by MUL, any
 * prescale; 22 instructions per 4. */
#define MUL32_STEP                                                                                        \
    "ldr %[x], [%[x1]], #4\n\t"                                                                           \
    "ldrd %[b0], %[b1], [%[w]], #8\n\t"                                                                   \
    "sxtab %[v0], %[o1], %[x]\n\t"                                                                        \
    "sxtab %[v1], %[o1], %[x], ror #8\n\t"                                                                \
    "mul %[v0], %[v0], %[b0]\n\t"                                                                         \
    "mul %[v1], %[v1], %[b1]\n\t"                                                                         \
    "smmla %[v0], %[v0], %[m], %[rh]\n\t"                                                                 \
    "smmla %[v1], %[v1], %[m], %[rh]\n\t"                                                                 \
    "ldrd %[b0], %[b1], [%[w]], #8\n\t"                                                                   \
    "sxtab %[t], %[o1], %[x], ror #16\n\t"                                                                \
    "mul %[b0], %[t], %[b0]\n\t"                                                                          \
    "sxtab %[t], %[o1], %[x], ror #24\n\t"                                                                \
    "mul %[b1], %[t], %[b1]\n\t"                                                                          \
    "smmla %[b0], %[b0], %[m], %[rh]\n\t"                                                                 \
    "smmla %[b1], %[b1], %[m], %[rh]\n\t"                                                                 \
    "pkhtb %[v0], %[b0], %[v0], asr #16\n\t"                                                              \
    "pkhtb %[v1], %[b1], %[v1], asr #16\n\t"                                                              \
    "ssat16 %[v0], #8, %[v0]\n\t"                                                                         \
    "ssat16 %[v1], #8, %[v1]\n\t"                                                                         \
    "lsl %[v1], %[v1], #8\n\t"                                                                            \
    "sel %[v0], %[v1], %[v0]\n\t"                                                                         \
    "str %[v0], [%[o]], #4\n\t"
#define MUL32C_STEP                                                                                       \
    "ldr %[x], [%[x1]], #4\n\t"                                                                           \
    "sxtab %[v0], %[o1], %[x]\n\t"                                                                        \
    "sxtab %[v1], %[o1], %[x], ror #8\n\t"                                                                \
    "mul %[v0], %[v0], %[w]\n\t"                                                                          \
    "mul %[v1], %[v1], %[w]\n\t"                                                                          \
    "smmla %[v0], %[v0], %[m], %[rh]\n\t"                                                                 \
    "smmla %[v1], %[v1], %[m], %[rh]\n\t"                                                                 \
    "sxtab %[t], %[o1], %[x], ror #16\n\t"                                                                \
    "mul %[b0], %[t], %[w]\n\t"                                                                           \
    "sxtab %[t], %[o1], %[x], ror #24\n\t"                                                                \
    "mul %[b1], %[t], %[w]\n\t"                                                                           \
    "smmla %[b0], %[b0], %[m], %[rh]\n\t"                                                                 \
    "smmla %[b1], %[b1], %[m], %[rh]\n\t"                                                                 \
    "pkhtb %[v0], %[b0], %[v0], asr #16\n\t"                                                              \
    "pkhtb %[v1], %[b1], %[v1], asr #16\n\t"                                                              \
    "ssat16 %[v0], #8, %[v0]\n\t"                                                                         \
    "ssat16 %[v1], #8, %[v1]\n\t"                                                                         \
    "lsl %[v1], %[v1], #8\n\t"                                                                            \
    "sel %[v0], %[v1], %[v0]\n\t"                                                                         \
    "str %[v0], [%[o]], #4\n\t"
#define MUL32_LOOP(STEPS, HALF)                                                                           \
    __asm__ volatile("mov %[t], #0xA0000\n\t"                                                             \
                     "msr APSR_g, %[t]\n\t" RUNS_PRE(HALF)                                                \
                     "1:\n\t"                                                                             \
                     STEPS                                                                                \
                     "subs %[n], %[n], #1\n\t"                                                            \
                     "bne 1b\n\t" RUNS_POST                                                               \
                     : [x1] "+r"(x1), [w] "+r"(w32), [o] "+r"(o), [n] "+r"(blocks), [x] "=&r"(x), [b0] "=&r"(be), \
                       [b1] "=&r"(bo), [v0] "=&r"(ae), [v1] "=&r"(p), [t] "=&r"(t)                        \
                     : [o1] "r"(q->o1), [m] "r"(q->m), [rh] "r"(q->rh)                                    \
                     : "lr", "cc", "memory")

/* The same against one repeated element's (x2 + o2) * 2^jp in a register (%[w]): 20 instructions per 4. */
#define MUL32C_LOOP(STEPS)                                                                                \
    __asm__ volatile("mov %[t], #0xA0000\n\t"                                                             \
                     "msr APSR_g, %[t]\n\t"                                                               \
                     "1:\n\t"                                                                             \
                     STEPS                                                                                \
                     "subs %[n], %[n], #1\n\t"                                                            \
                     "bne 1b\n\t"                                                                         \
                     : [x1] "+r"(x1), [w] "+r"(bw), [o] "+r"(o), [n] "+r"(blocks), [x] "=&r"(x), [b0] "=&r"(be), \
                       [b1] "=&r"(bo), [v0] "=&r"(ae), [v1] "=&r"(p), [t] "=&r"(t)                        \
                     : [o1] "r"(q->o1), [m] "r"(q->m), [rh] "r"(q->rh)                                    \
                     : "cc", "memory")

/* out[0 .. 4 * blocks) from a and b both read as they come (no row to reuse): SXTAB16 both, the products shifted by
 * jp; 25 instructions per 4. */
#define MUL_STREAM_LOOP                                                                                   \
    __asm__ volatile("mov %[t], #0xA0000\n\t"                                                             \
                     "msr APSR_g, %[t]\n"                                                                 \
                     "1:\n\t"                                                                             \
                     "ldr %[x], [%[x1]], #4\n\t"                                                          \
                     "ldr %[t], [%[x2]], #4\n\t"                                                          \
                     "sxtab16 %[ae], %[o1], %[x]\n\t"                                                     \
                     "sxtab16 %[x], %[o1], %[x], ror #8\n\t"                                              \
                     "sxtab16 %[be], %[o2], %[t]\n\t"                                                     \
                     "sxtab16 %[t], %[o2], %[t], ror #8\n\t"                                              \
                     "smulbb %[p], %[ae], %[be]\n\t"                                                      \
                     "smultt %[ae], %[ae], %[be]\n\t"                                                     \
                     "smulbb %[be], %[x], %[t]\n\t"                                                       \
                     "smultt %[x], %[x], %[t]\n\t"                                                        \
                     "lsl %[p], %[p], %[jp]\n\t"                                                          \
                     "lsl %[ae], %[ae], %[jp]\n\t"                                                        \
                     "lsl %[be], %[be], %[jp]\n\t"                                                        \
                     "lsl %[x], %[x], %[jp]\n\t"                                                          \
                     "smmla %[p], %[p], %[m], %[rh]\n\t"                                                  \
                     "smmla %[ae], %[ae], %[m], %[rh]\n\t"                                                \
                     "smmla %[be], %[be], %[m], %[rh]\n\t"                                                \
                     "smmla %[x], %[x], %[m], %[rh]\n\t"                                                  \
                     "pkhtb %[p], %[ae], %[p], asr #16\n\t"                                               \
                     "pkhtb %[be], %[x], %[be], asr #16\n\t"                                              \
                     "ssat16 %[p], #8, %[p]\n\t"                                                          \
                     "ssat16 %[be], #8, %[be]\n\t"                                                        \
                     "lsl %[be], %[be], #8\n\t"                                                           \
                     "sel %[p], %[be], %[p]\n\t"                                                          \
                     "str %[p], [%[o]], #4\n\t"                                                           \
                     "subs %[n], %[n], #1\n\t"                                                            \
                     "bne 1b\n\t"                                                                         \
                     : [x1] "+r"(x1), [x2] "+r"(x2), [o] "+r"(o), [n] "+r"(blocks), [x] "=&r"(x),         \
                       [be] "=&r"(be), [ae] "=&r"(ae), [p] "=&r"(p), [t] "=&r"(t)                         \
                     : [o1] "r"(o1), [o2] "r"(o2), [m] "r"(q->m), [rh] "r"(q->rh), [jp] "r"(q->ka + q->kb) \
                     : "cc", "memory")

/* out[0 .. 4 * blocks) from a and the widened w, int8 clamp: SEL takes bytes 1 and 3 from the odd outputs (GE is
 * set to 0b1010 first; nothing in the loop writes it); jp <= 7 (kb), the rest takes MUL32_LOOP. */
#define MUL16_STEP                                                                                        \
    "ldr %[x], [%[x1]], #4\n\t"                                                                           \
    "ldrd %[be], %[bo], [%[w]], #8\n\t"                                                                   \
    "sxtab16 %[ae], %[o1], %[x]\n\t"                                                                      \
    "sxtab16 %[x], %[o1], %[x], ror #8\n\t"                                                               \
    "smulbb %[p], %[ae], %[be]\n\t"                                                                       \
    "smultt %[ae], %[ae], %[be]\n\t"                                                                      \
    "smulbb %[be], %[x], %[bo]\n\t"                                                                       \
    "smultt %[x], %[x], %[bo]\n\t"                                                                        \
    "smmla %[p], %[p], %[m], %[rh]\n\t"                                                                   \
    "smmla %[ae], %[ae], %[m], %[rh]\n\t"                                                                 \
    "smmla %[be], %[be], %[m], %[rh]\n\t"                                                                 \
    "smmla %[x], %[x], %[m], %[rh]\n\t"                                                                   \
    "pkhtb %[p], %[ae], %[p], asr #16\n\t"                                                                \
    "pkhtb %[be], %[x], %[be], asr #16\n\t"                                                               \
    "ssat16 %[p], #8, %[p]\n\t"                                                                           \
    "ssat16 %[be], #8, %[be]\n\t"                                                                         \
    "lsl %[be], %[be], #8\n\t"                                                                            \
    "sel %[p], %[be], %[p]\n\t"                                                                           \
    "str %[p], [%[o]], #4\n\t"
#define MUL_LOOP(STEPS, HALF)                                                                             \
    __asm__ volatile("mov %[x], #0xA0000\n\t"                                                             \
                     "msr APSR_g, %[x]\n\t" RUNS_PRE(HALF)                                                \
                     "1:\n\t"                                                                             \
                     STEPS                                                                                \
                     "subs %[n], %[n], #1\n\t"                                                            \
                     "bne 1b\n\t" RUNS_POST                                                               \
                     : [x1] "+r"(x1), [w] "+r"(w), [o] "+r"(o), [n] "+r"(blocks), [x] "=&r"(x), [be] "=&r"(be), \
                       [bo] "=&r"(bo), [ae] "=&r"(ae), [p] "=&r"(p)                                       \
                     : [o1] "r"(o1), [m] "r"(q->m), [rh] "r"(q->rh)                                       \
                     : "lr", "cc", "memory")
#endif

/* n outputs, a stepping along against one element w = (x2 + o2) * 2^jp (int8 clamp, wide32 form). */
#if defined(__GNUC__)
__attribute__((noinline)) /* the assembly takes 13 registers */
#endif
static void mul_const(const mul_q_t *q, const int8_t *a, int32_t bw, int8_t *out, int32_t n)
{
    int32_t i = 0;
#if MCU_DSP_ASM
    if (n >= 4) {
        const int8_t *x1 = a;
        int8_t *o = out;
        uint32_t x, be, bo, ae, p, t;
        int32_t blocks = n >> 2;
        if ((blocks & 1) == 0) {
            blocks >>= 1;
            MUL32C_LOOP(MUL32C_STEP MUL32C_STEP);
        } else {
            MUL32C_LOOP(MUL32C_STEP);
        }
        i = n & ~3;
    }
#endif
    for (; i < n; ++i) {
        out[i] = (int8_t)mcu_clamp_i32(((int32_t)(((int64_t)((a[i] + q->o1) * bw) * q->m) >> 32) + q->rh) >> 16,
                                       q->lo, q->hi);
    }
}

/* One run of n outputs, a and b stepping along, neither widened (int8 clamp). */
#if defined(__GNUC__)
__attribute__((noinline)) /* the assembly takes 14 registers */
#endif
static void mul_stream(const mul_q_t *q, const int8_t *a, const int8_t *b, int8_t *out, int32_t n)
{
    int32_t i = 0;
#if MCU_DSP_ASM
    int32_t blocks = n >> 2;
    if (blocks > 0) {
        const uint32_t o1 = ((uint32_t)q->o1 & 0xFFFFu) | ((uint32_t)q->o1 << 16);
        const uint32_t o2 = ((uint32_t)q->o2 & 0xFFFFu) | ((uint32_t)q->o2 << 16);
        const int8_t *x1 = a, *x2 = b;
        int8_t *o = out;
        uint32_t x, be, ae, p, t;
        MUL_STREAM_LOOP;
        i = n & ~3;
    }
#endif
    for (; i < n; ++i) {
        out[i] = mul_elem(q, a[i], (b[i] + q->o2) * (1 << q->kb));
    }
}

/* One run of n outputs: a steps along, input2's run is widened in w (and b, for the tail, steps by step). */
#if defined(__GNUC__)
__attribute__((noinline)) /* the assembly takes 13 registers plus lr */
#endif
static void mul_run(const mul_q_t *q, const int8_t *a, const int8_t *b, int32_t step, const int16_t *wide,
                    int8_t *out, int32_t n, int32_t runs)
{
    int32_t i = 0;
    (void)runs; /* C: one run */
#if MCU_DSP_ASM
    if (q->fast && n >= 4) { /* runs > 1 only with whole steps (n a multiple of 4) */
        const uint32_t o1 = ((uint32_t)q->o1 & 0xFFFFu) | ((uint32_t)q->o1 << 16);
        const int8_t *x1 = a;
        int8_t *o = out;
        uint32_t x, be, bo, ae, p, t;
        for (int32_t done = 0; done < runs;) {
            const int32_t k = runs - done < 0xFFFF ? runs - done : 0xFFFF;
            int32_t blocks = (k << 16) | (n >> 2);
            const uint32_t *w = (const uint32_t *)(const void *)wide;
            const int32_t *w32 = (const int32_t *)(const void *)wide;
            if ((n & 7) == 0) { /* two steps an iteration */
                if (q->wide32) {
                    MUL32_LOOP(MUL32_STEP MUL32_STEP, "lsr %[n], %[n], #1\n\t");
                } else { /* ka == 0: wide32 takes ka > 0 */
                    MUL_LOOP(MUL16_STEP MUL16_STEP, "lsr %[n], %[n], #1\n\t");
                }
            } else if (q->wide32) {
                MUL32_LOOP(MUL32_STEP, "");
            } else {
                MUL_LOOP(MUL16_STEP, "");
            }
            done += k;
        }
        i = n & ~3;
    }
#endif
    for (; i < (n & ~3) && q->wide32; ++i) {
        out[i] = mul_elem(q, a[i], ((const int32_t *)(const void *)wide)[i] >> q->ka); /* (x2 + o2) * 2^kb */
    }
    for (; i < (n & ~3); i += 4) {
        out[i] = mul_elem(q, a[i], wide[i]);
        out[i + 1] = mul_elem(q, a[i + 1], wide[i + 2]);
        out[i + 2] = mul_elem(q, a[i + 2], wide[i + 1]);
        out[i + 3] = mul_elem(q, a[i + 3], wide[i + 3]);
    }
    for (; i < n; ++i) {
        out[i] = mul_elem(q, a[i], (b[i * step] + q->o2) * (1 << q->kb));
    }
}

/* mcu_mul_s8's element, for products the fast form does not cover (mcu_ew.h). */
MCU_INLINE int8_t mul_portable(const mcu_mul_params_t *p, const mul_q_t *q, int32_t x1, int32_t x2)
{
    const int32_t r = mcu_requantize_round((x1 + q->o1) * (x2 + q->o2), p->output_multiplier, p->output_shift);
    return (int8_t)mcu_clamp_i32(mcu_add_offset(r, p->output_offset), p->act_min, p->act_max);
}

mcu_status_t mcu_mul_s8_dsp(const mcu_mul_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output)
{
    const mcu_status_t status = mcu_mul_check(params, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_mul_params_t *p = params;
    const mcu_dims_t *od = &p->output;
    mcu_ew_runs_t r;
    mcu_ew_runs(&p->input1, &p->input2, od, &r);
    const int8_t *in1 = input1, *in2 = input2;
    mul_q_t q = {p->input1_offset, p->input2_offset, 0, 0, 0, 32768 + p->output_offset * 65536, p->act_min, p->act_max,
                 p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX, 0};
    if (r.step1 == 0 && r.step2 == 1) { /* the product is symmetric: the input that steps along the run goes first */
        in1 = input2, in2 = input1;
        q.o1 = p->input2_offset, q.o2 = p->input1_offset;
        r.step1 = 1, r.step2 = 0;
        for (int32_t k = 0; k < 3; ++k) {
            const int32_t s = r.s1[k];
            r.s1[k] = r.s2[k], r.s2[k] = s;
        }
    }
    int32_t jp = 0;
    /* runs where neither input steps (an output axis neither input has) take the portable arithmetic */
    const int fast = r.step1 && mcu_mul_rq(p->output_multiplier, p->output_shift, 48, &q.m, &jp);
    q.kb = jp < 7 ? jp : 7;
    q.ka = jp - q.kb;
    q.wide32 = MCU_DSP_ASM && q.fast && q.ka > 0;
    int32_t wide_words[CHUNK]; /* int16 (x2 + o2) * 2^kb in SXTB16 order, or int32 (x2 + o2) * 2^jp (wide32) */
    int16_t *wide = (int16_t *)(void *)wide_words;
    const int8_t *widened = NULL; /* the run widened in `wide` (a repeated element stays widened across chunks) */
    /* A row that repeats run after run (a channel gate: input1 contiguous, input2's row again) in whole steps is
     * widened once and copied to fill `wide`, so one call covers several runs. */
    const int32_t reps = fast && (r.len & 3) == 0 && r.len <= CHUNK / 2 && r.s1[2] == r.len && r.s2[2] == 0
                             ? CHUNK / r.len : 1;
    const int stream = MCU_DSP_ASM && fast && q.fast && r.step2 && !(r.count[0] > 1 && r.s2[0] == 0) &&
                       !(r.count[1] > 1 && r.s2[1] == 0) && !(r.count[2] > 1 && r.s2[2] == 0);
    int8_t *out = output;
    for (int32_t c0 = 0; c0 < r.len; c0 += CHUNK) {
        const int32_t n = r.len - c0 < CHUNK ? r.len - c0 : CHUNK;
        for (int32_t i0 = 0; i0 < r.count[0]; ++i0) {
            for (int32_t i1 = 0; i1 < r.count[1]; ++i1) {
                for (int32_t i2 = 0; i2 < r.count[2];) {
                    const int8_t *a = in1 + i0 * r.s1[0] + i1 * r.s1[1] + i2 * r.s1[2] + c0 * r.step1;
                    const int8_t *b = in2 + i0 * r.s2[0] + i1 * r.s2[1] + i2 * r.s2[2] + c0 * r.step2;
                    int8_t *o = out + ((i0 * r.count[1] + i1) * r.count[2] + i2) * r.len + c0;
                    if (!fast) {
                        for (int32_t i = 0; i < n; ++i) {
                            o[i] = mul_portable(p, &q, a[i * r.step1], b[i * r.step2]);
                        }
                        ++i2;
                        continue;
                    }
                    if (MCU_DSP_ASM && q.fast && r.step2 == 0) { /* one element: in a register */
                        mul_const(&q, a, (b[0] + q.o2) * (1 << jp), o, n);
                        ++i2;
                        continue;
                    }
                    if (stream) { /* input2's runs never repeat: read them as they come */
                        mul_stream(&q, a, b, o, n);
                        ++i2;
                        continue;
                    }
                    if (b != widened) {
                        const size_t bytes = (size_t)n * (q.wide32 ? 4 : 2);
                        if (q.wide32) {
                            widen32(&q, b, r.step2, n, wide_words);
                        } else {
                            widen(&q, b, r.step2, n, wide);
                        }
                        const int32_t words = (int32_t)(bytes / 4); /* n is a multiple of 4 when reps > 1 */
                        for (int32_t k = 1; k < reps && !(MCU_DSP_ASM && q.fast) && words * (k + 1) <= CHUNK; ++k) {
                            for (int32_t i = 0; i < words; ++i) { /* word copies (newlib-nano's memcpy is bytewise) */
                                wide_words[k * words + i] = wide_words[i];
                            }
                        }
                        widened = b;
                    }
                    if (MCU_DSP_ASM && q.fast && reps > 1) { /* the assembly: every run of this loop, one row */
                        mul_run(&q, a, b, r.step2, wide, o, n, r.count[2] - i2);
                        i2 = r.count[2];
                        continue;
                    }
                    const int32_t runs = r.count[2] - i2 < reps ? r.count[2] - i2 : reps;
                    mul_run(&q, a, b, r.step2, wide, o, runs * n, 1);
                    i2 += runs;
                }
            }
        }
    }
    return MCU_OK;
}
