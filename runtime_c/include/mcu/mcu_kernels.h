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
 *  - Unless a kernel says otherwise, output must not overlap any input. Exception: the portable conv,
 *    depthwise conv and pool kernels write output pixels in raster order, each from its own window, so their
 *    output may start `gap` bytes below the input and overlap it (codegen/memory.py raster_gap).
 *  - Accumulators are int32: sum |x + input_offset| * |w| over a window must fit (it does for any
 *    window under 2^16 taps, 255 * 127 * 2^16 < 2^31).
 *  - Zero or negative dims, strides, dilations or counts, a shift outside [-31, 30] or a negative
 *    multiplier give MCU_ERR_ARG, and the output is left untouched.
 *  - No kernel allocates or prints. Each has a numpy twin in codegen/twins with the same arithmetic.
 *  - Strided output (output_pixel_stride, the last field of the conv and pool params structs): the elements from
 *    one output pixel (n, y, x) to the next. 0 (what a designated initializer leaves) means contiguous, C_out.
 *    The portable conv, grouped conv, depthwise and pool kernels (int8, int16, float32) take any stride >= C_out:
 *    pixel q's C_out channels go to output[q * stride ...], and the stride - C_out elements after them are not
 *    written (so producers of a channel concat write their channels of each pixel straight into it, see
 *    codegen/memory.py). A stride in [1, C_out) or negative gives MCU_ERR_ARG. The int8 conv, 1x1 conv and
 *    average pool variants (_dsp, _fast, _mve: registry `strided`) take the same strides and write each pixel
 *    whole where the stride puts it. The others (the 3x3 depthwise variants, _s4, _inplace, mcu_conv2d_add_s8)
 *    write contiguously: a stride other than 0 or C_out gives MCU_ERR_ARG. A strided output never overlaps its
 *    input (the raster rule above assumes contiguous pixels).
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
    int32_t output_pixel_stride; /* elements from one output pixel to the next; 0: contiguous (C_out). See below */
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

/* Transposed convolution (groups 1, dilation 1), the filter OHWI [C_out, KH, KW, C_in] (torch's [C_in, C_out, KH, KW]
 * transposed); pad_top / pad_left are torch's padding (rows and columns cropped from the full result), and the
 * output's size gives output_padding. Output element (n, y, x, co):
 *   acc = bias[co] + sum over ky = y + pt - iy * sh, kx = x + pl - ix * sw inside the filter, (iy, ix) inside the
 *         input, ci of (in[n, iy, ix, ci] + input_offset) * w[co, ky, kx, ci]
 * (gather form: only real taps, input pixels x C_in x C_out x KH x KW MACs), requantized per channel as
 * mcu_conv2d_s8. Any output_pixel_stride >= C_out; dilation other than 1 gives MCU_ERR_ARG. */
mcu_status_t mcu_conv_transpose2d_s8(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output);
/* Its Helium variant (the same results): 16-lane dot products over C_in, 4 channels requantized as one vector;
 * and its DSP variant: each tap's inputs widened 4 at a time and shared by 4 channels' SMLADs. */
mcu_status_t mcu_conv_transpose2d_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                         const int8_t *input, const int8_t *filter, const int32_t *bias,
                                         int8_t *output);
mcu_status_t mcu_conv_transpose2d_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                         const int8_t *input, const int8_t *filter, const int32_t *bias,
                                         int8_t *output);

/* In-place variants (optimize="memory"): mcu_dwconv2d_s8's / mcu_conv2d_s8's results bit for bit, with `scratch`
 * from the caller (the code generator plans it in the arena, live during the call only). output may alias input
 * exactly, or start below it and overlap it; scratch must not overlap either. Geometry they cannot run in place
 * gives MCU_ERR_SHAPE; a NULL scratch MCU_ERR_ARG.
 *  - mcu_dwconv2d_s8_inplace: channel multiplier 1, stride 1, output dims == input dims (any kernel size,
 *    padding, dilation). Output pixel q (flattened n, y, x) waits in a ring of `delay` pixels,
 *    delay = max(1, pad_top * W + pad_left), and replaces input pixel q channel by channel once pixel
 *    q + delay, the last to read it, has. scratch: delay * C bytes.
 *  - mcu_conv2d_1x1_s8_inplace: 1x1 filter, no padding, any stride, C_out <= C_in, every output pixel inside
 *    the input ((H_out - 1) * stride_h < H_in, same for W). Each input pixel is copied to scratch (C_in bytes)
 *    before its output pixel, which fits in the bytes of input pixels already read, is written. */
static inline int32_t mcu_dwconv2d_s8_inplace_scratch_bytes(const mcu_conv2d_params_t *params)
{
    const int32_t delay = params->pad_top * params->input.w + params->pad_left;
    return (delay > 1 ? delay : 1) * params->input.c;
}

static inline int32_t mcu_conv2d_1x1_s8_inplace_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return params->input.c;
}

mcu_status_t mcu_dwconv2d_s8_inplace(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int8_t *input, const int8_t *filter, const int32_t *bias,
                                     int8_t *scratch, int8_t *output);
mcu_status_t mcu_conv2d_1x1_s8_inplace(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                       const int8_t *input, const int8_t *filter, const int32_t *bias,
                                       int8_t *scratch, int8_t *output);

/* Conv fused with the residual add that reads it (optimize="memory", codegen/passes/fuse_add.py). Per output
 * element i (NHWC order): y = mcu_conv2d_s8's int8 output (the fields up to act_max, clamp included), then
 * output[i] = mcu_add_s8's result for input1 = y, input2 = residual[i] (the add_* fields; size = output elements).
 * residual[i] is read before output[i] is written, so output may alias residual exactly; apart from that it
 * follows mcu_conv2d_s8's rules (output may start raster_gap bytes below a dying input, never alias it). */
typedef struct {
    mcu_dims_t input, filter, output;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t dilation_h, dilation_w;
    int32_t input_offset, output_offset;
    int32_t act_min, act_max;
    int32_t add_left_shift;
    int32_t add_input1_offset, add_input1_multiplier, add_input1_shift; /* the conv's output y */
    int32_t add_input2_offset, add_input2_multiplier, add_input2_shift; /* the residual */
    int32_t add_output_offset, add_output_multiplier, add_output_shift;
    int32_t add_act_min, add_act_max;
    int32_t output_pixel_stride; /* 0 or C_out only (contiguous output), else MCU_ERR_ARG */
} mcu_conv2d_add_params_t;

mcu_status_t mcu_conv2d_add_s8(const mcu_conv2d_add_params_t *params, const mcu_per_channel_quant_t *quant,
                               const int8_t *input, const int8_t *filter, const int32_t *bias,
                               const int8_t *residual, int8_t *output);

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
    int32_t output_pixel_stride; /* elements from one output pixel to the next; 0: contiguous (C). See above */
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
/* The same on Helium: 8 elements a step (the exps gathered from the table), the division by s exact through a
 * multiply-high by its Granlund-Montgomery magic number. */
mcu_status_t mcu_softmax_s8_mve(const mcu_softmax_params_t *params, const uint16_t *exp_table, const int8_t *input,
                                int8_t *output);

/* ---- Data movement ----------------------------------------------------------------------------- */

typedef struct {
    int32_t in_dims[4]; /* input shape, outermost first; pad unused leading dims with 1 */
    int32_t perm[4];    /* output axis i is input axis perm[i] */
} mcu_transpose_params_t;

/* out = in.transpose(perm) for any int8 tensor of rank <= 4; perm must be a permutation of 0..3. */
mcu_status_t mcu_transpose_s8(const mcu_transpose_params_t *params, const int8_t *input, int8_t *output);
/* The same on Helium: each run (the output's last axis, or the axis the input reads in order where longer) by
 * VLDRB gathers or VSTRB scatters, 16 elements a step (strides <= 17) or 8 (<= 9362). */
mcu_status_t mcu_transpose_s8_mve(const mcu_transpose_params_t *params, const int8_t *input, int8_t *output);

typedef struct {
    int32_t outer;   /* product of the dims before the sliced one */
    int32_t in_len;  /* the sliced dim's size in the input */
    int32_t out_len; /* ... in the output: elements start, start + step, ..., start + (out_len - 1) * step */
    int32_t start;
    int32_t step;    /* >= 1 */
    int32_t inner;   /* product of the dims after the sliced one */
} mcu_slice_params_t;

/* out = in.narrow-by-step along one dim, any rank (viewed as [outer, in_len, inner] -> [outer, out_len, inner]):
 * slice, select, split, chunk, unbind and narrow. Requires 0 <= start, start + (out_len - 1) * step < in_len;
 * output must not overlap input. One function per element type; the same contract. */
mcu_status_t mcu_slice_s8(const mcu_slice_params_t *params, const int8_t *input, int8_t *output);

typedef struct {
    int32_t outer; /* product of the dims before the gathered one */
    int32_t rows;  /* the gathered dim's size in the table: indices must be in [0, rows) */
    int32_t count; /* number of indices */
    int32_t inner; /* product of the dims after the gathered one */
} mcu_gather_params_t;

/* out[o, i, :] = table[o, indices[i], :] with the table as [outer, rows, inner] and the output [outer, count,
 * inner]: embedding, index_select and x[idx] with indices computed at run time (token ids, positions). Every index
 * is checked first: one outside [0, rows) returns MCU_ERR_INDEX and nothing is read or written. Output must not
 * overlap the table or the indices. One function per element type; the same contract. */
mcu_status_t mcu_gather_s8(const mcu_gather_params_t *params, const int8_t *table, const int32_t *indices,
                           int8_t *output);
mcu_status_t mcu_gather_s16(const mcu_gather_params_t *params, const int16_t *table, const int32_t *indices,
                            int16_t *output);
mcu_status_t mcu_gather_f32(const mcu_gather_params_t *params, const float *table, const int32_t *indices,
                            float *output);

/* The inverse of mcu_gather (index_put and index_copy by run-time indices: a KV cache written at a position):
 * output = table with output[o, indices[i], :] = values[o, i, :], the table as [outer, rows, inner] (count = the
 * number of indices, mcu_gather_params_t). Every index is checked first (MCU_ERR_INDEX, nothing written). The output
 * may be the table itself (the rows are written in place); otherwise it must not overlap it. Values must not overlap
 * the output. A repeated index keeps its last row. */
mcu_status_t mcu_scatter_s8(const mcu_gather_params_t *params, const int8_t *table, const int32_t *indices,
                            const int8_t *values, int8_t *output);
mcu_status_t mcu_scatter_s16(const mcu_gather_params_t *params, const int16_t *table, const int32_t *indices,
                             const int16_t *values, int16_t *output);
mcu_status_t mcu_scatter_f32(const mcu_gather_params_t *params, const float *table, const int32_t *indices,
                             const float *values, float *output);

typedef struct {
    int32_t outer;  /* product of the dims before the padded one */
    int32_t in_len; /* the padded dim's size in the input; the output's is before + in_len + after */
    int32_t before, after; /* >= 0 */
    int32_t inner;  /* product of the dims after the padded one */
    int32_t value;  /* the pad value in the element type (int8/int16: the quantized value) */
    float value_f32; /* ... for mcu_pad_f32 */
} mcu_pad_params_t;

/* Constant pad along one dim, any rank ([outer, in_len, inner] -> [outer, before + in_len + after, inner]);
 * a pad of several dims is a chain of calls. Output must not overlap input. */
mcu_status_t mcu_pad_s8(const mcu_pad_params_t *params, const int8_t *input, int8_t *output);

/* ==== Op breadth ================================================================================
 * Broadcasting elementwise ops, look-up-table activations, concat, upsample, reductions, grouped conv,
 * matmul of two activations, and the float32 fallback. Same conventions as above; in addition:
 *  - "Broadcast dims": input dims are 4-d in the output's axis order (NHWC, or torch order padded with
 *    leading 1s); each equals the output's or is 1, and a dim of 1 repeats along that axis.
 *  - mcu_requantize_round (mcu_quant.h) rounds once, ties to even; kernels on single products, single
 *    values or sums to average use it (what a float reference rounding with torch.round gives).
 * ================================================================================================ */

/* ---- Broadcasting elementwise --------------------------------------------------------------------- */

typedef struct {
    mcu_dims_t input1, input2, output; /* broadcast dims */
    int32_t subtract;                  /* 0: in1 + in2, 1: in1 - in2 */
    int32_t left_shift;                /* as mcu_add_params_t */
    int32_t input1_offset, input1_multiplier, input1_shift;
    int32_t input2_offset, input2_multiplier, input2_shift;
    int32_t output_offset, output_multiplier, output_shift;
    int32_t act_min, act_max;
} mcu_add_broadcast_params_t;

/* mcu_add_s8's arithmetic with broadcasting, and subtraction: out = clamp(requantize(sat(a1 +- a2),
 * output_mult, output_shift) + output_offset). Output must not overlap an input. */
mcu_status_t mcu_add_broadcast_s8(const mcu_add_broadcast_params_t *params, const int8_t *input1,
                                  const int8_t *input2, int8_t *output);

typedef struct {
    mcu_dims_t input1, input2, output; /* broadcast dims */
    int32_t multiplier1, multiplier2;  /* |m| <= 32767; a subtraction has multiplier2 < 0 */
    int32_t bias;                      /* both zero points, the output zero point and (m16) the rounding */
    int32_t shift;                     /* m16: [1, 24]; h16: [1, 15] */
    int32_t act_min, act_max;
} mcu_add_m16_params_t;

/* int8 add / subtract with 16-bit multipliers on the raw values a = in1, b = in2 (codegen/twins/add16.py builds
 * the params where its error bound holds):
 *  m16: out = clamp((a * multiplier1 + b * multiplier2 + bias) >> shift), in int32.
 *  h16: t = ((a * multiplier1 + 64) >> 7) + ((b * multiplier2 + 64) >> 7) + bias, each step saturated to int16
 *       (Helium's VQRDMULH / VQRDMLAH of a << 8, VQADD); out = clamp((t + 2^(shift-1)) >> shift).
 * Output must not overlap an input. _fast (m16, any core): runs, a held element folded into the bias. _dsp (m16):
 * 4 elements a step (SXTB16, PKHBT/PKHTB, SMLAD, SSAT with the shift: shifts 12..16; held elements by SMLABB/SMLATB;
 * other shifts in C); a repeated row's copies in 512 bytes of stack. _mve (h16): 16 elements a step in int16 lanes
 * (VSHLLB/T, VQRDMULH, VQRDMLAH, VQADD, VQRSHL, VQMOVNB/T); a long run against a held element through a 256-entry
 * output table (VLDRB gather). */
mcu_status_t mcu_add_m16_s8(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output);
mcu_status_t mcu_add_m16_s8_dsp(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                int8_t *output);
mcu_status_t mcu_add_h16_s8(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output);
mcu_status_t mcu_add_h16_s8_mve(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                int8_t *output);
mcu_status_t mcu_add_m16_s8_fast(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                 int8_t *output);
/* The same on two same-shaped tensors (mcu_add_s8's variants: the output may alias an input exactly). */
mcu_status_t mcu_add_m16_flat_s8_dsp(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                     int8_t *output);
mcu_status_t mcu_add_h16_flat_s8_mve(const mcu_add_m16_params_t *params, const int8_t *input1, const int8_t *input2,
                                     int8_t *output);

typedef struct {
    mcu_dims_t input1, input2, output; /* broadcast dims */
    int32_t input1_offset, input2_offset, output_offset;
    int32_t output_multiplier, output_shift; /* s1 * s2 / s_out */
    int32_t act_min, act_max;
} mcu_mul_params_t;

/* TFLite-style int8 multiply with broadcasting:
 * out = clamp(requantize_round((in1 + input1_offset) * (in2 + input2_offset), mult, shift) + output_offset).
 * Output must not overlap an input. */
mcu_status_t mcu_mul_s8(const mcu_mul_params_t *params, const int8_t *input1, const int8_t *input2,
                        int8_t *output);

typedef struct {
    mcu_dims_t input1, input2, output; /* broadcast dims */
    int32_t input1_offset, input2_offset;
    int32_t shift1, shift2;            /* a' = (in1 + input1_offset) << shift1, b' likewise: both fit int16 */
    int32_t multiplier, shift;         /* [1, 32767], [0, 15] */
    int32_t output_offset, act_min, act_max;
} mcu_mul_h16_params_t;

/* int8 multiply with broadcasting in Helium's int16 lanes (codegen/twins/mul16.py builds the params where its error
 * bound holds): p = (2 a' b' + 2^15) >> 16, t = (2 p multiplier + 2^15) >> 16 (VQRDMULH twice),
 * y = (t + 2^(shift-1)) >> shift (VRSHL), out = clamp(sat16(y + output_offset)). Output must not overlap an input.
 * _mve: 8 products a vector, tail-predicated; a channel gate's repeated row widened once (b' as int16). */
mcu_status_t mcu_mul_h16_s8(const mcu_mul_h16_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output);
mcu_status_t mcu_mul_h16_s8_mve(const mcu_mul_h16_params_t *params, const int8_t *input1, const int8_t *input2,
                                int8_t *output);

/* ---- Look-up table ------------------------------------------------------------------------------- */

typedef struct {
    int32_t size; /* elements */
} mcu_lut_params_t;

/* Any int8 -> int8 elementwise function: out[i] = table[in[i] + 128]. The table (256 entries, computed
 * at compile time from the input and output qparams) makes sigmoid, tanh, GELU, hardswish, clamp, ...
 * exact. output may alias input exactly. */
mcu_status_t mcu_lut_s8(const mcu_lut_params_t *params, const int8_t *table, const int8_t *input,
                        int8_t *output);

/* ---- Data movement ------------------------------------------------------------------------------- */

#define MCU_CONCAT_MAX_INPUTS 8

typedef struct {
    int32_t num_inputs;         /* 1 .. MCU_CONCAT_MAX_INPUTS (the 8 below) */
    int32_t outer;              /* product of the dims before the concat axis */
    int32_t sizes[8];           /* input i: its axis length times the product of the dims after the axis */
    int32_t input_offset[8];    /* -zp of input i */
    int32_t multiplier[8];      /* s_i / s_out, with shift[i] */
    int32_t shift[8];
    int32_t output_offset;
} mcu_concat_params_t;

/* Concatenation with requantization: output row o is the rows o of every input, in order; element x of
 * input i becomes clamp(requantize_round(x + input_offset[i], multiplier[i], shift[i]) + output_offset).
 * An input whose qparams equal the output's (offset -output_offset, multiplier 2^30, shift 1) is copied. */
mcu_status_t mcu_concat_s8(const mcu_concat_params_t *params, const int8_t *const inputs[], int8_t *output);

typedef struct {
    mcu_dims_t input;          /* [N, H, W, C] */
    int32_t scale_h, scale_w;  /* integer factors >= 1: output is [N, H * scale_h, W * scale_w, C] */
} mcu_upsample_params_t;

/* Nearest-neighbour upsampling: out[n, y, x, c] = in[n, y / scale_h, x / scale_w, c]. Shares qparams. */
mcu_status_t mcu_upsample_nearest_s8(const mcu_upsample_params_t *params, const int8_t *input, int8_t *output);

/* Bilinear resampling weights: fractions of 2^MCU_BILINEAR_BITS (an output's four weights sum to 2^22). */
#define MCU_BILINEAR_BITS 11

typedef struct {
    mcu_dims_t input;  /* [N, H_in, W_in, C] */
    mcu_dims_t output; /* [N, H_out, W_out, C] */
    int32_t input_offset, output_offset;
    int32_t multiplier, shift; /* s_in / (s_out 2^22): multiplier 2^30, shift -21 when the scales are equal */
    int32_t act_min, act_max;
} mcu_upsample_bilinear_params_t;

/* Bilinear resampling (any sizes; the align_corners rule and scale are in the tables). y_taps[3 y .. 3 y + 2] =
 * (y0, y1, wy) for output row y, x_taps likewise for column x (int16, indices inside the input, 0 <= w <= 2^11):
 *   acc = sum over the 4 taps of w_y w_x (in[n, y_i, x_j, c] + input_offset), w_y0 = 2^11 - wy, w_y1 = wy
 *   out = clamp(requantize(acc, multiplier, shift) + output_offset, act_min, act_max)
 * 4 MACs an output element; tables of 6 (H_out + W_out) bytes. MCU_ERR_SHAPE for an index or weight out of range. */
mcu_status_t mcu_upsample_bilinear_s8(const mcu_upsample_bilinear_params_t *params, const int16_t *y_taps,
                                      const int16_t *x_taps, const int8_t *input, int8_t *output);
/* Its Helium variant (the same results), 4 channels a vector. (A DSP variant pairing each channel's horizontal
 * taps into one SMUAD measured 1.3 % fewer instructions than this portable kernel on the M4: not kept.) */
mcu_status_t mcu_upsample_bilinear_s8_mve(const mcu_upsample_bilinear_params_t *params, const int16_t *y_taps,
                                          const int16_t *x_taps, const int8_t *input, int8_t *output);

/* ---- Reduction ----------------------------------------------------------------------------------- */

typedef struct {
    mcu_dims_t input;   /* any 4-d axis order */
    mcu_dims_t output;  /* each dim equals the input's or is 1; a dim of 1 (input > 1) is summed over */
    int32_t input_offset, output_offset;
    int32_t multiplier, shift; /* s_in / s_out for a sum, s_in / (s_out * count) for a mean */
} mcu_reduce_params_t;

/* acc = sum over the reduced box of (in + input_offset) (int32);
 * out = clamp(requantize_round(acc, multiplier, shift) + output_offset, -128, 127). */
mcu_status_t mcu_reduce_sum_s8(const mcu_reduce_params_t *params, const int8_t *input, int8_t *output);

/* ---- Grouped convolution ------------------------------------------------------------------------ */

/* Grouped 2-d convolution with mcu_conv2d_params_t: groups = input.c / filter.c (filter is
 * [C_out, KH, KW, C_in / groups]); output channel co reads input channels [g * filter.c, (g + 1) * filter.c)
 * with g = co / (C_out / groups). Same arithmetic as mcu_conv2d_s8. */
mcu_status_t mcu_conv2d_grouped_s8(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                   const int8_t *input, const int8_t *filter, const int32_t *bias,
                                   int8_t *output);

/* ---- Matrix multiplication of two activations ---------------------------------------------------- */

typedef struct {
    int32_t batches;                   /* output batches */
    int32_t lhs_batches, rhs_batches;  /* each == batches, or 1 (broadcast) */
    int32_t m, k, n;                   /* lhs [.., M, K], rhs [.., K, N], output [batches, M, N] */
    int32_t lhs_offset, rhs_offset, output_offset;
    int32_t output_multiplier, output_shift; /* s_lhs * s_rhs / s_out */
    int32_t act_min, act_max;
    int32_t rhs_group;                 /* rhs batch r serves output batches [r * rhs_group, (r + 1) * rhs_group):
                                        * rhs_batches * rhs_group == batches (grouped-query attention), or 1 */
    int32_t rhs_transposed;            /* 0: rhs [.., K, N]; 1: rhs [.., N, K] (q @ k^T reading k's rows) */
} mcu_matmul_params_t;

/* out[b, i, j] = clamp(requantize(sum_t (lhs[b, i, t] + lhs_offset) * (rhs[r, t, j] + rhs_offset),
 * mult, shift) + output_offset) with r = b / rhs_group (0 when rhs_batches == 1) and rhs[r, t, j] read at
 * [r, j, t] when rhs_transposed; row-major; k <= 32767 keeps the int32 sum exact. */
mcu_status_t mcu_matmul_s8(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                           int8_t *output);
/* DSP variant of mcu_matmul_s8 (same params, same result): two lhs rows per rhs word, SMLAD on int16 pairs. */
mcu_status_t mcu_matmul_s8_dsp(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                               int8_t *output);
/* Helium variant of mcu_matmul_s8 (same params, same result): 16-tap VMLADAVA dot products for a transposed rhs,
 * 4-lane VMLA column updates for a [K, N] one. Built without Helium it returns MCU_ERR_ARG. */
mcu_status_t mcu_matmul_s8_mve(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                               int8_t *output);

/* DSP variant of mcu_matmul_s8 on the convs' 2x2 GEMM core (same params, same result; codegen picks it where each
 * rhs batch serves several rows): per block of rows sharing an rhs batch, the rhs (+ rhs_offset) is packed into
 * the core's int16 stream in scratch, mcu_matmul_gemm_s8_dsp_channels columns at a time (at most 4 KB of stream),
 * then each pair of lhs rows runs over it. Scratch: two rows widened (16 bytes per 4 taps) and 3 words, then the
 * stream: mcu_matmul_gemm_s8_dsp_scratch_bytes. */
mcu_status_t mcu_matmul_gemm_s8_dsp(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                                    int8_t *scratch, int8_t *output);

/* Helium variant of mcu_matmul_s8 on the convs' GEMM core (mcu_mve.h; same params, same result, k <= 4096 else
 * MCU_ERR_SHAPE; codegen picks it where each rhs batch serves several rows): per block of rows sharing an rhs
 * batch, the rhs is packed into the core's weights in scratch (per pair of channels, per 16 taps, 16 bytes of
 * each; k padded with zeros) with each channel's bias (its offset terms), mcu_matmul_gemm_s8_mve_channels columns at
 * a time (at most 4 KB), then 3 lhs rows at a time run over it, read where they lie. Scratch:
 * mcu_matmul_gemm_s8_mve_scratch_bytes. Built without Helium it returns MCU_ERR_ARG. */
mcu_status_t mcu_matmul_gemm_s8_mve(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                                    int8_t *scratch, int8_t *output);

/* Columns packed at a time: all, or the multiple of 4 whose weights and biases fit 4 KB (at least 4). */
static inline int32_t mcu_matmul_gemm_s8_mve_channels(const mcu_matmul_params_t *params)
{
    int32_t c = (4096 / (16 * ((params->k + 15) / 16) + 4)) & ~3;
    c = c < 4 ? 4 : c;
    return c >= params->n ? params->n : c;
}

static inline int32_t mcu_matmul_gemm_s8_mve_scratch_bytes(const mcu_matmul_params_t *params)
{
    return ((mcu_matmul_gemm_s8_mve_channels(params) + 3) & ~3) * (16 * ((params->k + 15) / 16) + 4);
}

/* Bytes of one pair of channels in the 2x2 core's int16 stream over k taps (mcu_opt.h, mcu_dsp_g2_pair_bytes). */
static inline int32_t mcu_matmul_gemm_s8_dsp_pair_bytes(int32_t k)
{
    const int32_t steps = (k + 3) / 4;
    return 32 + 16 * steps + 4 * (steps > 1 ? (steps - 2) / 16 + 1 : 1);
}

/* Columns packed at a time: all, or the even count whose pairs fit 4 KB (1 KB under 8 rows per rhs batch, where
 * packing more at once saves little; at least one pair). */
static inline int32_t mcu_matmul_gemm_s8_dsp_channels(const mcu_matmul_params_t *params)
{
    const int32_t per = params->rhs_batches == 1 ? params->batches : params->rhs_group;
    const int32_t rows = params->lhs_batches == 1 ? params->m : per * params->m;
    int32_t pairs = (rows >= 8 ? 4096 : 1024) / mcu_matmul_gemm_s8_dsp_pair_bytes(params->k);
    pairs = pairs < 1 ? 1 : pairs;
    return 2 * pairs >= params->n ? params->n : 2 * pairs;
}

static inline int32_t mcu_matmul_gemm_s8_dsp_scratch_bytes(const mcu_matmul_params_t *params)
{
    const int32_t c = mcu_matmul_gemm_s8_dsp_channels(params);
    return 16 * ((params->k + 3) / 4) + 12 + (c + 1) / 2 * mcu_matmul_gemm_s8_dsp_pair_bytes(params->k);
}

/* ---- Float32 fallback ------------------------------------------------------------------------------
 * An op without an integer kernel would run as dequantize -> float kernel -> quantize, float temporaries in
 * the arena; the converts also serve mixed precision, and mcu_layer_norm_f32 float32 models. float only (soft-float on cores without an FPU); results match the numpy twins in IEEE single
 * precision when the compiler does not contract a * b + c (ISO C modes default to -ffp-contract=off). */

typedef struct {
    int32_t size;
    float scale;
    int32_t zero_point;
} mcu_dequantize_params_t;

/* out[i] = (float)(in[i] - zero_point) * scale. */
mcu_status_t mcu_dequantize_s8_f32(const mcu_dequantize_params_t *params, const int8_t *input, float *output);

typedef struct {
    int32_t size;
    float inv_scale; /* (float)(1.0 / scale), as torch computes it */
    int32_t zero_point;
} mcu_quantize_params_t;

/* out[i] = clamp(round_half_even(in[i] * inv_scale) + zero_point, -128, 127); NaN gives zero_point. */
mcu_status_t mcu_quantize_f32_s8(const mcu_quantize_params_t *params, const float *input, int8_t *output);

typedef struct {
    int32_t rows;  /* independent rows */
    int32_t cols;  /* normalized length (the last dims) */
    float eps;     /* > 0 */
    int32_t rms;   /* 1: RMSNorm (mean taken as 0) */
} mcu_layer_norm_params_t;

/* Per row, in float and in this order: mean = (sum_i x_i) / cols (0 for rms); var = (sum_i (x_i - mean)^2) / cols;
 * r = 1 / sqrt(var + eps) (sqrt correctly rounded); out_i = (x_i - mean) * r * weight_i + bias_i.
 * Sums run from i = 0 up. weight and bias ([cols]) may be NULL (1 and 0). output may alias input. */
mcu_status_t mcu_layer_norm_f32(const mcu_layer_norm_params_t *params, const float *input, const float *weight,
                                const float *bias, float *output);

/* ---- Integer layer norm and RMS norm (int8 and int16 activations, no float) -----------------------------
 * Per row of `cols` elements, integer only (TFLite/CMSIS-NN style), from S = sum x_i and Q = sum x_i^2:
 *  - layer norm: c_i = cols * x_i - S, V = cols * Q - S^2 (the input offset cancels);
 *    RMS norm:   c_i = cols * d_i, V = cols * sum d_i^2, d = x + input_offset;
 *    c_i / sqrt(V + cols^2 * eps_real / s_in^2) is the normalized value (x - mean) / sqrt(var + eps_real)
 *    (RMS: x / sqrt(mean(x^2) + eps_real));
 *  - W = V * 2^var_shift + eps with eps = round(cols^2 * eps_real / s_in^2 * 2^var_shift) in [1, 2^62] and
 *    var_shift the largest even number with cols^2 * 2^16 (s8) or cols^2 * 2^30 (s16) < 2^(62 - var_shift);
 *  - W * 4^h in [2^60, 2^62) (h in -1 .. 30), u = its top 32 bits / 2^32 in [1/4, 1); r31 ~ 2^30 / sqrt(u) from a
 *    24-entry seed (u's top 5 bits) and three Newton steps x <- x (3 - u x^2) / 2 in Q30, truncating (relative
 *    error < 2^-28); a = var_shift / 2 + h - 9 (at most 30), and for V = 0 (a constant row: every c_i is 0) r31 = 0;
 *  - c'_i = c_i << a, or (c_i + 2^(-a-1)) >> -a (|c'_i| < 2^31); y_i = (c'_i * r31 + 2^29) >> 30: the normalized
 *    value in Q22, |y_i| <= 2^22 sqrt(cols);
 *  - out_i = clamp((y_i * weight[i] + bias[i]) >> shift, act_min, act_max) (int64, arithmetic shift), where the
 *    compiler folds the affine parameters and the output quantization into weight[i] = round(gamma_i / s_out *
 *    2^(shift - 22)) (int32) and bias[i] = round(beta_i / s_out * 2^shift) + zp_out * 2^shift + 2^(shift - 1)
 *    (int64, |bias| <= 2^61): one rounding, ties up.
 * shift in [32, 62]. cols <= 65536 (s8) or 16384 (s16). Twins: mcu.codegen.twins.norm. Against the float reference
 * (torch's layer_norm / rms_norm of the dequantized input, in output LSBs) the output is within 0.51 LSB before its
 * rounding, so within 1 LSB of the rounded reference (tests/test_norm_kernels.py). output may alias input exactly. */
typedef struct {
    int32_t rows;          /* independent rows */
    int32_t cols;          /* normalized length (the last dims), 1 .. 65536 (s8), 1 .. 16384 (s16) */
    int32_t input_offset;  /* -zp_in (0 for int16) */
    int32_t shift;         /* 32 .. 62 */
    int32_t var_shift;     /* even, 0 .. 60, see above */
    int64_t eps;           /* 1 .. 2^62 */
    int32_t act_min, act_max;
} mcu_norm_params_t;

mcu_status_t mcu_layer_norm_s8(const mcu_norm_params_t *params, const int8_t *input, const int32_t *weight,
                               const int64_t *bias, int8_t *output);
/* The same on Helium: the row's sums by VADDVA / VMLADAVA, the output stage 4 elements a step (its 64-bit steps from
 * high and low words); output may alias input exactly. */
mcu_status_t mcu_layer_norm_s8_mve(const mcu_norm_params_t *params, const int8_t *input, const int32_t *weight,
                                   const int64_t *bias, int8_t *output);
mcu_status_t mcu_rms_norm_s8(const mcu_norm_params_t *params, const int8_t *input, const int32_t *weight,
                             const int64_t *bias, int8_t *output);
mcu_status_t mcu_layer_norm_s16(const mcu_norm_params_t *params, const int16_t *input, const int32_t *weight,
                                const int64_t *bias, int16_t *output);
mcu_status_t mcu_rms_norm_s16(const mcu_norm_params_t *params, const int16_t *input, const int32_t *weight,
                              const int64_t *bias, int16_t *output);

/* ==== Float32 kernels (quantize="none") ============================================================
 * The float model compiled as it is: float32 NHWC activations, float32 weights in the int8 layouts (OHWI;
 * depthwise [1, KH, KW, C]) and biases, planned in the same arena. Conventions as for the int8 kernels
 * (output last, status code, arguments checked first, output must not overlap an input unless stated), and:
 *  - act_min <= act_max clamp the output (a fused ReLU / ReLU6); -FLT_MAX and FLT_MAX clamp nothing. A NaN
 *    passes the clamp unchanged.
 *  - Every sum runs from 0.0f in the order stated, one IEEE single rounding per operation (no fused
 *    multiply-add: ISO C modes default to -ffp-contract=off), so the numpy twins in codegen/twins/float32.py
 *    give the same bits with an FPU or in soft float (libgcc's, on cores without one).
 *  - Taps outside the input (zero padding) are skipped; they would add +-0.0f.
 * ================================================================================================= */

typedef struct {
    mcu_dims_t input;   /* [N, H_in, W_in, C_in] */
    mcu_dims_t filter;  /* [C_out, KH, KW, C_in / groups] (OHWI) for conv; [1, KH, KW, C_out] for depthwise */
    mcu_dims_t output;  /* [N, H_out, W_out, C_out] */
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t dilation_h, dilation_w;
    float act_min, act_max;
    int32_t output_pixel_stride; /* as in mcu_conv2d_params_t */
} mcu_conv2d_f32_params_t;

/* 2-d convolution, regular or grouped: groups = input.c / filter.c, and output channel co reads input
 * channels [g * filter.c, (g + 1) * filter.c) with g = co / (output.c / groups). Output element (n, y, x, co):
 *   acc = sum over ky, then kx, then ci (in that order) of in[n, y*sh - pt + ky*dh, x*sw - pl + kx*dw, ci] *
 *         w[co, ky, kx, ci]; out = clamp(acc + bias[co]) (bias may be NULL: 0). */
mcu_status_t mcu_conv2d_f32(const mcu_conv2d_f32_params_t *params, const float *input, const float *filter,
                            const float *bias, float *output);

/* Depthwise 2-d convolution; output.c == input.c * ch_mult; output channel co reads input channel
 * co / ch_mult and weights w[0, ky, kx, co], summed over ky, then kx; then as mcu_conv2d_f32. */
mcu_status_t mcu_dwconv2d_f32(const mcu_conv2d_f32_params_t *params, const float *input, const float *filter,
                              const float *bias, float *output);

typedef struct {
    int32_t batches;      /* rows of the input */
    int32_t in_features;  /* K */
    int32_t out_features; /* N */
    float act_min, act_max;
} mcu_fc_f32_params_t;

/* out[b, o] = clamp(sum_{k = 0 up} in[b, k] * w[o, k] + bias[o]); weights [out_features, in_features]. */
mcu_status_t mcu_fully_connected_f32(const mcu_fc_f32_params_t *params, const float *input, const float *weights,
                                     const float *bias, float *output);

typedef struct {
    mcu_dims_t input;  /* [N, H_in, W_in, C] */
    mcu_dims_t output; /* [N, H_out, W_out, C] */
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t divisor;   /* avg pool: > 0 divides every window by it; 0 by the count of valid taps */
    float act_min, act_max;
    int32_t output_pixel_stride; /* as in mcu_pool2d_params_t */
} mcu_pool2d_f32_params_t;

/* Max over the valid taps of each window (padding never wins); a window entirely in the padding gives
 * MCU_ERR_SHAPE. */
mcu_status_t mcu_maxpool2d_f32(const mcu_pool2d_f32_params_t *params, const float *input, float *output);

/* out = clamp(acc / (float)d): acc sums the valid taps over ky, then kx; d = divisor or the valid-tap count. */
mcu_status_t mcu_avgpool2d_f32(const mcu_pool2d_f32_params_t *params, const float *input, float *output);

typedef struct {
    mcu_dims_t input1, input2, output; /* broadcast dims (see "Op breadth") */
    int32_t subtract;                  /* 0: in1 + in2, 1: in1 - in2 (ignored by mcu_mul_f32) */
    float act_min, act_max;
} mcu_binary_f32_params_t;

/* out = clamp(in1 +- in2) and out = clamp(in1 * in2), with broadcasting. output may alias an input of the
 * output's dims exactly (in-place). */
mcu_status_t mcu_add_f32(const mcu_binary_f32_params_t *params, const float *input1, const float *input2,
                         float *output);
mcu_status_t mcu_mul_f32(const mcu_binary_f32_params_t *params, const float *input1, const float *input2,
                         float *output);

typedef struct {
    int32_t batches;                   /* output batches */
    int32_t lhs_batches, rhs_batches;  /* each == batches, or 1 (broadcast) */
    int32_t m, k, n;                   /* lhs [.., M, K], rhs [.., K, N], output [batches, M, N] */
    float act_min, act_max;
    int32_t rhs_group, rhs_transposed; /* as in mcu_matmul_params_t */
} mcu_matmul_f32_params_t;

/* out[b, i, j] = clamp(sum_t lhs[b, i, t] * rhs[r, t, j]), the sum from 0 in t order; r and the rhs layout as in
 * mcu_matmul_s8; row-major. */
mcu_status_t mcu_matmul_f32(const mcu_matmul_f32_params_t *params, const float *lhs, const float *rhs,
                            float *output);

/* Cells of mcu_rnn_f32_params_t.cell: mcu_rnn_f32 runs GRU, TANH and RELU; mcu_lstm_f32 ignores it (LSTM). */
enum { MCU_RNN_LSTM, MCU_RNN_GRU, MCU_RNN_TANH, MCU_RNN_RELU };

typedef struct {
    int32_t batches, steps;     /* x [batches, steps, input_size], y [batches, steps, hidden] */
    int32_t input_size, hidden; /* w_ih [gates * hidden, input_size], w_hh [gates * hidden, hidden] */
    int32_t cell;               /* MCU_RNN_* (mcu_rnn_f32) */
    int32_t reverse;            /* 1: the steps run from the last to the first */
} mcu_rnn_f32_params_t;

/* A GRU (gates r, z, n) or an Elman RNN (tanh or ReLU) over a whole sequence, as torch's nn.GRU / nn.RNN define
 * them: per step t, gi = w_ih x_t + b_ih and gh = w_hh h + b_hh (products summed from 0 up, then the bias), h0 the
 * first h, y[b, t] the new h. b_ih and b_hh may be NULL. The time loop runs here: code does not grow with it. */
mcu_status_t mcu_rnn_f32(const mcu_rnn_f32_params_t *params, const float *input, const float *h0,
                         const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh, float *output);

/* An LSTM (gates i, f, g, o) over a whole sequence, as torch's nn.LSTM: c = sig(f) c + sig(i) tanh(g),
 * h = sig(o) tanh(c); c_n is the last c (it holds the running c from c0 on). */
mcu_status_t mcu_lstm_f32(const mcu_rnn_f32_params_t *params, const float *input, const float *h0, const float *c0,
                          const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh, float *c_n,
                          float *output);

/* The same, on weights stored in quads of 4 rows tap by tap ([gates][H4 / 4][taps][4], H4 = hidden rounded up to
 * 4, zero rows padding each gate; codegen's prepare_rnn_quad): each input element is read once per 4 rows. Results
 * equal the portable kernels' bit for bit (every row's products summed in the same order). */
mcu_status_t mcu_rnn_f32_quad(const mcu_rnn_f32_params_t *params, const float *input, const float *h0,
                              const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh,
                              float *output);
mcu_status_t mcu_lstm_f32_quad(const mcu_rnn_f32_params_t *params, const float *input, const float *h0,
                               const float *c0, const float *w_ih, const float *w_hh, const float *b_ih,
                               const float *b_hh, float *c_n, float *output);

enum { MCU_BINARY_DIV, MCU_BINARY_MINIMUM, MCU_BINARY_MAXIMUM, MCU_BINARY_POW, MCU_BINARY_COUNT };

typedef struct {
    mcu_dims_t input1, input2, output; /* broadcast dims (see "Op breadth") */
    int32_t op;                        /* MCU_BINARY_*: in1 / in2, min, max (NaN propagates), in1 ^ in2 */
    float act_min, act_max;
} mcu_binary_op_f32_params_t;

/* out = clamp(in1 op in2) with broadcasting; pow is exp(in2 * log(in1)) through mcu_fmath.h (NaN for in1 < 0).
 * output may alias an input of the output's dims exactly (in-place). */
mcu_status_t mcu_binary_f32(const mcu_binary_op_f32_params_t *params, const float *input1, const float *input2,
                            float *output);

/* Softmax over the last axis (mcu_softmax_params_t, cols without the int8 limit): per row, m = max(in);
 * e_i = exp(in_i - m) (exp in float, without libm: Cody-Waite reduction by ln 2, Cephes' degree-6
 * polynomial, within 2 ulp; 0 below -103.97); s = sum_i e_i; out_i = e_i / s. output may alias input. */
mcu_status_t mcu_softmax_f32(const mcu_softmax_params_t *params, const float *input, float *output);

typedef struct {
    int32_t size;
    float act_min, act_max;
} mcu_clamp_f32_params_t;

/* out[i] = clamp(in[i]) (ReLU, ReLU6, clamp that could not fuse). output may alias input. */
mcu_status_t mcu_clamp_f32(const mcu_clamp_f32_params_t *params, const float *input, float *output);

/* Functions of mcu_unary_f32 (mcu_unary_f32_params_t.op) and the scalars they take (a, b, c). */
enum {
    MCU_UNARY_ABS, MCU_UNARY_NEG, MCU_UNARY_EXP, MCU_UNARY_LOG, MCU_UNARY_SQRT, MCU_UNARY_RSQRT,
    MCU_UNARY_RECIPROCAL, MCU_UNARY_SQUARE, MCU_UNARY_SIN, MCU_UNARY_COS, MCU_UNARY_SIGMOID, MCU_UNARY_TANH,
    MCU_UNARY_FLOOR, MCU_UNARY_CEIL, MCU_UNARY_ROUND, MCU_UNARY_TRUNC, MCU_UNARY_SIGN, MCU_UNARY_ERF,
    MCU_UNARY_LEAKY_RELU,  /* a: negative slope */
    MCU_UNARY_ELU,         /* a: alpha, b: scale, c: input scale (SELU, CELU) */
    MCU_UNARY_HARDSWISH, MCU_UNARY_HARDSIGMOID, MCU_UNARY_SILU, MCU_UNARY_MISH,
    MCU_UNARY_SOFTPLUS,    /* a: beta, b: threshold */
    MCU_UNARY_GELU, MCU_UNARY_GELU_TANH,
    MCU_UNARY_HARDSHRINK,  /* a: lambda */
    MCU_UNARY_SOFTSHRINK,  /* a: lambda */
    MCU_UNARY_THRESHOLD,   /* a: threshold, b: value */
    MCU_UNARY_LOG_SIGMOID,
    MCU_UNARY_AFFINE,      /* x * a + b: a tensor and a scalar added, subtracted, multiplied */
    MCU_UNARY_DIV,         /* x / a */
    MCU_UNARY_POW,         /* exp(a * log(x)) */
    MCU_UNARY_LOG1P, MCU_UNARY_EXPM1,
    MCU_UNARY_ATAN, MCU_UNARY_ASIN, MCU_UNARY_ACOS,
    MCU_UNARY_COUNT
};

typedef struct {
    int32_t size;
    int32_t op;    /* MCU_UNARY_* */
    float a, b, c; /* the function's scalars (unused ones 0) */
} mcu_unary_f32_params_t;

/* out[i] = f(in[i]) for f = params->op, each a fixed sequence of float operations (mcu/mcu_fmath.h: exp, log,
 * sin, cos, sqrt, tanh, erf without libm). output may alias input. */
mcu_status_t mcu_unary_f32(const mcu_unary_f32_params_t *params, const float *input, float *output);

/* out = in.transpose(perm) for a float tensor of rank <= 4 (mcu_transpose_params_t). */
mcu_status_t mcu_transpose_f32(const mcu_transpose_params_t *params, const float *input, float *output);

typedef struct {
    int32_t num_inputs; /* 1 .. MCU_CONCAT_MAX_INPUTS */
    int32_t outer;      /* product of the dims before the concat axis */
    int32_t sizes[8];   /* input i: its axis length times the product of the dims after the axis */
} mcu_concat_f32_params_t;

/* Concatenation of float tensors: output row o is the rows o of every input, in order (a copy). */
mcu_status_t mcu_concat_f32(const mcu_concat_f32_params_t *params, const float *const inputs[], float *output);

/* mcu_slice_s8 for float tensors (mcu_slice_params_t). */
mcu_status_t mcu_slice_f32(const mcu_slice_params_t *params, const float *input, float *output);

/* mcu_pad_s8 on int16 and float32 elements (value, value_f32). */
mcu_status_t mcu_pad_s16(const mcu_pad_params_t *params, const int16_t *input, int16_t *output);
mcu_status_t mcu_pad_f32(const mcu_pad_params_t *params, const float *input, float *output);

typedef struct {
    int32_t outer, len, inner; /* the input as [outer, len, inner]; the output [outer, inner] indices into len */
    int32_t op;                /* 0: argmax, 1: argmin */
} mcu_arg_params_t;

/* The index of the first largest (argmax) or smallest (argmin) element along len; a NaN counts as the largest
 * for argmax and the smallest for argmin, as in torch. */
mcu_status_t mcu_arg_f32(const mcu_arg_params_t *params, const float *input, int32_t *output);

typedef struct {
    int32_t outer, len, inner; /* the input and the output as [outer, len, inner] */
    int32_t descending;        /* 0: ascending, 1: descending */
} mcu_argsort_params_t;

/* The indices (into len) that sort each line along len, stably: ties keep index order; a NaN sorts last ascending
 * and first descending, as torch.sort(stable=True). Insertion sort, O(len^2): for short dims. The output must not
 * alias the input. */
mcu_status_t mcu_argsort_f32(const mcu_argsort_params_t *params, const float *input, int32_t *output);

/* mcu_upsample_nearest_s8 on float32 elements. */
mcu_status_t mcu_upsample_nearest_f32(const mcu_upsample_params_t *params, const float *input, float *output);

typedef struct {
    mcu_dims_t input;  /* any 4-d axis order */
    mcu_dims_t output; /* each dim equals the input's or is 1; a dim of 1 (input > 1) is reduced */
    float divisor;     /* 1 for a sum, the element count of the reduced box for a mean */
    int32_t op;        /* MCU_REDUCE_SUM (then / divisor), MCU_REDUCE_MAX, MCU_REDUCE_MIN, MCU_REDUCE_PROD */
} mcu_reduce_f32_params_t;

enum { MCU_REDUCE_SUM, MCU_REDUCE_MAX, MCU_REDUCE_MIN, MCU_REDUCE_PROD }; /* 0, 1, 2, 3 (twins: REDUCE_OPS) */

/* out = (sum over the reduced box, innermost axis fastest) / divisor; or its max, min (NaN propagates, as
 * torch's amax/amin) or product, in the same order. */
mcu_status_t mcu_reduce_f32(const mcu_reduce_f32_params_t *params, const float *input, float *output);

/* ==== Optimized variants ===========================================================================
 *
 * Same signatures, same results bit for bit, faster. codegen/passes/select_kernels.py picks one per
 * board (Helium `_mve` > DSP `_dsp` > scalar `_fast` > portable) and prepares its constants at compile
 * time, so the constant arguments differ from the portable kernel's as stated per family:
 *  - fold:    bias[c] = bias_portable[c] + input_offset * sum(w[c]) (never NULL); the kernel multiplies raw
 *             inputs and reads padding as -input_offset.
 *  - records: quant->multiplier (and quant->shift, not read) point to per-channel records (mcu_opt.h): 4
 *             int32 {mult, sh, round_lo, round_hi} (the _fast kernels) or 3 {mult, sh, rh} (the dsp fc).
 *  - c4:      filter, bias and records are padded to C_out rounded up to 4 (zero rows).
 *  - stream:  (the dsp convs and depthwise) the filter argument carries the folded biases, the packed weights
 *             and 3-word records {mult, sh, rh} (mcu_opt.h) interleaved in the order the kernel reads them;
 *             bias is not read (codegen passes NULL) and quant is only checked (codegen points both of its
 *             arrays at the portable shifts).
 *  - Packed filters, K = KH*KW*C_in in OHWI order (for fc, K = in_features, C_out = out_features); for a
 *    general conv (not 1x1) each window row of KW*C_in taps is padded with zero taps (dsp: to a multiple
 *    of 4, mve: of 16), so the kernels can read input rows in place:
 *      fast: a header word (weight bytes per tap of 4 channels: 8 or 4), then per 4 channels and tap either
 *            the int32 words w0 + w1 * 2^24 and w2 + w3 * 2^24 (one SMLAL does two MACs), or (a layer of
 *            fewer than 69 output rows, packing.FAST_WIDE_ROWS) the int8 word of bytes
 *            (w1, w0, w2, w3 - [w2 < 0]) the kernel builds them from (mcu_opt.h, mcu_fast_words); chosen only
 *            when 128 * sum|w| < 2^23 for channels 0 and
 *            2 of each quad, and no word leaves int32: w1 or w3 = -128 beside a negative w0 or w2 keeps the
 *            portable kernel;
 *      dsp (fc): int8 [C4/4][K4/4][4 channels][4 taps], K4 = K rounded up to 4 with zero taps, widened by
 *            the kernel (SXTB16 of a word and of it rotated by 8) as it widens the input;
 *      dsp (conv): a header word (weight bytes per step: 8 or 16), then a stream per pair of channels (C_out
 *            rounded up to 2): biases {b0, b1}; per 4 taps the int8 words c0 (w0, w1, w2, w3),
 *            c1 (w0, w1, w2, w3), widened by the kernel, or (a layer of >= 256 output pixels) the int16 words
 *            c0 (w0, w2), c0 (w1, w3), c1 (w0, w2), c1 (w1, w3); control words between
 *            chunks of 16 (mcu_opt.h, mcu_dsp_g2_t); the two records. A window whose rows are not whole
 *            4-tap groups and that has at most 128 taps (an RGB first layer) is packed whole, K rounded
 *            up to 4 at its end, instead of row by row;
 *      mve:  int8 [C4/2][K16/16][2 channels][16 taps], C4 = C_out rounded up to 4, K16 = K rounded up to
 *            16 with zero taps at its end (a conv's window rows are not padded: the _mve conv reads rows of
 *            KW * C_in taps when that is a multiple of 16, else gathers the whole window compactly); fold;
 *            bias, quant multiplier and shift padded to C4 (mcu_mve.h).
 *  - Scratch: the _dsp, _fast and int4 variants that need working memory (a pixel's im2col window, a pixel
 *    pair or a row widened to int16, a row of padding) take it as `int8_t *scratch` right before the
 *    output: at least `<kernel>_scratch_bytes(params)` bytes (below, each with its layout), 4-byte aligned,
 *    overlapping no other argument, any contents on entry. The code generator plans it in the arena, live
 *    during the call only, so these variants have no window size limit. A NULL scratch gives MCU_ERR_ARG.
 *    The _mve conv and depthwise take scratch likewise.
 *    The 1x1 variants need filter 1x1 and no padding (any stride). Others get MCU_ERR_SHAPE.
 *  - filter, bias and quant arrays must be 4-byte aligned (the generated weights.c aligns them).
 *  - A _dsp kernel built for a core without the DSP extension computes the same with C stand-ins; a
 *    _mve kernel built without Helium returns MCU_ERR_ARG.
 */

/* Scratch of the variants that take it (twins: codegen/twins/conv.py, fc.py; codegen sizes it with them):
 *  - conv2d_1x1_s8_dsp: a pixel pair widened to int16, 4 words per 4 input channels (C_in rounded up to 4),
 *    with a word before and after it (the assembly's entry address and state): 16 * ceil(C_in / 4) + 8.
 *  - conv2d_s8_dsp: the pair's windows widened likewise, K4 taps: KH rows of KW * C_in taps each rounded up
 *    to 4, or, for a compact window (rows not whole steps, K <= MCU_DSP_COMPACT_K), K rounded up to 4 at its
 *    end; 4 * (K4 + 2) bytes. Then two gather buffers for windows that cross the padding (or are dilated
 *    across), one per pixel, each a compact window or a piece of a row of at most MCU_DSP_ROW_PIECE bytes,
 *    rounded up to 4.
 *  - conv2d_s8_fast, conv2d_s4: one pixel's window, K = KH * KW * C_in bytes (0 for the s4 kernel's 1x1
 *    filter without padding, which reads the pixel in place).
 *  - conv2d_1x1_s8_fast, conv2d_1x1_s8_mve: the input pixels of one block (1 for fast, 3 for Helium), C_in
 *    bytes each. Where the planner slid the output over its dying input, a block whose outputs would overwrite
 *    input still to be read has its pixels copied there before any of them is written (so only later blocks'
 *    reads bound the overlap: registry raster_copy); other blocks are read in place, the scratch untouched.
 *  - dwconv2d_3x3_s8_dsp, dwconv2d_3x3_s8_fast, dwconv2d_3x3_s8_mve: C bytes of the input zero point, which
 *    padded taps read; on the in-place geometry (mcu_dw3x3_inplace_fits) then a ring of pad_top + 1 output
 *    rows.
 *  - dwconv2d_s8_dsp: the pair rows of one output row and one group of 4 channels: KH rows of
 *    mcu_dwk_pair_cols columns rounded up to a multiple of 2 * dilation_w, 16 bytes each (per column j and
 *    channel the int16 pair (x[j], x[j + dilation_w]), the zero point in the padding; the columns in residue
 *    order mod 2 * dilation_w, so a window row's pairs lie side by side).
 *  - dwconv2d_s8_mve: as the 3x3 variants (mcu_dw3x3_scratch_bytes): C bytes of the zero point, then, on the
 *    in-place geometry, the ring of pad_top + 1 output rows.
 *  - conv2d_s8_mve: a table of 3 row pointers (4 bytes each) per window row, then 3 gathered windows (the
 *    block's pixels). KW * C_in a multiple of 16: KH rows of KW * C_in bytes (pixels inside the input are read
 *    in place), then one row of KW * C_in zero points (for rows in the vertical padding); else ("compact") a
 *    table of K16 byte offsets (K16 = KH * KW * C_in rounded up to 16; an inside window spanning at most 256
 *    input bytes is one VLDRB gather per 16 taps) and 3 windows of K16 bytes. */
#define MCU_DSP_COMPACT_K 128
#define MCU_DSP_ROW_PIECE 128

/* A conv window whose rows are not whole 4-tap steps (KW * C_in % 4 != 0, e.g. an RGB first layer) and that is
 * small (at most MCU_DSP_COMPACT_K taps): the _dsp conv widens it whole, not row by row (select_kernels's
 * compact_window packs the weights by the same rule). */
static inline int mcu_dsp_conv_compact(int32_t kh, int32_t kw, int32_t c_in)
{
    return (kw * c_in) % 4 != 0 && kh * kw * c_in <= MCU_DSP_COMPACT_K;
}

static inline int32_t mcu_conv2d_1x1_s8_dsp_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return 16 * ((params->input.c + 3) / 4) + 8;
}

static inline int32_t mcu_conv2d_s8_dsp_scratch_bytes(const mcu_conv2d_params_t *params)
{
    const int32_t kh = params->filter.h, seg = params->filter.w * params->input.c;
    const int compact = mcu_dsp_conv_compact(kh, params->filter.w, params->input.c);
    const int32_t k4 = compact ? (kh * seg + 3) & ~3 : kh * ((seg + 3) & ~3);
    const int32_t gather = compact ? kh * seg : (seg < MCU_DSP_ROW_PIECE ? seg : MCU_DSP_ROW_PIECE);
    return 4 * (k4 + 2) + 2 * ((gather + 3) & ~3);
}

static inline int32_t mcu_conv2d_1x1_s8_fast_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return params->input.c;
}

static inline int32_t mcu_conv2d_1x1_s8_mve_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return 3 * params->input.c;
}

static inline int32_t mcu_conv2d_s8_fast_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return params->filter.h * params->filter.w * params->input.c;
}

static inline int32_t mcu_conv2d_s4_scratch_bytes(const mcu_conv2d_params_t *params)
{
    const int one_by_one = params->filter.h == 1 && params->filter.w == 1 && params->pad_top == 0 &&
                           params->pad_left == 0;
    return one_by_one ? 0 : params->filter.h * params->filter.w * params->input.c;
}

/* The 3x3 depthwise variants (fast, dsp, mve) run in place (their output over their dying input, at or below
 * it) on the geometry of mcu_dwconv2d_s8_inplace (stride 1, output dims == input dims): their output rows then
 * wait in a ring of pad_top + 1 rows, after the C bytes of padding (mcu_opt.h, mcu_dw_rows_t). */
static inline int mcu_dw3x3_inplace_fits(const mcu_conv2d_params_t *params)
{
    const mcu_dims_t *i = &params->input, *o = &params->output;
    return params->stride_h == 1 && params->stride_w == 1 && i->n == o->n && i->h == o->h && i->w == o->w &&
           i->c == o->c;
}

static inline int32_t mcu_dw3x3_scratch_bytes(const mcu_conv2d_params_t *params)
{
    const int32_t c = params->input.c;
    return c + (mcu_dw3x3_inplace_fits(params) ? (params->pad_top + 1) * params->output.w * c : 0);
}

static inline int32_t mcu_dwconv2d_3x3_s8_dsp_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return mcu_dw3x3_scratch_bytes(params);
}

static inline int32_t mcu_dwconv2d_3x3_s8_dsp_wide_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return mcu_dw3x3_scratch_bytes(params);
}

static inline int32_t mcu_dwconv2d_3x3_s8_fast_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return mcu_dw3x3_scratch_bytes(params);
}

static inline int32_t mcu_conv2d_s8_mve_scratch_bytes(const mcu_conv2d_params_t *params)
{
    const int32_t seg = params->filter.w * params->input.c, kh = params->filter.h;
    return (seg & 15) ? 12 + 4 * ((kh * seg + 15) & ~15) : 12 * kh + 3 * kh * seg + seg;
}

static inline int32_t mcu_dwconv2d_3x3_s8_mve_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return mcu_dw3x3_scratch_bytes(params);
}

/* The ring depthwise's two rings (a channel pair's) of k lines of int16 (the output's longer axis plus k,
 * rounded up to 2), 4-byte aligned. */
static inline int32_t mcu_dwconv2d_s8_dsp_ring_scratch_bytes(const mcu_conv2d_params_t *params)
{
    const int32_t len = params->output.h > params->output.w ? params->output.h : params->output.w;
    return 4 * params->filter.w * ((len + params->filter.w + 1) & ~1) + 3;
}

/* The any-window DSP depthwise's pair rows: columns of one window row for a whole output row. */
static inline int32_t mcu_dwk_pair_cols(const mcu_conv2d_params_t *params)
{
    return (params->output.w - 1) * params->stride_w + 2 * ((params->filter.w + 1) / 2 - 1) * params->dilation_w + 1;
}

static inline int32_t mcu_dwconv2d_s8_dsp_scratch_bytes(const mcu_conv2d_params_t *params)
{
    const int32_t r = 2 * params->dilation_w;
    return 16 * params->filter.h * r * ((mcu_dwk_pair_cols(params) + r - 1) / r);
}

static inline int32_t mcu_dwconv2d_s8_mve_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return mcu_dw3x3_scratch_bytes(params);
}

/* Conv, 1x1 filter, no padding: fold (fast, mve), records and c4 (fast), stream (dsp), packed filter. */
mcu_status_t mcu_conv2d_1x1_s8_fast(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                    const int8_t *input, const int8_t *filter, const int32_t *bias,
                                    int8_t *scratch, int8_t *output);
mcu_status_t mcu_conv2d_1x1_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                   const int8_t *input, const int8_t *filter, const int32_t *bias,
                                   int8_t *scratch, int8_t *output);
mcu_status_t mcu_conv2d_1x1_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                   const int8_t *input, const int8_t *filter, const int32_t *bias,
                                   int8_t *scratch, int8_t *output);

/* Conv, any geometry, im2col of one output pixel: as the 1x1 variants. */
mcu_status_t mcu_conv2d_s8_fast(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                const int8_t *input, const int8_t *filter, const int32_t *bias,
                                int8_t *scratch, int8_t *output);
mcu_status_t mcu_conv2d_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                               const int8_t *input, const int8_t *filter, const int32_t *bias,
                               int8_t *scratch, int8_t *output);
mcu_status_t mcu_conv2d_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                               const int8_t *input, const int8_t *filter, const int32_t *bias,
                               int8_t *scratch, int8_t *output);

/* Fully connected: as the 1x1 conv (rows = batches); dsp: fold, records (3 words), c4. */
mcu_status_t mcu_fully_connected_s8_fast(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                         const int8_t *input, const int8_t *weights, const int32_t *bias,
                                         int8_t *output);
mcu_status_t mcu_fully_connected_s8_dsp(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                        const int8_t *input, const int8_t *weights, const int32_t *bias,
                                        int8_t *output);
mcu_status_t mcu_fully_connected_s8_mve(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                        const int8_t *input, const int8_t *weights, const int32_t *bias,
                                        int8_t *output);

/* Fully connected as a 1x1 conv over its rows (any batches; codegen picks it over several rows): the _dsp 1x1
 * conv's filter stream (mcu_opt.h, mcu_dsp_g2_t; bias NULL, folded into it); scratch: three rows widened to
 * int16 (12 words per 4 input features) with a word before and after them:
 * mcu_fully_connected_gemm_s8_dsp_scratch_bytes. */
mcu_status_t mcu_fully_connected_gemm_s8_dsp(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                             const int8_t *input, const int8_t *weights, const int32_t *bias,
                                             int8_t *scratch, int8_t *output);

static inline int32_t mcu_fully_connected_gemm_s8_dsp_scratch_bytes(const mcu_fc_params_t *params)
{
    return 24 * ((params->in_features + 3) / 4) + 8;
}

/* Depthwise 3x3, channel multiplier 1, any stride/padding/dilation. Packed filters (C = channels):
 *   fast: fold, records, int8 [C][9];
 *   dsp:  stream per 4 channels (C rounded up to 4): folded biases b0..b3; per tap t = ky * 3 + kx the int8
 *         word (w_c0, w_c1, w_c2, w_c3), widened by the kernel; the 4 records (100 bytes); dsp_wide: per
 *         tap the int16 words (w_c0, w_c2), (w_c1, w_c3) (136 bytes);
 *   mve:  as mcu_dwconv2d_s8_mve's (int8 [C8 / 8][9][8], bias, multiplier and shift per 8 channels in lane
 *         order 0, 2, 4, 6, 1, 3, 5, 7); pixel by pixel, 16 channels a pass through its tap loops. */
mcu_status_t mcu_dwconv2d_3x3_s8_fast(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                      const int8_t *input, const int8_t *filter, const int32_t *bias,
                                      int8_t *scratch, int8_t *output);
mcu_status_t mcu_dwconv2d_3x3_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int8_t *input, const int8_t *filter, const int32_t *bias,
                                     int8_t *scratch, int8_t *output);
/* The same with int16 weights in its stream (MCU_DSP_DW_WIDE: where the flash budget pays for them). */
mcu_status_t mcu_dwconv2d_3x3_s8_dsp_wide(const mcu_conv2d_params_t *params,
                                          const mcu_per_channel_quant_t *quant, const int8_t *input,
                                          const int8_t *filter, const int32_t *bias, int8_t *scratch,
                                          int8_t *output);
mcu_status_t mcu_dwconv2d_3x3_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int8_t *input, const int8_t *filter, const int32_t *bias,
                                     int8_t *scratch, int8_t *output);

/* Depthwise, any window (KH x KW), stride, padding and dilation, channel multiplier 1, any channel count; the
 * codegen picks dsp where no 3x3 variant applies (mcu_dwconv2d_3x3_s8_dsp's assembly is faster on 3x3), mve also
 * for a 3x3 window on the in-place geometry (geometry.is_dw_any_mve; faster than mcu_dwconv2d_3x3_s8_mve, which
 * keeps the strided 3x3 ones: its raster gap is smaller). Output rows in order (a row's pixels in any order),
 * contiguous output; mve also runs in place as the 3x3 variants do (its rows through their ring), dsp does not.
 *   dsp: stream per 4 channels (C rounded up to 4, zero channels; packing.pack_dw_pair_stream): folded biases
 *        b0..b3; per window row ky and pair of taps j (kx = 2j, 2j + 1, a zero weight past KW) one word per
 *        channel c0..c3, the int16 pair (w_2j, w_2j+1); the 4 three-word records
 *        (MCU_DSP_DWK_GROUP_BYTES(KH, KW) = 64 + 16 KH ceil(KW / 2) bytes); bias NULL, quant unused. Per output
 *        row and group the KH input rows become int16 pairs of neighbouring taps in the scratch (padding: the zero
 *        point), then per pixel and pair of taps of 4 channels: four SMLAD.
 *   mve: int8 weights [C8 / 8][KH * KW][8] (C8 = C rounded up to 8, zero channels); folded bias, multiplier and
 *        shift padded to C8 and stored per 8 channels in lane order 0, 2, 4, 6, 1, 3, 5, 7 (as the 3x3 one). 16
 *        channels (two groups of 8) a pixel and pass (VLDRB.S16; VMULLB/VMULLT into even and odd int32 lanes,
 *        narrowed back in order by VQMOVNB/VQMOVNT; a channel tail predicated), input pointers from a stack
 *        table of the output row's window columns (the zero point in the padding; at most 512 entries: KH *
 *        dilation_w * KW <= 512, else MCU_ERR_SHAPE). Any quant the portable kernel takes (shifts >= 0 through
 *        mcu_mve_requantize). */
/* 3x3 at stride 1, dilation 1 (channel multiplier 1; else MCU_ERR_SHAPE): a channel pair at a time, each input
 * line widened once into rings of 3 int16 lines (scratch), the window taken along the output's longer axis; the
 * stream as mcu_dwconv2d_s8_dsp_line's for k = 3 (taps transposed when the output has more rows than columns). Two
 * outputs a step: 12 SMLAD-class instructions for 18 MACs, 31 in all. The output may be the input itself. */
mcu_status_t mcu_dwconv2d_s8_dsp_ring(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                      const int8_t *input, const int8_t *filter, const int32_t *bias,
                                      int8_t *scratch, int8_t *output);
/* 5x5 and 7x7 (KH == KW, channel multiplier 1; other windows return MCU_ERR_SHAPE), stride_w 1 or 2 and
 * dilation_w 1 with 'same' or 'valid' columns in its assembly (others in C): int16 pairs of neighbouring taps per channel in
 * its stream (per window row the pairs from even columns, then from odd ones; the folded bias; the 3-word
 * record), one channel at a time along each output row. No scratch. */
mcu_status_t mcu_dwconv2d_s8_dsp_line(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                      const int8_t *input, const int8_t *filter, const int32_t *bias,
                                      int8_t *output);
mcu_status_t mcu_dwconv2d_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                 const int8_t *input, const int8_t *filter, const int32_t *bias,
                                 int8_t *scratch, int8_t *output);
mcu_status_t mcu_dwconv2d_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                 const int8_t *input, const int8_t *filter, const int32_t *bias,
                                 int8_t *scratch, int8_t *output);

/* Depthwise on Helium a channel at a time (mcu_dwconv2d_s8_mve_planar): channel multiplier 1, a window of at most
 * MCU_DWP_MAX_K x MCU_DWP_MAX_K, strides up to MCU_DWP_MAX_S, any padding and dilation; the portable kernel's constants (weights
 * [1, KH, KW, C], bias or NULL, quant). Lanes are 4 output pixels of one channel along the longer output axis
 * (the "lane frame": rows and columns swapped where output.w < output.h). output may be input exactly (stride 1,
 * output dims == input dims; channel by channel, so never below it); contiguous output.
 * scratch (lane frame): the plane of a band of B output rows (mcu_dwp_band_rows), (B - 1) * stride_h +
 * (KH - 1) * dilation_h + 1 int16 rows of stride_w phases of mcu_dwp_phase_entries entries, then B staging
 * rows of the output (mcu_dwp_stage_pitch bytes each) and 16 bytes. */
#define MCU_DWP_MAX_K 7
#define MCU_DWP_MAX_TAPS (MCU_DWP_MAX_K * MCU_DWP_MAX_K)
#define MCU_DWP_MAX_S 4 /* stride at most */
#define MCU_DWP_LQ2 64 /* a 3x3 window's phases where they fit (32 or 64 entries, an immediate offset apart) */
#define MCU_DWP_BAND_BYTES 4096 /* a band's plane at most (unless one output row needs more) */
static inline int mcu_dwp_swapped(const mcu_conv2d_params_t *p)
{
    return p->output.w < p->output.h;
}

static inline int32_t mcu_dwp_phase_entries(const mcu_conv2d_params_t *p)
{
    const int s = mcu_dwp_swapped(p);
    const int32_t ow = s ? p->output.h : p->output.w, kw = s ? p->filter.h : p->filter.w;
    const int32_t sw = s ? p->stride_h : p->stride_w, dw = s ? p->dilation_h : p->dilation_w;
    const int32_t lq = (((ow + 3) & ~3) + (kw - 1) * dw / sw + 1 + 7) & ~7;
    if (kw == 3 && dw == 1 && sw <= 2 && lq <= MCU_DWP_LQ2) { /* the assembly's fixed row strides */
        return sw == 1 && lq <= MCU_DWP_LQ2 / 2 ? MCU_DWP_LQ2 / 2 : MCU_DWP_LQ2;
    }
    return lq;
}

/* Bytes between a band's staging rows: 32 where the phases have 32 entries, else the lane axis rounded up to 4, at
 * least 64. */
static inline int32_t mcu_dwp_stage_pitch(const mcu_conv2d_params_t *p)
{
    const int32_t ow4 = ((mcu_dwp_swapped(p) ? p->output.h : p->output.w) + 3) & ~3;
    return mcu_dwp_phase_entries(p) == 32 ? 32 : (ow4 > 64 ? ow4 : 64);
}

/* Output rows of a band: as many as keep its plane within MCU_DWP_BAND_BYTES (at least 1, at most all). */
static inline int32_t mcu_dwp_band_rows(const mcu_conv2d_params_t *p)
{
    const int s = mcu_dwp_swapped(p);
    const int32_t oh = s ? p->output.w : p->output.h, kh = s ? p->filter.w : p->filter.h;
    const int32_t sh = s ? p->stride_w : p->stride_h, dh = s ? p->dilation_w : p->dilation_h;
    const int32_t row = 2 * (s ? p->stride_h : p->stride_w) * mcu_dwp_phase_entries(p);
    const int32_t b = (MCU_DWP_BAND_BYTES / row - (kh - 1) * dh - 1) / sh + 1;
    return b < 1 ? 1 : (b > oh ? oh : b);
}

static inline int32_t mcu_dwconv2d_s8_mve_planar_scratch_bytes(const mcu_conv2d_params_t *p)
{
    const int s = mcu_dwp_swapped(p);
    const int32_t kh = s ? p->filter.w : p->filter.h, dh = s ? p->dilation_w : p->dilation_h;
    const int32_t sh = s ? p->stride_w : p->stride_h, sw = s ? p->stride_h : p->stride_w;
    const int32_t b = mcu_dwp_band_rows(p);
    return ((b - 1) * sh + (kh - 1) * dh + 1) * sw * mcu_dwp_phase_entries(p) * 2 + b * mcu_dwp_stage_pitch(p) + 16;
}

mcu_status_t mcu_dwconv2d_s8_mve_planar(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                                        int8_t *scratch, int8_t *output);

/* Add (no constants to prepare): the input rescales come from two 256-entry int32 tables built per call
 * (2 KB of stack; _fast computes directly below 128 elements). output may alias an input exactly. */
mcu_status_t mcu_add_s8_fast(const mcu_add_params_t *params, const int8_t *input1, const int8_t *input2,
                             int8_t *output);
mcu_status_t mcu_add_s8_mve(const mcu_add_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output);

/* Multiply with broadcasting (no constants to prepare): the output as runs (mcu_ew.h: the innermost axes merged while
 * each input steps along or holds one element; a channel gate's row repeats per pixel). With mult = m * 2^t (m odd)
 * and R = 31 - shift - t in [17, T] (T = 48 for _dsp, 47 for _mve), the product p = (x1 + o1) * (x2 + o2) rounds
 * once as floor((p * m * 2^(T-R) + 2^(T-1)) / 2^T), the prescale split between p (at most 2^15) and m (as far as
 * m < 2^31): the portable ties to even never occur there (|p| < 2^16); for R > T the product rounds to 0. Other
 * multipliers, and runs where neither input steps, take the portable arithmetic per element.
 *  - _dsp: 4 products a step, requantized by SMMLA and PKHTB asr #16, saturated by SSAT16, packed by SEL. A row that
 *    repeats (a gate's, a scalar) is widened once on the stack (2 KB: 512 elements) to int16 pairs prescaled by up
 *    to 2^7 (SXTAB16, SMULBB/SMULTT: 21 instructions per 4) or to int32 (SXTAB, MUL: 22), and the runs against it
 *    go through one assembly loop; one repeated element (a scalar) stays in a register (SXTAB, MUL: 20); input2
 *    that never repeats is read as it comes (25 per 4). Two steps an iteration where runs allow. A clamp narrower
 *    than int8 in C.
 *  - _mve: 8 products a vector (VMULLB/VMULLT.S16 of prescaled int16 operands, VQDMLASH, VQRSHRNB/T #16, VQMOVNB or
 *    VMAX/VMIN), whole vectors then one predicated; a gate's row widened once (1 KB of stack), its runs in one loop.
 * Output must not overlap an input. */
mcu_status_t mcu_mul_s8_dsp(const mcu_mul_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output);
mcu_status_t mcu_mul_s8_mve(const mcu_mul_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output);

/* Add / subtract with broadcasting (no constants to prepare), over mcu_mul_s8_dsp's runs: each input's rescale read
 * from a 256-entry int32 table built per call (2 KB of stack; below 64 outputs computed directly), input2's negated
 * for a subtraction (|a2| < 2^31 - 1, so negation is exact); a run of at least 256 against one repeated element (a
 * scalar, a per-pixel value) reads a 256-entry output table built for that element (256 B of stack); a row that
 * repeats is copied to fill 512 bytes of stack so that one call covers several runs. Output must not overlap an
 * input.
 *  - _dsp: QADD, then the output requantization as the _fast add's (SMMLA, ASR, SSAT: 9 instructions an element;
 *    a clamp narrower than int8 through a 256-byte clamp table, 10); a repeated row of even length has its
 *    rescales read once into 1 KB of stack and its runs go through one assembly loop (8 an element, plus 1 a pair).
 *  - _mve: both rescales gathered 4 lanes at a time (VLDRW gather), VQADD, the requantization as mcu_add_s8_mve's;
 *    for output shifts < 0, 16 lanes a step: 4 such groups narrowed with saturation (VQMOVNB/T twice) into one
 *    vector whose interleave one scatter store undoes (41 instructions per 16); a repeated row of whole steps has
 *    its rescales read once (1 KB of stack) and every run against it in one assembly loop (37 per 16). The output
 *    tables through 16-lane VLDRB gathers. */
mcu_status_t mcu_add_broadcast_s8_dsp(const mcu_add_broadcast_params_t *params, const int8_t *input1,
                                      const int8_t *input2, int8_t *output);
mcu_status_t mcu_add_broadcast_s8_mve(const mcu_add_broadcast_params_t *params, const int8_t *input1,
                                      const int8_t *input2, int8_t *output);

/* Look-up table: _fast as the portable kernel, 16 elements a step (any core); _mve gathers 16 lanes a vector from
 * the table rotated by 128 (prepared: entry v & 0xFF holds the portable entry v + 128). output may alias input
 * exactly. */
mcu_status_t mcu_lut_s8_fast(const mcu_lut_params_t *params, const int8_t *table, const int8_t *input,
                             int8_t *output);
mcu_status_t mcu_lut_s8_mve(const mcu_lut_params_t *params, const int8_t *table, const int8_t *input,
                            int8_t *output);

/* Average pooling (no constants to prepare): 4 channels per word summed in 16-bit lanes, 64 channels a pass
 * (stack: 512 B), then the portable rounding. */
mcu_status_t mcu_avgpool2d_s8_fast(const mcu_pool2d_params_t *params, const int8_t *input, int8_t *output);
/* DSP (SXTAB16; C stand-ins elsewhere): 16 channels a pass in eight lane pairs held in registers, one word load
 * and two extends per 4 values of a tap, flushed to int32 every 256 taps, then the portable rounding (stack: 64 B
 * of totals). */
mcu_status_t mcu_avgpool2d_s8_dsp(const mcu_pool2d_params_t *params, const int8_t *input, int8_t *output);
/* Helium: 32 channels a pass summed in int16x8 lanes (widening loads, flushed to int32 every 256 taps), then
 * the portable rounding 4 lanes at a time: q = high word of (|acc| + d / 2) * ceil(2^32 / d), exact while
 * (255 * taps + d / 2) * d < 2^32 and d >= 2, else per channel with the portable division (stack: 192 B). */
mcu_status_t mcu_avgpool2d_s8_mve(const mcu_pool2d_params_t *params, const int8_t *input, int8_t *output);

/* int4 weights (compile(weights="int4")): as the _fast conv and fully connected (fold) but with the portable
 * multipliers and shifts, with each output channel's K weights packed two per byte, tap 2i in the low nibble,
 * rows padded to whole bytes (mcu_s4.h). Half the weight flash of int8, unpacked on the fly. */
mcu_status_t mcu_conv2d_s4(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                           const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                           int8_t *output);
mcu_status_t mcu_fully_connected_s4(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                    const int8_t *input, const int8_t *weights, const int32_t *bias, int8_t *output);

/* ==== int16 activations (a16w8) ===================================================================
 * quantize="a16w8": int16 activations, int8 weights, int64 bias. Kernels in runtime_c/kernels/s16/, numpy twins
 * in codegen/twins/s16.py. Conventions as for the int8 kernels (output last, status code, arguments checked first,
 * output untouched on error, output must not overlap an input unless stated), and:
 *  - Activations are int16 NHWC, symmetric: real = q * scale, zero point 0. The input_offset, output_offset
 *    and zero_point fields of the reused structs must be 0 (else MCU_ERR_ARG).
 *  - act_min/act_max clamp the int16 output, -32768 <= act_min <= act_max <= 32767.
 *  - Weights int8 symmetric per output channel; bias int64 with scale s_in * s_w[c] (may be NULL).
 *  - Convs and fully connected accumulate in int64 (|in * w| <= 2^22, so exact for any window with
 *    |bias| <= 2^62); out = clamp(mcu_requantize64(acc, multiplier[c], shift[c]), act_min, act_max)
 *    (mcu_quant.h: one rounding, ties up, exact for every int64 accumulator).
 *  - The conv, depthwise conv and pool kernels write in raster order like the int8 ones: output may start
 *    raster_gap (codegen/memory.py) elements, 2 bytes each, below the input and overlap it.
 * ================================================================================================= */

/* 2-d convolution, any groups: groups = input.c / filter.c (filter [C_out, KH, KW, C_in / groups], OHWI), output
 * channel co reads input channels [g * filter.c, (g + 1) * filter.c) with g = co / (C_out / groups). Output
 * element (n, y, x, co): acc = bias[co] + sum_{ky,kx,ci} in[n, y*sh - pt + ky*dh, x*sw - pl + kx*dw, g*filter.c + ci]
 * * w[co, ky, kx, ci], taps outside the input skipped. */
mcu_status_t mcu_conv2d_s16(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                            const int16_t *input, const int8_t *filter, const int64_t *bias, int16_t *output);

/* Depthwise 2-d convolution, filter [1, KH, KW, C_out], output.c == input.c * ch_mult; output channel co reads
 * input channel co / ch_mult and weights w[0, ky, kx, co]. */
mcu_status_t mcu_dwconv2d_s16(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                              const int16_t *input, const int8_t *filter, const int64_t *bias, int16_t *output);

/* out[b, o] = clamp(requantize64(bias[o] + sum_k in[b, k] * w[o, k], q[o])); weights [out_features, in_features]. */
mcu_status_t mcu_fully_connected_s16(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                     const int16_t *input, const int8_t *weights, const int64_t *bias,
                                     int16_t *output);

/* TFLite 16x8 add (mcu_add_params_t, offsets 0, left_shift in [0, 15]; the compiler uses 15 with input
 * multipliers s_i / (2 max(s1, s2)) and output multiplier 2 max(s1, s2) / (2^15 s_out)):
 * a_i = mcu_requantize(in_i << left_shift, input_i_multiplier, input_i_shift); s = a1 + a2 saturated to int32;
 * out = clamp(mcu_requantize(s, output_multiplier, output_shift)). output may alias an input exactly. */
mcu_status_t mcu_add_s16(const mcu_add_params_t *params, const int16_t *input1, const int16_t *input2,
                         int16_t *output);

/* Multiply with broadcasting (mcu_mul_params_t, offsets 0; multiplier s1 * s2 / s_out):
 * out = clamp(mcu_requantize64((int64)in1 * in2, output_multiplier, output_shift)). */
mcu_status_t mcu_mul_s16(const mcu_mul_params_t *params, const int16_t *input1, const int16_t *input2,
                         int16_t *output);

/* mcu_add_s16's arithmetic with broadcasting, and subtraction (mcu_add_broadcast_params_t, offsets 0): the
 * attention mask added to the scores. Output must not overlap an input. */
mcu_status_t mcu_add_broadcast_s16(const mcu_add_broadcast_params_t *params, const int16_t *input1,
                                   const int16_t *input2, int16_t *output);
/* Helium variant of mcu_add_broadcast_s16 (same params, same result): 4 lanes a step along the output's last dim,
 * each requantization exact (VQRDMULH / VQDMULH + VRSHL); a broadcast input's last dim of 1 as one repeated lane.
 * Built without Helium it returns MCU_ERR_ARG. */
mcu_status_t mcu_add_broadcast_s16_mve(const mcu_add_broadcast_params_t *params, const int16_t *input1,
                                       const int16_t *input2, int16_t *output);
/* DSP-extension variant of mcu_add_broadcast_s16 (same params, same result): the input with fewer rows rescaled once
 * per row into 256 bytes of stack, each requantization's branch chosen once (SMMLA / SMMULR forms, exact), QADD /
 * QSUB; C stand-ins elsewhere. */
mcu_status_t mcu_add_broadcast_s16_dsp(const mcu_add_broadcast_params_t *params, const int16_t *input1,
                                       const int16_t *input2, int16_t *output);

/* Matmul of two int16 activations (mcu_matmul_params_t, every offset 0; multiplier s_lhs * s_rhs / s_out):
 * out[b, i, j] = clamp(mcu_requantize64(sum_t (int64)lhs[b, i, t] * rhs[r, t, j], mult, shift)), the batch layout
 * and rhs_transposed as mcu_matmul_s8 (a16w8 attention: q @ k^T and attention @ v over an int16 cache). */
mcu_status_t mcu_matmul_s16(const mcu_matmul_params_t *params, const int16_t *lhs, const int16_t *rhs,
                            int16_t *output);
/* Helium variant of mcu_matmul_s16 (same params, same result): 8-lane VMLALDAVA dot products into int64, a [K, N]
 * rhs's column gathered (VLDRH gather); one scalar requantization per output. Built without Helium: MCU_ERR_ARG. */
mcu_status_t mcu_matmul_s16_mve(const mcu_matmul_params_t *params, const int16_t *lhs, const int16_t *rhs,
                                int16_t *output);
/* DSP-extension variant of mcu_matmul_s16 (same params, same result): SMLALD dot products into int64 over word
 * loads, a [K, N] rhs two columns at a time (two rows' words repacked by PKHBT / PKHTB); C stand-ins elsewhere. */
mcu_status_t mcu_matmul_s16_dsp(const mcu_matmul_params_t *params, const int16_t *lhs, const int16_t *rhs,
                                int16_t *output);

/* Max pooling (mcu_pool2d_params_t, zero_point 0), as mcu_maxpool2d_s8. */
mcu_status_t mcu_maxpool2d_s16(const mcu_pool2d_params_t *params, const int16_t *input, int16_t *output);

/* Average pooling (zero_point 0), as mcu_avgpool2d_s8: acc = int32 sum of the valid taps;
 * out = clamp(round_half_away(acc / d)). kernel_h * kernel_w <= 65536 (keeps acc inside int32), else MCU_ERR_ARG. */
mcu_status_t mcu_avgpool2d_s16(const mcu_pool2d_params_t *params, const int16_t *input, int16_t *output);

typedef struct {
    int32_t rows;               /* independent rows */
    int32_t cols;               /* softmax length, 1 .. 65535 */
    uint32_t input_multiplier;  /* round(s_in * log2(e) * 2^32): s_in < ln 2 */
} mcu_softmax_s16_params_t;

/* Softmax over the last axis; input int16 (scale s_in), output int16 with scale 1/32768, zero point 0 (1.0
 * saturates to 32767). Integer only, per row:
 *  - m = max(in); for each element d = m - in_i (0 .. 65535) and y = d * input_multiplier (uint64, Q32), the
 *    exponent in base 2: e^(-s_in d) = 2^-y. k = y >> 32, f = y mod 2^32, j = f >> 24, t = f mod 2^24;
 *  - v = T[j] - (((T[j] - T[j + 1]) * t + 2^23) >> 24), with T[j] = round(2^30 * 2^(-j / 256)), j = 0..256, a
 *    static table in the kernel (1 KB; mcu.codegen.twins.s16.softmax_s16_exp2_table): 2^-f to within 1e-6 relative;
 *  - e_i = (v + 2^(k-1)) >> k for k < 31, else 0 (so e = 2^30 at the maximum); s = sum e_i (uint64);
 *  - R = floor(2^61 / s) (one 64-bit division per row); out_i = min((e_i * R + 2^45) >> 46, 32767).
 * Accuracy against p = softmax(s_in * in): |out - 32768 p| <= 0.65 + cols * 2^-16 LSB (the final rounding 0.5; R's
 * truncation 2^-16; the table and interpolation < 1e-6 relative, 0.03; input_multiplier's rounding < 0.1; each
 * e_i's rounding (<= 2^-31 of the maximum's term) moves the sum by at most cols * 2^-31 relative), so
 * |out - round(32768 p)| <= 1 for cols <= 50000. Measured: 0.503 before rounding, rows of 1..3000, s_in 1e-6..0.6
 * (tests/test_kernels_s16_host.py). output may alias input exactly. */
mcu_status_t mcu_softmax_s16(const mcu_softmax_s16_params_t *params, const int16_t *input, int16_t *output);

/* Any int16 -> int16 elementwise function through a 513-entry table with linear interpolation:
 * u = in + 32768, j = u >> 7, f = u & 127; out = table[j] + (((table[j + 1] - table[j]) * f + 64) >> 7) (int32,
 * arithmetic shift). table[j] = clamp(round(fn(s_in * (128 j - 32768)) / s_out)) (mcu.codegen.twins.s16.lut_s16_table).
 * output may alias input exactly. */
mcu_status_t mcu_lut_s16(const mcu_lut_params_t *params, const int16_t *table, const int16_t *input,
                         int16_t *output);

typedef struct {
    int32_t size;          /* elements */
    int32_t input_offset;  /* -zp_in: int8 input [-127, 128]; int16 input 0 */
    int32_t output_offset; /* zp_out: int8 output [-128, 127]; int16 output 0 */
    int32_t multiplier, shift; /* s_in / s_out */
} mcu_convert_params_t;

/* Precision boundaries (layers kept in another precision): out = clamp(mcu_requantize_round(in + input_offset,
 * multiplier, shift) + output_offset) to the output type's range (one rounding, ties to even, as torch.round
 * of the float reference). */
mcu_status_t mcu_convert_s8_s16(const mcu_convert_params_t *params, const int8_t *input, int16_t *output);
mcu_status_t mcu_convert_s16_s8(const mcu_convert_params_t *params, const int16_t *input, int8_t *output);
mcu_status_t mcu_convert_s16_s16(const mcu_convert_params_t *params, const int16_t *input, int16_t *output);

/* Float fallback entry and exit for int16 (zero_point must be 0): out[i] = (float)in[i] * scale, and
 * out[i] = clamp(round_half_even(in[i] * inv_scale), -32768, 32767), NaN giving 0, as the int8 ones. */
mcu_status_t mcu_dequantize_s16_f32(const mcu_dequantize_params_t *params, const int16_t *input, float *output);
mcu_status_t mcu_quantize_f32_s16(const mcu_quantize_params_t *params, const float *input, int16_t *output);

/* out = in.transpose(perm) for an int16 tensor of rank <= 4 (mcu_transpose_params_t). */
mcu_status_t mcu_transpose_s16(const mcu_transpose_params_t *params, const int16_t *input, int16_t *output);

/* mcu_slice_s8 for int16 tensors (mcu_slice_params_t). */
mcu_status_t mcu_slice_s16(const mcu_slice_params_t *params, const int16_t *input, int16_t *output);

/* mcu_concat_s8's contract for int16 (offsets 0): element x of input i becomes
 * clamp(mcu_requantize_round(x, multiplier[i], shift[i])) to int16; an input on the output's scale (multiplier
 * 2^30, shift 1) is copied. */
mcu_status_t mcu_concat_s16(const mcu_concat_params_t *params, const int16_t *const inputs[], int16_t *output);

/* ---- int16-activation DSP variants (codegen/passes/select_kernels.py picks them on cores with "dsp") ----
 * Same arguments, checks and results (bit for bit) as the portable kernel named, except:
 *  - filter: the int8 weights widened to int16 at compile time (pack_taps_s16 / prepare_s16_dw_dsp), as
 *    little-endian bytes, 4-byte aligned, padded with zero channels and zero taps:
 *      conv2d_s16_dsp:          [C2/2][K4/2][2 channels][2 taps], C2 = C_out rounded up to 2, K = KH*KW*C_in
 *                               in OHWI order, K4 = K rounded up to 4;
 *      fully_connected_s16_dsp_wide: [N4/4][K4/2][4 features][2 taps], N4 = out_features rounded up to 4;
 *      fully_connected_s16_dsp: int8, not widened: [N4/4][K4/4][4 features][taps k, k+2, k+1, k+3]
 *                               (pack_quads_s8_sxtb16), widened in the loop by SXTB16;
 *      dwconv2d_s16_dsp:        [C2/2][KH*KW][2 channels], the taps of channels (2j, 2j+1) as one word each.
 *    bias (int64, may be NULL), multiplier and shift are the portable arrays.
 *  - scratch (conv, fully connected): at least `<kernel>_scratch_bytes(params)` bytes, 4-byte aligned, any
 *    contents, overlapping no other argument; NULL gives MCU_ERR_ARG. conv: the windows of a pixel pair, their
 *    int16 taps interleaved by word (p0 taps k, k+1; p1 taps k, k+1; ...), padding as 0; fc: one input row.
 *  - conv2d_s16_dsp takes groups 1 only, dwconv2d_s16_dsp channel multiplier 1 and KH*KW <= 511 (else
 *    MCU_ERR_SHAPE). Both take any output_pixel_stride >= C_out, as the portable kernels; the output must not
 *    overlap the input (no raster rule).
 *  - Arithmetic: int32 sums of at most 511 products (|in * w| <= 2^22, so exact), added into int64
 *    (mcu_opt_s16.h); requantization equals mcu_requantize64. Built without the DSP extension, C stand-ins. */
mcu_status_t mcu_conv2d_s16_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                const int16_t *input, const int8_t *filter, const int64_t *bias, int8_t *scratch,
                                int16_t *output);
mcu_status_t mcu_dwconv2d_s16_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                  const int16_t *input, const int8_t *filter, const int64_t *bias, int16_t *output);
mcu_status_t mcu_fully_connected_s16_dsp(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                         const int16_t *input, const int8_t *weights, const int64_t *bias,
                                         int8_t *scratch, int16_t *output);
mcu_status_t mcu_fully_connected_s16_dsp_wide(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                              const int16_t *input, const int8_t *weights, const int64_t *bias,
                                              int8_t *scratch, int16_t *output);

/* Scratch twins: codegen/twins/s16.py. */
static inline int32_t mcu_conv2d_s16_dsp_scratch_bytes(const mcu_conv2d_params_t *params)
{
    return 4 * ((params->filter.h * params->filter.w * params->filter.c + 3) & ~3);
}

static inline int32_t mcu_fully_connected_s16_dsp_scratch_bytes(const mcu_fc_params_t *params)
{
    return 2 * ((params->in_features + 3) & ~3);
}

#endif /* MCU_KERNELS_H */
