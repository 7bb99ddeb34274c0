/* Integer requantization, the TFLite way: Q31 multiplier, saturating rounding doubling high multiply,
 * rounding right shift. Every kernel uses these; the numpy twin is mcu/twins/quant.py. */
#ifndef MCU_QUANT_H
#define MCU_QUANT_H

#include <stdint.h>

#define MCU_Q7_MIN (-128)
#define MCU_Q7_MAX 127

static inline int32_t mcu_clamp_i32(int32_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* x + offset for an int8 offset, on a value about to be clamped to int8. A requantized x can sit at the int32
 * limits (large multipliers, shifts up to 30), where the plain sum overflows; saturating x to 25 bits first
 * changes nothing after the int8 clamp. */
static inline int32_t mcu_add_offset(int32_t x, int32_t offset)
{
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
    return __builtin_arm_ssat(x, 25) + offset; /* one SSAT */
#else
    return mcu_clamp_i32(x, -(1 << 24), (1 << 24) - 1) + offset;
#endif
}

/* round(a * b / 2^31), ties rounded up (gemmlowp/TFLite); saturates the one overflow case (INT32_MIN^2). */
static inline int32_t mcu_srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31)); /* C division truncates toward zero */
}

/* round(x / 2^exponent), ties away from zero; exponent in [0, 31]. Relies on arithmetic >> of
 * negative values, which gcc and clang guarantee. */
static inline int32_t mcu_rdbpot(int32_t x, int32_t exponent)
{
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* acc * multiplier * 2^(shift - 31), rounded. A left shift saturates to int32 instead of overflowing. */
static inline int32_t mcu_requantize(int32_t acc, int32_t multiplier, int32_t shift)
{
    if (shift > 0) {
        int64_t x = (int64_t)acc * ((int64_t)1 << shift);
        acc = x > INT32_MAX ? INT32_MAX : (x < INT32_MIN ? INT32_MIN : (int32_t)x);
        return mcu_srdhm(acc, multiplier);
    }
    return mcu_rdbpot(mcu_srdhm(acc, multiplier), -shift);
}

/* round(acc * multiplier * 2^(shift - 31)) with a single rounding, ties to even (as torch.round), saturated
 * to int32. For small accumulators (one product, one int8 value, a sum to average), where mcu_requantize's
 * two roundings and its ties would show against a float reference; multiplier >= 0, shift in [-31, 30]. */
static inline int32_t mcu_requantize_round(int32_t acc, int32_t multiplier, int32_t shift)
{
    const int64_t prod = (int64_t)acc * (int64_t)multiplier;
    const int32_t right = 31 - shift; /* 1 .. 62 */
    const uint64_t mag = prod < 0 ? (uint64_t)(-prod) : (uint64_t)prod;
    const uint64_t half = (uint64_t)1 << (right - 1);
    uint64_t q = (mag + half) >> right;
    if ((mag & ((half << 1) - 1u)) == half) {
        q &= ~(uint64_t)1; /* a tie: to even */
    }
    const int64_t r = prod < 0 ? -(int64_t)q : (int64_t)q;
    return r > INT32_MAX ? INT32_MAX : (r < INT32_MIN ? INT32_MIN : (int32_t)r);
}

#endif /* MCU_QUANT_H */
