/* Shared steps of the integer layer norm and RMS norm kernels (mcu_layer_norm_s8, mcu_rms_norm_s16, ...): the
 * argument check, 2^54 / sqrt(W) from an integer square root, and the per-element output stage. The arithmetic is
 * documented with mcu_norm_params_t in mcu_kernels.h; the twin is mcu.codegen.twins.norm. */
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

/* floor(sqrt(w)) for w in [2^60, 2^62): bit by bit, 31 steps. */
static inline uint32_t mcu_norm_isqrt62(uint64_t w)
{
    uint64_t root = 0, bit = (uint64_t)1 << 60;
    while (bit != 0) {
        if (w >= root + bit) {
            w -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    return (uint32_t)root;
}

/* ~2^54 / sqrt(W / 2^var_shift) for 1 <= W < 2^63: W * 4^h in [2^60, 2^62), R = floor(2^62 / isqrt(W * 4^h)),
 * R * 2^(h + var_shift / 2 - 8). */
static inline int64_t mcu_norm_r54(uint64_t W, int32_t var_shift)
{
    const int32_t bits = 64 - __builtin_clzll(W);
    int32_t h;
    uint64_t w;
    if (bits == 63) {
        h = -1;
        w = W >> 2;
    } else {
        h = (62 - bits) >> 1;
        w = W << (2 * h);
    }
    const uint64_t r = (uint64_t)(((uint64_t)1 << 62) / mcu_norm_isqrt62(w));
    const int32_t e = h + var_shift / 2 - 8;
    return (int64_t)(e >= 0 ? r << e : r >> -e);
}

/* clamp((((c * r54 + 2^31) >> 32) * weight + bias) >> shift): arithmetic shifts; shift >= 32. */
static inline int32_t mcu_norm_out(int32_t c, int64_t r54, int32_t weight, int64_t bias, int32_t shift,
                                   int32_t act_min, int32_t act_max)
{
    const int32_t y = (int32_t)(((int64_t)c * r54 + ((int64_t)1 << 31)) >> 32);
    const int64_t acc = (int64_t)y * weight + bias;
    const int32_t o = (int32_t)(acc >> 32) >> (shift - 32);
    return o < act_min ? act_min : (o > act_max ? act_max : o);
}

#endif
