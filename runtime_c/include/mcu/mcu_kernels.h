/* The one public header of the mcu kernels: every kernel's contract in one place.
 *
 * Conventions, for every kernel:
 *  - Activations are int8 NHWC ([N, H, W, C]); 2-d tensors [B, K] use dims {B, 1, 1, K}.
 *  - Quantized value q means real (q - zero_point) * scale. Kernels take input_offset = -zp_in
 *    (in [-127, 128]) and output_offset = zp_out (in [-128, 127]).
 *  - act_min/act_max clamp the int8 output (fused ReLU / ReLU6 / plain int8 range), -128 <= min <= max <= 127.
 *  - Weights are int8, symmetric (zero point 0); bias is int32 with scale s_in * s_w[c] (may be NULL).
 *  - Requantization is per output channel: see mcu_quant.h and mcu_per_channel_quant_t.
 *  - The output pointer comes last; the return value is MCU_OK or an error code (checked first).
 *  - Unless a kernel says otherwise, output must not overlap any input.
 *  - Accumulators are int32: sum |x + input_offset| * |w| over a window must fit (it does for any
 *    window under 2^16 taps, 255 * 127 * 2^16 < 2^31).
 *  - Zero or negative dims, strides, dilations or counts, a shift outside [-31, 30] or a negative
 *    multiplier give MCU_ERR_ARG, and the output is left untouched.
 *  - No kernel allocates or prints. Each has a numpy twin in mcu/twins with the same arithmetic.
 */
#ifndef MCU_KERNELS_H
#define MCU_KERNELS_H

#include <stdint.h>

#include "mcu/mcu_types.h"

/* ---- Convolution ------------------------------------------------------------------------------ */

typedef struct {
    mcu_dims_t input;   /* [N, H_in, W_in, C_in] */
    mcu_dims_t filter;  /* [C_out, KH, KW, C_in] (OHWI) for conv; [1, KH, KW, C_out] for depthwise */
    mcu_dims_t output;  /* [N, H_out, W_out, C_out] */
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left; /* zero padding (in real terms: input_offset is added, so 0.0) */
    int32_t dilation_h, dilation_w;
    int32_t input_offset, output_offset;
    int32_t act_min, act_max;
} mcu_conv2d_params_t;

/* Regular 2-d convolution (groups == 1). Output element (n, y, x, co):
 *   acc = bias[co] + sum_{ky,kx,ci} (in[n, y*sh - pt + ky*dh, x*sw - pl + kx*dw, ci] + input_offset) * w[co,ky,kx,ci]
 * where taps outside the input are skipped; out = clamp(requantize(acc, q[co]) + output_offset). */
mcu_status_t mcu_conv2d_s8(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                           const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output);

/* Depthwise 2-d convolution; output.c == input.c * ch_mult. Output channel co reads input channel
 * co / ch_mult and weights w[0, ky, kx, co]. Same arithmetic as mcu_conv2d_s8 otherwise. */
mcu_status_t mcu_dwconv2d_s8(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                             const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output);

/* ---- Fully connected ---------------------------------------------------------------------------- */

typedef struct {
    int32_t batches;      /* rows of the input */
    int32_t in_features;  /* K */
    int32_t out_features; /* N */
    int32_t input_offset, output_offset;
    int32_t act_min, act_max;
} mcu_fc_params_t;

/* out[b, o] = clamp(requantize(bias[o] + sum_k (in[b, k] + input_offset) * w[o, k], q[o]) + output_offset).
 * weights are [out_features, in_features], row-major. */
mcu_status_t mcu_fully_connected_s8(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                    const int8_t *input, const int8_t *weights, const int32_t *bias,
                                    int8_t *output);

/* ---- Pooling -------------------------------------------------------------------------------------- */

typedef struct {
    mcu_dims_t input;  /* [N, H_in, W_in, C] */
    mcu_dims_t output; /* [N, H_out, W_out, C] */
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t zero_point;       /* avg pool: the (shared) zero point of input and output */
    int32_t divisor;          /* avg pool: > 0 divides every window by it; 0 divides by the count of valid taps */
    int32_t act_min, act_max;
} mcu_pool2d_params_t;

/* Max over the valid taps of each window (padding never wins). Input and output share qparams.
 * A window lying entirely in the padding gives MCU_ERR_SHAPE (pools); convs output the bias there. */
mcu_status_t mcu_maxpool2d_s8(const mcu_pool2d_params_t *params, const int8_t *input, int8_t *output);

/* acc = sum over valid taps of (in - zero_point); out = clamp(zero_point + round_half_away(acc / d)),
 * d = divisor or the valid-tap count. Input and output share qparams. */
mcu_status_t mcu_avgpool2d_s8(const mcu_pool2d_params_t *params, const int8_t *input, int8_t *output);

/* ---- Elementwise -------------------------------------------------------------------------------- */

typedef struct {
    int32_t size;                            /* elements (no broadcasting) */
    int32_t left_shift;                      /* headroom shift applied to both inputs, in [0, 23]; 20 */
    int32_t input1_offset, input1_multiplier, input1_shift;
    int32_t input2_offset, input2_multiplier, input2_shift;
    int32_t output_offset, output_multiplier, output_shift;
    int32_t act_min, act_max;
} mcu_add_params_t;

/* TFLite int8 add: a_i = requantize((in1 + input1_offset) << left_shift, input1_mult, input1_shift),
 * same for in2; out = clamp(requantize(sat(a1 + a2), output_mult, output_shift) + output_offset), where
 * sat saturates to int32 (QADD).
 * output may alias input1 or input2 exactly (in-place). */
mcu_status_t mcu_add_s8(const mcu_add_params_t *params, const int8_t *input1, const int8_t *input2,
                        int8_t *output);

/* ---- Softmax ------------------------------------------------------------------------------------- */

typedef struct {
    int32_t rows; /* independent rows */
    int32_t cols; /* softmax length, 1 .. 65535 */
} mcu_softmax_params_t;

/* Softmax over the last axis. exp_table[d] = min(65535, round(2^16 * exp(-input_scale * d))), d = 0..255;
 * exp_table[0] must be > 0.
 * Per row: m = max(in); e_i = exp_table[m - in_i]; s = sum e_i (uint32);
 * out_i = clamp(((e_i << 8) + s / 2) / s - 128, -128, 127). Output scale is 1/256, zero point -128. */
mcu_status_t mcu_softmax_s8(const mcu_softmax_params_t *params, const uint16_t *exp_table,
                            const int8_t *input, int8_t *output);

/* ---- Data movement ----------------------------------------------------------------------------- */

typedef struct {
    int32_t in_dims[4]; /* input shape, outermost first; pad unused leading dims with 1 */
    int32_t perm[4];    /* output axis i is input axis perm[i] */
} mcu_transpose_params_t;

/* out = in.transpose(perm) for any int8 tensor of rank <= 4; perm must be a permutation of 0..3. */
mcu_status_t mcu_transpose_s8(const mcu_transpose_params_t *params, const int8_t *input, int8_t *output);

#endif /* MCU_KERNELS_H */
