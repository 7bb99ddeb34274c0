/* Helium (MVE) int8 convolution: 3 pixels' windows (read in place, or gathered into scratch) x 4 channels per block. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_mve.h"

#if MCU_HAVE_MVE
/* Window layouts (mcu_conv2d_s8_mve_scratch_bytes):
 *  - rows (KW * C_in a multiple of 16): KH rows of seg = KW * C_in bytes, read in place when the window lies
 *    inside the input horizontally and dilation_w is 1 (a row in the vertical padding reads a row of zero points),
 *    else gathered into the pixel's window buffer, rows seg apart;
 *  - compact (otherwise): the whole window gathered into the buffer, rows seg apart (one table row, K rounded up
 *    to 16; the bytes past K meet zero weights). Inside the input, when the window spans at most 256 bytes,
 *    one VLDRB gather per 16 taps through a table of byte offsets built per call (`offsets`), else row by row
 *    (rows of at most 16 taps: one predicated load and store each, inline). */
typedef struct {
    const mcu_conv2d_params_t *p;
    int32_t seg, rs;        /* window row bytes; input bytes between window rows */
    int compact;
    const uint8_t *offsets; /* compact, span <= 256: tap t's byte offset from the window's first tap; else NULL */
    int32_t k16;            /* compact: K rounded up to 16 */
    int8x16_t zp;           /* what a padded tap reads (the zero point: the bias is folded) */
    const int8_t *zp_row;   /* rows: seg bytes of the zero point, what a window row in the padding reads */
} ctx_t;

/* A compact window inside the input, rows of seg <= 16 taps (dilation_w 1): each row one predicated load and store
 * (p: seg lanes), rows seg apart. */
MCU_INLINE void copy_rows(const int8_t *src, int32_t rs, int32_t kh, int32_t seg, mve_pred16_t p, int8_t *win)
{
    for (int32_t r = 0; r < kh; ++r, src += rs, win += seg) {
        vstrbq_p_s8(win, vldrbq_z_s8(src, p), p);
    }
}

MCU_INLINE void fill16(int8_t *d, int8x16_t v, int32_t n)
{
    for (; n > 0; n -= 16, d += 16) {
        vstrbq_p_s8(d, v, vctp8q((uint32_t)n));
    }
}

MCU_INLINE void copy16(int8_t *d, const int8_t *s, int32_t n)
{
    for (; n > 0; n -= 16, d += 16, s += 16) {
        const mve_pred16_t pr = vctp8q((uint32_t)n);
        vstrbq_p_s8(d, vldrbq_z_s8(s, pr), pr);
    }
}

/* A window that crosses the padding (or is dilated across), tap by tap, rows seg apart. */
static __attribute__((noinline)) void gather(const ctx_t *cx, const int8_t *in_n, int32_t base_y, int32_t base_x,
                                             int8_t *win)
{
    const mcu_conv2d_params_t *p = cx->p;
    const int32_t in_h = p->input.h, in_w = p->input.w, c_in = p->input.c, kw = p->filter.w;
    for (int32_t ky = 0; ky < p->filter.h; ++ky, win += cx->seg) {
        const int32_t iy = base_y + ky * p->dilation_h;
        if (iy < 0 || iy >= in_h) {
            fill16(win, cx->zp, cx->seg);
            continue;
        }
        const int8_t *row = in_n + iy * in_w * c_in;
        if (p->dilation_w == 1) { /* the taps inside, one run between runs of padding */
            const int32_t lo = base_x < 0 ? (-base_x < kw ? -base_x : kw) : 0;
            const int32_t hi = in_w - base_x < kw ? (in_w - base_x > lo ? in_w - base_x : lo) : kw;
            fill16(win, cx->zp, lo * c_in);
            copy16(win + lo * c_in, row + (base_x + lo) * c_in, (hi - lo) * c_in);
            fill16(win + hi * c_in, cx->zp, (kw - hi) * c_in);
            continue;
        }
        int8_t *d = win;
        for (int32_t kx = 0, ix = base_x; kx < kw; ++kx, ix += p->dilation_w, d += c_in) {
            if (ix >= 0 && ix < in_w) {
                copy16(d, row + ix * c_in, c_in);
            } else {
                fill16(d, cx->zp, c_in);
            }
        }
    }
}

/* Pixel (y, x) of image in_n: its window's row pointers as column j of the table (rows[3 r]). */
static __attribute__((noinline)) void window(const ctx_t *cx, const int8_t *in_n, int32_t y, int32_t x, int8_t *win,
                                             const int8_t **rows)
{
    const mcu_conv2d_params_t *p = cx->p;
    const int32_t in_w = p->input.w, c_in = p->input.c, kh = p->filter.h;
    const int32_t base_y = y * p->stride_h - p->pad_top, base_x = x * p->stride_w - p->pad_left;
    const int inside = base_y >= 0 && base_y + (kh - 1) * p->dilation_h < p->input.h && base_x >= 0 &&
                       base_x + (p->filter.w - 1) * p->dilation_w < in_w;
    const int8_t *src = in_n + (base_y * in_w + base_x) * c_in;
    if (cx->compact) {
        if (inside && cx->offsets != NULL) {
            for (int32_t t = 0; t < cx->k16; t += 16) {
                vstrbq_s8(win + t, vldrbq_gather_offset_s8(src, vldrbq_u8(cx->offsets + t)));
            }
        } else if (inside && p->dilation_w == 1) {
            int8_t *d = win;
            for (int32_t r = 0; r < kh; ++r, src += cx->rs, d += cx->seg) {
                copy16(d, src, cx->seg);
            }
        } else {
            gather(cx, in_n, base_y, base_x, win);
        }
        rows[0] = win;
        return;
    }
    if (p->dilation_w == 1 && base_x >= 0 && base_x + p->filter.w - 1 < in_w) {
        /* inside horizontally: rows in place, or the zero-point row */
        for (int32_t r = 0, iy = base_y; r < kh; ++r, src += cx->rs, iy += p->dilation_h) {
            rows[3 * r] = iy >= 0 && iy < p->input.h ? src : cx->zp_row;
        }
        return;
    }
    gather(cx, in_n, base_y, base_x, win);
    for (int32_t r = 0; r < kh; ++r) {
        rows[3 * r] = win + r * cx->seg;
    }
}
#endif

mcu_status_t mcu_conv2d_s8_mve(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                               const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *scratch,
                               int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_conv2d_params_t *p = params;
    mcu_status_t status = mcu_conv_check_strided(p, quant, input, filter, output);
    if (status != MCU_OK || bias == NULL || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    if (!mcu_conv_shapes_ok(p)) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c_out = p->output.c, kh = p->filter.h, kw = p->filter.w, c_in = p->input.c, in_w = p->input.w;
    if (mcu_quant_check(quant, c_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    ctx_t cx = {p, kw * c_in, p->dilation_h * in_w * c_in, 0, NULL, 0, vdupq_n_s8((int8_t)(-p->input_offset)),
                NULL};
    cx.compact = (cx.seg & 15) != 0;
    cx.k16 = (kh * cx.seg + 15) & ~15;
    const int32_t nrows = cx.compact ? 1 : kh, win_bytes = cx.compact ? cx.k16 : kh * cx.seg;
    const mcu_mve_gemm_t g = mcu_mve_gemm_of(filter, bias, quant, c_out, nrows, cx.compact ? cx.k16 : cx.seg,
                                             p->output_offset, p->act_min, p->act_max,
                                             mcu_out_stride(p->output_pixel_stride, c_out));
    /* scratch: the row table (nrows x 3 pointers); compact: the offsets table (k16 bytes), 3 windows; rows: 3
     * windows, the zero-point row */
    const int8_t **rows = (const int8_t **)(void *)scratch;
    int8_t *win = scratch + 12 * nrows;
    if (!cx.compact) {
        int8_t *zp_row = win + 3 * win_bytes;
        fill16(zp_row, cx.zp, cx.seg);
        cx.zp_row = zp_row;
    }
    if (cx.compact) {
        uint8_t *offsets = (uint8_t *)win;
        win += cx.k16;
        const int32_t span = ((kh - 1) * p->dilation_h * in_w + (kw - 1) * p->dilation_w) * c_in + c_in;
        if (span <= 256) {
            int32_t t = 0;
            for (int32_t ky = 0; ky < kh; ++ky) {
                for (int32_t kx = 0; kx < kw; ++kx) {
                    for (int32_t ci = 0; ci < c_in; ++ci) {
                        offsets[t++] = (uint8_t)((ky * p->dilation_h * in_w + kx * p->dilation_w) * c_in + ci);
                    }
                }
            }
            for (; t < cx.k16; ++t) {
                offsets[t] = 0;
            }
            cx.offsets = offsets;
        }
    }
    const int32_t oh = p->output.h, ow = p->output.w, plane = p->input.h * in_w * c_in;
    const int32_t pixels = p->output.n * oh * ow, sx = p->stride_w * c_in;
    /* output columns [x_lo, x_hi) have windows inside the input horizontally (dilation_w 1 for rows in place) */
    int32_t x_lo = 0, x_hi = 0;
    while (x_lo < ow && x_lo * p->stride_w - p->pad_left < 0) {
        ++x_lo;
    }
    x_hi = x_lo;
    while (x_hi < ow && x_hi * p->stride_w - p->pad_left + (kw - 1) * p->dilation_w < in_w) {
        ++x_hi;
    }
    if (!cx.compact && p->dilation_w != 1) {
        x_hi = x_lo;
    }
    /* compact windows inside the input: gathered through the offsets, or (span > 256) row by row when rows are short */
    const int row_copy = cx.compact && cx.offsets == NULL && cx.seg <= 16 && p->dilation_w == 1;
    const int fast_compact = cx.compact && (cx.offsets != NULL || row_copy);
    const mve_pred16_t seg_p = vctp8q((uint32_t)cx.seg);
    int32_t n = 0, y = 0, x = 0, y_ok = 0;
    const int8_t *src = input; /* pixel (n, y, x)'s window's first tap, when inside */
    for (int32_t i = 0; i < pixels; i += 3) {
        const int32_t npix = pixels - i < 3 ? pixels - i : 3;
        for (int32_t j = 0; j < 3; ++j) {
            if (j < npix) {
                if (x == 0) {
                    const int32_t base_y = y * p->stride_h - p->pad_top;
                    y_ok = base_y >= 0 && base_y + (kh - 1) * p->dilation_h < p->input.h;
                    src = input + n * plane + (base_y * in_w - p->pad_left) * c_in;
                }
                int8_t *wj = win + j * win_bytes;
                if (y_ok && x >= x_lo && x < x_hi && (fast_compact || !cx.compact)) {
                    if (row_copy) {
                        copy_rows(src, cx.rs, kh, cx.seg, seg_p, wj);
                        rows[j] = wj;
                    } else if (cx.compact) {
                        for (int32_t t = 0; t < cx.k16; t += 16) {
                            vstrbq_s8(wj + t, vldrbq_gather_offset_s8(src, vldrbq_u8(cx.offsets + t)));
                        }
                        rows[j] = wj;
                    } else {
                        const int8_t *r_src = src;
                        for (int32_t r = 0; r < kh; ++r, r_src += cx.rs) {
                            rows[3 * r + j] = r_src;
                        }
                    }
                } else {
                    window(&cx, input + n * plane, y, x, wj, rows + j);
                }
                src += sx;
                if (++x == ow) {
                    x = 0;
                    if (++y == oh) {
                        y = 0;
                        ++n;
                    }
                }
            } else { /* past the end: pixel 0 again */
                for (int32_t r = 0; r < nrows; ++r) {
                    rows[3 * r + j] = rows[3 * r];
                }
            }
        }
        mcu_mve_gemm_block(rows, &g, npix, output + i * g.ostride);
    }
    return MCU_OK;
#else
    (void)params, (void)quant, (void)input, (void)filter, (void)bias, (void)scratch, (void)output;
    return MCU_ERR_ARG;
#endif
}
