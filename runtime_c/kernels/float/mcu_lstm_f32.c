/* Float32 LSTM over a whole sequence: the time loop in one call, h read from y's last row, c kept in c_n. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_fmath.h"
#include "mcu/mcu_kernels.h"
#include "mcu/mcu_rnn_f32.h"

mcu_status_t mcu_lstm_f32(const mcu_rnn_f32_params_t *params, const float *input, const float *h0, const float *c0,
                          const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh, float *c_n,
                          float *output)
{
    if (!mcu_rnn_f32_ok(params, input, h0, w_ih, w_hh, output) || c0 == NULL || c_n == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_rnn_f32_params_t *p = params;
    const int32_t n_in = p->input_size, n_h = p->hidden;
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *h = h0 + b * n_h;
        float *c = c_n + b * n_h;
        for (int32_t o = 0; o < n_h; ++o) {
            c[o] = c0[b * n_h + o];
        }
        for (int32_t s = 0; s < p->steps; ++s) {
            const int32_t t = p->reverse ? p->steps - 1 - s : s;
            const float *x = input + (b * p->steps + t) * n_in;
            float *y = output + (b * p->steps + t) * n_h;
            for (int32_t o = 0; o < n_h; ++o) {
                const float i = mcu_sigmoidf(mcu_rnn_gate(x, w_ih, n_in, b_ih, o)
                                             + mcu_rnn_gate(h, w_hh, n_h, b_hh, o));
                const float f = mcu_sigmoidf(mcu_rnn_gate(x, w_ih, n_in, b_ih, n_h + o)
                                             + mcu_rnn_gate(h, w_hh, n_h, b_hh, n_h + o));
                const float g = mcu_tanhf(mcu_rnn_gate(x, w_ih, n_in, b_ih, 2 * n_h + o)
                                          + mcu_rnn_gate(h, w_hh, n_h, b_hh, 2 * n_h + o));
                const float q = mcu_sigmoidf(mcu_rnn_gate(x, w_ih, n_in, b_ih, 3 * n_h + o)
                                             + mcu_rnn_gate(h, w_hh, n_h, b_hh, 3 * n_h + o));
                c[o] = f * c[o] + i * g;
                y[o] = q * mcu_tanhf(c[o]);
            }
            h = y;
        }
    }
    return MCU_OK;
}
