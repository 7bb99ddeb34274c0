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

/* sum_i x[i] * w[i] over k taps of a packed row. */
MCU_INLINE int32_t mcu_dot_s4(const int8_t *x, const int8_t *w, int32_t k)
{
    int32_t acc = 0;
    int32_t i = 0;
    for (; i + 1 < k; i += 2) {
        const int32_t b = *w++;
        acc += (int32_t)x[i] * (((int32_t)((uint32_t)b << 28)) >> 28) + (int32_t)x[i + 1] * (b >> 4);
    }
    if (i < k) {
        acc += (int32_t)x[i] * (((int32_t)((uint32_t)*w << 28)) >> 28);
    }
    return acc;
}

/* out[c] = clamp(requantize(bias[c] + dot(x, row c), q[c]) + out_off) for c < c_out, rows of (k + 1) / 2
 * bytes. */
MCU_INLINE void mcu_s4_gemm_row(const int8_t *x, int32_t k, const int8_t *w, const int32_t *bias,
                                const mcu_per_channel_quant_t *q, int32_t c_out, int32_t out_off, int32_t act_min,
                                int32_t act_max, int8_t *out)
{
    const int32_t row_bytes = (k + 1) / 2;
    for (int32_t c = 0; c < c_out; ++c, w += row_bytes) {
        const int32_t y = mcu_requantize(bias[c] + mcu_dot_s4(x, w, k), q->multiplier[c], q->shift[c]);
        out[c] = (int8_t)mcu_clamp_i32(mcu_add_offset(y, out_off), act_min, act_max);
    }
}

#endif /* MCU_S4_H */
