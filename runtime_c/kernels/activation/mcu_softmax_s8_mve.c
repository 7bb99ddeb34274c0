/* Helium int8 softmax: exp table gathers, the per-row division exact by a multiply-high (8 elements a step). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_util.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* q = floor(n / d) for every uint32 n, fixed d >= 1 (Granlund and Montgomery, "Division by invariant integers using
 * multiplication", fig. 4.1): with l = ceil(log2 d) and m = floor(2^32 (2^l - d) / d) + 1 (< 2^32),
 * t = (m n) >> 32 and q = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0). */
typedef struct {
    uint32_t m;
    int32_t s1, s2;
} divisor_t;

/* floor(u1 * 2^32 / v) for u1 < v with 32-bit divisions (Hacker's Delight's divlu, low word 0): no 64-bit
 * division routine linked. */
static uint32_t div_high(uint32_t u1, uint32_t v)
{
    const uint32_t b = 65536u;
    const int32_t s = __builtin_clz(v);
    v <<= s;
    const uint32_t vn1 = v >> 16, vn0 = v & 0xFFFFu, un32 = u1 << s;
    uint32_t q1 = un32 / vn1, rhat = un32 - q1 * vn1;
    while (q1 >= b || q1 * vn0 > b * rhat) {
        --q1;
        rhat += vn1;
        if (rhat >= b) {
            break;
        }
    }
    const uint32_t un21 = un32 * b - q1 * v;
    uint32_t q0 = un21 / vn1;
    rhat = un21 - q0 * vn1;
    while (q0 >= b || q0 * vn0 > b * rhat) {
        --q0;
        rhat += vn1;
        if (rhat >= b) {
            break;
        }
    }
    return q1 * b + q0;
}

static divisor_t divisor_of(uint32_t d)
{
    const int32_t l = d > 1 ? 32 - __builtin_clz(d - 1) : 0;
    const uint32_t a = l == 32 ? 0u - d : (1u << l) - d; /* 2^l - d < d */
    const divisor_t v = {div_high(a, d) + 1u, l < 1 ? l : 1, l > 1 ? l - 1 : 0};
    return v;
}

MCU_INLINE uint32x4_t divide(uint32x4_t n, const divisor_t *d)
{
    const uint32x4_t t = vmulhq_u32(n, vdupq_n_u32(d->m));
    return vshlq_r_u32(vaddq_u32(t, vshlq_r_u32(vsubq_u32(n, t), -d->s1)), -d->s2);
}

/* e_i = exp_table[max - in_i] for 8 elements from `in` (lanes past the predicate 0). */
MCU_INLINE uint16x8_t exps(const uint16_t *table, const int8_t *in, int16x8_t max, mve_pred16_t p)
{
    const int16x8_t d = vsubq_s16(max, vldrbq_z_s16(in, p));
    return vldrhq_gather_shifted_offset_z_u16(table, vreinterpretq_u16_s16(d), p);
}
#endif

mcu_status_t mcu_softmax_s8_mve(const mcu_softmax_params_t *params, const uint16_t *exp_table, const int8_t *input,
                                int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_status_t status = mcu_softmax_check(params, exp_table, input, output);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t cols = params->cols;
    for (int32_t r = 0; r < params->rows; ++r) {
        const int8_t *in = input + r * cols;
        int8_t *out = output + r * cols;
        int8_t m = in[0];
        for (int32_t i = 0; i < cols; i += 16) {
            const mve_pred16_t p = vctp8q((uint32_t)(cols - i));
            m = vmaxvq_p_s8(m, vldrbq_z_s8(in + i, p), p);
        }
        const int16x8_t max = vdupq_n_s16(m);
        uint32_t sum = 0;
        for (int32_t i = 0; i < cols; i += 8) {
            const mve_pred16_t p = vctp16q((uint32_t)(cols - i));
            sum = vaddvaq_p_u16(sum, exps(exp_table, in + i, max, p), p);
        }
        const divisor_t d = divisor_of(sum);
        const uint32_t half = sum / 2u;
        for (int32_t i = 0; i < cols; i += 8) { /* q = ((e << 8) + s / 2) / s, even and odd lanes apart */
            const mve_pred16_t p = vctp16q((uint32_t)(cols - i));
            const uint16x8_t e = exps(exp_table, in + i, max, p);
            const uint32x4_t qb = divide(vaddq_n_u32(vshlq_n_u32(vmovlbq_u16(e), 8), half), &d);
            const uint32x4_t qt = divide(vaddq_n_u32(vshlq_n_u32(vmovltq_u16(e), 8), half), &d);
            const uint16x8_t q = vmovntq_u32(vmovnbq_u32(vdupq_n_u16(0), qb), qt);
            const int16x8_t y = vminq_s16(vsubq_n_s16(vreinterpretq_s16_u16(q), 128), vdupq_n_s16(127));
            vstrbq_p_s16(out + i, y, p);
        }
    }
    return MCU_OK;
#else
    (void)params, (void)exp_table, (void)input, (void)output;
    return MCU_ERR_ARG;
#endif
}
