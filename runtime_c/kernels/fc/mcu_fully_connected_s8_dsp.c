/* DSP (SIMD32) int8 fully connected layer: int8 weights widened in the loop, SMLAD on int16 pairs. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/*  - Bias folded (packing.folded_bias): bias + input_offset * sum(w), so the raw int8 inputs multiply.
 *  - Input: read in place, each group of 4 taps as one word and widened in the loop: SXTB16 gives (x0, x2),
 *    SXTB16 ROR 8 gives (x1, x3). A tail group (K % 4 taps) is read once per row into a zero-padded word.
 *  - Weights (packing.pack_groups_s8, 4 channels, 4 taps): per 4 channels, per group, each channel's 4 taps as
 *    one int8 word in natural order (zero taps past K), widened the same way, so the lanes pair up without
 *    reordering (mcu_widen8).
 *  - 4 channels x 4 taps take 21 instructions (LDR, two SXTB16 for the input; two LDM, eight SXTB16, eight
 *    SMLAD), against 11 with int16 weights and a widened input row: no scratch, and weight flash is the int8
 *    parameters; each weight is used once (GEMV), so nothing is saved by widening it ahead. */

/* What the row's assembly reads besides x and w, at fixed offsets. */
typedef struct {
    const int32_t *bias;  /* 0: the quad's 4 biases (advances) */
    const int32_t *rec;   /* 4: its 4 records (advances) */
    int8_t *out;          /* 8: its 4 outputs (advances) */
    const int8_t *x;      /* 12: the input row */
    int32_t groups;       /* 16: whole groups of 4 taps in the row */
    int32_t quads;        /* 20: quads left (counts down) */
    const uint32_t *tail; /* 24: the tail group's word, or NULL when K % 4 == 0 */
} fc8_quad_t;

#if MCU_DSP_ASM
/* Accumulators r8-r11 (channel 0..3), x widened in r12/lr, weight words r4/r5, widened r6/r7. */
#define FC8_CH(acc, wr)                                                                                    \
    "sxtb16 r6, " wr "\n\t"                                                                                \
    "sxtb16 r7, " wr ", ror #8\n\t"                                                                        \
    "smlad " acc ", r12, r6, " acc "\n\t"                                                                  \
    "smlad " acc ", lr, r7, " acc "\n\t"
#define FC8_GROUP                                                                                          \
    "ldr r12, [%[x]], #4\n\t"                                                                              \
    "sxtb16 lr, r12, ror #8\n\t"                                                                           \
    "sxtb16 r12, r12\n\t"                                                                                  \
    "ldmia %[w]!, {r4, r5}\n\t" FC8_CH("r8", "r4") FC8_CH("r9", "r5")                                      \
    "ldmia %[w]!, {r4, r5}\n\t" FC8_CH("r10", "r4") FC8_CH("r11", "r5")
/* %[n] groups: n & 1 and n & 2 first (shifted out into the carry), then 4 at a time. */
#define FC8_GROUPS                                                                                         \
    "lsrs %[n], %[n], #1\n\t"                                                                              \
    "bcc 2f\n\t" FC8_GROUP "2:\n\t"                                                                        \
    "lsrs %[n], %[n], #1\n\t"                                                                              \
    "bcc 5f\n\t" FC8_GROUP FC8_GROUP "5:\n\t"                                                              \
    "cmp %[n], #0\n\t"                                                                                     \
    "beq 3f\n"                                                                                             \
    "1:\n\t" FC8_GROUP FC8_GROUP FC8_GROUP FC8_GROUP "subs %[n], %[n], #1\n\t"                             \
    "bne 1b\n"                                                                                             \
    "3:\n\t"
/* out = ssat8((rh + hi32(acc * mult)) >> sh) with record {mult r4, sh r5, rh r6} (mcu_rq3_record). */
#define FC8_RQ(acc)                                                                                        \
    "ldmia r12!, {r4, r5, r6}\n\t"                                                                         \
    "smmla r6, " acc ", r4, r6\n\t"                                                                        \
    "asr r6, r6, r5\n\t"                                                                                   \
    "ssat r6, #8, r6\n\t"                                                                                  \
    "strb r6, [lr], #1\n\t"
/* Every whole quad of the row (fc8_quad_t at %[q]): dot from the biases, then requantize the 4 outputs. */
#define FC8_ROW_RQ                                                                                         \
    "4:\n\t"                                                                                               \
    "ldr %[x], [%[q], #12]\n\t"                                                                            \
    "ldr %[n], [%[q], #16]\n\t"                                                                            \
    "ldr r12, [%[q]]\n\t"                                                                                  \
    "ldm r12!, {r8, r9, r10, r11}\n\t"                                                                     \
    "str r12, [%[q]]\n\t" FC8_GROUPS                                                                       \
    "ldr %[x], [%[q], #24]\n\t"                                                                            \
    "cmp %[x], #0\n\t"                                                                                     \
    "beq 6f\n\t" FC8_GROUP "6:\n\t"                                                                        \
    "ldr r12, [%[q], #4]\n\t"                                                                              \
    "ldr lr, [%[q], #8]\n\t" FC8_RQ("r8") FC8_RQ("r9") FC8_RQ("r10")                                       \
        FC8_RQ("r11") "str r12, [%[q], #4]\n\t"                                                            \
    "str lr, [%[q], #8]\n\t"                                                                               \
    "ldr r12, [%[q], #20]\n\t"                                                                             \
    "subs r12, r12, #1\n\t"                                                                                \
    "str r12, [%[q], #20]\n\t"                                                                             \
    "bne 4b\n\t"
#define FC8_CLOBBERS "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory"
#endif

/* acc[j] = bias[j] + dot(x, w_j), j = 0..3, over the whole groups and the tail word (or none); returns w past
 * the quad. */
static const int8_t *fc8_dot_1x4(const int8_t *x, const int8_t *w, int32_t groups, const uint32_t *tail,
                                 const int32_t *bias, int32_t acc[4])
{
    int32_t a[4] = {bias[0], bias[1], bias[2], bias[3]};
    const int32_t n = groups + (tail != NULL);
    for (int32_t g = 0; g < n; ++g, x += 4) {
        uint32_t xw[2];
        mcu_widen8(g < groups ? mcu_read_u32(x) : *tail, xw);
        for (int32_t j = 0; j < 4; ++j, w += 4) {
            uint32_t ww[2];
            mcu_widen8(mcu_read_u32(w), ww);
            a[j] = mcu_smlad(xw[0], ww[0], a[j]);
            a[j] = mcu_smlad(xw[1], ww[1], a[j]);
        }
    }
    for (int32_t j = 0; j < 4; ++j) {
        acc[j] = a[j];
    }
    return w;
}

static void fc8_row(const int8_t *x, int32_t k, const int8_t *w, const int32_t *bias, const int32_t *rec,
                    int32_t c_out, const mcu_rq_mode_t *m, int8_t *out)
{
    const int32_t groups = k / 4;
    const uint32_t tail_word = k % 4 ? mcu_read_tail(x + 4 * groups, k % 4) : 0u;
    const uint32_t *tail = k % 4 ? &tail_word : NULL;
    int32_t c = 0;
#if MCU_DSP_ASM
    if (m->fast && c_out >= 4) {
        fc8_quad_t q = {bias, rec, out, x, groups, c_out / 4, tail};
        const int8_t *xp = x;
        int32_t n = groups;
        __asm__ volatile(FC8_ROW_RQ
                         : [x] "+r"(xp), [w] "+r"(w), [n] "+l"(n)
                         : [q] "r"(&q)
                         : FC8_CLOBBERS);
        c = c_out & ~3;
        bias += c;
        rec += 3 * c;
    }
#endif
    for (; c < c_out; c += 4, bias += 4, rec += 12) {
        int32_t acc[4];
        w = fc8_dot_1x4(x, w, groups, tail, bias, acc);
        const int32_t n = c_out - c < 4 ? c_out - c : 4;
        for (int32_t j = 0; j < n; ++j) {
            out[c + j] = mcu_rq3_out(acc[j], rec + 3 * j, m);
        }
    }
}

mcu_status_t mcu_fully_connected_s8_dsp(const mcu_fc_params_t *params, const mcu_per_channel_quant_t *quant,
                                        const int8_t *input, const int8_t *weights, const int32_t *bias,
                                        int8_t *output)
{
    const mcu_fc_params_t *p = params;
    mcu_status_t status = mcu_fc_check(p, quant, input, weights, output);
    if (status != MCU_OK || bias == NULL) {
        return status != MCU_OK ? status : MCU_ERR_ARG;
    }
    const int32_t k = p->in_features, n_out = p->out_features;
    if (mcu_rq3_check(quant->multiplier, n_out) != MCU_OK) {
        return MCU_ERR_ARG;
    }
    const mcu_rq_mode_t mode = mcu_rq3_mode(quant->multiplier, n_out, p->output_offset, p->act_min, p->act_max);
    for (int32_t b = 0; b < p->batches; ++b) {
        fc8_row(input + b * k, k, weights, bias, quant->multiplier, n_out, &mode, output + b * n_out);
    }
    return MCU_OK;
}
