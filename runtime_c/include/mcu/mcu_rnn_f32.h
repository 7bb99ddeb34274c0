/* What mcu_rnn_f32 and mcu_lstm_f32 share: the argument check and a gate's pre-activation w x + b. */
#ifndef MCU_RNN_F32_H
#define MCU_RNN_F32_H

#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"

static inline int mcu_rnn_f32_ok(const mcu_rnn_f32_params_t *p, const void *input, const void *h0,
                                 const void *w_ih, const void *w_hh, const void *output)
{
    return p != NULL && input != NULL && h0 != NULL && w_ih != NULL && w_hh != NULL && output != NULL
        && p->batches >= 1 && p->steps >= 1 && p->input_size >= 1 && p->hidden >= 1
        && (p->reverse == 0 || p->reverse == 1);
}

/* sum_{k = 0 up} in[k] * w[row * len + k], then + bias[row] (when bias is not NULL): mcu_fully_connected_f32's
 * order, so the numpy twin (codegen/twins/float32.py) sums alike. */
static inline float mcu_rnn_gate(const float *in, const float *w, int32_t len, const float *bias, int32_t row)
{
    const float *wr = w + row * len;
    float acc = 0.0f;
    int32_t k = 0;
    for (; k + 4 <= len; k += 4) { /* unrolled; the sum keeps its order */
        acc += in[k] * wr[k];
        acc += in[k + 1] * wr[k + 1];
        acc += in[k + 2] * wr[k + 2];
        acc += in[k + 3] * wr[k + 3];
    }
    for (; k < len; ++k) {
        acc += in[k] * wr[k];
    }
    if (bias != NULL) {
        acc += bias[row];
    }
    return acc;
}

#endif /* MCU_RNN_F32_H */
