/* DSP-extension int16 add / subtract with broadcasting: SMMLA / SMMULR requantizations, a repeated row held. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_quant.h"
#include "mcu/mcu_util.h"

/* - One input is "held": the one with fewer distinct rows (an attention mask's one row against every head's), its
 *   rescaled values computed once per row and chunk of CHUNK elements into a stack buffer, negated for in1 - in2.
 *   The other input streams through the inner loop. Chunks run outermost, so a repeated row is rescaled once.
 * - mcu_requantize exactly, its branches decided once per call: shift <= -2 is (SMMLA(x, m, 2^(s-1))) >> s with
 *   s = -shift - 1 (the high word of the product plus the rounding term); r = 31 - shift of 31 or 32 (shift 0, -1)
 *   is SMMULR(x 2^(32-r), m) = floor((x m 2^(32-r) + 2^31) / 2^32), exact while x 2^(32-r) fits int32: an input
 *   (x << left_shift, |x| <= 2^15) always, the output's saturated sum only at shift -1. Other shifts (> 0; the
 *   output's 0) take mcu_requantize itself.
 * - The saturated sum is QADD / QSUB; mcu_add_output's SSAT to 25 bits is inside the int16 clamp. */

#define CHUNK 64

enum { FORM_MLA, FORM_MULR, FORM_ANY };

/* y = requantize(x << pre, ...) in one form: FORM_MLA (m, k = 2^(s-1), s), FORM_MULR (m), FORM_ANY (m, s the
 * shift). */
typedef struct {
    int32_t m, k, s, pre, form;
} rq_t;

typedef struct {
    rq_t held, streamed, out;
    int32_t act_min, act_max;
} ctx_t;

MCU_INLINE int32_t rq(const rq_t *q, int32_t x, int32_t form)
{
    const int32_t v = x * ((int32_t)1 << q->pre);
    if (form == FORM_MLA) {
        return mcu_smmla(v, q->m, q->k) >> q->s;
    }
    if (form == FORM_MULR) {
        return mcu_smmulr(v, q->m);
    }
    return mcu_requantize(v, q->m, q->s);
}

static rq_t rq_of(int32_t multiplier, int32_t shift, int32_t pre, int32_t input)
{
    rq_t q = {multiplier, 0, shift, pre, FORM_ANY};
    if (shift <= -2) {
        q.s = -shift - 1;
        q.k = (int32_t)1 << (q.s - 1);
        q.form = FORM_MLA;
    } else if (shift == -1 || (shift == 0 && input)) {
        q.pre = pre + 1 + shift;
        q.form = FORM_MULR;
    }
    return q;
}

/* One output element from a streamed x and a held (rescaled) value h: in1 + in2, in1 - in2 with in1 held (held_sub),
 * or with in2 held (h holds -in2's value then); full: the clamp is int16's own (one SSAT). */
MCU_INLINE int16_t element(const ctx_t *c, int32_t x, int32_t h, int32_t sf, int32_t of, int32_t held_sub,
                           int32_t full)
{
    const int32_t v = rq(&c->streamed, x, sf);
    const int32_t y = rq(&c->out, held_sub ? mcu_qsub(h, v) : mcu_qadd(v, h), of);
    return (int16_t)(full ? mcu_ssat16(y) : mcu_clamp_i32(y, c->act_min, c->act_max));
}

MCU_INLINE void run(const ctx_t *c, const int16_t *x, int32_t sx, const int32_t *held, int16_t *out, int32_t len,
                    int32_t sf, int32_t of, int32_t held_sub, int32_t full)
{
    const int16_t *end = out + (len & ~1);
    while (out != end) {
        const int32_t x0 = x[0], x1 = x[sx];
        x += 2 * sx;
        out[0] = element(c, x0, held[0], sf, of, held_sub, full);
        out[1] = element(c, x1, held[1], sf, of, held_sub, full);
        out += 2;
        held += 2;
    }
    if (len & 1) {
        out[0] = element(c, x[0], held[0], sf, of, held_sub, full);
    }
}

/* run with its forms and clamp as constants (8 copies, the sums); a difference with in1 held, or FORM_ANY, in one
 * general copy. */
static void row(const ctx_t *c, const int16_t *x, int32_t sx, const int32_t *held, int16_t *out, int32_t len,
                int32_t held_sub)
{
    const int32_t sf = c->streamed.form, of = c->out.form;
    const int32_t full = c->act_min == MCU_Q15_MIN && c->act_max == MCU_Q15_MAX;
    if (sf == FORM_ANY || of == FORM_ANY || held_sub) {
        run(c, x, sx, held, out, len, sf, of, held_sub, 0);
        return;
    }
    switch (sf * 4 + of * 2 + full) {
    case 0: run(c, x, sx, held, out, len, FORM_MLA, FORM_MLA, 0, 0); break;
    case 1: run(c, x, sx, held, out, len, FORM_MLA, FORM_MLA, 0, 1); break;
    case 2: run(c, x, sx, held, out, len, FORM_MLA, FORM_MULR, 0, 0); break;
    case 3: run(c, x, sx, held, out, len, FORM_MLA, FORM_MULR, 0, 1); break;
    case 4: run(c, x, sx, held, out, len, FORM_MULR, FORM_MLA, 0, 0); break;
    case 5: run(c, x, sx, held, out, len, FORM_MULR, FORM_MLA, 0, 1); break;
    case 6: run(c, x, sx, held, out, len, FORM_MULR, FORM_MULR, 0, 0); break;
    default: run(c, x, sx, held, out, len, FORM_MULR, FORM_MULR, 0, 1); break;
    }
}

/* held[i] = the held input's element i rescaled (negated when it is in2 of a difference). */
static void fill(const rq_t *q, const int16_t *x, int32_t sx, int32_t negate, int32_t *held, int32_t len)
{
    for (int32_t i = 0; i < len; ++i) {
        const int32_t a = rq(q, x[i * sx], q->form);
        held[i] = negate ? -a : a;
    }
}

mcu_status_t mcu_add_broadcast_s16_dsp(const mcu_add_broadcast_params_t *params, const int16_t *input1,
                                       const int16_t *input2, int16_t *output)
{
    const mcu_status_t status = mcu_add_broadcast_s16_check(params, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_add_broadcast_params_t *p = params;
    const mcu_dims_t *o = &p->output, *d1 = &p->input1, *d2 = &p->input2;
    /* in1 held when it has fewer rows (n h w) than in2 */
    const int32_t hold1 = d1->n * d1->h * d1->w < d2->n * d2->h * d2->w;
    const rq_t q1 = rq_of(p->input1_multiplier, p->input1_shift, p->left_shift, 1);
    const rq_t q2 = rq_of(p->input2_multiplier, p->input2_shift, p->left_shift, 1);
    const ctx_t c = {hold1 ? q1 : q2, hold1 ? q2 : q1, rq_of(p->output_multiplier, p->output_shift, 0, 0),
                     p->act_min, p->act_max};
    const int32_t held_sub = hold1 && p->subtract, negate = !hold1 && p->subtract;
    int32_t s1[4], s2[4];
    mcu_broadcast_strides(d1, s1);
    mcu_broadcast_strides(d2, s2);
    const int16_t *hb = hold1 ? input1 : input2, *xb = hold1 ? input2 : input1;
    const int32_t *sh = hold1 ? s1 : s2, *sx = hold1 ? s2 : s1;
    int32_t held[CHUNK];
    for (int32_t c0 = 0; c0 < o->c; c0 += CHUNK) {
        const int32_t len = o->c - c0 < CHUNK ? o->c - c0 : CHUNK;
        const int16_t *filled = NULL;
        int16_t *out = output + c0;
        for (int32_t n = 0; n < o->n; ++n) {
            for (int32_t h = 0; h < o->h; ++h) {
                for (int32_t w = 0; w < o->w; ++w, out += o->c) {
                    const int16_t *hp = hb + n * sh[0] + h * sh[1] + w * sh[2] + c0 * sh[3];
                    if (hp != filled) {
                        fill(&c.held, hp, sh[3], negate, held, len);
                        filled = hp;
                    }
                    row(&c, xb + n * sx[0] + h * sx[1] + w * sx[2] + c0 * sx[3], sx[3], held, out, len, held_sub);
                }
            }
        }
    }
    return MCU_OK;
}
