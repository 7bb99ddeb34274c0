/* Helpers of the int4-weight kernels (*_s4.c); not a public API.
 *
 * Weights are int4 in [-8, 7], two per byte: tap 2i in the low nibble, tap 2i+1 in the high one, each output
 * channel's row of K taps padded to a whole byte (codegen/passes/select_kernels.py, pack_s4). Activations stay
 * int8; the bias has the input offset folded in (bias + input_offset * sum(w)); the requantization takes the
 * portable per-channel multiplier and shift (8 bytes a channel, half a prepared record: flash is the point).
 */
#ifndef MCU_S4_H
#define MCU_S4_H

#include <stdint.h>

#include "mcu/mcu_opt.h"

/* The low / high nibble of a packed byte as a signed int4. */
MCU_INLINE int32_t mcu_s4_lo(int32_t b)
{
    return ((int32_t)((uint32_t)b << 28)) >> 28;
}

MCU_INLINE int32_t mcu_s4_hi(int32_t b)
{
    return b >> 4;
}

/* sum_i x[i] * w[i] over k taps of a packed row. */
MCU_INLINE int32_t mcu_dot_s4(const int8_t *x, const int8_t *w, int32_t k)
{
    int32_t acc = 0;
    int32_t i = 0;
    for (; i + 1 < k; i += 2) {
        const int32_t b = *w++;
        acc += (int32_t)x[i] * mcu_s4_lo(b) + (int32_t)x[i + 1] * mcu_s4_hi(b);
    }
    if (i < k) {
        acc += (int32_t)x[i] * mcu_s4_lo(*w);
    }
    return acc;
}

/* acc[j] += dot(x, row j) for the 4 rows at w, w + row_bytes, ...: each pair of taps of x is loaded once. */
MCU_INLINE void mcu_dot_s4_x4(const int8_t *x, const int8_t *w, int32_t row_bytes, int32_t k, int32_t acc[4])
{
    const int8_t *w0 = w, *w1 = w + row_bytes, *w2 = w + 2 * row_bytes, *w3 = w + 3 * row_bytes;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int32_t i = 0;
    for (; i + 1 < k; i += 2) {
        const int32_t xa = x[i], xb = x[i + 1];
        const int32_t b0 = *w0++, b1 = *w1++, b2 = *w2++, b3 = *w3++;
        a0 += xa * mcu_s4_lo(b0) + xb * mcu_s4_hi(b0);
        a1 += xa * mcu_s4_lo(b1) + xb * mcu_s4_hi(b1);
        a2 += xa * mcu_s4_lo(b2) + xb * mcu_s4_hi(b2);
        a3 += xa * mcu_s4_lo(b3) + xb * mcu_s4_hi(b3);
    }
    if (i < k) {
        const int32_t xa = x[i];
        a0 += xa * mcu_s4_lo(*w0);
        a1 += xa * mcu_s4_lo(*w1);
        a2 += xa * mcu_s4_lo(*w2);
        a3 += xa * mcu_s4_lo(*w3);
    }
    acc[0] += a0;
    acc[1] += a1;
    acc[2] += a2;
    acc[3] += a3;
}

/* Channel c's int8 output of accumulator acc. */
MCU_INLINE int8_t mcu_s4_out(int32_t acc, const mcu_per_channel_quant_t *q, int32_t c, int32_t out_off,
                             int32_t act_min, int32_t act_max)
{
    const int32_t y = mcu_requantize(acc, q->multiplier[c], q->shift[c]);
    return (int8_t)mcu_clamp_i32(mcu_add_offset(y, out_off), act_min, act_max);
}

/* out[c] = clamp(requantize(bias[c] + dot(x, row c), q[c]) + out_off) for c < c_out, rows of (k + 1) / 2
 * bytes; four channels at a time. */
MCU_INLINE void mcu_s4_gemm_row(const int8_t *x, int32_t k, const int8_t *w, const int32_t *bias,
                                const mcu_per_channel_quant_t *q, int32_t c_out, int32_t out_off, int32_t act_min,
                                int32_t act_max, int8_t *out)
{
    const int32_t row_bytes = (k + 1) / 2;
    int32_t c = 0;
    for (; c + 4 <= c_out; c += 4, w += 4 * row_bytes) {
        int32_t acc[4] = {bias[c], bias[c + 1], bias[c + 2], bias[c + 3]};
        mcu_dot_s4_x4(x, w, row_bytes, k, acc);
        for (int32_t j = 0; j < 4; ++j) {
            out[c + j] = mcu_s4_out(acc[j], q, c + j, out_off, act_min, act_max);
        }
    }
    for (; c < c_out; ++c, w += row_bytes) {
        out[c] = mcu_s4_out(bias[c] + mcu_dot_s4(x, w, k), q, c, out_off, act_min, act_max);
    }
}

#endif /* MCU_S4_H */
