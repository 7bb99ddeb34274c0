/* DSP (SIMD32) int8 convolution via im2col: pixel pairs' windows widened to int16, a 2x2-blocked SMLAD GEMM. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* Bytes [from, from + len) of window row ky of the output pixel whose window starts at (base_y, base_x) of image
 * in_n: in place when that row lies inside the image, else gathered into buf with padding as the zero point. */
static const int8_t *window_row(const mcu_conv2d_params_t *p, const int8_t *in_n, int32_t base_y, int32_t base_x,
                                int32_t ky, int32_t from, int32_t len, int8_t zero_point, int8_t *buf)
{
    const int32_t in_w = p->input.w, c_in = p->input.c, kw = p->filter.w, dw = p->dilation_w;
    const int32_t iy = base_y + ky * p->dilation_h;
    if (iy < 0 || iy >= p->input.h) {
        mcu_fill_s8(buf, zero_point, len);
        return buf;
    }
    const int8_t *row = in_n + iy * in_w * c_in;
    if (dw == 1 && base_x >= 0 && base_x + kw <= in_w) {
        return row + base_x * c_in + from;
    }
    for (int32_t j = from; j < from + len;) { /* tap kx = j / c_in, run to the end of the tap or the piece */
        const int32_t kx = j / c_in, ch = j - kx * c_in, ix = base_x + kx * dw;
        const int32_t end = (kx + 1) * c_in < from + len ? (kx + 1) * c_in : from + len;
        if (ix >= 0 && ix < in_w) {
            mcu_copy_s8(buf + (j - from), row + ix * c_in + ch, end - j);
        } else {
            mcu_fill_s8(buf + (j - from), zero_point, end - j);
        }
        j = end;
    }
    return buf;
}

mcu_status_t mcu_conv2d_s8_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                               const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                               int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    (void)bias; /* folded into the filter stream */
    mcu_status_t status = mcu_conv_check_strided(p, quant, input, filter, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, c_out = p->output.c;
    const int32_t os = mcu_out_stride(p->output_pixel_stride, c_out); /* output pixel q at output + q * os */
    const int32_t kh = p->filter.h, kw = p->filter.w, seg = kw * c_in;
    const int compact = mcu_dsp_conv_compact(kh, kw, c_in);
    const int32_t k = compact ? kh * seg : kh * ((seg + 3) & ~3); /* taps of the widened window */
    if (!mcu_conv_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    const int32_t steps = (k + 3) / 4;
    uint32_t *x = (uint32_t *)(void *)scratch;
    mcu_rq_mode_t mode;
    mcu_dsp_g2_t g;
    if (mcu_dsp_g2_open(&g, filter, x + 1, steps, c_out, p->output_offset, p->act_min, p->act_max,
                        &mode) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const int8_t zero_point = (int8_t)(-p->input_offset);
    const int32_t out_h = p->output.h, out_w = p->output.w, pixels = p->output.n * out_h * out_w;
    const int32_t span_y = (kh - 1) * p->dilation_h, span_x = (kw - 1) * p->dilation_w;
    const int32_t row_step = p->dilation_h * in_w * c_in;
    const int nine = kh == 3 && seg == 9; /* compact 3 x 9-byte windows: widened straight from the input */
    const int8_t *input_end = input + p->input.n * in_h * in_w * c_in;
    (void)nine;
    (void)input_end;
    /* scratch (mcu_conv2d_s8_dsp_scratch_bytes): the entry, a pixel pair's windows widened to int16 and the
     * state's address (4 * steps + 2 words); then per pixel a buffer of `piece` bytes (rounded up to 4) for its
     * gathered window rows, or (compact) its whole window */
    const int32_t piece = compact ? k : (seg < MCU_DSP_ROW_PIECE ? seg : MCU_DSP_ROW_PIECE);
    int8_t *rows[2] = {scratch + 4 * (4 * steps + 2), scratch + 4 * (4 * steps + 2) + ((piece + 3) & ~3)};

    /* Each pixel of a pair is (n, y, x) with its window at (base_y, base_x). A window lies inside the image, or
     * is gathered with the zero point as padding: compact windows whole (one run of k taps), others row by row
     * in pieces of `piece` bytes. */
    struct {
        int32_t n, y, x, base_y, base_x;
        const int8_t *in_n;
    } px[2] = {{0, 0, 0, -p->pad_top, -p->pad_left, input}, {0, 0, 0, 0, 0, input}};
    const int32_t image = in_h * in_w * c_in;
    const uint32_t max_y = (uint32_t)(in_h - 1 - span_y), max_x = (uint32_t)(in_w - 1 - span_x);
    for (int32_t i = 0; i < pixels; i += 2) {
        const int two = i + 1 < pixels;
        px[1] = px[0];
        if (two && ++px[1].x == out_w) {
            px[1].x = 0;
            if (++px[1].y == out_h) {
                px[1].y = 0;
                ++px[1].n;
                px[1].in_n += image;
            }
            px[1].base_y = px[1].y * p->stride_h - p->pad_top;
            px[1].base_x = -p->pad_left;
        } else if (two) {
            px[1].base_x += p->stride_w;
        }
        const int8_t *win[2];
        int inside = p->dilation_w == 1 && span_y < in_h && span_x < in_w;
        for (int32_t j = 0; j < 2; ++j) {
            win[j] = px[j].in_n + (px[j].base_y * in_w + px[j].base_x) * c_in;
            inside = inside && (uint32_t)px[j].base_y <= max_y && (uint32_t)px[j].base_x <= max_x;
        }
#if MCU_DSP_ASM
        if (compact && inside && nine && win[1] + 2 * row_step + 10 <= input_end) {
            mcu_dsp_expand2_9x3(win[0], win[1], row_step, g.x);
        } else
#endif
        if (compact) {
            for (int32_t j = 0; j < 2; ++j) {
                int8_t *buf = rows[j];
                if (inside) {
                    for (int32_t ky = 0; ky < kh; ++ky) {
                        mcu_copy_s8(buf + ky * seg, win[j] + ky * row_step, seg);
                    }
                } else {
                    mcu_im2col_s8(p, px[j].in_n, px[j].y, px[j].x, zero_point, buf);
                }
            }
            mcu_dsp_expand2(rows[0], rows[1], k, g.x);
        } else if (inside) {
            uint32_t *d = g.x;
            for (int32_t ky = 0; ky < kh; ++ky) {
                d = mcu_dsp_expand2(win[0] + ky * row_step, win[1] + ky * row_step, seg, d);
            }
        } else {
            uint32_t *d = g.x;
            for (int32_t ky = 0; ky < kh; ++ky) {
                for (int32_t from = 0; from < seg; from += piece) {
                    const int32_t len = seg - from < piece ? seg - from : piece;
                    const int8_t *src[2];
                    for (int32_t j = 0; j < 2; ++j) {
                        src[j] = window_row(p, px[j].in_n, px[j].base_y, px[j].base_x, ky, from, len, zero_point,
                                            rows[j]);
                    }
                    d = mcu_dsp_expand2(src[0], src[1], len, d);
                }
            }
        }
        mcu_dsp_g2_run(&g, output + i * os, two ? os : 0, c_out, &mode);
        px[0] = px[1];
        if (++px[0].x == out_w) {
            px[0].x = 0;
            if (++px[0].y == out_h) {
                px[0].y = 0;
                ++px[0].n;
                px[0].in_n += image;
            }
            px[0].base_y = px[0].y * p->stride_h - p->pad_top;
            px[0].base_x = -p->pad_left;
        } else {
            px[0].base_x += p->stride_w;
        }
    }
    return MCU_OK;
}
