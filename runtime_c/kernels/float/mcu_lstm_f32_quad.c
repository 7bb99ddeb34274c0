/* Float32 LSTM over a sequence, weights in quads of rows tap by tap (each input read once per 4 rows). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_rnn_f32.h"

mcu_status_t mcu_lstm_f32_quad(const mcu_rnn_f32_params_t *params, const float *input, const float *h0,
                               const float *c0, const float *w_ih, const float *w_hh, const float *b_ih,
                               const float *b_hh, float *c_n, float *output)
{
    return mcu_recurrent_run(params, input, h0, c0, w_ih, w_hh, b_ih, b_hh, c_n, output, 1, 1);
}
