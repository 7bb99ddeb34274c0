/* Float32 GRU or Elman RNN (tanh, ReLU) over a whole sequence: the time loop in one call, h read from y's last row. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_rnn_f32.h"

mcu_status_t mcu_rnn_f32(const mcu_rnn_f32_params_t *params, const float *input, const float *h0,
                         const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh, float *output)
{
    return mcu_recurrent_run(params, input, h0, NULL, w_ih, w_hh, b_ih, b_hh, NULL, output, 0, 0);
}
