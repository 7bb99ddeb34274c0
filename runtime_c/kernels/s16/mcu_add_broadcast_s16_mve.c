/* Helium (MVE) int16 add / subtract with broadcasting: mcu_add_s16's arithmetic on 4 lanes, requantized exactly. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_util.h"

#if MCU_HAVE_MVE
typedef struct {
    int32x4_t m1, sh1, m2, sh2, mo, sho, lo, hi;
    int32_t left_shift, subtract;
} lanes_t;

/* Output lanes from input lanes: each input << left_shift and requantized, the saturated sum (or difference)
 * requantized and clamped (mcu_add_rescale, mcu_add_output). */
MCU_INLINE int32x4_t add4(const lanes_t *l, int32x4_t x1, int32x4_t x2)
{
    const int32x4_t a1 = mcu_mve_requantize(vshlq_r_s32(x1, l->left_shift), l->m1, l->sh1);
    const int32x4_t a2 = mcu_mve_requantize(vshlq_r_s32(x2, l->left_shift), l->m2, l->sh2);
    const int32x4_t s = l->subtract ? vqsubq_s32(a1, a2) : vqaddq_s32(a1, a2);
    return vminq_s32(vmaxq_s32(mcu_mve_requantize(s, l->mo, l->sho), l->lo), l->hi);
}

/* One output row of c elements: an input with a channel stride of 0 repeats its one element. */
MCU_INLINE void add_row(const lanes_t *l, const int16_t *a, int32_t sa, const int16_t *b, int32_t sb, int16_t *out,
                        int32_t c)
{
    const int32x4_t a0 = vdupq_n_s32(a[0]), b0 = vdupq_n_s32(b[0]);
    int32_t i = 0;
    for (; i + 4 <= c; i += 4) {
        const int32x4_t x1 = sa ? vldrhq_s32(a + i) : a0;
        const int32x4_t x2 = sb ? vldrhq_s32(b + i) : b0;
        vstrhq_s32(out + i, add4(l, x1, x2));
    }
    if (i < c) {
        const mve_pred16_t p = vctp32q((uint32_t)(c - i));
        const int32x4_t x1 = sa ? vldrhq_z_s32(a + i, p) : a0;
        const int32x4_t x2 = sb ? vldrhq_z_s32(b + i, p) : b0;
        vstrhq_p_s32(out + i, add4(l, x1, x2), p);
    }
}
#endif

mcu_status_t mcu_add_broadcast_s16_mve(const mcu_add_broadcast_params_t *params, const int16_t *input1,
                                       const int16_t *input2, int16_t *output)
{
#if MCU_HAVE_MVE
    const mcu_status_t status = mcu_add_broadcast_s16_check(params, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    const mcu_add_broadcast_params_t *p = params;
    const lanes_t l = {vdupq_n_s32(p->input1_multiplier), vdupq_n_s32(p->input1_shift),
                       vdupq_n_s32(p->input2_multiplier), vdupq_n_s32(p->input2_shift),
                       vdupq_n_s32(p->output_multiplier), vdupq_n_s32(p->output_shift), vdupq_n_s32(p->act_min),
                       vdupq_n_s32(p->act_max), p->left_shift, p->subtract};
    const mcu_dims_t *o = &p->output;
    int32_t s1[4], s2[4];
    mcu_broadcast_strides(&p->input1, s1);
    mcu_broadcast_strides(&p->input2, s2);
    int16_t *out = output;
    for (int32_t n = 0; n < o->n; ++n) {
        for (int32_t h = 0; h < o->h; ++h) {
            for (int32_t w = 0; w < o->w; ++w, out += o->c) {
                add_row(&l, input1 + n * s1[0] + h * s1[1] + w * s1[2], s1[3],
                        input2 + n * s2[0] + h * s2[1] + w * s2[2], s2[3], out, o->c);
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)input1, (void)input2, (void)output;
    return MCU_ERR_ARG;
#endif
}
