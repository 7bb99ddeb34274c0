/* Inline helpers of the elementwise variants (mcu_mul_s8_*, mcu_add_broadcast_s8_*); not a public API.
 *
 *  - Runs: a broadcast (input1, input2 -> output, mcu_kernels.h "Broadcast dims") is a set of runs, each `len`
 *    output elements written in order while each input either steps along (step 1) or holds one element (step 0):
 *    the innermost output axes merged while every input keeps its kind. Up to three outer loops place the runs
 *    (the inputs' strides per step, 0 where an input repeats: a channel gate's row is read again for every pixel);
 *    outer axes that continue each other merge too, so [N,H,W,C] x [1,1,1,C] is one loop of N*H*W runs.
 *  - The product requantization of mcu_mul_s8 (mcu_requantize_round: one rounding, ties to even) without 64-bit
 *    shifts: with mult = m0 * 2^t (m0 odd) and R = 31 - shift - t, out = round(p * m0 / 2^R) for the product
 *    p = (x1 + o1) * (x2 + o2), |p| <= 255^2 < 2^16. Ties never occur for R >= 17 (p * m0 would need 2-adic
 *    valuation R - 1 >= 16, but m0 is odd and |p| < 2^16), so rounding half up is the same. For R <= T (the
 *    kernel's fixed total shift: 48 for the DSP form, 47 for Helium's doubling one) the kernel multiplies
 *    P = p * 2^jp by m = m0 * 2^jm with jp + jm = T - R (jm as large as m < 2^31 allows, jp <= 15 so P fits int32):
 *      DSP:    (hi32(P * m) + 2^15 + o * 2^16) >> 16 = floor((P * m + 2^47) / 2^48) + o   (SMMLA, PKHTB asr #16)
 *      Helium: (floor(2 P m / 2^32) + o * 2^16 + 2^15) >> 16, the same with T = 47       (VQDMLASH, VQRSHRNB #16)
 *    (floor(floor(X / 2^32) / 2^16) = floor(X / 2^48)). For R > T, |p * m0| < 2^47 <= 2^(R-1): out = 0 (m = 0).
 *    Otherwise (R < 17, or jp > 15) the kernels keep mcu_requantize_round.
 *  - The add's input rescales as two 256-entry int32 tables (input2's negated for a subtraction: |a2| < 2^28), built
 *    per call; a run against one repeated element reads a 256-entry output table built for that element.
 *  - mcu_ew_for_runs_s8 hands a kernel's run function every run, several at once against a repeated row's copies.
 */
#ifndef MCU_EW_H
#define MCU_EW_H

#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

typedef struct {
    int32_t len;             /* output elements per run */
    int32_t step1, step2;    /* per input: 1 steps along the run, 0 holds one element */
    int32_t count[3];        /* outer loops, outermost first (1 where unused) */
    int32_t s1[3], s2[3];    /* element strides of the inputs per outer step */
} mcu_ew_runs_t;

static inline void mcu_ew_runs(const mcu_dims_t *d1, const mcu_dims_t *d2, const mcu_dims_t *o, mcu_ew_runs_t *r)
{
    int32_t s1[4], s2[4];
    mcu_broadcast_strides(d1, s1);
    mcu_broadcast_strides(d2, s2);
    const int32_t od[4] = {o->n, o->h, o->w, o->c};
    int32_t len = 1, k1 = -1, k2 = -1, j = 3;
    for (; j >= 0; --j) {
        if (od[j] == 1) {
            continue;
        }
        if (k1 < 0) {
            k1 = s1[j] != 0;
            k2 = s2[j] != 0;
        } else if (s1[j] != k1 * len || s2[j] != k2 * len) {
            break;
        }
        len *= od[j];
    }
    r->len = len;
    r->step1 = k1 < 0 ? 1 : k1;
    r->step2 = k2 < 0 ? 1 : k2;
    for (int32_t a = 0; a < 3; ++a) {
        r->count[a] = a <= j ? od[a] : 1;
        r->s1[a] = a <= j ? s1[a] : 0;
        r->s2[a] = a <= j ? s2[a] : 0;
    }
    for (int32_t a = 1; a >= 0; --a) { /* an outer axis that continues the one inside it joins it */
        if (r->s1[a] == r->count[a + 1] * r->s1[a + 1] && r->s2[a] == r->count[a + 1] * r->s2[a + 1]) {
            r->count[a + 1] *= r->count[a];
            r->count[a] = 1;
            r->s1[a] = r->s2[a] = 0;
        }
    }
}

/* The product requantization's fast form (above) for total shift T: m and jp (P = p * 2^jp); 0 when there is none. */
static inline int mcu_mul_rq(int32_t mult, int32_t shift, int32_t total, int32_t *m, int32_t *jp)
{
    int32_t t = 0;
    while (mult != 0 && ((mult >> t) & 1) == 0) {
        ++t;
    }
    const int32_t r = 31 - shift - t;
    if (mult == 0 || r > total) {
        *m = 0;
        *jp = 0;
        return 1;
    }
    int32_t bits = 0;
    while (bits < 31 && (mult >> t) >= ((int32_t)1 << bits)) {
        ++bits;
    }
    const int32_t j = total - r, jm = j < 31 - bits ? j : 31 - bits;
    if (r < 17 || j - jm > 15) {
        return 0;
    }
    *m = (mult >> t) * ((int32_t)1 << jm);
    *jp = j - jm;
    return 1;
}

/* t[v] = mcu_add_rescale(v, offset, left_shift, mult, shift) for v in [-128, 127] (t points at entry 0), negated when
 * `negate`. For shift <= 0 the product (v + offset) * 2^left_shift * mult (|.| < 2^62) grows by one step per entry
 * and each entry is mcu_requantize's rounding of it. */
static inline void mcu_add_table(int32_t offset, int32_t left_shift, int32_t mult, int32_t shift, int negate,
                                 int32_t *t)
{
    const int32_t sign = negate ? -1 : 1;
    if (shift > 0) {
        for (int32_t v = -128; v < 128; ++v) {
            t[v] = sign * mcu_add_rescale(v, offset, left_shift, mult, shift);
        }
        return;
    }
    const int64_t step = (int64_t)mult * ((int64_t)1 << left_shift);
    int64_t prod = (int64_t)(offset - 128) * step;
    if (shift <= -2) {
        const int32_t s = -shift - 1, round = (int32_t)1 << (s - 1);
        for (int32_t v = -128; v < 128; ++v, prod += step) {
            t[v] = sign * ((((int32_t)(prod >> 32)) + round) >> s);
        }
    } else {
        const int32_t r = 31 - shift;
        for (int32_t v = -128; v < 128; ++v, prod += step) {
            t[v] = sign * (int32_t)((prod + ((int64_t)1 << (r - 1))) >> r);
        }
    }
}

/* t1[v], t2[v] for v in [-128, 127] (t1, t2 point at entry 0): the two inputs' rescaled values, t2 negated for a
 * subtraction. */
static inline void mcu_add_tables(const mcu_add_broadcast_params_t *p, int32_t *t1, int32_t *t2)
{
    mcu_add_table(p->input1_offset, p->left_shift, p->input1_multiplier, p->input1_shift, 0, t1);
    mcu_add_table(p->input2_offset, p->left_shift, p->input2_multiplier, p->input2_shift, p->subtract, t2);
}

static inline int mcu_ew_same(const mcu_dims_t *a, const mcu_dims_t *b)
{
    return a->n == b->n && a->h == b->h && a->w == b->w && a->c == b->c;
}

/* One int8 run: n outputs from a and b, each stepping (1) or holding one element (0). */
typedef void (*mcu_ew_run_s8_fn)(const void *ctx, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb,
                                 int8_t *o, int32_t n);

#define MCU_EW_ROWS 512 /* bytes of a repeated row's copies (stack) */

/* Every run of r, in output order. Where one input's row repeats run after run (a channel row: a single outer loop
 * over which that input holds still) and the other steps on contiguously, copies of the row fill MCU_EW_ROWS bytes
 * so that one call covers several runs. */
static inline void mcu_ew_for_runs_s8(const mcu_ew_runs_t *r, const int8_t *input1, const int8_t *input2,
                                      int8_t *output, mcu_ew_run_s8_fn run, const void *ctx)
{
    int8_t rows[MCU_EW_ROWS];
    const int32_t len = r->len;
    const int row1 = r->s1[2] == 0 && r->s2[2] == len, row2 = r->s2[2] == 0 && r->s1[2] == len;
    if (r->step1 && r->step2 && r->count[0] == 1 && r->count[1] == 1 && r->count[2] > 1 && (row1 || row2) &&
        len <= MCU_EW_ROWS / 2) {
        const int32_t k = MCU_EW_ROWS / len < r->count[2] ? MCU_EW_ROWS / len : r->count[2];
        for (int32_t j = 0; j < k; ++j) {
            memcpy(rows + j * len, row1 ? input1 : input2, (size_t)len);
        }
        for (int32_t i = 0; i < r->count[2]; i += k) {
            const int32_t n = (r->count[2] - i < k ? r->count[2] - i : k) * len;
            run(ctx, row1 ? rows : input1 + i * len, 1, row2 ? rows : input2 + i * len, 1, output + i * len, n);
        }
        return;
    }
    int8_t *o = output;
    for (int32_t i0 = 0; i0 < r->count[0]; ++i0) {
        for (int32_t i1 = 0; i1 < r->count[1]; ++i1) {
            for (int32_t i2 = 0; i2 < r->count[2]; ++i2) {
                const int32_t e1 = i0 * r->s1[0] + i1 * r->s1[1] + i2 * r->s1[2];
                const int32_t e2 = i0 * r->s2[0] + i1 * r->s2[1] + i2 * r->s2[2];
                run(ctx, input1 + e1, r->step1, input2 + e2, r->step2, o, len);
                o += len;
            }
        }
    }
}

#endif /* MCU_EW_H */
