/* Helium int8 add / subtract with broadcasting: rescales gathered from per-call tables, VQADD. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*  - Per run, both rescales are gathered from 256-entry tables 4 lanes at a time, VQADD and the output
 *    requantization of mcu_add_s8_mve; a long run against one repeated element gathers 16 lanes from an output
 *    table. */

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_ew.h"

#if MCU_HAVE_MVE
#define ROW 512     /* bytes of a repeated row's copies (stack) */
#define LUT_MIN 256 /* a run of at least this many against one repeated element gets its own output table */

typedef struct {
    int32x4_t mult, shift, vmin, vmax;
    int32_t zo, down; /* down: output_shift < 0, the requantization is VQDMULH then VRSHL */
    int32_t m, sh, lo, hi, full;
} add_q_t;

/* Byte j of a 16-element step's narrowed vector holds element PERM[j] (4 groups of 4 lanes, narrowed bottom / top
 * twice); the scatter store puts it back in place. */
static const uint8_t PERM[16] __attribute__((aligned(4))) = {0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15};

/* One group of 4 lanes: both rescales gathered, the saturated sum requantized (VQDMULH, VRSHL), + output offset. */
#define ADD_GROUP(NARROW)                                                                                 \
    "vldrb.s32 q0, [%[a]], #4\n\t"                                                                         \
    "vldrb.s32 q1, [%[b]], #4\n\t"                                                                         \
    "vldrw.u32 q2, [%[t1], q0, uxtw #2]\n\t"                                                               \
    "vldrw.u32 q3, [%[t2], q1, uxtw #2]\n\t"                                                               \
    "vqadd.s32 q2, q2, q3\n\t"                                                                             \
    "vqdmulh.s32 q2, q2, %[m]\n\t"                                                                         \
    "vrshl.s32 q2, %[sh]\n\t"                                                                              \
    "vadd.i32 q2, q2, %[zo]\n\t" NARROW "\n\t"

MCU_INLINE int32x4_t add_rq(const add_q_t *q, int32x4_t sum)
{
    const int32x4_t y = q->down ? vrshlq_s32(vqdmulhq_s32(sum, q->mult), q->shift)
                                : mcu_mve_requantize(sum, q->mult, q->shift);
    return vminq_s32(vmaxq_s32(vaddq_n_s32(y, q->zo), q->vmin), q->vmax);
}

/* n outputs from a and b stepping along (t1, t2 at entry 0: a sign-extended int8 offset wraps below them). */
static void add_run(const add_q_t *q, const int32_t *t1, const int32_t *t2, const int8_t *a, const int8_t *b,
                    int8_t *o, int32_t n)
{
    int32_t blocks = n >> 2;
    if (q->down && n >= 16) { /* 16 lanes a step: 41 instructions (45 with a clamp narrower than int8) */
        const int32_t steps = n >> 4;
        if (q->full) {
            __asm__ volatile("vldrb.u8 q7, [%[perm]]\n\t"
                             "wls lr, %[steps], 2f\n"
                             "1:\n\t" ADD_GROUP("vqmovnb.s32 q4, q2") ADD_GROUP("vqmovnt.s32 q4, q2")
                                 ADD_GROUP("vqmovnb.s32 q5, q2") ADD_GROUP("vqmovnt.s32 q5, q2")
                             "vqmovnb.s16 q6, q4\n\t"
                             "vqmovnt.s16 q6, q5\n\t"
                             "vstrb.8 q6, [%[o], q7]\n\t"
                             "add %[o], %[o], #16\n\t"
                             "le lr, 1b\n"
                             "2:\n\t"
                             : [a] "+l"(a), [b] "+l"(b), [o] "+r"(o)
                             : [steps] "r"(steps), [t1] "r"(t1), [t2] "r"(t2), [m] "r"(q->m), [sh] "r"(q->sh),
                               [zo] "r"(q->zo), [perm] "r"(PERM)
                             : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
        } else { /* PERM, then the clamp's bounds 16 times each */
            int8_t k[48] __attribute__((aligned(4)));
            memcpy(k, PERM, 16);
            memset(k + 16, q->lo, 16);
            memset(k + 32, q->hi, 16);
            __asm__ volatile("vldrb.u8 q7, [%[perm]]\n\t"
                             "wls lr, %[steps], 2f\n"
                             "1:\n\t" ADD_GROUP("vqmovnb.s32 q4, q2") ADD_GROUP("vqmovnt.s32 q4, q2")
                                 ADD_GROUP("vqmovnb.s32 q5, q2") ADD_GROUP("vqmovnt.s32 q5, q2")
                             "vqmovnb.s16 q6, q4\n\t"
                             "vqmovnt.s16 q6, q5\n\t"
                             "vldrb.u8 q4, [%[perm], #16]\n\t"
                             "vldrb.u8 q5, [%[perm], #32]\n\t"
                             "vmax.s8 q6, q6, q4\n\t"
                             "vmin.s8 q6, q6, q5\n\t"
                             "vstrb.8 q6, [%[o], q7]\n\t"
                             "add %[o], %[o], #16\n\t"
                             "le lr, 1b\n"
                             "2:\n\t"
                             : [a] "+l"(a), [b] "+l"(b), [o] "+r"(o)
                             : [steps] "r"(steps), [t1] "r"(t1), [t2] "r"(t2), [m] "r"(q->m), [sh] "r"(q->sh),
                               [zo] "r"(q->zo), [perm] "r"(k)
                             : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
        }
        n &= 15;
        blocks = n >> 2;
    }
    if (q->down && blocks > 0) {
        mcu_mve_add_tables_down(&a, &b, &o, blocks, t1, t2, q->mult, q->shift, q->vmin, q->vmax, q->zo);
        blocks = 0;
    }
    for (; blocks > 0; --blocks, a += 4, b += 4, o += 4) {
        const uint32x4_t x1 = vreinterpretq_u32_s32(vldrbq_s32(a)), x2 = vreinterpretq_u32_s32(vldrbq_s32(b));
        vstrbq_s32(o, add_rq(q, vqaddq_s32(vldrwq_gather_shifted_offset_s32(t1, x1),
                                           vldrwq_gather_shifted_offset_s32(t2, x2))));
    }
    if (n & 3) { /* inactive lanes read 0, which indexes the tables inside */
        const mve_pred16_t p = vctp32q((uint32_t)(n & 3));
        const uint32x4_t x1 = vreinterpretq_u32_s32(vldrbq_z_s32(a, p)), x2 = vreinterpretq_u32_s32(vldrbq_z_s32(b, p));
        vstrbq_p_s32(o, add_rq(q, vqaddq_s32(vldrwq_gather_shifted_offset_s32(t1, x1),
                                             vldrwq_gather_shifted_offset_s32(t2, x2))), p);
    }
}

/* n outputs from a stepping along (its table t) against one element's rescaled value v: 4 lanes gathered, or for a
 * long run a 256-entry output table indexed by the raw bytes (entry u for the input (int8)u), 16 lanes a gather. */
static void add_run_const(const add_q_t *q, const int32_t *t, int32_t v, const int8_t *a, int8_t *o, int32_t n)
{
    if (n < LUT_MIN) {
        for (int32_t i = 0; i < n; i += 4) {
            const mve_pred16_t p = vctp32q((uint32_t)(n - i));
            const uint32x4_t x = vreinterpretq_u32_s32(vldrbq_z_s32(a + i, p));
            vstrbq_p_s32(o + i, add_rq(q, vqaddq_n_s32(vldrwq_gather_shifted_offset_s32(t, x), v)), p);
        }
        return;
    }
    int8_t g[256] __attribute__((aligned(4)));
    for (int32_t u = 0; u < 256; u += 4) { /* entries u .. u + 3 are the inputs (int8)u .. */
        const uint32x4_t x = vreinterpretq_u32_s32(vaddq_n_s32(vreinterpretq_s32_u32(vidupq_n_u32((uint32_t)u, 1)),
                                                               u < 128 ? 0 : -256));
        vstrbq_s32(g + u, add_rq(q, vqaddq_n_s32(vldrwq_gather_shifted_offset_s32(t, x), v)));
    }
    __asm__ volatile("wlstp.8 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vldrb.u8 q0, [%[a]], #16\n\t"
                     "vldrb.u8 q1, [%[g], q0]\n\t"
                     "vstrb.8 q1, [%[o]], #16\n\t"
                     "letp lr, 1b\n"
                     "2:\n\t"
                     : [a] "+r"(a), [o] "+r"(o)
                     : [g] "r"(g), [n] "r"(n)
                     : "lr", "q0", "q1", "memory");
}

/* One group of 4 lanes against a repeated row's rescales w (int32, in order): one gather instead of a load and a
 * gather. */
#define ADD_ROW_GROUP(NARROW)                                                                             \
    "vldrb.s32 q0, [%[a]], #4\n\t"                                                                         \
    "vldrw.u32 q3, [%[w]], #16\n\t"                                                                        \
    "vldrw.u32 q2, [%[t], q0, uxtw #2]\n\t"                                                                \
    "vqadd.s32 q2, q2, q3\n\t"                                                                             \
    "vqdmulh.s32 q2, q2, %[m]\n\t"                                                                         \
    "vrshl.s32 q2, %[sh]\n\t"                                                                              \
    "vadd.i32 q2, q2, %[zo]\n\t" NARROW "\n\t"

/* `runs` runs of n (a multiple of 16) outputs: the stepping input a through its table t against the row w read
 * again every run (37 instructions per 16; 41 with a narrow clamp, whose bounds follow PERM in k). The row's start
 * and step count wait on the stack, the run count in lr. */
static void add_rows(const add_q_t *q, const int32_t *t, const int8_t *a, const int32_t *w, int8_t *o, int32_t n,
                     int32_t runs)
{
    int8_t k[48] __attribute__((aligned(4)));
    memcpy(k, PERM, 16);
    memset(k + 16, q->lo, 16);
    memset(k + 32, q->hi, 16);
    int32_t steps = n >> 4;
#define ADD_ROWS(CLAMP)                                                                                   \
    __asm__ volatile("vldrb.u8 q7, [%[k]]\n\t"                                                              \
                     "sub sp, sp, #8\n\t"                                                                  \
                     "str %[w], [sp]\n\t"                                                                  \
                     "str %[steps], [sp, #4]\n\t"                                                          \
                     "mov lr, %[runs]\n"                                                                   \
                     "4:\n"                                                                                \
                     "1:\n\t" ADD_ROW_GROUP("vqmovnb.s32 q4, q2") ADD_ROW_GROUP("vqmovnt.s32 q4, q2")      \
                         ADD_ROW_GROUP("vqmovnb.s32 q5, q2") ADD_ROW_GROUP("vqmovnt.s32 q5, q2")             \
                     "vqmovnb.s16 q6, q4\n\t"                                                              \
                     "vqmovnt.s16 q6, q5\n\t" CLAMP                                                        \
                     "vstrb.8 q6, [%[o], q7]\n\t"                                                          \
                     "add %[o], %[o], #16\n\t"                                                             \
                     "subs %[steps], %[steps], #1\n\t"                                                     \
                     "bne 1b\n\t"                                                                          \
                     "subs lr, lr, #1\n\t"                                                                 \
                     "beq 5f\n\t"                                                                          \
                     "ldr %[w], [sp]\n\t"                                                                  \
                     "ldr %[steps], [sp, #4]\n\t"                                                          \
                     "b 4b\n"                                                                              \
                     "5:\n\t"                                                                              \
                     "add sp, sp, #8\n\t"                                                                  \
                     : [a] "+l"(a), [w] "+r"(w), [o] "+r"(o), [steps] "+r"(steps)                           \
                     : [runs] "r"(runs), [t] "r"(t), [m] "r"(q->m), [sh] "r"(q->sh), [zo] "r"(q->zo),        \
                       [k] "r"(k)                                                                          \
                     : "lr", "q0", "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory")
    if (q->full) {
        ADD_ROWS("");
    } else {
        ADD_ROWS("vldrb.u8 q4, [%[k], #16]\n\tvldrb.u8 q5, [%[k], #32]\n\t"
                 "vmax.s8 q6, q6, q4\n\tvmin.s8 q6, q6, q5\n\t");
    }
}

/* reps copies of the n bytes at src, back to back from dst (16 bytes a vector). */
static void copy_rows(int8_t *dst, const int8_t *src, int32_t n, int32_t reps)
{
    for (int32_t k = 0; k < reps; ++k, dst += n) {
        for (int32_t i = 0; i < n; i += 16) {
            const mve_pred16_t p = vctp8q((uint32_t)(n - i));
            vstrbq_p_s8(dst + i, vldrbq_z_s8(src + i, p), p);
        }
    }
}
#endif

mcu_status_t mcu_add_broadcast_s8_mve(const mcu_add_broadcast_params_t *params, const int8_t *input1,
                                      const int8_t *input2, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_add_broadcast_params_t *p = params;
    const mcu_status_t status = mcu_add_broadcast_check(p, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    const add_q_t q = {vdupq_n_s32(p->output_multiplier), vdupq_n_s32(p->output_shift), vdupq_n_s32(p->act_min),
                       vdupq_n_s32(p->act_max), p->output_offset, p->output_shift < 0, p->output_multiplier,
                       p->output_shift, p->act_min, p->act_max, p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX};
    mcu_ew_runs_t r;
    mcu_ew_runs(&p->input1, &p->input2, &p->output, &r);
    int32_t tables[2][256];
    int32_t *t1 = tables[0] + 128, *t2 = tables[1] + 128;
    for (int32_t v = -128; v < 128; v += 4) {
        const int32x4_t x = vreinterpretq_s32_u32(vidupq_n_u32((uint32_t)v, 1));
        const int32x4_t a1 = mcu_mve_requantize(vshlq_r_s32(vaddq_n_s32(x, p->input1_offset), p->left_shift),
                                                vdupq_n_s32(p->input1_multiplier), vdupq_n_s32(p->input1_shift));
        const int32x4_t a2 = mcu_mve_requantize(vshlq_r_s32(vaddq_n_s32(x, p->input2_offset), p->left_shift),
                                                vdupq_n_s32(p->input2_multiplier), vdupq_n_s32(p->input2_shift));
        vstrwq_s32(t1 + v, a1);
        vstrwq_s32(t2 + v, p->subtract ? vnegq_s32(a2) : a2);
    }
    /* A row that repeats run after run (input1 contiguous, input2's row again, or the other way) is copied to fill
     * `row`, so one call covers several runs. */
    int8_t row[ROW];
    int32_t row32[ROW / 2]; /* a repeated row's rescaled values (rows of at most ROW / 2) */
    const int8_t *copied = NULL;
    const int32_t rep1 = r.s1[2] == 0 && r.s2[2] == r.len, rep2 = r.s2[2] == 0 && r.s1[2] == r.len;
    const int32_t reps = r.step1 && r.step2 && (rep1 || rep2) && r.len <= ROW / 2 ? ROW / r.len : 1;
    int8_t *out = output;
    for (int32_t i0 = 0; i0 < r.count[0]; ++i0) {
        for (int32_t i1 = 0; i1 < r.count[1]; ++i1) {
            for (int32_t i2 = 0; i2 < r.count[2];) {
                const int8_t *a = input1 + i0 * r.s1[0] + i1 * r.s1[1] + i2 * r.s1[2];
                const int8_t *b = input2 + i0 * r.s2[0] + i1 * r.s2[1] + i2 * r.s2[2];
                int32_t runs = 1;
                if (q.down && r.step1 && r.step2 && (rep1 || rep2) && (r.len & 15) == 0 && r.len <= ROW / 2) {
                    const int8_t *rep = rep2 ? b : a; /* the repeated row's rescales, once */
                    if (rep != copied) {
                        const int32_t *tr = rep2 ? t2 : t1;
                        for (int32_t c = 0; c < r.len; ++c) {
                            row32[c] = tr[rep[c]];
                        }
                        copied = rep;
                    }
                    runs = r.count[2] - i2;
                    add_rows(&q, rep2 ? t1 : t2, rep2 ? a : b, row32, out, r.len, runs);
                } else if (reps > 1) {
                    const int8_t *rep = rep2 ? b : a;
                    if (rep != copied) {
                        copy_rows(row, rep, r.len, reps);
                        copied = rep;
                    }
                    runs = r.count[2] - i2 < reps ? r.count[2] - i2 : reps;
                    add_run(&q, t1, t2, rep2 ? a : row, rep2 ? row : b, out, runs * r.len);
                } else if (r.step1 && r.step2) {
                    add_run(&q, t1, t2, a, b, out, r.len);
                } else if (r.step1) {
                    add_run_const(&q, t1, t2[b[0]], a, out, r.len);
                } else if (r.step2) {
                    add_run_const(&q, t2, t1[a[0]], b, out, r.len);
                } else { /* an output axis neither input has */
                    memset(out, (int8_t)mcu_clamp_i32(mcu_add_output((int64_t)t1[a[0]] + t2[b[0]], p->output_multiplier,
                                                                      p->output_shift, p->output_offset),
                                                       p->act_min, p->act_max), (size_t)r.len);
                }
                out += runs * r.len;
                i2 += runs;
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)input1, (void)input2, (void)output;
    return MCU_ERR_ARG;
#endif
}
