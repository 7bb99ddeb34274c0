/* DSP (SIMD32) int8 depthwise 3x3, int16 tap pairs in its stream: one channel at a time along an output row (SMLAD). */

/*  - Stream (packing.pack_dw_line_stream), 10 words a channel: per window row r the int16 pairs (w_r0, w_r1) and
 *    (w_r1, w_r2), the folded bias, the 3-word record (mcu_rq3_record).
 *  - Along an input row one channel's bytes pair up as P = (x[j], x[j + 1]) (two LDRSB, one PKHBT), each pair
 *    built once per window row. Stride 1, the window of output 0 starting at column j: with P0 (carried from
 *    the step before), P1 = (x[j+2], x[j+3]), P2 = (x[j+4], x[j+5]), four outputs in 8 MACs a window row:
 *      o0 = SMLAD(P0, W01) + SMLABT(P1, W12)    o1 = SMLATB(P0, W01) + SMLAD(P1, W12)
 *      o2 = SMLAD(P1, W01) + SMLABT(P2, W12)    o3 = SMLATB(P1, W01) + SMLAD(P2, W12)
 *    and P2 is the next step's P0: 79 instructions a step of 36 MACs (54 for the rows, 22 to requantize and
 *    store, 3 for the loop), plus about 50 a row and channel (its block, the first pairs, the last step).
 *  - Padding: a padded window row has its weights zeroed and zp * their sum added to the bias; a padded first
 *    column starts P0 = (zp, x[0]); the last step reads the zero point past the input's last column. Other
 *    geometries (stride_w > 1, dilation_w > 1, pad_left > 1) and clamps or shifts outside fast mode in C.
 *  - Output rows in order, in place through the ring of mcu_dw_rows_t, as the other 3x3 variants.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

#define WORDS 10 /* stream words a channel */

/* Weight (ky, kx) of a channel's stream block. */
static int32_t weight(const int32_t *blk, int32_t ky, int32_t kx)
{
    int16_t w;
    memcpy(&w, (const int8_t *)(const void *)blk + 8 * ky + (kx == 2 ? 6 : 2 * kx), sizeof w);
    return w;
}

/* Output pixel x of a row, every channel, in C: row[ky] the window row's input (NULL: padding). */
static void pixel_c(const mcu_conv2d_params_t *p, const int8_t *const row[3], int32_t x, const int8_t *pad,
                    const int32_t *w, const mcu_rq_mode_t *mode, int8_t *out)
{
    const int32_t c = p->input.c;
    const int8_t *tap[9];
    for (int32_t kx = 0; kx < 3; ++kx) {
        const int32_t ix = x * p->stride_w - p->pad_left + kx * p->dilation_w;
        for (int32_t ky = 0; ky < 3; ++ky) {
            tap[ky * 3 + kx] = ix >= 0 && ix < p->input.w && row[ky] != NULL ? row[ky] + ix * c : pad;
        }
    }
    for (int32_t ch = 0; ch < c; ++ch, w += WORDS) {
        uint32_t acc = (uint32_t)w[6]; /* wraps like the folded bias */
        for (int32_t t = 0; t < 9; ++t) {
            acc += (uint32_t)(tap[t][ch] * weight(w, t / 3, t % 3));
        }
        out[x * c + ch] = mcu_rq3_out((int32_t)acc, w + 7, mode);
    }
}

#if MCU_DSP_ASM
/* The assembly's arguments (one output row, every channel; copied to its frame at 64). */
typedef struct {
    const int8_t *line[3]; /* window row r's input at column 0 of channel 0 (any row when padded) */
    int32_t c;             /* bytes between pixels, in and out */
    const int32_t *w;      /* channel 0's stream block */
    int8_t *out;           /* channel 0's output 0 */
    int32_t span;          /* output bytes of the steps (4 c a step) */
    int32_t channels;
    uint32_t zp2;      /* (zp, zp) as int16 */
    uint32_t pad_rows; /* bit r: window row r is padding */
    int32_t lead;      /* 1: output 0's first column is padding */
    int32_t tail;      /* outputs after the steps (0..4) */
    int32_t valid;     /* columns inside the input after the steps' (0..3; past them zp) */
} dw_line_t;

/* Frame: 0 bias x4, 16 the weight pairs, 40 record, 52 out, 56 out end, 64 the arguments (dw_line_t: 76 c,
 * 80 w, 84 out, 88 span, 92 channels, 96 zp2, 100 pad_rows, 104 lead, 108 tail, 112 valid). Registers in a
 * step: r0-r2 the window rows' next column, r3 c, r4 weights, r5 and lr pairs, r6-r8 the rows' carried pairs,
 * r9-r12 the 4 accumulators. */
#define LA(q, k) "ldrsb r5, [" q "]\n\t"       /* x[j + 2] */
#define LB(q, k) "ldrsb lr, [" q ", r3]\n\t"   /* x[j + 3] */
#define LC(q, k) "ldrsb " k ", [" q "]\n\t"    /* x[j + 4] */
#define ZA(q, k) "ldr r5, [sp, #96]\n\t"       /* ... or the zero point, past the input */
#define ZB(q, k) "ldr lr, [sp, #96]\n\t"
#define ZC(q, k) "ldr " k ", [sp, #96]\n\t"
/* One window row of a step: q the row's next column, k its carried pair, wo its weight pairs; the 4 columns
 * loaded by A, B, C, D (ZA..: the zero point). 18 instructions, 12 MACs. */
#define ROW(q, k, wo, wo4, A, B, C, D)                                                                     \
    A(q, k) B(q, k) "pkhbt r5, r5, lr, lsl #16\n\t"                                                        \
    "ldr r4, [sp, #" wo "]\n\t"                                                                            \
    "smlad r9, " k ", r4, r9\n\t"                                                                          \
    "smlatb r10, " k ", r4, r10\n\t"                                                                       \
    "smlad r11, r5, r4, r11\n\t"                                                                           \
    "smlatb r12, r5, r4, r12\n\t"                                                                          \
    "add " q ", " q ", r3, lsl #1\n\t" C(q, k) D(q, k) "pkhbt " k ", " k ", lr, lsl #16\n\t"               \
    "ldr r4, [sp, #" wo4 "]\n\t"                                                                           \
    "smlabt r9, r5, r4, r9\n\t"                                                                            \
    "smlad r10, r5, r4, r10\n\t"                                                                           \
    "smlabt r11, " k ", r4, r11\n\t"                                                                       \
    "smlad r12, " k ", r4, r12\n\t"                                                                        \
    "add " q ", " q ", r3, lsl #1\n\t"
/* The 4 outputs of a step: the biases, 3 window rows, the record (SMMLA, ASR, SSAT each). */
#define RQ(a) "smmla " a ", " a ", r4, lr\n\tasr " a ", " a ", r5\n\tssat " a ", #8, " a "\n\t"
#define STEP(A, B, C, D)                                                                                   \
    "ldmia sp, {r9-r12}\n\t" ROW("r0", "r6", "16", "20", A, B, C, D) ROW("r1", "r7", "24", "28", A, B, C, D) \
        ROW("r2", "r8", "32", "36", A, B, C, D) "ldrd r4, r5, [sp, #40]\n\t"                               \
        "ldr lr, [sp, #48]\n\t" RQ("r9") RQ("r10") RQ("r11") RQ("r12") "ldr r4, [sp, #52]\n\t"
/* A tail step with v valid columns: its first tail outputs (1..4) stored. */
#define TAIL(label, A, B, C, D)                                                                            \
    label ":\n\t" STEP(A, B, C, D) "ldr r5, [sp, #108]\n\t"                                                \
    "strb r9, [r4]\n\tcmp r5, #2\n\tblt 9f\n\tstrb r10, [r4, r3]\n\tcmp r5, #3\n\tblt 9f\n\t"               \
    "add r4, r4, r3, lsl #1\n\tstrb r11, [r4]\n\tcmp r5, #4\n\tblt 9f\n\tstrb r12, [r4, r3]\n\tb 9f\n"
/* A channel's block into the frame; a padded window row's weights (ra, rb) zeroed, zp * their sum added to
 * the bias (r6). */
#define PADROW(bit, ra, rb)                                                                                \
    "tst r10, #" bit "\n\tbeq 2f\n\t"                                                                      \
    "smlad r6, r11, " ra ", r6\n\tsmlabt r6, r11, " rb ", r6\n\tmovs " ra ", #0\n\tmovs " rb ", #0\n"      \
    "2:\n\t"
#define BLOCK                                                                                              \
    "ldr r12, [sp, #80]\n\tldmia r12!, {r0-r9}\n\tstr r12, [sp, #80]\n\t"                                  \
    "ldr r10, [sp, #100]\n\tcmp r10, #0\n\tbeq 4f\n\t"                                                     \
    "ldr r11, [sp, #96]\n\t" PADROW("1", "r0", "r1") PADROW("2", "r2", "r3") PADROW("4", "r4", "r5")       \
    "4:\n\t"                                                                                               \
    "add r12, sp, #16\n\tstmia r12, {r0-r5}\n\tadd r12, sp, #40\n\tstmia r12, {r7-r9}\n\t"                 \
    "mov r7, r6\n\tmov r8, r6\n\tmov r9, r6\n\tstmia sp, {r6-r9}\n\t"
/* The channel's outputs and window rows (the arguments advance a byte), its carried pairs from columns 0 and
 * 1, or (lead) zp and column 0. */
#define PRIME(q, k) "ldrsb r5, [" q "]\n\tldrsb lr, [" q ", r3]\n\tpkhbt " k ", r5, lr, lsl #16\n\tadd " q ", " q ", r3, lsl #1\n\t"
#define PRIMEL(q, k) "ldrsb lr, [" q "]\n\tpkhbt " k ", r9, lr, lsl #16\n\tadd " q ", " q ", r3\n\t"
#define START                                                                                              \
    "ldrd r0, r1, [sp, #84]\n\tadd r1, r0, r1\n\tstrd r0, r1, [sp, #52]\n\tadds r0, r0, #1\n\t"            \
    "str r0, [sp, #84]\n\tadd r12, sp, #64\n\tldmia r12, {r0-r3}\n\t"                                      \
    "adds r4, r0, #1\n\tadds r5, r1, #1\n\tadds r6, r2, #1\n\tstmia r12, {r4-r6}\n\t"                       \
    "ldr r9, [sp, #96]\n\tldr r4, [sp, #104]\n\tcmp r4, #0\n\tbne 5f\n\t" PRIME("r0", "r6")                 \
        PRIME("r1", "r7") PRIME("r2", "r8") "b 6f\n"                                                       \
    "5:\n\t" PRIMEL("r0", "r6") PRIMEL("r1", "r7") PRIMEL("r2", "r8") "6:\n\t"

/* Every channel of one output row at stride 1: steps of 4 outputs, then a tail step (the zero point past the
 * input's last column). */
static __attribute__((naked, noinline)) void line_asm(const dw_line_t *a)
{
    (void)a;
    __asm__ volatile("push {r4-r11, lr}\n\t"
                     "sub sp, sp, #124\n\t"
                     "ldmia r0!, {r1-r7}\n\t"
                     "add r12, sp, #64\n\t"
                     "stmia r12!, {r1-r7}\n\t"
                     "ldmia r0, {r1-r6}\n\t"
                     "stmia r12, {r1-r6}\n"
                     "1:\n\t" BLOCK START
                     "ldrd r4, r5, [sp, #52]\n\t"
                     "cmp r4, r5\n\t"
                     "beq 8f\n"
                     "3:\n\t" STEP(LA, LB, LC, LB)
                     "strb r9, [r4]\n\t"
                     "strb r10, [r4, r3]\n\t"
                     "add r4, r4, r3, lsl #1\n\t"
                     "strb r11, [r4]\n\t"
                     "strb r12, [r4, r3]\n\t"
                     "add r4, r4, r3, lsl #1\n\t"
                     "str r4, [sp, #52]\n\t"
                     "ldr r5, [sp, #56]\n\t"
                     "cmp r4, r5\n\t"
                     "bne 3b\n"
                     "8:\n\t" /* the tail step by its valid columns */
                     "ldrd r4, r5, [sp, #108]\n\t"
                     "cmp r4, #0\n\t"
                     "beq 9f\n\t"
                     "cmp r5, #2\n\t"
                     "bgt 23f\n\t"
                     "beq 22f\n\t"
                     "cmp r5, #1\n\t"
                     "beq 21f\n" TAIL("20", ZA, ZB, ZC, ZB) TAIL("21", LA, ZB, ZC, ZB) TAIL("22", LA, LB, ZC, ZB)
                         TAIL("23", LA, LB, LC, ZB)
                     "9:\n\t"
                     "ldr r4, [sp, #92]\n\t"
                     "subs r4, r4, #1\n\t"
                     "str r4, [sp, #92]\n\t"
                     "bne 1b\n\t"
                     "add sp, sp, #124\n\t"
                     "pop {r4-r11, pc}\n\t");
}
#undef LA
#undef LB
#undef LC
#undef ZA
#undef ZB
#undef ZC
#undef ROW
#undef RQ
#undef STEP
#undef TAIL
#undef PADROW
#undef BLOCK
#undef PRIME
#undef PRIMEL
#undef START
#endif

/* Whether the assembly takes every row (fast mode, stride_w 1, dilation_w 1, pad_left <= 1, at most 4 outputs
 * after the steps): its steps' output bytes (span), tail outputs and columns inside the input after the steps. */
static int line_plan(const mcu_conv2d_params_t *p, const mcu_rq_mode_t *mode, int32_t *span, int32_t *tail,
                     int32_t *valid)
{
    const int32_t in_w = p->input.w, out_w = p->output.w, x0 = -p->pad_left;
    if (!MCU_DSP_ASM || !mode->fast || p->dilation_w != 1 || p->stride_w != 1 || p->pad_left > 1 ||
        in_w < 2 + x0 || out_w < 1) {
        return 0;
    }
    int32_t steps = (in_w - 2 - x0) / 4; /* the last step's last column x0 + 4 steps + 1 inside */
    steps = steps < out_w / 4 ? steps : out_w / 4;
    *span = steps * 4 * p->input.c;
    *tail = out_w - steps * 4;
    *valid = in_w - (x0 + 4 * steps + 2);
    *valid = *valid < 0 ? 0 : *valid;
    return *tail <= 4 && *valid <= 3;
}

mcu_status_t mcu_dwconv2d_3x3_s8_dsp_line(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                          const int8_t *input, const int8_t *filter, const int32_t *bias,
                                          int8_t *scratch, int8_t *output)
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
    const int32_t c = p->input.c, in_h = p->input.h, in_w = p->input.w;
    const int32_t *w = (const int32_t *)(const void *)filter;
    mcu_rq_mode_t mode = {p->act_min, p->act_max, p->output_offset, 1, 0};
    for (int32_t ch = 0; ch < c; ++ch) {
        if (mcu_rq3_check(w + ch * WORDS + 7, 1) != MCU_OK) {
            return MCU_ERR_ARG;
        }
        mode.records_fast = mode.records_fast && w[ch * WORDS + 8] >= 0;
    }
    mode.fast = mode.records_fast && p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX;
    int8_t *pad = scratch; /* C bytes: a padded tap reads the zero point, the bias is folded */
    mcu_fill_s8(pad, (int8_t)(-p->input_offset), c);
    mcu_dw_rows_t rows = mcu_dw_rows_open(p, input, output, scratch + c); /* in place: a ring of rows */
    int32_t span = 0, tail = 0, valid = 0;
    const int asm_rows = line_plan(p, &mode, &span, &tail, &valid);
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, mcu_dw_rows_next(&rows)) {
            int8_t *out = mcu_dw_rows_out(&rows);
            const int8_t *row[3];
            const int8_t *any = in_n;
            for (int32_t ky = 0; ky < 3; ++ky) {
                const int32_t iy = y * p->stride_h - p->pad_top + ky * p->dilation_h;
                row[ky] = iy >= 0 && iy < in_h ? in_n + iy * in_w * c : NULL;
                any = row[ky] != NULL ? row[ky] : any;
            }
#if MCU_DSP_ASM
            const uint16_t zp = (uint16_t)(int16_t)(-p->input_offset);
            if (asm_rows) {
                dw_line_t a = {{row[0] ? row[0] : any, row[1] ? row[1] : any, row[2] ? row[2] : any},
                               c, w, out, span, c, (uint32_t)zp * 0x10001u,
                               (row[0] ? 0u : 1u) | (row[1] ? 0u : 2u) | (row[2] ? 0u : 4u), p->pad_left, tail,
                               valid};
                line_asm(&a);
            }
#else
            (void)any;
            (void)span;
            (void)tail;
            (void)valid;
#endif
            for (int32_t x = asm_rows ? p->output.w : 0; x < p->output.w; ++x) {
                pixel_c(p, row, x, pad, w, &mode, out);
            }
        }
    }
    mcu_dw_rows_close(&rows);
    return MCU_OK;
}
