/* Float32 GRU or Elman RNN (tanh, ReLU) over a whole sequence: the time loop in one call, h read from y's last row. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_fmath.h"
#include "mcu/mcu_kernels.h"
#include "mcu/mcu_rnn_f32.h"

mcu_status_t mcu_rnn_f32(const mcu_rnn_f32_params_t *params, const float *input, const float *h0,
                         const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh, float *output)
{
    if (!mcu_rnn_f32_ok(params, input, h0, w_ih, w_hh, output) || params->cell < MCU_RNN_GRU
        || params->cell > MCU_RNN_RELU) {
        return MCU_ERR_ARG;
    }
    const mcu_rnn_f32_params_t *p = params;
    const int32_t n_in = p->input_size, n_h = p->hidden;
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *h = h0 + b * n_h;
        for (int32_t s = 0; s < p->steps; ++s) {
            const int32_t t = p->reverse ? p->steps - 1 - s : s;
            const float *x = input + (b * p->steps + t) * n_in;
            float *y = output + (b * p->steps + t) * n_h;
            for (int32_t o = 0; o < n_h; ++o) {
                if (p->cell != MCU_RNN_GRU) {
                    const float a = mcu_rnn_gate(x, w_ih, n_in, b_ih, o) + mcu_rnn_gate(h, w_hh, n_h, b_hh, o);
                    y[o] = p->cell == MCU_RNN_TANH ? mcu_tanhf(a) : (a > 0.0f ? a : 0.0f);
                    continue;
                }
                const float r = mcu_sigmoidf(mcu_rnn_gate(x, w_ih, n_in, b_ih, o)
                                             + mcu_rnn_gate(h, w_hh, n_h, b_hh, o));
                const float z = mcu_sigmoidf(mcu_rnn_gate(x, w_ih, n_in, b_ih, n_h + o)
                                             + mcu_rnn_gate(h, w_hh, n_h, b_hh, n_h + o));
                const float n = mcu_tanhf(mcu_rnn_gate(x, w_ih, n_in, b_ih, 2 * n_h + o)
                                          + r * mcu_rnn_gate(h, w_hh, n_h, b_hh, 2 * n_h + o));
                y[o] = (h[o] - n) * z + n;
            }
            h = y;
        }
    }
    return MCU_OK;
}
