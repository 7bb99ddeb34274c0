/* Scalar int8 add / subtract with broadcasting in mcu_add_m16_s8's arithmetic, for cores without DSP or Helium. */
#include <stddef.h>
#include <stdint.h>

/*  - Runs (mcu_ew.h) instead of the portable kernel's per-element index arithmetic; a held element is folded into
 *    the bias, so its run costs one multiply-accumulate, shift and clamp an element. */

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_ew.h"

/* n outputs of x * m + k (x stepping), shifted and clamped. */
static void scaled_run(const mcu_add_m16_params_t *p, const int8_t *x, int32_t m, int32_t k, int8_t *o, int32_t n)
{
    const int32_t s = p->shift, lo = p->act_min, hi = p->act_max;
    for (int32_t i = 0; i < n; ++i) {
        o[i] = (int8_t)mcu_clamp_i32((x[i] * m + k) >> s, lo, hi);
    }
}

static void add_run(const void *ctx, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *o, int32_t n)
{
    const mcu_add_m16_params_t *p = ctx;
    const int32_t m1 = p->multiplier1, m2 = p->multiplier2, k = p->bias, s = p->shift;
    const int32_t lo = p->act_min, hi = p->act_max;
    if (sa && sb) {
        for (int32_t i = 0; i < n; ++i) {
            o[i] = (int8_t)mcu_clamp_i32((a[i] * m1 + b[i] * m2 + k) >> s, lo, hi);
        }
    } else if (sa || sb) {
        sa ? scaled_run(p, a, m1, k + *b * m2, o, n) : scaled_run(p, b, m2, k + *a * m1, o, n);
    } else {
        const int8_t y = (int8_t)mcu_clamp_i32((*a * m1 + *b * m2 + k) >> s, lo, hi);
        for (int32_t i = 0; i < n; ++i) {
            o[i] = y;
        }
    }
}

mcu_status_t mcu_add_m16_s8_fast(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                 int8_t *output)
{
    const mcu_status_t status = mcu_add_m16_check(params, input1, input2, output, 24);
    if (status != MCU_OK) {
        return status;
    }
    mcu_ew_runs_t r;
    mcu_ew_runs(&params->input1, &params->input2, &params->output, &r);
    mcu_ew_for_runs_s8(&r, input1, input2, output, add_run, params);
    return MCU_OK;
}
