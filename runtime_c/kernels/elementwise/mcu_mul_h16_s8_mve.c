/* Helium int8 multiply with broadcasting in int16 lanes: 8 products a vector, two VQRDMULH; gate rows widened once. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_ew.h"

#if MCU_HAVE_MVE
/* The arithmetic of one input order: a steps along every run it is given, b steps (int8) or holds one element. */
typedef struct {
    int32_t a_scale, a_bias;     /* a' = a * a_scale + a_bias (VMLAS): 2^shift1, input1_offset * 2^shift1 */
    int32_t b_scale, b_bias;     /* b' likewise */
    int32_t m, neg_shift, zo;    /* VQRDMULH by m, VRSHL by -shift, VQADD zo */
    int32_t lo, hi, full;        /* the clamp; full: [-128, 127] (VQMOVNB saturates) */
} mul_h16_t;

/* One vector's arithmetic on a' in q0 and b' in q1 (or the held b' in %[b1]), then the clamp into q0's bytes. */
#define H16_BODY(MULB, CLAMP)                                                                             \
    MULB "vqrdmulh.s16 q0, q0, %[m]\n\t"                                                                  \
         "vrshl.s16 q0, %[ns]\n\t"                                                                        \
         "vqadd.s16 q0, q0, %[zo]\n\t" CLAMP
#define MUL_Q1 "vqrdmulh.s16 q0, q0, q1\n\t"
#define MUL_HELD "vqrdmulh.s16 q0, q0, %[b1]\n\t"
#define LOAD_B "vldrb.s16 q1, [%[b]], #8\n\tvmlas.s16 q1, q5, %[b1]\n\t"
#define LOAD_B_TAIL "vpst\n\tvldrbt.s16 q1, [%[b]]\n\tvmlas.s16 q1, q5, %[b1]\n\t"
#define FULL "vqmovnb.s16 q0, q0\n\t"
#define NARROW "vmax.s16 q0, q0, q6\n\tvmin.s16 q0, q0, q7\n\t"
/* q4..q7 from the struct (a_scale, b_scale, lo, hi); n / 8 whole vectors, then a predicated one (VCTP.16: every
 * step works on 16-bit lanes). */
#define H16_RUN(LB, LBT, MULB, CLAMP)                                                                     \
    __asm__ volatile("ldr %[t], [%[c], #0]\n\tvdup.16 q4, %[t]\n\t"                                       \
                     "ldr %[t], [%[c], #8]\n\tvdup.16 q5, %[t]\n\t"                                       \
                     "ldr %[t], [%[c], #28]\n\tvdup.16 q6, %[t]\n\t"                                      \
                     "ldr %[t], [%[c], #32]\n\tvdup.16 q7, %[t]\n\t"                                      \
                     "lsr %[t], %[n], #3\n\t"                                                              \
                     "wls lr, %[t], 2f\n"                                                                  \
                     "1:\n\t"                                                                              \
                     "vldrb.s16 q0, [%[a]], #8\n\t" LB                                                     \
                     "vmlas.s16 q0, q4, %[a1]\n\t" H16_BODY(MULB, CLAMP)                                   \
                     "vstrb.16 q0, [%[o]], #8\n\t"                                                         \
                     "le lr, 1b\n"                                                                         \
                     "2:\n\t"                                                                              \
                     "ands %[n], %[n], #7\n\t"                                                             \
                     "beq 3f\n\t"                                                                          \
                     "vctp.16 %[n]\n\t"                                                                    \
                     "vpst\n\t"                                                                            \
                     "vldrbt.s16 q0, [%[a]]\n\t" LBT                                                       \
                     "vmlas.s16 q0, q4, %[a1]\n\t" H16_BODY(MULB, CLAMP)                                   \
                     "vpst\n\t"                                                                            \
                     "vstrbt.16 q0, [%[o]]\n"                                                              \
                     "3:\n\t"                                                                              \
                     : [a] "+l"(a), [b] "+l"(b), [o] "+l"(o), [t] "=&r"(t), [n] "+r"(n)                    \
                     : [c] "r"(q), [a1] "r"(q->a_bias), [b1] "r"(b1), [m] "r"(q->m), [ns] "r"(q->neg_shift), \
                       [zo] "r"(q->zo)                                                                     \
                     : "lr", "q0", "q1", "q4", "q5", "q6", "q7", "cc", "memory")

/* n outputs from a (stepping) and b (stepping when sb, else its one element). */
static void mul_run(const mul_h16_t *q, const int8_t *a, const int8_t *b, int32_t sb, int8_t *o, int32_t n)
{
    int32_t t;
    if (sb) {
        const int32_t b1 = q->b_bias;
        if (q->full) {
            H16_RUN(LOAD_B, LOAD_B_TAIL, MUL_Q1, FULL);
        } else {
            H16_RUN(LOAD_B, LOAD_B_TAIL, MUL_Q1, NARROW);
        }
    } else {
        const int32_t b1 = (int16_t)(b[0] * q->b_scale + q->b_bias);
        if (q->full) {
            H16_RUN("", "", MUL_HELD, FULL);
        } else {
            H16_RUN("", "", MUL_HELD, NARROW);
        }
    }
}

/* `runs` runs of 8 * vecs outputs, each against the whole widened row w (b' as int16), a contiguous. The asm reads
 * the row, its length and q4, q6, q7 from g (registers are short). */
typedef struct {
    const int16_t *w;
    int32_t vecs, a_scale, lo, hi;
} gate_t;

#define GATE_ASM(CLAMP)                                                                                   \
    __asm__ volatile("ldr %[t], [%[g], #8]\n\tvdup.16 q4, %[t]\n\t"                                       \
                     "ldr %[t], [%[g], #12]\n\tvdup.16 q6, %[t]\n\t"                                      \
                     "ldr %[t], [%[g], #16]\n\tvdup.16 q7, %[t]\n"                                         \
                     "1:\n\t"                                                                              \
                     "ldr %[b], [%[g], #0]\n\t"                                                            \
                     "ldr %[t], [%[g], #4]\n\t"                                                            \
                     "wls lr, %[t], 3f\n"                                                                   \
                     "2:\n\t"                                                                              \
                     "vldrb.s16 q0, [%[a]], #8\n\t"                                                        \
                     "vldrh.s16 q1, [%[b]], #16\n\t"                                                       \
                     "vmlas.s16 q0, q4, %[a1]\n\t" H16_BODY(MUL_Q1, CLAMP)                                 \
                     "vstrb.16 q0, [%[o]], #8\n\t"                                                         \
                     "le lr, 2b\n"                                                                          \
                     "3:\n\t"                                                                              \
                     "subs %[runs], %[runs], #1\n\t"                                                       \
                     "bne 1b\n\t"                                                                          \
                     : [a] "+l"(a), [b] "=&l"(b), [o] "+l"(o), [t] "=&r"(t), [runs] "+r"(runs)             \
                     : [g] "r"(&g), [a1] "r"(q->a_bias), [m] "r"(q->m), [ns] "r"(q->neg_shift), [zo] "r"(q->zo) \
                     : "lr", "q0", "q1", "q4", "q6", "q7", "cc", "memory")

static void mul_gate(const mul_h16_t *q, const int16_t *w, int32_t vecs, int32_t runs, const int8_t *a, int8_t *o)
{
    int32_t t;
    const int16_t *b;
    const gate_t g = {w, vecs, q->a_scale, q->lo, q->hi};
    if (q->full) {
        GATE_ASM(FULL);
    } else {
        GATE_ASM(NARROW);
    }
}

#define ROW 256 /* int16 entries of a widened gate row (stack) */

/* A channel gate: one input's row repeats over the runs (stride 0 along the runs, whole vectors long) while the
 * other steps on contiguously. The row is widened once to b' (int16) and each outer step is one mul_gate call;
 * returns 0 (nothing done) for any other broadcast. */
static int gate(const mul_h16_t order[2], const mcu_ew_runs_t *r, const int8_t *in1, const int8_t *in2, int8_t *out)
{
    const int row1 = r->s1[2] == 0 && r->s2[2] == r->len, row2 = r->s2[2] == 0 && r->s1[2] == r->len;
    if (!r->step1 || !r->step2 || !(row1 || row2) || (r->len & 7) != 0 || r->len > ROW || r->count[2] < 2) {
        return 0;
    }
    const mul_h16_t *q = &order[row1]; /* the stepping input first */
    const int8_t *x = row1 ? in2 : in1, *g = row1 ? in1 : in2;
    const int32_t *sx = row1 ? r->s2 : r->s1, *sg = row1 ? r->s1 : r->s2;
    int16_t w[ROW];
    const int8_t *widened = NULL;
    for (int32_t i0 = 0; i0 < r->count[0]; ++i0) {
        for (int32_t i1 = 0; i1 < r->count[1]; ++i1) {
            const int8_t *row = g + i0 * sg[0] + i1 * sg[1];
            if (row != widened) {
                for (int32_t i = 0; i < r->len; ++i) {
                    w[i] = (int16_t)(row[i] * q->b_scale + q->b_bias);
                }
                widened = row;
            }
            mul_gate(q, w, r->len >> 3, r->count[2], x + i0 * sx[0] + i1 * sx[1], out);
            out += r->count[2] * r->len;
        }
    }
    return 1;
}

typedef struct {
    mul_h16_t order[2]; /* input1 stepping first, or input2 (the product is symmetric) */
    const mcu_mul_h16_params_t *p;
} mul_ctx_t;

static void run(const void *ctx, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *o, int32_t n)
{
    const mul_ctx_t *c = ctx;
    if (!sa && !sb) {
        const int8_t v = mcu_mul_h16_element(c->p, a[0], b[0]);
        for (int32_t i = 0; i < n; ++i) {
            o[i] = v;
        }
        return;
    }
    const mul_h16_t *q = &c->order[!sa];
    if (sa) {
        mul_run(q, a, b, sb, o, n);
    } else {
        mul_run(q, b, a, sa, o, n);
    }
}
#endif

mcu_status_t mcu_mul_h16_s8_mve(const mcu_mul_h16_params_t *params, const int8_t *input1, const int8_t *input2,
                                int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_status_t status = mcu_mul_h16_check(params, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_mul_h16_params_t *p = params;
    const int32_t full = p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX;
    const int32_t s1 = 1 << p->shift1, s2 = 1 << p->shift2;
    const mul_ctx_t ctx = {{{s1, p->input1_offset * s1, s2, p->input2_offset * s2, p->multiplier, -p->shift,
                             p->output_offset, p->act_min, p->act_max, full},
                            {s2, p->input2_offset * s2, s1, p->input1_offset * s1, p->multiplier, -p->shift,
                             p->output_offset, p->act_min, p->act_max, full}},
                           p};
    mcu_ew_runs_t r;
    mcu_ew_runs(&p->input1, &p->input2, &p->output, &r);
    if (!gate(ctx.order, &r, input1, input2, output)) {
        mcu_ew_for_runs_s8(&r, input1, input2, output, run, &ctx);
    }
    return MCU_OK;
#else
    (void)params, (void)input1, (void)input2, (void)output;
    return MCU_ERR_ARG;
#endif
}
