/* DSP int8 add / subtract with broadcasting: table-built rescales per run, QADD, SMMLA. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*  - Per run, each input's rescale is read from a table built per call, the sum saturated (QADD) and requantized
 *    by SMMLA; a run against one repeated element reads an output table. */

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_ew.h"

#define TABLE_MIN 64 /* fewer outputs: no tables (their 512 entries cost more than they save) */
#define ROW 512     /* bytes of a repeated row's copies (stack) */
#define LUT_MIN 256   /* a run of at least this many against one repeated element gets its own output table */

typedef struct {
    int32_t rec[3]; /* the output requantization (mcu_rq3_record) */
    mcu_rq_mode_t mode;
} add_q_t;

MCU_INLINE int32_t add_qadd(int32_t a, int32_t b)
{
#if MCU_HAVE_DSP
    return __qadd(a, b);
#else
    return mcu_sat_i32((int64_t)a + b);
#endif
}

MCU_INLINE int8_t add_out(const add_q_t *q, int32_t a1, int32_t a2)
{
    return mcu_rq3_out(add_qadd(a1, a2), q->rec, &q->mode);
}

/* n outputs from a and b stepping along (t1, t2: their tables at entry 0). */
static void add_run(const add_q_t *q, const int32_t *t1, const int32_t *t2, const int8_t *a, const int8_t *b,
                    int8_t *o, int32_t n)
{
    int32_t pairs = n >> 1;
    (void)pairs;
#if MCU_DSP_ASM
    if (q->mode.records_fast && n >= 2) { /* 9 instructions an element (10 with a narrow clamp), 2 a step */
        int32_t x, y;
        int8_t clamp[256]; /* a clamp narrower than int8 as a table: one LDRSB */
        const int8_t *ct = clamp + 128;
        if (!q->mode.fast) {
            for (int32_t v = -128; v < 128; ++v) {
                clamp[v + 128] = (int8_t)mcu_clamp_i32(v, q->mode.act_min, q->mode.act_max);
            }
        }
#define ADD_PAIRS(CLAMP)                                                                                  \
    __asm__ volatile("1:\n\t"                                                                              \
                     "ldrsb %[x], [%[a]], #1\n\t"                                                          \
                     "ldrsb %[y], [%[b]], #1\n\t"                                                          \
                     "ldr %[x], [%[t1], %[x], lsl #2]\n\t"                                                 \
                     "ldr %[y], [%[t2], %[y], lsl #2]\n\t"                                                 \
                     "qadd %[x], %[x], %[y]\n\t"                                                           \
                     "smmla %[x], %[x], %[m], %[rh]\n\t"                                                   \
                     "ldrsb %[y], [%[a]], #1\n\t"                                                          \
                     "asr %[x], %[x], %[sh]\n\t"                                                           \
                     "ssat %[x], #8, %[x]\n\t" CLAMP                                                       \
                     "strb %[x], [%[o]], #1\n\t"                                                           \
                     "ldrsb %[x], [%[b]], #1\n\t"                                                          \
                     "ldr %[y], [%[t1], %[y], lsl #2]\n\t"                                                 \
                     "ldr %[x], [%[t2], %[x], lsl #2]\n\t"                                                 \
                     "qadd %[x], %[x], %[y]\n\t"                                                           \
                     "smmla %[x], %[x], %[m], %[rh]\n\t"                                                   \
                     "asr %[x], %[x], %[sh]\n\t"                                                           \
                     "ssat %[x], #8, %[x]\n\t" CLAMP                                                       \
                     "strb %[x], [%[o]], #1\n\t"                                                           \
                     "subs %[n], %[n], #1\n\t"                                                             \
                     "bne 1b\n\t"                                                                          \
                     : [a] "+r"(a), [b] "+r"(b), [o] "+r"(o), [n] "+r"(pairs), [x] "=&r"(x), [y] "=&r"(y)    \
                     : [t1] "r"(t1), [t2] "r"(t2), [m] "r"(q->rec[0]), [rh] "r"(q->rec[2]), [sh] "r"(q->rec[1]), \
                       [ct] "r"(ct)                                                                        \
                     : "cc", "memory")
        if (q->mode.fast) {
            ADD_PAIRS("");
        } else {
            ADD_PAIRS("ldrsb %[x], [%[ct], %[x]]\n\t");
        }
        if (n & 1) {
            *o = add_out(q, t1[*a], t2[*b]);
        }
        return;
    }
#endif
    {
        for (int32_t i = 0; i < n; ++i) {
            o[i] = add_out(q, t1[a[i]], t2[b[i]]);
        }
    }
}

/* n outputs from a stepping along (its table t) against one element's rescaled value v: directly, or through a
 * 256-entry output table for long runs. */
static void add_run_const(const add_q_t *q, const int32_t *t, int32_t v, const int8_t *a, int8_t *o, int32_t n)
{
    if (n < LUT_MIN) {
        for (int32_t i = 0; i < n; ++i) {
            o[i] = add_out(q, t[a[i]], v);
        }
        return;
    }
    int8_t g[256];
    for (int32_t x = -128; x < 128; ++x) {
        g[x + 128] = add_out(q, t[x], v);
    }
    const int8_t *lut = g + 128;
    __asm__("" : "+r"(lut)); /* a base register, not sp-relative addressing per element */
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        o[i + 0] = lut[a[i + 0]];
        o[i + 1] = lut[a[i + 1]];
        o[i + 2] = lut[a[i + 2]];
        o[i + 3] = lut[a[i + 3]];
        o[i + 4] = lut[a[i + 4]];
        o[i + 5] = lut[a[i + 5]];
        o[i + 6] = lut[a[i + 6]];
        o[i + 7] = lut[a[i + 7]];
        o[i + 8] = lut[a[i + 8]];
        o[i + 9] = lut[a[i + 9]];
        o[i + 10] = lut[a[i + 10]];
        o[i + 11] = lut[a[i + 11]];
        o[i + 12] = lut[a[i + 12]];
        o[i + 13] = lut[a[i + 13]];
        o[i + 14] = lut[a[i + 14]];
        o[i + 15] = lut[a[i + 15]];
    }
    for (; i < n; ++i) {
        o[i] = lut[a[i]];
    }
}

#if MCU_DSP_ASM
/* `runs` runs of n (even) outputs: the stepping input a through its table t, the repeated row's rescaled values w
 * (int32, read again every run); 8 instructions an element plus one per pair (9 with a narrow clamp's table ct). The
 * row's start and n wait on the stack, the run count in lr; n comes in as runs << 16 | n. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void add_rows(const add_q_t *q, const int32_t *t, const int8_t *a, const int32_t *w, int8_t *o, int32_t n,
                     int32_t runs, const int8_t *ct)
{
    int32_t x, y, nr = (runs << 16) | n;
#define ADD_ROW_ONE(CLAMP)                                                                                \
    "ldrsb %[x], [%[a]], #1\n\t"                                                                           \
    "ldr %[y], [%[w]], #4\n\t"                                                                             \
    "ldr %[x], [%[t], %[x], lsl #2]\n\t"                                                                   \
    "qadd %[x], %[x], %[y]\n\t"                                                                            \
    "smmla %[x], %[x], %[m], %[rh]\n\t"                                                                    \
    "asr %[x], %[x], %[sh]\n\t"                                                                            \
    "ssat %[x], #8, %[x]\n\t" CLAMP                                                                        \
    "strb %[x], [%[o]], #1\n\t"
#define ADD_ROWS(CLAMP)                                                                                   \
    __asm__ volatile("sub sp, sp, #8\n\t"                                                                  \
                     "lsr lr, %[n], #16\n\t"                                                               \
                     "uxth %[n], %[n]\n\t"                                                                 \
                     "lsr %[n], %[n], #1\n\t"                                                              \
                     "str %[w], [sp]\n\t"                                                                  \
                     "str %[n], [sp, #4]\n"                                                                \
                     "4:\n"                                                                                \
                     "1:\n\t" ADD_ROW_ONE(CLAMP) ADD_ROW_ONE(CLAMP)                                         \
                     "subs %[n], %[n], #1\n\t"                                                             \
                     "bne 1b\n\t"                                                                          \
                     "subs lr, lr, #1\n\t"                                                                 \
                     "beq 5f\n\t"                                                                          \
                     "ldr %[w], [sp]\n\t"                                                                  \
                     "ldr %[n], [sp, #4]\n\t"                                                              \
                     "b 4b\n"                                                                              \
                     "5:\n\t"                                                                              \
                     "add sp, sp, #8\n\t"                                                                  \
                     : [a] "+r"(a), [w] "+r"(w), [o] "+r"(o), [n] "+r"(nr), [x] "=&r"(x), [y] "=&r"(y)       \
                     : [t] "r"(t), [m] "r"(q->rec[0]), [rh] "r"(q->rec[2]), [sh] "r"(q->rec[1]), [ct] "r"(ct) \
                     : "lr", "cc", "memory")
    if (q->mode.fast) {
        ADD_ROWS("");
    } else {
        ADD_ROWS("ldrsb %[x], [%[ct], %[x]]\n\t");
    }
}
#endif

/* reps copies of the n bytes at src, back to back from dst (by words when n is whole words; dst is aligned). */
static void copy_rows(int8_t *dst, const int8_t *src, int32_t n, int32_t reps)
{
    for (int32_t k = 0; k < reps; ++k, dst += n) {
        if ((n & 3) == 0) {
            uint32_t *d = (uint32_t *)(void *)dst;
            for (int32_t i = 0; i < n; i += 4) {
                *d++ = mcu_read_u32(src + i);
            }
        } else {
            for (int32_t i = 0; i < n; ++i) {
                dst[i] = src[i];
            }
        }
    }
}

mcu_status_t mcu_add_broadcast_s8_dsp(const mcu_add_broadcast_params_t *params, const int8_t *input1,
                                      const int8_t *input2, int8_t *output)
{
    const mcu_add_broadcast_params_t *p = params;
    const mcu_status_t status = mcu_add_broadcast_check(p, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_dims_t *od = &p->output;
    add_q_t q;
    mcu_rq3_record(p->output_multiplier, p->output_shift, p->output_offset, q.rec);
    q.mode = mcu_rq3_mode(q.rec, 1, p->output_offset, p->act_min, p->act_max);
    mcu_ew_runs_t r;
    mcu_ew_runs(&p->input1, &p->input2, od, &r);
    const int32_t total = od->n * od->h * od->w * od->c;
    int32_t tables[2][256];
    int32_t *t1 = tables[0] + 128, *t2 = tables[1] + 128;
    if (total < TABLE_MIN) {
        for (int32_t i0 = 0; i0 < r.count[0]; ++i0) { /* directly, no tables */
            for (int32_t i1 = 0; i1 < r.count[1]; ++i1) {
                for (int32_t i2 = 0; i2 < r.count[2]; ++i2) {
                    const int8_t *a = input1 + i0 * r.s1[0] + i1 * r.s1[1] + i2 * r.s1[2];
                    const int8_t *b = input2 + i0 * r.s2[0] + i1 * r.s2[1] + i2 * r.s2[2];
                    for (int32_t i = 0; i < r.len; ++i) {
                        const int32_t a2 = mcu_add_rescale(b[i * r.step2], p->input2_offset, p->left_shift,
                                                           p->input2_multiplier, p->input2_shift);
                        *output++ = add_out(&q, mcu_add_rescale(a[i * r.step1], p->input1_offset, p->left_shift,
                                                                p->input1_multiplier, p->input1_shift),
                                            p->subtract ? -a2 : a2);
                    }
                }
            }
        }
        return MCU_OK;
    }
    mcu_add_tables(p, t1, t2);
    /* A row that repeats run after run (input1 contiguous, input2's row again, or the other way) is copied to fill
     * `row`, so one call covers several runs. */
    int8_t row[ROW] __attribute__((aligned(4)));
#if MCU_DSP_ASM
    int32_t row32[ROW / 2]; /* a repeated row's rescaled values (rows of at most ROW / 2) */
    int8_t clamp[256];      /* a clamp narrower than int8 as a table */
    for (int32_t v = -128; v < 128 && !q.mode.fast; ++v) {
        clamp[v + 128] = (int8_t)mcu_clamp_i32(v, p->act_min, p->act_max);
    }
#endif
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
#if MCU_DSP_ASM
                if (reps > 1 && q.mode.records_fast && (r.len & 1) == 0) { /* the repeated row's rescales, once */
                    const int8_t *rep = rep2 ? b : a;
                    if (rep != copied) {
                        const int32_t *tr = rep2 ? t2 : t1;
                        for (int32_t c = 0; c < r.len; ++c) {
                            row32[c] = tr[rep[c]];
                        }
                        copied = rep;
                    }
                    const int32_t k = r.count[2] - i2 < 0xFFFF ? r.count[2] - i2 : 0xFFFF;
                    add_rows(&q, rep2 ? t1 : t2, rep2 ? a : b, row32, out, r.len, k, clamp + 128);
                    out += k * r.len;
                    i2 += k;
                    continue;
                }
#endif
                if (reps > 1) {
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
                    memset(out, add_out(&q, t1[a[0]], t2[b[0]]), (size_t)r.len);
                }
                out += runs * r.len;
                i2 += runs;
            }
        }
    }
    return MCU_OK;
}
