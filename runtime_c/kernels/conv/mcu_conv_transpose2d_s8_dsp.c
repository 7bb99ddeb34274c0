/* DSP (SIMD32) int8 transposed convolution (groups 1), gather form as mcu_conv_transpose2d_s8. */
/* Per output pixel and 4 channels, each real tap's inputs 4 at a time widened once (SXTAB16 adds the input offset)
 * and shared by the 4 channels' SMLADs (the last 1..3 channels one at a time). */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* acc[j] += sum over c_in of (x[ci] + in_off) * w[j][ci] for the 4 channels' weights w[j] = w0 + d[j]. */
MCU_INLINE void mcu_convt_dot4(const int8_t *x, const int8_t *w0, const int32_t d[4], int32_t c_in, int32_t in_off,
                               uint32_t off2, int32_t acc[4])
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t ci = 0;
    for (; ci + 4 <= c_in; ci += 4) {
        const uint32_t xw = mcu_read_u32(x + ci);
        const uint32_t xa = mcu_sxtab16(off2, xw), xb = mcu_sxtab16(off2, mcu_ror8(xw)); /* (x0, x2), (x1, x3) */
        uint32_t w = mcu_read_u32(w0 + d[0] + ci);
        a0 = mcu_smlad(xa, mcu_sxtb16(w), a0);
        a0 = mcu_smlad(xb, mcu_sxtb16(mcu_ror8(w)), a0);
        w = mcu_read_u32(w0 + d[1] + ci);
        a1 = mcu_smlad(xa, mcu_sxtb16(w), a1);
        a1 = mcu_smlad(xb, mcu_sxtb16(mcu_ror8(w)), a1);
        w = mcu_read_u32(w0 + d[2] + ci);
        a2 = mcu_smlad(xa, mcu_sxtb16(w), a2);
        a2 = mcu_smlad(xb, mcu_sxtb16(mcu_ror8(w)), a2);
        w = mcu_read_u32(w0 + d[3] + ci);
        a3 = mcu_smlad(xa, mcu_sxtb16(w), a3);
        a3 = mcu_smlad(xb, mcu_sxtb16(mcu_ror8(w)), a3);
    }
    for (; ci < c_in; ++ci) {
        const int32_t v = (int32_t)x[ci] + in_off;
        a0 += v * w0[d[0] + ci];
        a1 += v * w0[d[1] + ci];
        a2 += v * w0[d[2] + ci];
        a3 += v * w0[d[3] + ci];
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

/* acc + sum over c_in of (x[ci] + in_off) * w[ci]. */
MCU_INLINE int32_t mcu_convt_dot1(const int8_t *x, const int8_t *w, int32_t c_in, int32_t in_off, uint32_t off2,
                                  int32_t acc)
{
    int32_t ci = 0;
    for (; ci + 4 <= c_in; ci += 4) {
        const uint32_t xw = mcu_read_u32(x + ci), ww = mcu_read_u32(w + ci);
        acc = mcu_smlad(mcu_sxtab16(off2, xw), mcu_sxtb16(ww), acc);
        acc = mcu_smlad(mcu_sxtab16(off2, mcu_ror8(xw)), mcu_sxtb16(mcu_ror8(ww)), acc);
    }
    for (; ci < c_in; ++ci) {
        acc += ((int32_t)x[ci] + in_off) * w[ci];
    }
    return acc;
}

MCU_INLINE int8_t mcu_convt_out(const mcu_conv2d_params_t *p, const mcu_per_channel_quant_t *quant, int32_t acc,
                                int32_t co)
{
    const int32_t r = mcu_requantize(acc, quant->multiplier[co], quant->shift[co]);
    return (int8_t)mcu_clamp_i32(mcu_add_offset(r, p->output_offset), p->act_min, p->act_max);
}

mcu_status_t mcu_conv_transpose2d_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                         const int8_t *input, const int8_t *filter, const int32_t *bias,
                                         int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    const mcu_status_t status = mcu_convt_variant_check(p, quant, input, filter, output);
    if (status != MCU_OK) {
        return status;
    }
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, c_out = p->output.c;
    const int32_t kh = p->filter.h, kw = p->filter.w, sh = p->stride_h, sw = p->stride_w;
    const int32_t in_off = p->input_offset, w_chan = kh * kw * c_in;
    const uint32_t off2 = ((uint32_t)(uint16_t)in_off << 16) | (uint16_t)in_off;
    const int32_t os = p->output_pixel_stride > 0 ? p->output_pixel_stride : c_out;
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c_in;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const mcu_convt_span_t sy = mcu_convt_span(y, p->pad_top, sh, kh, in_h);
            for (int32_t x = 0; x < p->output.w; ++x, out += os) {
                const mcu_convt_span_t sx = mcu_convt_span(x, p->pad_left, sw, kw, in_w);
                int32_t co = 0;
                for (; co + 4 <= c_out; co += 4) {
                    const int32_t d[4] = {0, w_chan, 2 * w_chan, 3 * w_chan};
                    int32_t acc[4] = {0, 0, 0, 0};
                    if (bias != NULL) {
                        acc[0] = bias[co], acc[1] = bias[co + 1], acc[2] = bias[co + 2], acc[3] = bias[co + 3];
                    }
                    const int8_t *w0 = filter + co * w_chan;
                    for (int32_t ky = sy.k0, iy = sy.i0; ky < sy.k1; ky += sh, --iy) {
                        for (int32_t kx = sx.k0, ix = sx.i0; kx < sx.k1; kx += sw, --ix) {
                            mcu_convt_dot4(in_n + (iy * in_w + ix) * c_in, w0 + (ky * kw + kx) * c_in, d, c_in,
                                           in_off, off2, acc);
                        }
                    }
                    for (int32_t j = 0; j < 4; ++j) {
                        out[co + j] = mcu_convt_out(p, quant, acc[j], co + j);
                    }
                }
                for (; co < c_out; ++co) { /* the last 1..3 channels one at a time */
                    int32_t acc = bias != NULL ? bias[co] : 0;
                    const int8_t *w0 = filter + co * w_chan;
                    for (int32_t ky = sy.k0, iy = sy.i0; ky < sy.k1; ky += sh, --iy) {
                        for (int32_t kx = sx.k0, ix = sx.i0; kx < sx.k1; kx += sw, --ix) {
                            acc = mcu_convt_dot1(in_n + (iy * in_w + ix) * c_in, w0 + (ky * kw + kx) * c_in, c_in,
                                                 in_off, off2, acc);
                        }
                    }
                    out[co] = mcu_convt_out(p, quant, acc, co);
                }
            }
        }
    }
    return MCU_OK;
}
