/* Integer requantization with one rounding: a Q31 multiplier and a power-of-two shift, the product rounded
 * once, ties up (TFLite's and CMSIS-NN's "single rounding"). One rounding of the exact product is what a float
 * reference computes, so outputs match torchao's converted model instead of drifting 1 LSB at a time through
 * deep networks, as the gemmlowp double rounding (SRDHM, then a rounding shift) does. Every kernel uses these;
 * the numpy twin is codegen/twins/quant.py. */
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

/* floor((x * multiplier + 2^(30 + e)) / 2^(31 + e)) with x = acc * 2^shift saturated to int32 when shift > 0,
 * and e = -shift when shift < 0, else 0: acc * multiplier * 2^(shift - 31) rounded once, ties up.
 * multiplier >= 0, shift in [-31, 30]; the result always fits int32. For shift <= -2 (nearly every layer) this
 * is the high word of the 64-bit product (SMULL) and a 32-bit rounding shift: floor((floor(p / 2^32) + k) / 2^s)
 * equals floor((p + k 2^32) / 2^(32 + s)) for integer k. Relies on arithmetic >> of negative values, which
 * gcc and clang guarantee. */
static inline int32_t mcu_requantize(int32_t acc, int32_t multiplier, int32_t shift)
{
    if (shift > 0) {
        const int64_t x = (int64_t)acc * ((int64_t)1 << shift);
        acc = x > INT32_MAX ? INT32_MAX : (x < INT32_MIN ? INT32_MIN : (int32_t)x);
        shift = 0;
    }
    const int64_t prod = (int64_t)acc * (int64_t)multiplier;
    if (shift <= -2) {
        const int32_t s = -shift - 1; /* 1 .. 30 */
        return ((int32_t)(prod >> 32) + ((int32_t)1 << (s - 1))) >> s;
    }
    return (int32_t)((prod + ((int64_t)1 << (30 - shift))) >> (31 - shift));
}

/* round(acc * multiplier * 2^(shift - 31)) with a single rounding, ties to even (as torch.round), saturated
 * to int32. For small accumulators (one product, one int8 value, a sum to average), where mcu_requantize's
 * two roundings and its ties would show against a float reference; multiplier >= 0, shift in [-31, 30]. */
static inline int32_t mcu_requantize_round(int32_t acc, int32_t multiplier, int32_t shift)
{
    /* floor((prod + half) / 2^right) rounds half up; on an exact tie that is odd, one less is the even
     * neighbour (for either sign). |prod| < 2^62, so prod + half cannot overflow. >> of a negative int64 is
     * arithmetic on every compiler mcu supports (gcc, clang). */
    const int64_t prod = (int64_t)acc * (int64_t)multiplier;
    const int32_t right = 31 - shift; /* 1 .. 62 */
    const int64_t half = (int64_t)1 << (right - 1);
    int64_t r = (prod + half) >> right;
    if ((prod & ((half << 1) - 1)) == half) {
        r &= ~(int64_t)1; /* a tie: to even */
    }
    return r > INT32_MAX ? INT32_MAX : (r < INT32_MIN ? INT32_MIN : (int32_t)r);
}

/* x saturated to int32 (Arm's QADD on a sum of two int32s). */
static inline int32_t mcu_sat_i32(int64_t x)
{
    return x > INT32_MAX ? INT32_MAX : (x < INT32_MIN ? INT32_MIN : (int32_t)x);
}

/* TFLite's add, one input: (x + offset) << left_shift, requantized onto the two inputs' common scale. */
static inline int32_t mcu_add_rescale(int32_t x, int32_t offset, int32_t left_shift, int32_t multiplier, int32_t shift)
{
    return mcu_requantize((x + offset) * ((int32_t)1 << left_shift), multiplier, shift);
}

/* TFLite's add, the output: the rescaled inputs' saturated sum (or difference) requantized and offset; the
 * caller clamps. */
static inline int32_t mcu_add_output(int64_t sum, int32_t multiplier, int32_t shift, int32_t offset)
{
    return mcu_add_offset(mcu_requantize(mcu_sat_i32(sum), multiplier, shift), offset);
}

#define MCU_Q15_MIN (-32768)
#define MCU_Q15_MAX 32767

/* acc * multiplier * 2^(shift - 31) rounded once, ties up (floor(x + 1/2)), saturated to int32, exact for every
 * int64 acc (the int16-activation kernels' accumulators); multiplier >= 0, shift in [-31, 30]. No 128-bit type
 * (ARM32 gcc has none): with acc = hi 2^32 + lo (hi signed, lo the unsigned low word) the exact product is
 * p = H 2^32 + L, H = hi * m + floor(lo * m / 2^32), L = (lo * m) mod 2^32, each product inside 64 bits (SMULL,
 * UMULL). With r = 31 - shift in [1, 62]:
 *  - r > 32: floor((p + 2^(r-1)) / 2^r) = floor((H + 2^(r-33)) / 2^(r-32)); L cannot carry into it.
 *  - r <= 32: H 2^(32-r) + floor((L + 2^(r-1)) / 2^r), with H first clamped to [-2^31 - 1, 2^31]: beyond that
 *    the result saturates either way, and inside it the product stays within int64. */
static inline int32_t mcu_requantize64(int64_t acc, int32_t multiplier, int32_t shift)
{
    const int32_t hi = (int32_t)(acc >> 32);
    const uint64_t lo_prod = (uint64_t)(uint32_t)acc * (uint32_t)multiplier;
    int64_t h = (int64_t)hi * multiplier + (int64_t)(lo_prod >> 32);
    const int32_t r = 31 - shift;
    int64_t q;
    if (r > 32) {
        const int32_t s = r - 32; /* 1 .. 30 */
        q = (h + ((int64_t)1 << (s - 1))) >> s;
    } else {
        const int64_t lim = (int64_t)1 << 31;
        h = h > lim ? lim : (h < -lim - 1 ? -lim - 1 : h);
        const uint64_t low = ((uint64_t)(uint32_t)lo_prod + ((uint64_t)1 << (r - 1))) >> r;
        q = h * ((int64_t)1 << (32 - r)) + (int64_t)low;
    }
    return q > INT32_MAX ? INT32_MAX : (q < INT32_MIN ? INT32_MIN : (int32_t)q);
}

#endif /* MCU_QUANT_H */
