/* Helium (MVE) int8 matmul of two activations on the convs' GEMM core: the rhs packed at run time into its layout. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_mve.h"

/*  - sum_t (a_t + oa)(b_t + ob) = sum_t a_t b_t + [oa * sum_t b_t + k * oa * ob] + ob * sum_t a_t: the core
 *    (mcu_mve.h: 3 rows x 4 channels a quad, VMLADAVA over 16 taps) takes raw int8 on both sides, the bracket is
 *    each channel's bias and the last term is added per row before the requantization.
 *  - Each block of rows that reads one rhs batch (mcu_matmul_block) packs its rhs, mcu_matmul_gemm_s8_mve_channels
 *    columns at a time, into the core's weights in scratch: per pair of channels, per 16 taps, channel c's 16
 *    bytes then channel c + 1's, k padded with zero taps. A transposed rhs ([N, K], q @ k^T) copies each row
 *    with 16-byte loads and stores; a [K, N] one (attn @ v) loads 8 columns of a row widened and scatters them
 *    to their channels (VSTRB.16 with offsets).
 *  - Then 3 lhs rows at a time (the row table points at them where they lie: one window row of k taps, the
 *    tail predicated) run the core's quads over the block's channels.
 *  - The result equals mcu_matmul_s8's bit for bit (its twin is the portable one). */

#if MCU_HAVE_MVE
/* ob * the sum of each of 3 rows of k int8 values: whole 16-byte chunks, then a predicated tail. */
static void sums3(const int8_t *const rows[3], int32_t k, int32_t ob, int32_t out[3])
{
    const int8_t *a = rows[0], *b = rows[1], *c = rows[2];
    int32_t sa = 0, sb = 0, sc = 0, t = 0;
    for (; t + 16 <= k; t += 16) {
        sa = vaddvaq_s8(sa, vldrbq_s8(a + t));
        sb = vaddvaq_s8(sb, vldrbq_s8(b + t));
        sc = vaddvaq_s8(sc, vldrbq_s8(c + t));
    }
    if (t < k) {
        const mve_pred16_t p = vctp8q((uint32_t)(k - t));
        sa = vaddvaq_s8(sa, vldrbq_z_s8(a + t, p));
        sb = vaddvaq_s8(sb, vldrbq_z_s8(b + t, p));
        sc = vaddvaq_s8(sc, vldrbq_z_s8(c + t, p));
    }
    out[0] = ob * sa;
    out[1] = ob * sb;
    out[2] = ob * sc;
}

/* Channels [c0, c0 + cn) of the block's rhs as the core's weights w ([C4 / 2][chunks2][2][16]) and biases. */
static void pack(const mcu_matmul_params_t *p, const int8_t *rhs, int32_t c0, int32_t cn, int32_t chunks2,
                 int8_t *w, int32_t *bias)
{
    const int32_t k = p->k, n = p->n, c4 = (cn + 3) & ~3, pair_bytes = 32 * chunks2, total = c4 / 2 * pair_bytes;
    const int32_t oa = p->lhs_offset, kab = k * p->lhs_offset * p->rhs_offset;
    if (p->rhs_transposed) { /* channel c's row copied, summed on the way: whole chunks, then the tail */
        const int32_t whole = k >> 4;
        const mve_pred16_t tail = vctp8q((uint32_t)(k & 15));
        const int8_t *src = rhs + c0 * k;
        for (int32_t c = 0; c < cn; ++c, src += k) {
            int8_t *dst = w + (c >> 1) * pair_bytes + (c & 1) * 16;
            int32_t sum = 0;
            for (int32_t q = 0; q < whole; ++q, dst += 32) {
                const int8x16_t v = vldrbq_s8(src + 16 * q);
                vstrbq_s8(dst, v);
                sum = vaddvaq_s8(sum, v);
            }
            if (whole < chunks2) {
                const int8x16_t v = vldrbq_z_s8(src + 16 * whole, tail);
                vstrbq_s8(dst, v);
                sum = vaddvaq_s8(sum, v);
            }
            bias[c] = oa * sum + kab;
        }
        for (int32_t c = cn; c < c4; ++c) { /* zero channels up to the quad */
            int8_t *dst = w + (c >> 1) * pair_bytes + (c & 1) * 16;
            for (int32_t q = 0; q < chunks2; ++q) {
                vstrbq_s8(dst + 32 * q, vdupq_n_s8(0));
            }
            bias[c] = 0;
        }
        return;
    }
    for (int32_t i = 0; i < total; i += 16) { /* zero taps beyond k and channels beyond cn */
        vstrbq_s8(w + i, vdupq_n_s8(0));
    }
    /* channel c0 + c + l of tap t at w + (c / 2) * pair_bytes + offs[l] + (t / 16) * 32 + t % 16 */
    const uint16x8_t offs = vaddq_u16(vmulq_n_u16(vshrq_n_u16(vidupq_n_u16(0u, 1), 1), (uint16_t)pair_bytes),
                                      vmulq_n_u16(vandq_u16(vidupq_n_u16(0u, 1), vdupq_n_u16(1)), 16));
    for (int32_t t = 0; t < k; ++t) {
        const int8_t *row = rhs + t * n + c0;
        int8_t *dst = w + (t / 16) * 32 + t % 16;
        for (int32_t c = 0; c < cn; c += 8) {
            const mve_pred16_t pr = vctp16q((uint32_t)(cn - c));
            vstrbq_scatter_offset_p_s16(dst + (c / 2) * pair_bytes, offs, vldrbq_z_s16(row + c, pr), pr);
        }
    }
    for (int32_t c = 0; c < c4; ++c) { /* the sums of the packed channels: their zero taps add nothing */
        const int8_t *src = w + (c / 2) * pair_bytes + (c & 1) * 16;
        int32_t sum = 0;
        for (int32_t q = 0; q < chunks2; ++q) {
            sum = vaddvaq_s8(sum, vldrbq_s8(src + 32 * q));
        }
        bias[c] = oa * sum + kab;
    }
}

/* Requantize, offset and clamp one row's 4 accumulators plus its row term; store the first channels (p). */
MCU_INLINE void out4(const int32_t *acc, int32_t row, int32x4_t m, int32x4_t sh, int32_t zo, int32x4_t vmin,
                     int32x4_t vmax, int down, mve_pred16_t p, int8_t *out)
{
    const int32x4_t a = vaddq_n_s32(vldrwq_s32(acc), row);
    const int32x4_t y = down ? vrshlq_s32(vqdmulhq_s32(a, m), sh) : mcu_mve_requantize(a, m, sh);
    vstrbq_p_s32(out, vminq_s32(vmaxq_s32(vaddq_n_s32(y, zo), vmin), vmax), p);
}

/* The block's `rows` lhs rows (k apart from a), 3 at a time, over all of g's channels: per triple the row terms,
 * then the core's quads, each followed by the output stage (a whole triple's without a predicate or branch). */
MCU_INLINE void rows_body(const int8_t *a, int32_t rows, int32_t k, int32_t ob, const mcu_mve_gemm_t *g, int32_t n,
                          int8_t *out, int down)
{
    int32_t acc[12] __attribute__((aligned(8)));
    const int tail = g->tail != 0;
    const int32_t c_out = g->c_out, zo = g->zo;
    const int32x4_t m = vdupq_n_s32(g->mult[0]), sh = vdupq_n_s32(g->shift[0]);
    const int32x4_t vmin = vdupq_n_s32(g->act_min), vmax = vdupq_n_s32(g->act_max);
    for (int32_t i = 0; i < rows; i += 3, a += 3 * k, out += 3 * n) {
        const int32_t npix = rows - i < 3 ? rows - i : 3;
        const int8_t *table[3] = {a, npix > 1 ? a + k : a, npix > 2 ? a + 2 * k : a}; /* a missing row repeats */
        int32_t row[3];
        sums3(table, k, ob, row);
        mcu_mve_quad_t s = {table, 1, g->w, g->bias, g->chunks, acc, g->tail};
        const int32_t r0 = row[0], r1 = row[1], r2 = row[2];
        int8_t *o0 = out, *o1 = out + n, *o2 = out + 2 * n;
        int32_t c = 0;
        if (npix == 3) {
            for (; c + 4 <= c_out; c += 4, s.bias += 4, o0 += 4, o1 += 4, o2 += 4) {
                mcu_mve_quad(&s, tail);
                out4(acc, r0, m, sh, zo, vmin, vmax, down, 0xFFFF, o0);
                out4(acc + 4, r1, m, sh, zo, vmin, vmax, down, 0xFFFF, o1);
                out4(acc + 8, r2, m, sh, zo, vmin, vmax, down, 0xFFFF, o2);
            }
        }
        for (; c < c_out; c += 4, s.bias += 4, o0 += 4, o1 += 4, o2 += 4) {
            mcu_mve_quad(&s, tail);
            const mve_pred16_t p = vctp32q((uint32_t)(c_out - c));
            out4(acc, r0, m, sh, zo, vmin, vmax, down, p, o0);
            if (npix > 1) {
                out4(acc + 4, r1, m, sh, zo, vmin, vmax, down, p, o1);
                if (npix > 2) {
                    out4(acc + 8, r2, m, sh, zo, vmin, vmax, down, p, o2);
                }
            }
        }
    }
}

static void rows_all(const int8_t *a, int32_t rows, int32_t k, int32_t ob, const mcu_mve_gemm_t *g, int32_t n,
                     int8_t *out)
{
    if (g->down) {
        rows_body(a, rows, k, ob, g, n, out, 1);
    } else {
        rows_body(a, rows, k, ob, g, n, out, 0);
    }
}
#endif

mcu_status_t mcu_matmul_gemm_s8_mve(const mcu_matmul_params_t *params, const int8_t *lhs, const int8_t *rhs,
                                    int8_t *scratch, int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_status_t status = mcu_matmul_check(params, lhs, rhs, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const mcu_matmul_params_t *p = params;
    if (p->k > 4096) { /* the packing's 16-bit scatter offsets (codegen applies it to k <= 4096 only) */
        return MCU_ERR_SHAPE;
    }
    const int32_t k = p->k, n = p->n, blocks = mcu_matmul_blocks(p), nb = mcu_matmul_gemm_s8_mve_channels(p);
    const int32_t chunks2 = (k + 15) / 16, ob = p->rhs_offset;
    /* scratch (mcu_matmul_gemm_s8_mve_scratch_bytes): the biases, then the weights */
    int32_t *bias = (int32_t *)(void *)scratch;
    int8_t *w = scratch + 4 * ((nb + 3) & ~3);
    mcu_mve_gemm_t g = {w, bias, &p->output_multiplier, &p->output_shift, 0, 1, k >> 4,
                        (k & 15) ? (uint32_t)vctp8q((uint32_t)(k & 15)) : 0u, p->output_offset, p->act_min,
                        p->act_max, p->output_shift < 0, n};
    for (int32_t blk = 0; blk < blocks; ++blk) {
        const mcu_matmul_block_t b = mcu_matmul_block(p, blk, lhs, rhs, output);
        for (int32_t c0 = 0; c0 < n; c0 += nb) {
            g.c_out = n - c0 < nb ? n - c0 : nb;
            pack(p, b.rhs, c0, g.c_out, chunks2, w, bias);
            rows_all(b.lhs, b.rows, k, ob, &g, n, b.out + c0);
        }
    }
    return MCU_OK;
#else
    (void)params;
    (void)lhs;
    (void)rhs;
    (void)scratch;
    (void)output;
    return MCU_ERR_ARG;
#endif
}
