/* Helium integer layer norm, int8: the row's sums by VADDVA / VMLADAVA, the output stage 4 elements a step. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_norm.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* mcu_norm_out on 4 lanes of c, exactly: y = (c r31 + 2^29) >> 30 from the product's high word and its low word
 * (the rounding's carry added), then (bias + y w) >> 32 from the high and low words of y w and of the int64 biases
 * (VLD20/VLD21 split them; the carry of the low words' sum added), >> shift32, clamped; stored as bytes. */
MCU_INLINE void out4(int32x4_t c, int32_t r31, const int32_t *w, const int64_t *bias, int32_t shift32, int32x4_t lo,
                     int32x4_t hi, int8_t *out)
{
    const int32x4_t r = vdupq_n_s32(r31);
    const uint32x4_t pl = vreinterpretq_u32_s32(vmulq_s32(c, r)), l = vaddq_n_u32(pl, 1u << 29);
    int32x4_t y = vaddq_s32(vshlq_n_s32(vmulhq_s32(c, r), 2), vreinterpretq_s32_u32(vshrq_n_u32(l, 30)));
    y = vaddq_m_n_s32(y, y, 4, vcmphiq_u32(pl, l));
    const int32x4_t wv = vldrwq_s32(w);
    const int32x4x2_t b = vld2q_s32((const int32_t *)(const void *)bias);
    const uint32x4_t ql = vreinterpretq_u32_s32(vmulq_s32(y, wv));
    const uint32x4_t sl = vaddq_u32(ql, vreinterpretq_u32_s32(b.val[0]));
    int32x4_t h = vaddq_s32(vmulhq_s32(y, wv), b.val[1]);
    h = vaddq_m_n_s32(h, h, 1, vcmphiq_u32(ql, sl));
    vstrbq_s32(out, vminq_s32(vmaxq_s32(vshlq_r_s32(h, -shift32), lo), hi));
}
#endif

mcu_status_t mcu_layer_norm_s8_mve(const mcu_norm_params_t *params, const int8_t *input, const int32_t *weight,
                                   const int64_t *bias, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_status_t status = mcu_norm_check(params, input, weight, bias, output, 65536, (uint64_t)1 << 16);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t rows = params->rows, cols = params->cols, quads = cols & ~3;
    const int32_t shift32 = params->shift - 32, act_min = params->act_min, act_max = params->act_max;
    const int32x4_t lo = vdupq_n_s32(act_min), hi = vdupq_n_s32(act_max);
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *x = input + (size_t)r * (size_t)cols;
        int8_t *out = output + (size_t)r * (size_t)cols;
        int32_t sum = 0, sq = 0; /* |sq| <= 65536 * 2^14 */
        for (int32_t i = 0; i < cols; i += 16) {
            const mve_pred16_t p = vctp8q((uint32_t)(cols - i));
            const int8x16_t v = vldrbq_z_s8(x + i, p);
            sum = vaddvaq_p_s8(sum, v, p);
            sq = vmladavaq_p_s8(sq, v, v, p);
        }
        /* the offset cancels: c_i = cols * x_i - sum, V = cols * sum x^2 - sum^2 (mcu_norm_run) */
        const int64_t var = (int64_t)cols * sq - (int64_t)sum * sum;
        const int32_t k = -sum;
        const mcu_norm_row_t row = mcu_norm_row(var, params->eps, params->var_shift);
        int32_t i = 0;
        if (row.a >= 0) { /* c << a = (cols << a) x + (k << a), exact modulo 2^32 */
            const int32_t n2 = (int32_t)((uint32_t)cols << row.a), k2 = (int32_t)((uint32_t)k << row.a);
            for (; i < quads; i += 4) {
                const int32x4_t c = vmlasq_n_s32(vldrbq_s32(x + i), vdupq_n_s32(n2), k2);
                out4(c, row.r31, weight + i, bias + i, shift32, lo, hi, out + i);
            }
            for (; i < cols; ++i) {
                const int32_t c = (int32_t)((uint32_t)n2 * (uint32_t)x[i] + (uint32_t)k2);
                out[i] = (int8_t)mcu_norm_out(c, row.r31, weight[i], bias[i], shift32, act_min, act_max);
            }
        } else {
            const int32_t s = -row.a, half = (int32_t)1 << (s - 1);
            for (; i < quads; i += 4) {
                const int32x4_t c = vshlq_r_s32(vmlasq_n_s32(vldrbq_s32(x + i), vdupq_n_s32(cols), k + half), -s);
                out4(c, row.r31, weight + i, bias + i, shift32, lo, hi, out + i);
            }
            for (; i < cols; ++i) {
                const int32_t c = (cols * x[i] + k + half) >> s;
                out[i] = (int8_t)mcu_norm_out(c, row.r31, weight[i], bias[i], shift32, act_min, act_max);
            }
        }
    }
    return MCU_OK;
#else
    (void)params, (void)input, (void)weight, (void)bias, (void)output;
    return MCU_ERR_ARG;
#endif
}
