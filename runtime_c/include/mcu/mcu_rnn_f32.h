/* The body of mcu_rnn_f32, mcu_lstm_f32 and their _quad variants (mcu_recurrent_run), with its parts: the argument
 * check, a gate's pre-activation w x + b (one row, or four rows of a quad layout), the cells' equations. */
#ifndef MCU_RNN_F32_H
#define MCU_RNN_F32_H

#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_fmath.h"
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

/* mcu_rnn_gate for the four rows of one quad at once: w4 holds them tap by tap ([len][4], the _quad variants'
 * layout), each row's products summed from k = 0 up as mcu_rnn_gate does, then + bias[row + j] for the j < n
 * rows that exist (the quad's last rows may be padding). */
#if defined(__GNUC__)
__attribute__((noinline, unused)) /* its own registers: inlined into the time loop, its loop bound spills */
#endif
static void mcu_rnn_quad(const float *in, const float *w4, int32_t len, const float *bias, int32_t row, int32_t n,
                         float out[4])
{
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#if defined(__GNUC__) && defined(__thumb2__) && defined(__ARM_FP) && (__ARM_FP & 4) && !defined(__ARM_FEATURE_MVE)
    /* the same products and sums, the quad's 4 weights in one VLDM: 12 instructions per 4 MACs, not 16 (Helium
     * cores: GCC runs the C below as one vector multiply and add per tap, lane by lane, the same sums) */
    const float *end = in + len;
    __asm__ volatile(
        "cmp %[in], %[end]\n\t"
        "bcs 2f\n"
        "1:\n\t"
        "vldmia %[in]!, {s8}\n\t"
        "vldmia %[w]!, {s12-s15}\n\t"
        "vmul.f32 s12, s8, s12\n\t"
        "vmul.f32 s13, s8, s13\n\t"
        "vmul.f32 s14, s8, s14\n\t"
        "vmul.f32 s15, s8, s15\n\t"
        "vadd.f32 %[a0], %[a0], s12\n\t"
        "vadd.f32 %[a1], %[a1], s13\n\t"
        "vadd.f32 %[a2], %[a2], s14\n\t"
        "vadd.f32 %[a3], %[a3], s15\n\t"
        "cmp %[in], %[end]\n\t"
        "bcc 1b\n"
        "2:\n"
        : [a0] "+t"(a0), [a1] "+t"(a1), [a2] "+t"(a2), [a3] "+t"(a3), [in] "+r"(in), [w] "+r"(w4)
        : [end] "r"(end)
        : "s8", "s12", "s13", "s14", "s15", "cc", "memory");
#else
    for (const float *end = in + len; in < end; ++in, w4 += 4) {
        const float x = *in;
        a0 += x * w4[0];
        a1 += x * w4[1];
        a2 += x * w4[2];
        a3 += x * w4[3];
    }
#endif
    out[0] = a0;
    out[1] = a1;
    out[2] = a2;
    out[3] = a3;
    if (bias != NULL) {
        for (int32_t j = 0; j < n; ++j) {
            out[j] += bias[row + j];
        }
    }
}

/* A GRU's new h from its gates' pre-activations (r, z, n: input side i*, hidden side h*) and the old h. */
static inline float mcu_gru_cell(float ir, float hr, float iz, float hz, float in_, float hn, float h)
{
    const float r = mcu_sigmoidf(ir + hr), z = mcu_sigmoidf(iz + hz);
    const float n = mcu_tanhf(in_ + r * hn);
    return (h - n) * z + n;
}

/* An Elman RNN's new h from its pre-activation (MCU_RNN_TANH or MCU_RNN_RELU). */
static inline float mcu_elman_cell(float a, int32_t cell)
{
    return cell == MCU_RNN_TANH ? mcu_tanhf(a) : (a > 0.0f ? a : 0.0f);
}

/* An LSTM's new h from its gates' pre-activations (i, f, g, o); *c holds the old c and receives the new one. */
static inline float mcu_lstm_cell(float i, float f, float g, float o, float *c)
{
    *c = mcu_sigmoidf(f) * *c + mcu_sigmoidf(i) * mcu_tanhf(g);
    return mcu_sigmoidf(o) * mcu_tanhf(*c);
}

/* The four kernels in one body: LSTM (lstm 1: gates i, f, g, o, c kept in c_n) or GRU / Elman (params->cell), the
 * weights as torch stores them (quad 0: mcu_rnn_gate per row) or in quads of rows (quad 1: mcu_rnn_quad). Rows
 * go 4 at a time either way; each source calls this with constants, so it compiles to its own loop alone. */
static inline mcu_status_t mcu_recurrent_run(const mcu_rnn_f32_params_t *p, const float *input, const float *h0,
                                             const float *c0, const float *w_ih, const float *w_hh, const float *b_ih,
                                             const float *b_hh, float *c_n, float *output, int lstm, int quad)
{
    if (!mcu_rnn_f32_ok(p, input, h0, w_ih, w_hh, output)
        || (lstm ? c0 == NULL || c_n == NULL : p->cell < MCU_RNN_GRU || p->cell > MCU_RNN_RELU)) {
        return MCU_ERR_ARG;
    }
    const int32_t n_in = p->input_size, n_h = p->hidden, quads = (n_h + 3) / 4;
    const int32_t gates = lstm ? 4 : p->cell == MCU_RNN_GRU ? 3 : 1;
    for (int32_t b = 0; b < p->batches; ++b) {
        const float *h = h0 + b * n_h;
        float *c = lstm ? c_n + b * n_h : NULL;
        for (int32_t o = 0; lstm && o < n_h; ++o) {
            c[o] = c0[b * n_h + o];
        }
        for (int32_t s = 0; s < p->steps; ++s) {
            const int32_t t = p->reverse ? p->steps - 1 - s : s;
            const float *x = input + (b * p->steps + t) * n_in;
            float *y = output + (b * p->steps + t) * n_h;
            for (int32_t q = 0; q < quads; ++q) {
                const int32_t o = 4 * q, n = n_h - o < 4 ? n_h - o : 4;
                float gi[4][4], gh[4][4];
                for (int32_t g = 0; quad && g < gates; ++g) {
                    mcu_rnn_quad(x, w_ih + (g * quads + q) * n_in * 4, n_in, b_ih, g * n_h + o, n, gi[g]);
                    mcu_rnn_quad(h, w_hh + (g * quads + q) * n_h * 4, n_h, b_hh, g * n_h + o, n, gh[g]);
                }
                for (int32_t g = 0; !quad && g < gates; ++g) {
                    for (int32_t j = 0; j < n; ++j) {
                        gi[g][j] = mcu_rnn_gate(x, w_ih, n_in, b_ih, g * n_h + o + j);
                        gh[g][j] = mcu_rnn_gate(h, w_hh, n_h, b_hh, g * n_h + o + j);
                    }
                }
                for (int32_t j = 0; j < n; ++j) {
                    if (lstm) {
                        y[o + j] = mcu_lstm_cell(gi[0][j] + gh[0][j], gi[1][j] + gh[1][j], gi[2][j] + gh[2][j],
                                                 gi[3][j] + gh[3][j], &c[o + j]);
                    } else if (gates == 3) {
                        y[o + j] = mcu_gru_cell(gi[0][j], gh[0][j], gi[1][j], gh[1][j], gi[2][j], gh[2][j], h[o + j]);
                    } else {
                        y[o + j] = mcu_elman_cell(gi[0][j] + gh[0][j], p->cell);
                    }
                }
            }
            h = y;
        }
    }
    return MCU_OK;
}

#endif /* MCU_RNN_F32_H */
