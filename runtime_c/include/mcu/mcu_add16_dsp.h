/* The DSP int8 add with 16-bit multipliers (mcu_add_m16_s8's arithmetic), SMLAD and SSAT 4 a step; not a public API:
 * mcu_add_m16_s8_dsp and mcu_add_m16_flat_s8_dsp include it. */
#ifndef MCU_ADD16_DSP_H
#define MCU_ADD16_DSP_H
#ifndef MCU_ADD16_FLAT
#define MCU_ADD16_FLAT 0 /* 1: two same-shaped inputs (one run): no held-element loops, no row copies */
#endif
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_ew.h"

/*  - A run (mcu_ew.h) where both inputs step: per word of each, SXTB16 (and ROR 8) splits the lanes, PKHBT / PKHTB
 *    pair a with b, SMLAD adds a*m1 + b*m2 + bias, SSAT #8 with ASR #shift, BFI packs 4 bytes for one STR
 *    (5.75 instructions an element, 8 a loop step); a clamp narrower than int8 is SSUB8 + SEL per bound per word.
 *  - A run against one held element folds it into the bias: SMLABB / SMLATB per element (3.75).
 *  - The shift is an immediate of SSAT: shifts 12..16 (the params builder's usual ones) have their loops; other
 *    shifts, tails and runs where neither input steps run in C. */

typedef struct {
    int32_t m, k;     /* m1 | m2 << 16 (the held run: its stepping input's multiplier), bias */
    int32_t lo, hi;   /* act_min, act_max in every byte */
    int32_t mode;     /* 0: no clamp, 1: act_min only, 2: both */
    const mcu_add_m16_params_t *p;
} m16_q_t;

MCU_INLINE int8_t m16_one(const mcu_add_m16_params_t *p, int32_t a, int32_t b)
{
    return (int8_t)mcu_clamp_i32((a * p->multiplier1 + b * p->multiplier2 + p->bias) >> p->shift, p->act_min,
                                 p->act_max);
}

#if MCU_DSP_ASM
#define CLAMP_LO "ssub8 %[x], %[r0], %[lo]\n\t" "sel %[r0], %[r0], %[lo]\n\t"
#define CLAMP_HI "ssub8 %[x], %[hi], %[r0]\n\t" "sel %[r0], %[r0], %[hi]\n\t"
/* 8 elements of a and b stepping (4 per quad). */
#define BOTH_QUAD(S, CLAMP)                                                                                    \
    "ldr %[wa], [%[a]], #4\n\t" "ldr %[wb], [%[b]], #4\n\t"                                                  \
    "sxtb16 %[x], %[wa]\n\t" "sxtb16 %[y], %[wb]\n\t"                                                         \
    "pkhbt %[r0], %[x], %[y], lsl #16\n\t" "pkhtb %[r2], %[y], %[x], asr #16\n\t"                             \
    "smlad %[r0], %[r0], %[m], %[k]\n\t" "smlad %[r2], %[r2], %[m], %[k]\n\t"                                 \
    "ssat %[r0], #8, %[r0], asr #" S "\n\t" "ssat %[r2], #8, %[r2], asr #" S "\n\t"                           \
    "sxtb16 %[x], %[wa], ror #8\n\t" "sxtb16 %[y], %[wb], ror #8\n\t"                                         \
    "pkhbt %[wa], %[x], %[y], lsl #16\n\t" "pkhtb %[wb], %[y], %[x], asr #16\n\t"                             \
    "smlad %[wa], %[wa], %[m], %[k]\n\t" "smlad %[wb], %[wb], %[m], %[k]\n\t"                                 \
    "ssat %[wa], #8, %[wa], asr #" S "\n\t" "ssat %[wb], #8, %[wb], asr #" S "\n\t"                           \
    "bfi %[r0], %[wa], #8, #8\n\t" "bfi %[r0], %[r2], #16, #8\n\t" "bfi %[r0], %[wb], #24, #8\n\t" CLAMP     \
    "str %[r0], [%[o]], #4\n\t"
/* 8 elements of a stepping against a held one (folded into k). */
#define HELD_QUAD(S, CLAMP)                                                                                    \
    "ldr %[wa], [%[a]], #4\n\t"                                                                               \
    "sxtb16 %[x], %[wa]\n\t" "sxtb16 %[y], %[wa], ror #8\n\t"                                                 \
    "smlabb %[r0], %[x], %[m], %[k]\n\t" "smlatb %[r2], %[x], %[m], %[k]\n\t"                                 \
    "smlabb %[wa], %[y], %[m], %[k]\n\t" "smlatb %[wb], %[y], %[m], %[k]\n\t"                                 \
    "ssat %[r0], #8, %[r0], asr #" S "\n\t" "ssat %[r2], #8, %[r2], asr #" S "\n\t"                           \
    "ssat %[wa], #8, %[wa], asr #" S "\n\t" "ssat %[wb], #8, %[wb], asr #" S "\n\t"                           \
    "bfi %[r0], %[wa], #8, #8\n\t" "bfi %[r0], %[r2], #16, #8\n\t" "bfi %[r0], %[wb], #24, #8\n\t" CLAMP     \
    "str %[r0], [%[o]], #4\n\t"
#define LOOP(QUAD, S, CLAMP)                                                                                   \
    __asm__ volatile("1:\n\t" QUAD(S, CLAMP) QUAD(S, CLAMP) "subs %[n], %[n], #1\n\t"                          \
                     "bne 1b\n\t"                                                                             \
                     : [a] "+r"(a), [b] "+r"(b), [o] "+r"(o), [n] "+r"(steps), [wa] "=&r"(wa), [wb] "=&r"(wb), \
                       [x] "=&r"(x), [y] "=&r"(y), [r0] "=&r"(r0), [r2] "=&r"(r2)                              \
                     : [m] "r"(q->m), [k] "r"(q->k), [lo] "r"(q->lo), [hi] "r"(q->hi)                           \
                     : "cc", "memory")
#define LOOPS(QUAD, S)                                                                                         \
    if (q->mode == 0) {                                                                                       \
        LOOP(QUAD, S, "");                                                                                    \
    } else if (q->mode == 1) {                                                                                \
        LOOP(QUAD, S, CLAMP_LO);                                                                              \
    } else {                                                                                                  \
        LOOP(QUAD, S, CLAMP_LO CLAMP_HI);                                                                     \
    }
/* steps (> 0) loop steps of 8 elements of both inputs (held: b unused), shift in 12..16. */
#define DEFINE_RUN(NAME, QUAD)                                                                                 \
    static void NAME(const m16_q_t *q, int32_t shift, const int8_t *a, const int8_t *b, int8_t *o,             \
                     int32_t steps)                                                                           \
    {                                                                                                         \
        uint32_t wa, wb, x, y, r0, r2;                                                                        \
        switch (shift) {                                                                                      \
        case 12: LOOPS(QUAD, "12") break;                                                                     \
        case 13: LOOPS(QUAD, "13") break;                                                                     \
        case 14: LOOPS(QUAD, "14") break;                                                                     \
        case 15: LOOPS(QUAD, "15") break;                                                                     \
        default: LOOPS(QUAD, "16") break;                                                                     \
        }                                                                                                     \
    }
DEFINE_RUN(run_both, BOTH_QUAD)
#if !MCU_ADD16_FLAT
DEFINE_RUN(run_held, HELD_QUAD)
#endif
#endif

/* n outputs of a (step sa) and b (step sb); the asm loops take whole steps of 8 where an input steps. */
static void add_run(const void *ctx, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *o, int32_t n)
{
    const m16_q_t *q = ctx;
    const mcu_add_m16_params_t *p = q->p;
    int32_t i = 0;
#if MCU_DSP_ASM
    const int32_t steps = n >> 3;
    if (steps > 0 && p->shift >= 12 && p->shift <= 16 && sa && sb) {
        run_both(q, p->shift, a, b, o, steps);
        i = steps << 3;
    }
#if !MCU_ADD16_FLAT
    if (steps > 0 && p->shift >= 12 && p->shift <= 16 && (sa != sb)) {
        const int held_b = sa != 0;
        const int32_t m = held_b ? p->multiplier1 : p->multiplier2;
        const int32_t k = p->bias + (held_b ? *b * p->multiplier2 : *a * p->multiplier1);
        const m16_q_t h = {m, k, q->lo, q->hi, q->mode, p};
        run_held(&h, p->shift, held_b ? a : b, NULL, o, steps);
        i = steps << 3;
    }
#endif
#endif
    for (; i < n; ++i) {
        o[i] = m16_one(p, a[i * sa], b[i * sb]);
    }
}

static mcu_status_t add16_dsp(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                              int8_t *output)
{
    const mcu_status_t status = mcu_add_m16_check(params, input1, input2, output, 24);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_add_m16_params_t *p = params;
    const uint32_t lo = (uint8_t)p->act_min * 0x01010101u, hi = (uint8_t)p->act_max * 0x01010101u;
    const m16_q_t q = {(int32_t)(((uint32_t)p->multiplier1 & 0xFFFFu) | ((uint32_t)p->multiplier2 << 16)), p->bias,
                       (int32_t)lo, (int32_t)hi, p->act_max < MCU_Q7_MAX ? 2 : p->act_min > MCU_Q7_MIN, p};
#if MCU_ADD16_FLAT
    const mcu_dims_t *od = &p->output;
    if (!mcu_ew_same(&p->input1, od) || !mcu_ew_same(&p->input2, od)) {
        return MCU_ERR_SHAPE;
    }
    add_run(&q, input1, 1, input2, 1, output, od->n * od->h * od->w * od->c);
#else
    mcu_ew_runs_t r;
    mcu_ew_runs(&p->input1, &p->input2, &p->output, &r);
    mcu_ew_for_runs_s8(&r, input1, input2, output, add_run, &q);
#endif
    return MCU_OK;
}

#endif /* MCU_ADD16_DSP_H */
