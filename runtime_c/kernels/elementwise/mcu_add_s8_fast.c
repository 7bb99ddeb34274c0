/* Scalar int8 add: each input's rescale looked up in a 256-entry table built per call, the output rescale one SMLAL. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* Below this many elements the two 256-entry tables cost more than they save. */
#define TABLE_MIN_SIZE 128

/* a1 + a2, saturated to int32 when `sat` (only needed when the tables' ranges can overflow). */
MCU_INLINE int32_t add_sat(int32_t a1, int32_t a2, const int sat)
{
    if (!sat) {
        return (int32_t)((uint32_t)a1 + (uint32_t)a2);
    }
    return mcu_sat_i32((int64_t)a1 + a2);
}

/* A separate function keeps the per-element loop's values in registers. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void add_loop(const int32_t *t1, const int32_t *t2, const int8_t *input1, const int8_t *input2,
                     int32_t size, const int32_t *rec, const mcu_rq_mode_t *m, int8_t *output)
{
    /* element i is read before it is written: output may alias an input */
    if (m->fast) {
        const int32_t r[4] = {rec[0], rec[1], rec[2], rec[3]};
        for (const int8_t *end = input1 + size; input1 < end;) {
            *output++ = mcu_rq_out((int32_t)((uint32_t)t1[*input1++] + (uint32_t)t2[*input2++]), r, m, 1);
        }
    } else {
        for (int32_t i = 0; i < size; ++i) {
            output[i] = mcu_rq_out(add_sat(t1[input1[i]], t2[input2[i]], 0), rec, m, 0);
        }
    }
}

/* t[v] = requantize((v + offset) << left_shift, mult, shift) for v in [-128, 127]; t points at entry 0.
 * Returns the largest |t[v]| (as uint32). */
static uint32_t build_table(int32_t offset, int32_t left_shift, int32_t mult, int32_t shift, int32_t *t)
{
    uint32_t max_abs = 0;
    for (int32_t v = -128; v < 128; ++v) {
        t[v] = mcu_add_rescale(v, offset, left_shift, mult, shift);
        const uint32_t a = t[v] < 0 ? 0u - (uint32_t)t[v] : (uint32_t)t[v];
        max_abs = a > max_abs ? a : max_abs;
    }
    return max_abs;
}

mcu_status_t mcu_add_s8_fast(const mcu_add_params_t *params, const int8_t *input1, const int8_t *input2,
                             int8_t *output)
{
    const mcu_add_params_t *p = params;
    const mcu_status_t status = mcu_add_check(p, input1, input2, output);
    if (status != MCU_OK) {
        return status;
    }
    int32_t rec[4];
    mcu_rq_record(p->output_multiplier, p->output_shift, p->output_offset, rec);
    const mcu_rq_mode_t mode = mcu_rq_mode(rec, 1, p->output_offset, p->act_min, p->act_max);

    if (p->size < TABLE_MIN_SIZE) {
        for (int32_t i = 0; i < p->size; ++i) {
            const int32_t a1 = mcu_add_rescale(input1[i], p->input1_offset, p->left_shift, p->input1_multiplier,
                                               p->input1_shift);
            const int32_t a2 = mcu_add_rescale(input2[i], p->input2_offset, p->left_shift, p->input2_multiplier,
                                               p->input2_shift);
            output[i] = mcu_rq_out(add_sat(a1, a2, 1), rec, &mode, 0);
        }
        return MCU_OK;
    }
    int32_t tables[2][256];
    int32_t *t1 = tables[0] + 128, *t2 = tables[1] + 128;
    const uint32_t max1 = build_table(p->input1_offset, p->left_shift, p->input1_multiplier, p->input1_shift, t1);
    const uint32_t max2 = build_table(p->input2_offset, p->left_shift, p->input2_multiplier, p->input2_shift, t2);
    if (max1 > (uint32_t)INT32_MAX || max2 > (uint32_t)INT32_MAX || max1 + max2 > (uint32_t)INT32_MAX) {
        for (int32_t i = 0; i < p->size; ++i) { /* the sum can overflow: saturate it */
            output[i] = mcu_rq_out(add_sat(t1[input1[i]], t2[input2[i]], 1), rec, &mode, 0);
        }
    } else {
        add_loop(t1, t2, input1, input2, p->size, rec, &mode, output);
    }
    return MCU_OK;
}
