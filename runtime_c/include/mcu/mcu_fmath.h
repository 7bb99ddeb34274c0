/* Float32 elementary functions without libm, each a fixed sequence of float operations that the numpy twin
 * (codegen/twins/float32.py) repeats one by one, so device and twin agree bit for bit (C99 keeps
 * -ffp-contract=off: no fused multiply-add). Accuracy (max relative error vs correctly rounded, on the
 * ranges models use): exp, log 2 ulp (Cephes); sin, cos 2 ulp for |x| <= 8192 (Cephes); sqrt 1 ulp (Newton);
 * tanh, erf 3e-7 absolute (erf: Abramowitz & Stegun 7.1.26, 1.5e-7).
 * Rounding functions are exact for every float: values of magnitude >= 2^23 are integers already. */
#ifndef MCU_FMATH_H
#define MCU_FMATH_H

#include <stdint.h>
#include <string.h>

static inline float mcu_f32_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint32_t mcu_f32_bits(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

/* exp(x) (Cephes expf): x = k ln2 + r with |r| <= ln2 / 2 (ln2 split in two, Cody-Waite), exp(r) by a degree-6
 * polynomial, times 2^k as two exact powers of two so a subnormal result rounds once. */
static inline float mcu_expf(float x)
{
    if (x != x) {
        return x;
    }
    if (x < -103.972084f) {
        return 0.0f;
    }
    if (x > 88.7228394f) {
        return mcu_f32_from_bits(0x7F800000u); /* +inf */
    }
    const float t = x * 1.44269504f + 0.5f;
    int32_t k = (int32_t)t; /* floor(t), t in [-150, 129) */
    if ((float)k > t) {
        k -= 1;
    }
    const float kf = (float)k;
    float r = x - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    const float z = r * r;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * z + r + 1.0f;
    const int32_t k1 = k / 2, k2 = k - k1; /* each in [-75, 64] */
    y = y * mcu_f32_from_bits((uint32_t)(k1 + 127) << 23);
    return y * mcu_f32_from_bits((uint32_t)(k2 + 127) << 23);
}

/* log(x) (Cephes logf): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by a degree-9 polynomial in m - 1.
 * NaN below 0, -inf at 0, +inf at +inf; subnormals are scaled by 2^25 first. */
static inline float mcu_logf(float x)
{
    if (x != x || x < 0.0f) {
        return mcu_f32_from_bits(0x7FC00000u);
    }
    if (x == 0.0f) {
        return mcu_f32_from_bits(0xFF800000u);
    }
    if (x > 3.40282347e38f) {
        return x;
    }
    int32_t e = 0;
    if (x < 1.17549435e-38f) {
        x = x * 33554432.0f; /* 2^25 */
        e = -25;
    }
    const uint32_t bits = mcu_f32_bits(x);
    e += (int32_t)((bits >> 23) & 0xFFu) - 126;
    float m = mcu_f32_from_bits((bits & 0x007FFFFFu) | 0x3F000000u); /* in [0.5, 1) */
    if (m < 0.707106781f) {
        e -= 1;
        m = m + m - 1.0f;
    } else {
        m = m - 1.0f;
    }
    const float z = m * m;
    float y = 7.0376836292e-2f;
    y = y * m + -1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m + -1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m + -1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m + -2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z;
    const float ef = (float)e;
    y = y + ef * -2.12194440e-4f;
    y = y + -0.5f * z;
    return m + y + ef * 0.693359375f;
}

/* sqrt(x): a first guess from the exponent bits, then four Newton steps y = (y + x / y) / 2; NaN below 0. */
static inline float mcu_sqrtf(float x)
{
    if (x != x || x < 0.0f) {
        return mcu_f32_from_bits(0x7FC00000u);
    }
    if (x == 0.0f || x > 3.40282347e38f) {
        return x;
    }
    float y = mcu_f32_from_bits((mcu_f32_bits(x) >> 1) + 0x1FC00000u);
    for (int32_t i = 0; i < 4; ++i) {
        y = 0.5f * (y + x / y);
    }
    return y;
}

/* x rounded to an integer in the current (nearest-even) mode: adding and subtracting 2^23 drops the fraction. */
static inline float mcu_rintf(float x)
{
    if (!(x < 8388608.0f && x > -8388608.0f)) {
        return x; /* an integer already, inf or NaN */
    }
    return x >= 0.0f ? (x + 8388608.0f) - 8388608.0f : -((-x + 8388608.0f) - 8388608.0f);
}

static inline float mcu_floorf(float x)
{
    const float r = mcu_rintf(x);
    return r > x ? r - 1.0f : r;
}

static inline float mcu_ceilf(float x)
{
    const float r = mcu_rintf(x);
    return r < x ? r + 1.0f : r;
}

static inline float mcu_truncf(float x)
{
    return x < 0.0f ? mcu_ceilf(x) : mcu_floorf(x);
}

/* sin(x) or cos(x) (Cephes sinf/cosf): j = round-down of |x| / (pi/4) made even, r = |x| - j pi/4 in three
 * parts (Cody-Waite), then the sine or cosine polynomial on r by octant. */
static inline float mcu_sincosf(float x, int32_t cosine)
{
    if (x != x || x > 3.40282347e38f || x < -3.40282347e38f) {
        return mcu_f32_from_bits(0x7FC00000u);
    }
    float sign = 1.0f;
    if (x < 0.0f) {
        x = -x;
        sign = cosine ? 1.0f : -1.0f;
    }
    if (x > 8388608.0f) {
        return mcu_f32_from_bits(0x7FC00000u); /* no digits of the phase left (2^23 and above) */
    }
    int32_t j = (int32_t)mcu_floorf(x * 1.27323954473516f); /* 4 / pi */
    float yj = (float)j;
    if (j & 1) {
        j += 1;
        yj = yj + 1.0f;
    }
    j &= 7;
    if (cosine) {
        j = (j + 2) & 7;
    }
    if (j > 3) {
        sign = -sign;
        j -= 4;
    }
    const float r = ((x - yj * 0.78515625f) - yj * 2.4187564849853515625e-4f) - yj * 3.77489497744594108e-8f;
    const float z = r * r;
    float y;
    if (j == 1 || j == 2) {
        y = 2.443315711809948e-5f;
        y = y * z + -1.388731625493765e-3f;
        y = y * z + 4.166664568298827e-2f;
        y = y * z * z;
        y = y - 0.5f * z + 1.0f;
    } else {
        y = -1.9515295891e-4f;
        y = y * z + 8.3321608736e-3f;
        y = y * z + -1.6666654611e-1f;
        y = y * z * r + r;
    }
    return sign * y;
}

/* tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2 |x|). */
static inline float mcu_tanhf(float x)
{
    if (x != x) {
        return x;
    }
    const float a = x < 0.0f ? -x : x;
    const float e = mcu_expf(-2.0f * a);
    const float t = (1.0f - e) / (1.0f + e);
    return x < 0.0f ? -t : t;
}

/* 1 / (1 + exp(-x)). */
static inline float mcu_sigmoidf(float x)
{
    return 1.0f / (1.0f + mcu_expf(-x));
}

/* erf(x) (Abramowitz & Stegun 7.1.26): 1 - (a1 t + ... + a5 t^5) exp(-x^2), t = 1 / (1 + p |x|); odd. */
static inline float mcu_erff(float x)
{
    if (x != x) {
        return x;
    }
    const float a = x < 0.0f ? -x : x;
    const float t = 1.0f / (1.0f + 0.3275911f * a);
    float y = 1.061405429f;
    y = y * t + -1.453152027f;
    y = y * t + 1.421413741f;
    y = y * t + -0.284496736f;
    y = y * t + 0.254829592f;
    y = 1.0f - y * t * mcu_expf(-(a * a));
    return x < 0.0f ? -y : y;
}

/* atan(x) (Cephes' atanf): |x| reduced to t in [-0.4142, 0.4142] about 0, pi/4 or pi/2, then
 * t + t^3 P(t^2); odd. */
static inline float mcu_atanf(float x)
{
    if (x != x) {
        return x;
    }
    const float a = x < 0.0f ? -x : x;
    float y0 = 0.0f, t = a;
    if (a > 2.414213562f) {
        y0 = 1.570796327f;
        t = -1.0f / a;
    } else if (a > 0.4142135624f) {
        y0 = 0.7853981634f;
        t = (a - 1.0f) / (a + 1.0f);
    }
    const float z = t * t;
    float p = 8.05374449538e-2f;
    p = p * z + -1.38776856032e-1f;
    p = p * z + 1.99777106478e-1f;
    p = p * z + -3.33329491539e-1f;
    const float y = y0 + (p * z * t + t);
    return x < 0.0f ? -y : y;
}

/* asin(x) = atan(x / sqrt((1 - x)(1 + x))), NaN outside [-1, 1]; acos(x) = pi/2 - asin(x). */
static inline float mcu_asinf(float x)
{
    return mcu_atanf(x / mcu_sqrtf((1.0f - x) * (1.0f + x)));
}

static inline float mcu_acosf(float x)
{
    return 1.570796327f - mcu_asinf(x);
}

#endif /* MCU_FMATH_H */
