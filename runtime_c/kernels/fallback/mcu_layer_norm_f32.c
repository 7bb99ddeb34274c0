/* Float fallback layer and RMS normalization over the last axis, with a correctly rounded integer square root. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"

/* floor(sqrt(n)) for n < 2^48, and n - floor(sqrt(n))^2 in *rem (digit by digit, base 4). */
static uint32_t isqrt48(uint64_t n, uint64_t *rem)
{
    uint64_t root = 0, bit = (uint64_t)1 << 46;
    while (bit > n) {
        bit >>= 2;
    }
    while (bit != 0) {
        if (n >= root + bit) {
            n -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    *rem = n;
    return (uint32_t)root;
}

/* sqrt(x) rounded to nearest for finite x > 0 (no libm): x = m * 2^e with m a 24-bit integer and e even
 * after normalization; sqrt(x) = sqrt(m << 23) * 2^((e - 23) / 2), and sqrt(m << 23) lies in [2^23, 2^24). */
static float sqrt_pos(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    int32_t e = (int32_t)((bits >> 23) & 0xFFu);
    uint32_t m = bits & 0x7FFFFFu;
    if (e == 0) { /* subnormal: normalize */
        e = 1;
        while ((m & 0x800000u) == 0) {
            m <<= 1;
            --e;
        }
    } else {
        m |= 0x800000u;
    }
    e -= 127; /* x = m * 2^(e - 23), m in [2^23, 2^24) */
    uint64_t wide = (uint64_t)m << 23;
    if ((e & 1) != 0) {
        wide <<= 1;
        e -= 1;
    }
    uint64_t rem;
    uint32_t root = isqrt48(wide, &rem);
    if (rem > root) { /* sqrt(wide) > root + 1/2; never a tie */
        root += 1;
    }
    if (root == 0x1000000u) {
        root >>= 1;
        e += 2;
    }
    bits = ((uint32_t)(e / 2 + 127) << 23) | (root & 0x7FFFFFu);
    float out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

mcu_status_t mcu_layer_norm_f32(const mcu_layer_norm_params_t *params, const float *input, const float *weight,
                                const float *bias, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->rows < 1 || params->cols < 1 || !(params->eps > 0.0f)) {
        return MCU_ERR_ARG;
    }
    const int32_t cols = params->cols;
    const float n = (float)cols;
    for (int32_t r = 0; r < params->rows; ++r) {
        const float *x = input + r * cols;
        float *y = output + r * cols;
        float sum = 0.0f;
        for (int32_t i = 0; i < cols; ++i) {
            sum += x[i];
        }
        const float mean = params->rms ? 0.0f : sum / n;
        float sq = 0.0f;
        for (int32_t i = 0; i < cols; ++i) {
            const float d = x[i] - mean;
            sq += d * d;
        }
        const float rstd = 1.0f / sqrt_pos(sq / n + params->eps);
        for (int32_t i = 0; i < cols; ++i) {
            float v = (x[i] - mean) * rstd;
            if (weight != NULL) {
                v = v * weight[i];
            }
            if (bias != NULL) {
                v = v + bias[i];
            }
            y[i] = v;
        }
    }
    return MCU_OK;
}
