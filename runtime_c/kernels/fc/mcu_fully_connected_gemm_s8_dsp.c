/* DSP (SIMD32) int8 fully connected layer over several rows: row pairs widened to int16, a 2x2-blocked SMLAD GEMM. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* A linear over T rows of K is a 1x1 conv over T pixels: the same 2x2 GEMM core as mcu_conv2d_1x1_s8_dsp
 * (shared/mcu_gemm2_s8_dsp.c), which widens each pair of rows once and reads every weight once per pair,
 * against once per row in mcu_fully_connected_s8_dsp. The filter is the core's stream (bias folded in). With
 * int8 weights, in fast mode and on whole channel pairs, rows go three at a time through the 3x2 core over the
 * same stream (shared/mcu_gemm3_s8_dsp.c: each widened weight serves 3 rows); the rest in pairs. */
mcu_status_t mcu_fully_connected_gemm_s8_dsp(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                             const int8_t *input, const int8_t *weights, const int32_t *bias,
                                             int8_t *scratch, int8_t *output)
{
    const mcu_fc_params_t *p = params;
    (void)bias; /* folded into the filter stream */
    mcu_status_t status = mcu_fc_check(p, quant, input, weights, output);
    if (status != MCU_OK || scratch == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t k = p->in_features, n = p->out_features, rows = p->batches;
    /* scratch (mcu_fully_connected_gemm_s8_dsp_scratch_bytes): the entry, 3 rows widened, the state's address */
    mcu_rq_mode_t mode;
    mcu_dsp_g2_t g;
    if (mcu_dsp_g2_open(&g, weights, (uint32_t *)(void *)scratch + 1, (k + 3) / 4, n, p->output_offset, p->act_min,
                        p->act_max, &mode) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    int32_t r = 0;
#if MCU_DSP_ASM
    if (mode.fast && g.step_bytes == 8 && n % 2 == 0) { /* rows in threes, the last 2 or 4 (two pairs) in pairs */
        const int32_t threes = rows % 3 == 1 ? rows - 4 : rows - rows % 3;
        for (; r + 3 <= threes; r += 3) {
            const int8_t *a = input + r * k;
            mcu_dsp_expand3(a, a + k, a + 2 * k, k, g.x);
            mcu_dsp_g3_run(&g, output + r * n, n);
        }
    }
#endif
    for (; r + 1 < rows; r += 2) {
        const int8_t *a = input + r * k;
        mcu_dsp_expand2(a, a + k, k, g.x);
        mcu_dsp_g2_run(&g, output + r * n, n, n, &mode);
    }
    if (r < rows) { /* the last row alone: paired with itself, its second outputs not written */
        mcu_dsp_expand2(input + r * k, input + r * k, k, g.x);
        mcu_dsp_g2_run(&g, output + r * n, 0, n, &mode);
    }
    return MCU_OK;
}
