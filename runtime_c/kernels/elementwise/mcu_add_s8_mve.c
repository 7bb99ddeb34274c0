/* Helium (MVE) int8 add: each input's rescale gathered from a 256-entry table built per call, 4 lanes at a time. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#if MCU_HAVE_MVE
/* t[v] = requantize((v + offset) << left_shift, mult, shift) for v in [-128, 127]; t points at entry 0. */
static void build_table(int32_t offset, int32_t left_shift, int32_t mult, int32_t shift, int32_t *t)
{
    const int32x4_t vmult = vdupq_n_s32(mult), vshift = vdupq_n_s32(shift);
    for (int32_t v = -128; v < 128; v += 4) {
        int32x4_t x = vaddq_n_s32(vreinterpretq_s32_u32(vidupq_n_u32((uint32_t)v, 1)), offset);
        vstrwq_s32(t + v, mcu_mve_requantize(vshlq_r_s32(x, left_shift), vmult, vshift));
    }
}

/* Whole groups of 4 lanes, then a predicated tail. Lanes are read before they are written: output may alias an
 * input. A sign-extended int8 used as a gather offset wraps the address back below t, which is where the
 * negative entries are. down (output_shift < 0): the requantization is VQDMULH then VRSHL only. */
MCU_INLINE void add_run(const mcu_add_params_t *p, const int32_t *t1, const int32_t *t2, const int8_t *input1,
                        const int8_t *input2, int8_t *output, int down)
{
    const int32x4_t mult = vdupq_n_s32(p->output_multiplier), shift = vdupq_n_s32(p->output_shift);
    const int32x4_t vmin = vdupq_n_s32(p->act_min), vmax = vdupq_n_s32(p->act_max);
    const int32_t zo = p->output_offset, size = p->size;
    const int8_t *a = input1, *b = input2;
    int8_t *o = output;
    int32_t n = size >> 2;
    if (down && n > 0) {
        mcu_mve_add_tables_down(&a, &b, &o, n, t1, t2, mult, shift, vmin, vmax, zo);
        n = 0;
    }
    for (; n > 0; --n, a += 4, b += 4, o += 4) {
        const uint32x4_t x1 = vreinterpretq_u32_s32(vldrbq_s32(a));
        const uint32x4_t x2 = vreinterpretq_u32_s32(vldrbq_s32(b));
        const int32x4_t sum =
            vqaddq_s32(vldrwq_gather_shifted_offset_s32(t1, x1), vldrwq_gather_shifted_offset_s32(t2, x2));
        const int32x4_t y = down ? vrshlq_s32(vqdmulhq_s32(sum, mult), shift) : mcu_mve_requantize(sum, mult, shift);
        vstrbq_s32(o, vminq_s32(vmaxq_s32(vaddq_n_s32(y, zo), vmin), vmax));
    }
    const int32_t i = size & ~3;
    if (i < size) { /* the tail: inactive lanes read 0, which indexes the table inside */
        const mve_pred16_t pred = vctp32q((uint32_t)(size - i));
        const uint32x4_t x1 = vreinterpretq_u32_s32(vldrbq_z_s32(input1 + i, pred));
        const uint32x4_t x2 = vreinterpretq_u32_s32(vldrbq_z_s32(input2 + i, pred));
        const int32x4_t sum =
            vqaddq_s32(vldrwq_gather_shifted_offset_s32(t1, x1), vldrwq_gather_shifted_offset_s32(t2, x2));
        const int32x4_t y = down ? vrshlq_s32(vqdmulhq_s32(sum, mult), shift) : mcu_mve_requantize(sum, mult, shift);
        vstrbq_p_s32(output + i, vminq_s32(vmaxq_s32(vaddq_n_s32(y, zo), vmin), vmax), pred);
    }
}
#endif

mcu_status_t mcu_add_s8_mve(const mcu_add_params_t *params, const int8_t *input1, const int8_t *input2,
                            int8_t *output)
{
#if MCU_HAVE_MVE
    const mcu_add_params_t *p = params;
    const mcu_status_t status = mcu_add_check(p, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    int32_t tables[2][256];
    int32_t *t1 = tables[0] + 128, *t2 = tables[1] + 128;
    build_table(p->input1_offset, p->left_shift, p->input1_multiplier, p->input1_shift, t1);
    build_table(p->input2_offset, p->left_shift, p->input2_multiplier, p->input2_shift, t2);
    if (p->output_shift < 0) {
        add_run(p, t1, t2, input1, input2, output, 1);
    } else {
        add_run(p, t1, t2, input1, input2, output, 0);
    }
    return MCU_OK;
#else
    (void)params, (void)input1, (void)input2, (void)output;
    return MCU_ERR_ARG;
#endif
}
