/* Helium (MVE) int8 convolution: 3 pixels' windows (read in place, or gathered at borders) x 2 channels per block. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* Row pointers of output pixel q (flat index)'s window, rows[r][j] for r < KH. An interior pixel (dilation_w
 * 1) is read in place when its rows are whole 16-tap chunks (seg16 == seg) or copied row by row into win;
 * a border pixel's window is gathered into win (padding as the zero point). win holds KH rows of seg16
 * bytes whose bytes past seg stay zero. Not inlined, so the pixel loop and the copies keep their values in
 * registers. */
static __attribute__((noinline)) void window_rows(const mcu_conv2d_params_t *p, const int8_t *input, int32_t q,
                                                  int32_t seg16, int8_t *win, const int8_t *(*rows)[3], int32_t j)
{
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, kh = p->filter.h;
    const int32_t n = q / (p->output.h * p->output.w), y = q / p->output.w % p->output.h, x = q % p->output.w;
    const int8_t *in_n = input + n * in_h * in_w * c_in;
    const int32_t base_y = y * p->stride_h - p->pad_top, base_x = x * p->stride_w - p->pad_left;
    const int32_t seg = p->filter.w * c_in, stride = p->dilation_h * in_w * c_in;
    if (p->dilation_w == 1 && base_y >= 0 && base_y + (kh - 1) * p->dilation_h < in_h && base_x >= 0 &&
        base_x + p->filter.w - 1 < in_w) {
        const int8_t *src = in_n + (base_y * in_w + base_x) * c_in;
        if (seg16 == seg) {
            for (int32_t r = 0; r < kh; ++r, src += stride) {
                rows[r][j] = src;
            }
            return;
        }
        /* a row ends mid-chunk: copy it, the last chunk predicated (the window's pad bytes stay zero) */
        const mve_pred16_t tail = vctp8q((uint32_t)(seg & 15));
        for (int32_t r = 0; r < kh; ++r, src += stride) {
            int8_t *d = win + r * seg16;
            int32_t i = 0;
            for (; i + 16 <= seg; i += 16) {
                vstrbq_s8(d + i, vldrbq_s8(src + i));
            }
            vstrbq_p_s8(d + i, vldrbq_z_s8(src + i, tail), tail);
            rows[r][j] = d;
        }
        return;
    }
    mcu_im2col_rows_s8(p, in_n, y, x, (int8_t)(-p->input_offset), seg16, win);
    for (int32_t r = 0; r < kh; ++r) {
        rows[r][j] = win + r * seg16;
    }
}
#endif

mcu_status_t mcu_conv2d_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                               const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t c_out = p->output.c, kh = p->filter.h, seg16 = (p->filter.w * p->input.c + 15) & ~15;
    if (!mcu_conv_shapes_ok(p) || kh * seg16 > MCU_OPT_MAX_K) {
        return MCU_ERR_SHAPE;
    }
    if (mcu_quant_check(quant, c_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const mcu_mve_gemm_t g = mcu_mve_gemm(filter, bias, quant, c_out, kh, seg16, p->output_offset, p->act_min,
                                          p->act_max);
    /* Three gathered windows (for border pixels); the bytes past seg in a row meet zero weights but are
     * zeroed anyway. */
    int8_t windows[3][MCU_OPT_MAX_K]; /* 3 KB */
    mcu_fill_s8(windows[0], 0, 3 * MCU_OPT_MAX_K);
    const int8_t *rows[MCU_OPT_MAX_K / 16][3];
    const int32_t pixels = p->output.n * p->output.h * p->output.w;
    for (int32_t i = 0; i < pixels; i += 3) {
        for (int32_t j = 0; j < 3; ++j) { /* past the end: pixel i again */
            window_rows(p, input, i + j < pixels ? i + j : i, seg16, windows[j], rows, j);
        }
        if (pixels - i == 1) {
            const int8_t *one[MCU_OPT_MAX_K / 16];
            for (int32_t r = 0; r < kh; ++r) {
                one[r] = rows[r][0];
            }
            mcu_mve_gemv(one, &g, output + i * c_out);
        } else {
            mcu_mve_gemm_3x2((const int8_t *const(*)[3])rows, &g, pixels - i, output + i * c_out);
        }
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)output;
    return MCU_ERR_ARG;
#endif
}
