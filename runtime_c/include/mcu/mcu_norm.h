/* Shared steps of the integer layer norm and RMS norm kernels (mcu_layer_norm_s8, mcu_rms_norm_s16, ...): the
 * argument check, the per-row inverse square root (a table seed and three Newton steps) and the per-element output
 * stage. The arithmetic is documented with mcu_norm_params_t in mcu_kernels.h; the twin is mcu.codegen.twins.norm. */
#ifndef MCU_NORM_H
#define MCU_NORM_H

#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

static inline mcu_status_t mcu_norm_check(const mcu_norm_params_t *p, const void *input, const void *weight,
                                          const void *bias, const void *output, int32_t max_cols, uint64_t max_d2)
{
    if (p == NULL || input == NULL || weight == NULL || bias == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (p->rows < 1 || p->cols < 1 || p->cols > max_cols || p->shift < 32 || p->shift > 62 || p->eps < 1 ||
        p->eps > ((int64_t)1 << 62) || p->act_min > p->act_max || p->var_shift < 0 || p->var_shift > 60 ||
        (p->var_shift & 1) != 0) {
        return MCU_ERR_ARG;
    }
    if (((uint64_t)p->cols * (uint64_t)p->cols * max_d2) >> (62 - p->var_shift) != 0) {
        return MCU_ERR_ARG; /* V << var_shift could pass 2^62 */
    }
    return MCU_OK;
}

/* One row's scale: y_i = (c_i * 2^a) * r31 / 2^30 (rounded) is the normalized value in Q22. */
typedef struct {
    int32_t r31; /* ~2^61 / sqrt(w), in (2^30, 2^31) */
    int32_t a;   /* c's shift: left for a >= 0, right with rounding below */
} mcu_norm_row_t;

/* round(2^30 / sqrt((i + 8.5) / 32)), i = 0..23: 1 / sqrt(u) at the middle of u's 1/32 bins in [1/4, 1). */
static const uint32_t mcu_norm_rsqrt_seed[24] = {
    2083365155u, 1970666148u, 1874477404u, 1791125178u, 1717986918u, 1653133683u, 1595110809u, 1542797797u,
    1495315679u, 1451963954u, 1412176548u, 1375490368u, 1341522400u, 1309952745u, 1280511845u, 1252970736u,
    1227133513u, 1202831433u, 1179918260u, 1158266544u, 1137764631u, 1118314230u, 1099828424u, 1082230034u,
};

/* W = (V << var_shift) + eps (1 <= W < 2^63) normalized to w = W * 4^h in [2^60, 2^62); u = (w >> 30) / 2^32 in
 * [1/4, 1); x ~ 2^30 / sqrt(u) by x <- x (3 - u x^2) / 2 in Q30 from the seed (truncating each product). */
static inline mcu_norm_row_t mcu_norm_row(int64_t var, int64_t eps, int32_t var_shift)
{
    mcu_norm_row_t row = {0, 0};
    if (var == 0) {
        return row; /* a constant row: every c_i is 0 */
    }
    const uint64_t W = ((uint64_t)var << var_shift) + (uint64_t)eps;
    const int32_t bits = 64 - __builtin_clzll(W);
    const int32_t h = bits == 63 ? -1 : (62 - bits) >> 1;
    const uint32_t m = (uint32_t)((h < 0 ? W >> 2 : W << (2 * h)) >> 30);
    uint32_t x = mcu_norm_rsqrt_seed[(m >> 27) - 8u];
    for (int32_t k = 0; k < 3; ++k) {
        const uint32_t x2 = (uint32_t)(((uint64_t)x * x) >> 30);
        const uint32_t ux2 = (uint32_t)(((uint64_t)m * x2) >> 32);
        x = (uint32_t)(((uint64_t)x * (3u * (1u << 30) - ux2)) >> 31);
    }
    row.r31 = (int32_t)(x > 0x7FFFFFFFu ? 0x7FFFFFFFu : x);
    const int32_t a = var_shift / 2 + h - 9;
    row.a = a > 30 ? 30 : a;
    return row;
}

/* clamp(((round(c * r31 / 2^30)) * weight + bias) >> shift): arithmetic shifts; shift >= 32. */
static inline int32_t mcu_norm_out(int32_t c, int32_t r31, int32_t weight, int64_t bias, int32_t shift32,
                                   int32_t act_min, int32_t act_max)
{
#if defined(__GNUC__)
    __asm__("" : "+r"(r31)); /* else GCC hoists r31's sign extension and multiplies 64 x 64 instead of SMULL */
#endif
    const int32_t y = (int32_t)(((int64_t)c * r31 + ((int64_t)1 << 29)) >> 30);
    const int64_t acc = bias + (int64_t)y * weight;
    const int32_t o = (int32_t)(acc >> 32) >> shift32;
    return o < act_min ? act_min : (o > act_max ? act_max : o);
}

/* Element i of an int8 (wide 0) or int16 (wide 1) row. */
#define MCU_NORM_AT(p, i, wide) ((wide) ? (int32_t)((const int16_t *)(p))[i] : (int32_t)((const int8_t *)(p))[i])

static inline void mcu_norm_store(void *output, size_t at, int wide, int32_t v)
{
    if (wide) {
        ((int16_t *)output)[at] = (int16_t)v;
    } else {
        ((int8_t *)output)[at] = (int8_t)v;
    }
}

/* The four integer norms in one body: int8 or int16 elements (wide), the mean subtracted (layer norm) or not
 * (RMSNorm, rms). Each kernel source calls it with constants, so it compiles to that kernel's loop alone. */
static inline mcu_status_t mcu_norm_run(const mcu_norm_params_t *params, const void *input, const int32_t *weight,
                                        const int64_t *bias, void *output, int wide, int rms)
{
    const mcu_status_t status = mcu_norm_check(params, input, weight, bias, output, wide ? 16384 : 65536,
                                               (uint64_t)1 << (wide ? 30 : 16));
    if (status != MCU_OK) {
        return status;
    }
    const int32_t rows = params->rows, cols = params->cols, offset = params->input_offset;
    const int32_t shift32 = params->shift - 32, act_min = params->act_min, act_max = params->act_max;
    const int32_t var_shift = params->var_shift;
    const int64_t eps = params->eps;
    for (int32_t r = 0; r < rows; ++r) {
        const size_t at = (size_t)r * (size_t)cols;
        const void *x = wide ? (const void *)((const int16_t *)input + at) : (const void *)((const int8_t *)input + at);
        int32_t sum = 0;
        int64_t sq = 0;
        for (int32_t i = 0; i < cols; ++i) {
            const int32_t v = MCU_NORM_AT(x, i, wide);
            sum += v;
            sq += (int64_t)v * v;
        }
        int64_t var;
        int32_t k;
        if (rms) { /* d = x + offset: sum d^2 = sum x^2 + 2 offset sum x + cols offset^2; c_i = cols x_i + cols offset */
            var = (int64_t)cols * (sq + 2 * (int64_t)offset * sum + (int64_t)cols * offset * offset);
            k = cols * offset;
        } else { /* the offset cancels: c_i = cols * x_i - sum, V = cols * sum x^2 - sum^2 */
            var = (int64_t)cols * sq - (int64_t)sum * sum;
            k = -sum;
        }
        const mcu_norm_row_t row = mcu_norm_row(var, eps, var_shift);
        if (row.a >= 0) { /* c << a = (cols << a) x + (k << a), exact modulo 2^32 and |c << a| < 2^31 */
            const uint32_t n2 = (uint32_t)cols << row.a, k2 = (uint32_t)k << row.a;
            for (int32_t i = 0; i < cols; ++i) {
                const int32_t c = (int32_t)(n2 * (uint32_t)MCU_NORM_AT(x, i, wide) + k2);
                mcu_norm_store(output, at + (size_t)i, wide,
                               mcu_norm_out(c, row.r31, weight[i], bias[i], shift32, act_min, act_max));
            }
        } else {
            const int32_t s = -row.a, half = (int32_t)1 << (s - 1);
            for (int32_t i = 0; i < cols; ++i) {
                const int32_t c = (cols * MCU_NORM_AT(x, i, wide) + k + half) >> s;
                mcu_norm_store(output, at + (size_t)i, wide,
                               mcu_norm_out(c, row.r31, weight[i], bias[i], shift32, act_min, act_max));
            }
        }
    }
    return MCU_OK;
}

#endif
