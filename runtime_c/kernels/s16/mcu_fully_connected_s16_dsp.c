/* DSP int16-activation fully connected layer: one row x 4 output features of SMLAD on int16 weights. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt_s16.h"

/* dst[0..k4) = row[0..k), then zeros; dst word-aligned, row any. */
static void load_row(int16_t *dst, const int16_t *row, int32_t k, int32_t k4)
{
    int32_t i = 0;
    uint32_t *d = (uint32_t *)(void *)dst;
    for (; i + 2 <= k; i += 2) {
        uint32_t v = mcu_read_u32(row + i);
        MCU_OPAQUE(v);
        *d++ = v;
    }
    for (; i < k4; ++i) {
        int32_t v = i < k ? row[i] : 0;
        MCU_OPAQUE(v);
        dst[i] = (int16_t)v;
    }
}

mcu_status_t mcu_fully_connected_s16_dsp(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                         const int16_t *input, const int8_t *weights, const int64_t *bias,
                                         int8_t *scratch, int16_t *output)
{
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || input == NULL ||
        weights == NULL || scratch == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_fc_params_t *p = params;
    if (p->batches < 1 || p->in_features < 1 || p->out_features < 1 ||
        !mcu_io16_ok(p->input_offset, p->output_offset, p->act_min, p->act_max) ||
        !mcu_quant_ok(quant, p->out_features)) {
        return MCU_ERR_ARG;
    }
    const int32_t k = p->in_features, k4 = (k + 3) & ~3, n_out = p->out_features;
    const int32_t *mult = quant->multiplier, *shift = quant->shift;
    int16_t *row = (int16_t *)(void *)scratch;

    for (int32_t b = 0; b < p->batches; ++b) {
        load_row(row, input + b * k, k, k4);
        const uint32_t *w = (const uint32_t *)(const void *)weights;
        int16_t *out = output + b * n_out;
        for (int32_t o = 0; o < n_out; o += 4, w += 2 * k4) {
            int64_t acc[4] = {0, 0, 0, 0};
            mcu_s16_dot_1x4((const uint32_t *)(const void *)row, w, k4 / 4, acc);
            const int32_t n = n_out - o < 4 ? n_out - o : 4; /* the quad's channels past n are padding */
            for (int32_t j = 0; j < n; ++j) {
                const int64_t a = acc[j] + (bias != NULL ? bias[o + j] : 0);
                out[o + j] = mcu_s16_rq(a, mult[o + j], shift[o + j], p->act_min, p->act_max);
            }
        }
    }
    return MCU_OK;
}
