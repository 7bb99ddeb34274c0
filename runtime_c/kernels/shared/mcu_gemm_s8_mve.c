/* The Helium GEMM core of the _mve convs and fully connected kernel (mcu_mve.h): a block of pixels, one row. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_mve.h"

#if MCU_HAVE_MVE
void mcu_mve_gemm_block(const int8_t *const *rows, const mcu_mve_gemm_t *g, int32_t npix, int8_t *out)
{
    if (g->down) {
        mcu_mve_block_body(rows, g, npix, out, 1);
    } else {
        mcu_mve_block_body(rows, g, npix, out, 0);
    }
}

void mcu_mve_gemv(const int8_t *x, const mcu_mve_gemm_t *g, int8_t *out)
{
    const int32_t c_out = g->c_out, zo = g->zo, done = g->chunks * 16;
    const int32x4_t vmin = vdupq_n_s32(g->act_min), vmax = vdupq_n_s32(g->act_max);
    const mve_pred16_t tail_p = (mve_pred16_t)g->tail;
    const int32_t pair_bytes = 32 * (g->chunks + (g->tail != 0));
    const int8_t *w = g->w;
    for (int32_t c = 0; c < c_out; c += 4) {
        const int8_t *w2 = w + pair_bytes;
        int32_t a0 = g->bias[c], a1 = g->bias[c + 1], a2 = g->bias[c + 2], a3 = g->bias[c + 3];
        const int8_t *xp = x;
        for (int32_t i = g->chunks; i > 0; --i, xp += 16, w += 32, w2 += 32) {
            const int8x16_t v = vldrbq_s8(xp);
            a0 = vmladavaq_s8(a0, v, vldrbq_s8(w));
            a1 = vmladavaq_s8(a1, v, vldrbq_s8(w + 16));
            a2 = vmladavaq_s8(a2, v, vldrbq_s8(w2));
            a3 = vmladavaq_s8(a3, v, vldrbq_s8(w2 + 16));
        }
        if (g->tail) {
            const int8x16_t v = vldrbq_z_s8(x + done, tail_p);
            a0 = vmladavaq_s8(a0, v, vldrbq_s8(w));
            a1 = vmladavaq_s8(a1, v, vldrbq_s8(w + 16));
            a2 = vmladavaq_s8(a2, v, vldrbq_s8(w2));
            a3 = vmladavaq_s8(a3, v, vldrbq_s8(w2 + 16));
            w += 32;
        }
        w += pair_bytes; /* past the second pair */
        int32x4_t acc = vdupq_n_s32(a0);
        acc = vsetq_lane_s32(a1, acc, 1);
        acc = vsetq_lane_s32(a2, acc, 2);
        acc = vsetq_lane_s32(a3, acc, 3);
        const int32x4_t m = vldrwq_s32(g->mult + c), sh = vldrwq_s32(g->shift + c);
        const int32x4_t y = g->down ? vrshlq_s32(vqdmulhq_s32(acc, m), sh) : mcu_mve_requantize(acc, m, sh);
        vstrbq_p_s32(out + c, vminq_s32(vmaxq_s32(vaddq_n_s32(y, zo), vmin), vmax), vctp32q((uint32_t)(c_out - c)));
    }
}
#endif
