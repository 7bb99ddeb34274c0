/* The DSP (SIMD32) int8 depthwise 3x3 convolution, channel multiplier 1 (4 channels per word, SMLABB/SMLATT,
 * folded bias), written once for both its weight layouts: a kernel source defines MCU_DSP_DW_WIDE (0: int8 weights widened in
 * the loop; 1: int16 weights, mcu_opt.h), includes this file once and defines its kernel as a call of
 * mcu_dw3x3_dsp: mcu_dwconv2d_3x3_s8_dsp.c, mcu_dwconv2d_3x3_s8_dsp_wide.c. Not a public API. */
#ifndef MCU_DW3X3_DSP_H
#define MCU_DW3X3_DSP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* Output pixels [x_begin, x_end) of one output row, one at a time, pixel x_begin's outputs at out and each
 * next pixel's C bytes on: channels [0, done) by the assembly when asm_ok (windows in place, or taps through a
 * table at the borders; else they are done already), the rest in C. row[ky] is window row ky's input row, NULL
 * in the padding. */
static void pixels(const mcu_conv2d_params_t *p, const int8_t *const row[3], int32_t x_begin, int32_t x_end,
                   const int8_t *pad, const int8_t *filter, const mcu_rq_mode_t *mode, int32_t done, int asm_ok,
                   int8_t *out)
{
    const int32_t c = p->input.c, in_w = p->input.w, dw = p->dilation_w;
    const int rows_inside = row[0] != NULL && row[2] != NULL;
    for (int32_t x = x_begin; x < x_end; ++x, out += c) {
        const int32_t base_x = x * p->stride_w - p->pad_left;
        const int8_t *tap[9];
        for (int32_t kx = 0; kx < 3; ++kx) {
            const int32_t ix = base_x + kx * dw;
            const int col_ok = ix >= 0 && ix < in_w;
            for (int32_t ky = 0; ky < 3; ++ky) {
                tap[ky * 3 + kx] = col_ok && row[ky] != NULL ? row[ky] + ix * c : pad;
            }
        }
#if MCU_DSP_ASM
        if (asm_ok && done > 0 && rows_inside && base_x >= 0 && base_x + 2 * dw < in_w) {
            mcu_dsp_dw_pixel_asm(tap[0], dw * c, (int32_t)(row[1] - row[0]), filter, out, done / 4);
        } else if (asm_ok && done > 0) {
            mcu_dsp_dw_tab_asm(tap, filter, out, done / 4);
        }
#else
        (void)rows_inside;
        (void)asm_ok;
#endif
        for (int32_t ch = done; ch < c; ch += 4) {
            const int8_t *tap_c[9];
            for (int32_t t = 0; t < 9; ++t) {
                tap_c[t] = tap[t] + ch;
            }
            mcu_dsp_dw_group_c(tap_c, c - ch < 4 ? c - ch : 4, filter + ch / 4 * MCU_DSP_DW_GROUP_BYTES, mode,
                               out + ch);
        }
    }
}

/* The input rows of output row y's window (NULL in the padding). */
static void window_rows(const mcu_conv2d_params_t *p, const int8_t *in_n, int32_t y, const int8_t *row[3])
{
    const int32_t base_y = y * p->stride_h - p->pad_top, in_w = p->input.w, c = p->input.c;
    for (int32_t ky = 0; ky < 3; ++ky) {
        const int32_t iy = base_y + ky * p->dilation_h;
        row[ky] = iy >= 0 && iy < p->input.h ? in_n + iy * in_w * c : NULL;
    }
}

static mcu_status_t mcu_dw3x3_dsp(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                  const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                                  int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    (void)bias; /* folded into the filter stream */
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_dw3x3_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c = p->input.c, in_h = p->input.h, in_w = p->input.w, out_w = p->output.w;
    mcu_rq_mode_t mode = {p->act_min, p->act_max, p->output_offset, 1, 0};
    for (int32_t ch = 0; ch < c; ++ch) {
        const int32_t *rec = mcu_dsp_dw_record(filter, ch);
        if (mcu_rq3_check(rec, 1) != MCU_OK) {
            return MCU_ERR_ARG;
        }
        mode.records_fast = mode.records_fast && rec[1] >= 0;
    }
    mode.fast = mode.records_fast && p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX;
    const int32_t sw = p->stride_w;
    (void)sw;
    int8_t *pad = scratch; /* C bytes: a padded tap reads the zero point, the bias is folded */
    mcu_fill_s8(pad, (int8_t)(-p->input_offset), c);
    mcu_dw_rows_t rows = mcu_dw_rows_open(p, input, output, scratch + c); /* in place: a ring of rows */
    /* The assembly does whole groups of 4 channels in fast mode: runs of interior pixels [x0, x1) of the rows
     * inside the image a group at a time (dilation_w 1, stride_w 1 or 2), other pixels one at a time. */
    int32_t done = 0, x0 = 0, x1 = 0;
#if MCU_DSP_ASM
    done = mode.fast ? c & ~3 : 0;
    if (done > 0 && p->dilation_w == 1 && (sw == 1 || sw == 2) && in_w - 3 + p->pad_left >= 0) {
        x0 = (p->pad_left + sw - 1) / sw; /* the interior columns: x * sw - pad_left in [0, in_w - 3] */
        x1 = (in_w - 3 + p->pad_left) / sw + 1;
        x1 = x1 < out_w ? x1 : out_w;
        x0 = x0 < x1 ? x0 : x1;
    }
#endif
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, mcu_dw_rows_next(&rows)) {
            int8_t *out = mcu_dw_rows_out(&rows);
            const int8_t *row[3];
            window_rows(p, in_n, y, row);
            const int rows_inside = row[0] != NULL && row[2] != NULL;
            const int32_t r0 = rows_inside ? x0 : 0, r1 = rows_inside ? x1 : 0; /* this row's run, maybe empty */
#if MCU_DSP_ASM
            if (r1 > r0) {
                const int8_t *src = row[0] + (r0 * sw - p->pad_left) * c;
                const int32_t rs = (int32_t)(row[1] - row[0]);
                for (int32_t g = 0; g < done; g += 4) {
                    mcu_dsp_dw_run_asm(src + g, c, rs, filter + g / 4 * MCU_DSP_DW_GROUP_BYTES, out + r0 * c + g,
                                       out + r1 * c + g, sw == 2);
                }
                if (done < c) { /* the channel tail of the run's pixels */
                    pixels(p, row, r0, r1, pad, filter, &mode, done, 0, out + r0 * c);
                }
            }
#endif
            pixels(p, row, 0, r0, pad, filter, &mode, done, 1, out);
            pixels(p, row, r1, out_w, pad, filter, &mode, done, 1, out + r1 * c);
        }
    }
    mcu_dw_rows_close(&rows);
    return MCU_OK;
}

#endif /* MCU_DW3X3_DSP_H */
