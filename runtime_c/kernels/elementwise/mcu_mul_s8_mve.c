/* Helium int8 multiply with broadcasting: 8 products a vector, requantized, tail-predicated. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*  - Per run, 8 products a vector (VMULLB/VMULLT.S16), each requantized by VQDMLASH and VQRSHRNB #16 (mcu_ew.h),
 *    tail-predicated. */

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_ew.h"

#if MCU_HAVE_MVE
#define CHUNK 512 /* bytes of a repeated row's copies (stack) */

/* One run of n outputs: n / 8 whole vectors, then a predicated one (explicitly: the widening products and narrows mix
 * element sizes, which a tail-predicated loop would mask by the 16-bit lanes). Fast (int8 clamp, jp <= 14):
 * a' = x1 * 2^ja + o1 * 2^ja and b' likewise by 2^jb (VMLAS; ja, jb <= 7 keep int16), VQMOVNB.S16 saturates.
 * General: a' = x1 + o1, b' = x2 + o2, the products shifted by jp, VMAX/VMIN clamp. PRE: the constants; A, B: a' and
 * b' from the loaded q0 and q1 (LB loads b, or b' already widened: empty when q1 holds the repeated b'); SH, CLAMP. */
#define MUL_BODY(A, B, SH, CLAMP)                                                                         \
    A B "vmullb.s16 q2, q0, q1\n\t"                                                                       \
        "vmullt.s16 q3, q0, q1\n\t" SH                                                                    \
        "vqdmlash.s32 q2, q6, %[zo]\n\t"                                                                  \
        "vqdmlash.s32 q3, q6, %[zo]\n\t"                                                                  \
        "vqrshrnb.s32 q0, q2, #16\n\t"                                                                    \
        "vqrshrnt.s32 q0, q3, #16\n\t" CLAMP
#define MUL_RUN(PRE, LB, A, B, SH, CLAMP)                                                                 \
    __asm__ volatile("ldr %[t], [%[c], #8]\n\tvdup.32 q6, %[t]\n\t" PRE                                   \
                     "lsr %[t], %[n], #3\n\t"                                                              \
                     "wls lr, %[t], 2f\n"                                                                  \
                     "1:\n\t"                                                                              \
                     "vldrb.s16 q0, [%[a]], #8\n\t" LB MUL_BODY(A, B, SH, CLAMP)                           \
                     "vstrb.16 q0, [%[o]], #8\n\t"                                                         \
                     "le lr, 1b\n"                                                                         \
                     "2:\n\t"                                                                              \
                     "ands %[n], %[n], #7\n\t"                                                             \
                     "beq 3f\n\t"                                                                          \
                     "vctp.16 %[n]\n\t"                                                                    \
                     "vpst\n\t"                                                                            \
                     "vldrbt.s16 q0, [%[a]]\n\t" LB##_TAIL MUL_BODY(A, B, SH, CLAMP)                        \
                     "vpst\n\t"                                                                            \
                     "vstrbt.16 q0, [%[o]]\n"                                                               \
                     "3:\n\t"                                                                              \
                     : [a] "+l"(a), [b] "+l"(b), [o] "+l"(o), [t] "=&r"(t), [n] "+r"(n)                    \
                     : [k1] "r"(k[0]), [k2] "r"(k[1]), [c] "r"(k),      \
                       [jp] "r"(q->jp), [zo] "r"(q->zo16)                                                  \
                     : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "cc", "memory")
#define FAST_PRE "ldr %[t], [%[c], #12]\n\tvdup.16 q4, %[t]\n\tldr %[t], [%[c], #16]\n\tvdup.16 q5, %[t]\n\t"
#define GEN_PRE FAST_PRE
#define LOAD_B "vldrb.s16 q1, [%[b]], #8\n\t"
#define LOAD_B_TAIL "vpst\n\tvldrbt.s16 q1, [%[b]]\n\t"
#define LOAD_W "vldrh.u16 q1, [%[b]], #16\n\t" /* b' already widened (prescaled int16) */
#define LOAD_W_TAIL "vpst\n\tvldrht.u16 q1, [%[b]]\n\t"
#define NO_B ""
#define NO_B_TAIL ""
#define FAST_A "vmlas.s16 q0, q4, %[k1]\n\t"
#define FAST_B "vmlas.s16 q1, q5, %[k2]\n\t"
#define GEN_A "vadd.i16 q0, q0, %[k1]\n\t"
#define GEN_B "vadd.i16 q1, q1, %[k2]\n\t"
#define CONST_B "vdup.16 q1, %[k2]\n\t"
#define GEN_SH "vshl.s32 q2, %[jp]\n\tvshl.s32 q3, %[jp]\n\t"
#define FAST_CLAMP "vqmovnb.s16 q0, q0\n\t"
#define GEN_CLAMP "vmax.s16 q0, q0, q4\n\tvmin.s16 q0, q0, q5\n\t"

/* `runs` runs of 8 * blocks outputs each against one widened row w (b' as int16): the row pointer goes back to w at
 * every run (fast form only, runs of whole vectors). */
static void mul_gate(const int16_t *w, int32_t blocks, int32_t runs, const int32_t k[5], int32_t zo16, const int8_t *a,
                     int8_t *o)
{
    int32_t t;
    const int16_t *b;
#define GATE_STEP                                                                                         \
    "vldrb.s16 q0, [%[a]], #8\n\t"                                                                        \
    "vldrh.u16 q1, [%[b]], #16\n\t" MUL_BODY(FAST_A, "", "", FAST_CLAMP) "vstrb.16 q0, [%[o]], #8\n\t"
#define GATE_ASM(BODY, COUNT)                                                                             \
    __asm__ volatile("ldr %[t], [%[c], #8]\n\tvdup.32 q6, %[t]\n\t" FAST_PRE                               \
                     "1:\n\t"                                                                              \
                     "mov %[b], %[w]\n\t"                                                                  \
                     "wls lr, %[count], 3f\n"                                                              \
                     "2:\n\t" BODY                                                                         \
                     "le lr, 2b\n"                                                                         \
                     "3:\n\t"                                                                              \
                     "subs %[runs], %[runs], #1\n\t"                                                       \
                     "bne 1b\n\t"                                                                          \
                     : [a] "+l"(a), [b] "=&l"(b), [o] "+l"(o), [t] "=&r"(t), [runs] "+r"(runs)             \
                     : [k1] "r"(k[0]), [c] "r"(k), [w] "r"(w), [count] "r"(COUNT), [zo] "r"(zo16)          \
                     : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "cc", "memory")
    if ((blocks & 1) == 0) { /* two vectors a step */
        GATE_ASM(GATE_STEP GATE_STEP, blocks >> 1);
    } else {
        GATE_ASM(GATE_STEP, blocks);
    }
}

typedef struct {
    int32_t o1, o2, ja, jb, jp, m, zo16, lo, hi; /* zo16 = output_offset * 2^16 */
    int general;                                 /* a clamp narrower than int8, or jp > 14 */
} mul_q_t;

/* n outputs from a (steps along) and b (steps along when step, else one element; step 2: b holds b' as int16). */
static void mul_run(const mul_q_t *q, const int8_t *a, const int8_t *b, int32_t step, int8_t *o, int32_t n)
{
    int32_t t;
    if (step == 2) {
        const int32_t k[5] = {q->o1 * (1 << q->ja), 0, q->m, 1 << q->ja, 1 << q->jb};
        MUL_RUN(FAST_PRE, LOAD_W, FAST_A, "", "", FAST_CLAMP);
    } else if (!q->general) {
        /* k1, k2 (a' and b' offsets, or b' itself), m, then q4 and q5 */
        const int32_t k[5] = {q->o1 * (1 << q->ja), step ? q->o2 * (1 << q->jb) : (b[0] + q->o2) * (1 << q->jb),
                              q->m, 1 << q->ja, 1 << q->jb};
        if (step) {
            MUL_RUN(FAST_PRE, LOAD_B, FAST_A, FAST_B, "", FAST_CLAMP);
        } else {
            MUL_RUN(FAST_PRE CONST_B, NO_B, FAST_A, "", "", FAST_CLAMP);
        }
    } else {
        const int32_t k[5] = {q->o1, step ? q->o2 : b[0] + q->o2, q->m, q->lo, q->hi};
        if (step) {
            MUL_RUN(GEN_PRE, LOAD_B, GEN_A, GEN_B, GEN_SH, GEN_CLAMP);
        } else {
            MUL_RUN(GEN_PRE CONST_B, NO_B, GEN_A, "", GEN_SH, GEN_CLAMP);
        }
    }
}
#endif

mcu_status_t mcu_mul_s8_mve(const mcu_mul_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_status_t status = mcu_mul_check(params, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_mul_params_t *p = params;
    const mcu_dims_t *od = &p->output;
    mcu_ew_runs_t r;
    mcu_ew_runs(&p->input1, &p->input2, od, &r);
    const int8_t *in1 = input1, *in2 = input2;
    mul_q_t q = {p->input1_offset, p->input2_offset, 0, 0, 0, 0, p->output_offset * 65536, p->act_min, p->act_max, 0};
    if (r.step1 == 0 && r.step2 == 1) { /* the product is symmetric: the input that steps along the run goes first */
        in1 = input2, in2 = input1;
        q.o1 = p->input2_offset, q.o2 = p->input1_offset;
        r.step1 = 1, r.step2 = 0;
        for (int32_t k = 0; k < 3; ++k) {
            const int32_t s = r.s1[k];
            r.s1[k] = r.s2[k], r.s2[k] = s;
        }
    }
    /* runs where neither input steps (an output axis neither input has) take the portable arithmetic */
    const int fast = r.step1 && mcu_mul_rq(p->output_multiplier, p->output_shift, 47, &q.m, &q.jp);
    q.jb = q.jp < 7 ? q.jp : 7;
    q.ja = q.jp - q.jb;
    q.general = q.jp > 14 || p->act_min != MCU_Q7_MIN || p->act_max != MCU_Q7_MAX;
    /* A row that repeats run after run (a channel gate: input1 contiguous, input2's row again) is copied to fill
     * `row`, so one call covers several runs. */
    int16_t row[CHUNK];
    const int8_t *copied = NULL;
    const int32_t reps = fast && !q.general && r.step2 && r.len <= CHUNK / 2 && r.s1[2] == r.len && r.s2[2] == 0
                             ? CHUNK / r.len : 1;
    int8_t *out = output;
    for (int32_t i0 = 0; i0 < r.count[0]; ++i0) {
        for (int32_t i1 = 0; i1 < r.count[1]; ++i1) {
            for (int32_t i2 = 0; i2 < r.count[2];) {
                const int8_t *a = in1 + i0 * r.s1[0] + i1 * r.s1[1] + i2 * r.s1[2];
                const int8_t *b = in2 + i0 * r.s2[0] + i1 * r.s2[1] + i2 * r.s2[2];
                if (reps > 1) {
                    if (b != copied) { /* b' = (x2 + o2) * 2^jb, as int16 */
                        for (int32_t i = 0; i < r.len; ++i) {
                            row[i] = (int16_t)((b[i] + q.o2) * (1 << q.jb));
                        }
                        for (int32_t k = 1; k < reps && (r.len & 7) != 0; ++k) { /* mul_gate needs one */
                            memcpy(row + k * r.len, row, (size_t)r.len * sizeof row[0]);
                        }
                        copied = b;
                    }
                    if ((r.len & 7) == 0) { /* every run of this loop against the row, in one call */
                        const int32_t k[5] = {q.o1 * (1 << q.ja), 0, q.m, 1 << q.ja, 1 << q.jb};
                        mul_gate(row, r.len >> 3, r.count[2] - i2, k, q.zo16, a, out);
                        out += (r.count[2] - i2) * r.len;
                        i2 = r.count[2];
                        continue;
                    }
                    const int32_t runs = r.count[2] - i2 < reps ? r.count[2] - i2 : reps;
                    mul_run(&q, a, (const int8_t *)(const void *)row, 2, out, runs * r.len);
                    out += runs * r.len;
                    i2 += runs;
                    continue;
                }
                if (fast) {
                    mul_run(&q, a, b, r.step2, out, r.len);
                } else {
                    for (int32_t i = 0; i < r.len; ++i) { /* mcu_mul_s8's arithmetic */
                        const int32_t y = mcu_requantize_round((a[i * r.step1] + q.o1) * (b[i * r.step2] + q.o2),
                                                               p->output_multiplier, p->output_shift);
                        out[i] = (int8_t)mcu_clamp_i32(mcu_add_offset(y, p->output_offset), p->act_min,
                                                       p->act_max);
                    }
                }
                out += r.len;
                ++i2;
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)input1, (void)input2, (void)output;
    return MCU_ERR_ARG;
#endif
}
