/* The Helium int8 add in int16 lanes (mcu_add_h16_s8's arithmetic), 16 a step; not a public API:
 * mcu_add_h16_s8_mve and mcu_add_h16_flat_s8_mve include it. */
#ifndef MCU_ADD16_MVE_H
#define MCU_ADD16_MVE_H
#ifndef MCU_ADD16_FLAT
#define MCU_ADD16_FLAT 0 /* 1: two same-shaped inputs (one run): no output tables, no row copies */
#endif
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_ew.h"

/*  - Per 16 elements of a run (mcu_ew.h): VSHLLB / VSHLLT #8 widen a and b into int16 lanes as a << 8, so
 *    VQRDMULH by m1 gives (a*m1 + 64) >> 7 and VQRDMLAH adds (b*m2 + 64) >> 7; VQADD the bias, VQRSHL by -shift,
 *    VQMOVNB / VQMOVNT narrow both halves with saturation into one vector (18 instructions per 16, a clamp 2 more).
 *  - A held element is duplicated into a vector; a run of at least LUT_MIN against it reads a 256-entry output table
 *    built with that arithmetic (one VLDRB gather per 16). The last partial step is predicated. */

MCU_INLINE int8_t h16_one(const mcu_add_m16_params_t *p, int32_t a, int32_t b)
{
    int32_t t = mcu_clamp_i32((a * p->multiplier1 + 64) >> 7, -32768, 32767);
    t = mcu_clamp_i32(t + ((b * p->multiplier2 + 64) >> 7), -32768, 32767);
    t = mcu_clamp_i32(t + p->bias, -32768, 32767);
    return (int8_t)mcu_clamp_i32((t + (1 << (p->shift - 1))) >> p->shift, p->act_min, p->act_max);
}

#if MCU_HAVE_MVE
typedef struct {
    int16_t m1, m2, bias;
    int32_t down;        /* -shift (VQRSHL by a negative count shifts right) */
    int8_t lo, hi;
} h16_q_t;

MCU_INLINE int16x8_t h16_half(int16x8_t a, int16x8_t b, h16_q_t q)
{
    int16x8_t t = vqrdmulhq_n_s16(a, q.m1);
    t = vqrdmlahq_n_s16(t, b, q.m2);
    t = vqaddq_n_s16(t, q.bias);
    return vqrshlq_n_s16(t, q.down);
}

/* a only lends its register to the narrowed result (VQMOVNB and VQMOVNT write every byte). */
MCU_INLINE int8x16_t h16_step(int8x16_t a, int8x16_t b, h16_q_t q, int clamp)
{
    int8x16_t y = vqmovnbq_s16(a, h16_half(vshllbq_n_s8(a, 8), vshllbq_n_s8(b, 8), q));
    y = vqmovntq_s16(y, h16_half(vshlltq_n_s8(a, 8), vshlltq_n_s8(b, 8), q));
    if (clamp) {
        y = vminq_s8(vmaxq_s8(y, vdupq_n_s8(q.lo)), vdupq_n_s8(q.hi));
    }
    return y;
}

/* n outputs; sa, sb: 1 steps along, 0 holds one element. */
MCU_INLINE void h16_run(h16_q_t q, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *o, int32_t n,
                        int clamp)
{
    const int8x16_t ha = vdupq_n_s8(*a), hb = vdupq_n_s8(*b);
    for (; n >= 16; n -= 16) {
        const int8x16_t va = sa ? vldrbq_s8(a) : ha, vb = sb ? vldrbq_s8(b) : hb;
        vstrbq_s8(o, h16_step(va, vb, q, clamp));
        a += 16 * sa, b += 16 * sb, o += 16;
    }
    if (n > 0) {
        const mve_pred16_t pr = vctp8q((uint32_t)n);
        const int8x16_t va = sa ? vldrbq_z_s8(a, pr) : ha, vb = sb ? vldrbq_z_s8(b, pr) : hb;
        vstrbq_p_s8(o, h16_step(va, vb, q, clamp), pr);
    }
}

#define LUT_MIN 256 /* a run of at least this many against one held element gets its own output table */

/* n outputs of the stepping input s against a held element: all 256 outputs into a table (the held element's
 * run over every int8 value), then one VLDRB gather per 16 (index: the value's byte ^ 0x80). */
static void h16_lut_run(h16_q_t q, const int8_t *a, int32_t sa, const int8_t *b, int8_t *o, int32_t n, int clamp)
{
    int8_t values[256], table[256];
    uint8x16_t u = vidupq_n_u8(0, 1);
    const uint8x16_t top = vdupq_n_u8(0x80);
    for (int32_t k = 0; k < 256; k += 16) {
        vstrbq_s8(values + k, vreinterpretq_s8_u8(veorq_u8(u, top))); /* values[k] = k - 128 */
        u = vaddq_n_u8(u, 16);
    }
    const uint8_t *s = (const uint8_t *)(const void *)(sa ? a : b);
    if (clamp) {
        sa ? h16_run(q, values, 1, b, 0, table, 256, 1) : h16_run(q, a, 0, values, 1, table, 256, 1);
    } else {
        sa ? h16_run(q, values, 1, b, 0, table, 256, 0) : h16_run(q, a, 0, values, 1, table, 256, 0);
    }
    for (; n >= 16; n -= 16) {
        vstrbq_s8(o, vldrbq_gather_offset_s8(table, veorq_u8(vldrbq_u8(s), top)));
        s += 16, o += 16;
    }
    if (n > 0) {
        const mve_pred16_t pr = vctp8q((uint32_t)n);
        vstrbq_p_s8(o, vldrbq_gather_offset_z_s8(table, veorq_u8(vldrbq_z_u8(s, pr), top), pr), pr);
    }
}

static void add_run(const void *ctx, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *o, int32_t n)
{
    const mcu_add_m16_params_t *p = ctx;
    const int clamp = p->act_min > MCU_Q7_MIN || p->act_max < MCU_Q7_MAX;
    const h16_q_t q = {(int16_t)p->multiplier1, (int16_t)p->multiplier2, (int16_t)p->bias, -p->shift,
                       (int8_t)p->act_min, (int8_t)p->act_max};
    if (!MCU_ADD16_FLAT && sa != sb && n >= LUT_MIN) {
        h16_lut_run(q, a, sa, b, o, n, clamp);
    } else if (sa && sb) {
        clamp ? h16_run(q, a, 1, b, 1, o, n, 1) : h16_run(q, a, 1, b, 1, o, n, 0);
    } else if (sa) {
        clamp ? h16_run(q, a, 1, b, 0, o, n, 1) : h16_run(q, a, 1, b, 0, o, n, 0);
    } else if (sb) {
        clamp ? h16_run(q, a, 0, b, 1, o, n, 1) : h16_run(q, a, 0, b, 1, o, n, 0);
    } else {
        for (int32_t i = 0; i < n; ++i) {
            o[i] = h16_one(p, *a, *b);
        }
    }
}
#else
static void add_run(const void *ctx, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *o, int32_t n)
{
    const mcu_add_m16_params_t *p = ctx;
    for (int32_t i = 0; i < n; ++i) {
        o[i] = h16_one(p, a[i * sa], b[i * sb]);
    }
}
#endif

static mcu_status_t add16_mve(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                              int8_t *output)
{
    const mcu_status_t status = mcu_add_m16_check(params, input1, input2, output, 15);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_add_m16_params_t *p = params;
#if MCU_ADD16_FLAT
    const mcu_dims_t *od = &p->output;
    if (!mcu_ew_same(&p->input1, od) || !mcu_ew_same(&p->input2, od)) {
        return MCU_ERR_SHAPE;
    }
    add_run(p, input1, 1, input2, 1, output, od->n * od->h * od->w * od->c);
#else
    mcu_ew_runs_t r;
    mcu_ew_runs(&p->input1, &p->input2, &p->output, &r);
    mcu_ew_for_runs_s8(&r, input1, input2, output, add_run, p);
#endif
    return MCU_OK;
}

#endif /* MCU_ADD16_MVE_H */
