/* DSP (SIMD32) int8 depthwise 5x5 and 7x7, stride_w 1 or 2: int16 tap pairs, one channel at a time along a row (SMLAD). */

/*  - Stream (packing.pack_dwk_line_stream), per channel: per window row (k = 2m + 1 taps) the int16 pairs
 *    E_j = (w_2j, w_2j+1), j < m, then O_j = (w_2j-1, w_2j), j = 1..m; the folded bias; the 3-word record.
 *  - Along an input row one channel's bytes pair up as P_j = (x[2j], x[2j + 1]) from the window's first column.
 *    Two outputs a step, each window row, stride 1:
 *      o0 = sum_{j<m} SMLAD(P_j, E_j) + SMLABT(P_m, O_m)     o1 = SMLATB(P_0, E_0) + sum_{j=1..m} SMLAD(P_j, O_j)
 *    P_m is the one new pair (two LDRSB, PKHBT); P_1..P_m are the next step's P_0..P_m-1 (kept in the frame, one
 *    LDM and one STM a row): 15 instructions a row of 10 MACs (5x5), 18 of 14 (7x7), about 20 more a step.
 *    Stride 2: o1 is o0's sum over P_1..P_m+1, two new pairs a step: 20 a row of 10 MACs (5x5), 24 of 14 (7x7).
 *  - The channel's weights are copied to the frame; a padded window row's are zeroed there and zp * their sum
 *    added to the bias. 'same' (pad_left m) or 'valid' (0) columns: the first pairs hold the zero point where
 *    the window leaves the input on the left, the last steps past its last column.
 *  - Output rows in order (a row's channels one after another), so the output may slide under the input by a
 *    row's gap, as mcu_dwconv2d_s8_dsp. Other geometries, and clamps or shifts outside fast mode, in C.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"

/* Stream words of a channel: k window rows of 2m pair words, the bias, the record. */
#define CH_WORDS(k) ((k) * ((k) - 1) + 4)

/* Weight (ky, kx) of a channel's stream block (k = 2m + 1). */
static int32_t weight(const int32_t *blk, int32_t k, int32_t ky, int32_t kx)
{
    const int32_t m = k / 2;
    const int32_t word = ky * 2 * m + (kx == k - 1 ? 2 * m - 1 : kx / 2), half = kx == k - 1 ? 1 : kx % 2;
    int16_t w;
    memcpy(&w, (const int8_t *)(const void *)(blk + word) + 2 * half, sizeof w);
    return w;
}

/* Output row y of batch n, every channel, in C. */
static void row_c(const mcu_conv2d_params_t *p, const int8_t *in_n, int32_t y, const int32_t *w,
                  const mcu_rq_mode_t *mode, int8_t *out)
{
    const int32_t c = p->input.c, kh = p->filter.h, kw = p->filter.w, zp = -p->input_offset;
    for (int32_t x = 0; x < p->output.w; ++x, out += c) {
        const int32_t *blk = w;
        for (int32_t ch = 0; ch < c; ++ch, blk += CH_WORDS(kw)) {
            uint32_t acc = (uint32_t)blk[CH_WORDS(kw) - 4]; /* wraps like the folded bias */
            for (int32_t ky = 0; ky < kh; ++ky) {
                const int32_t iy = y * p->stride_h - p->pad_top + ky * p->dilation_h;
                for (int32_t kx = 0; kx < kw; ++kx) {
                    const int32_t ix = x * p->stride_w - p->pad_left + kx * p->dilation_w;
                    const int inside = iy >= 0 && iy < p->input.h && ix >= 0 && ix < p->input.w;
                    const int32_t v = inside ? in_n[(iy * p->input.w + ix) * c + ch] : zp;
                    acc += (uint32_t)(v * weight(blk, kw, ky, kx));
                }
            }
            out[ch] = mcu_rq3_out((int32_t)acc, blk + CH_WORDS(kw) - 3, mode);
        }
    }
}

#if MCU_DSP_ASM
/* The assembly's arguments (one output row, every channel; copied to the end of its frame). */
typedef struct {
    const int8_t *line[7]; /* window row r's input row (any row when padded) */
    int32_t c;             /* bytes between pixels, in and out */
    const int32_t *w;      /* channel 0's stream block */
    int8_t *out;           /* channel 0's output 0 */
    int32_t co0, co_end;   /* channel 0's column offsets: the first new pair, after the steps inside */
    int32_t channels;
    uint32_t zp2;      /* (zp, zp) as int16 */
    uint32_t pad_rows; /* bit r: window row r is padding */
    int32_t tail;      /* outputs after the steps inside */
    int32_t tail_a;    /* 1: the first step after them has its new pair's first column inside (stride 2: its
                        * new columns inside, 0..3) */
    int32_t same;      /* 1: pad_left m, 0: pad_left 0 */
    int32_t ch;        /* the channel (0) */
} line_args_t;

/* Registers in a step: r0 a window row, r1 c, r2 the column offset of the new pair, r3 the carried pairs, r4 the
 * weights, r5.. the pairs, r9 and r10 the accumulators, r11 the second byte of the new pair; then r8, r11, r12
 * the record (m, sh, rh). Generated text: the frame offsets of each window size. */
#define RQ(a) "smmla " a ", " a ", r8, r12\n\tasr " a ", " a ", r11\n\tssat " a ", #8, " a "\n\t"
/* 5x5: frame 0 the weights, 80 bias x2, 88 record, 100 out, 104 the column offset after the
 * steps, 108 tail outputs left, 112 the carried pairs (2 a row), 152 the arguments. */
#define L5_LD_full "ldrsb r7, [r0, r2]\n\t" "add r0, r0, r1\n\t" "ldrsb r11, [r0, r2]\n\t"
#define L5_LD_a "ldrsb r7, [r0, r2]\n\t" "ldr r11, [sp, #204]\n\t"
#define L5_LD_b "ldr r7, [sp, #204]\n\t" "ldr r11, [sp, #204]\n\t"
#define L5_ROW(line, LD) "ldr r0, [sp, #" line "]\n\t" "ldmia r3, {r5, r6}\n\t" LD "pkhbt r7, r7, r11, lsl #16\n\t"  \
    "ldmia r4!, {r8, r12}\n\t" "smlad r9, r5, r8, r9\n\t" "smlatb r10, r5, r8, r10\n\t" "smlad r9, r6, r12, r9\n\t"  \
    "ldmia r4!, {r8, r12}\n\t" "smlad r10, r6, r8, r10\n\t" "smlabt r9, r7, r12, r9\n\t"                             \
    "smlad r10, r7, r12, r10\n\t" "stmia r3!, {r6, r7}\n\t"
#define L5_STEP(LD) "ldrd r9, r10, [sp, #80]\n\t" "add r3, sp, #112\n\t" "mov r4, sp\n\t" L5_ROW("152", LD)          \
    L5_ROW("156", LD) L5_ROW("160", LD) L5_ROW("164", LD) L5_ROW("168", LD) "ldrd r8, r11, [sp, #88]\n\t"            \
    "ldr r12, [sp, #96]\n\t" RQ("r9") RQ("r10") "ldr r8, [sp, #100]\n\t"
#define L5_TSTORE "strb r9, [r8]\n\t" "ldr r11, [sp, #108]\n\t" "cmp r11, #2\n\t" "blt 13f\n\t"                      \
    "strb r10, [r8, r1]\n\t" "13:\n\t" "add r8, r8, r1, lsl #1\n\t" "str r8, [sp, #100]\n\t"                         \
    "add r2, r2, r1, lsl #1\n\t" "subs r11, r11, #2\n\t" "str r11, [sp, #108]\n\t"
#define L5_SETUP "ldr r12, [sp, #184]\n\t" "mov r11, sp\n\t" "ldmia r12!, {r0-r7}\n\t" "stmia r11!, {r0-r7}\n\t"     \
    "ldmia r12!, {r0-r7}\n\t" "stmia r11!, {r0-r7}\n\t" "ldmia r12!, {r0-r3}\n\t" "stmia r11!, {r0-r3}\n\t"          \
    "ldmia r12!, {r4, r6, r7, r8}\n\t" "str r12, [sp, #184]\n\t" "ldr r10, [sp, #208]\n\t" "cmp r10, #0\n\t"         \
    "beq 4f\n\t" "ldr r9, [sp, #204]\n\t" "mov r12, sp\n\t" "2:\n\t" "lsrs r10, r10, #1\n\t" "bcc 3f\n\t"            \
    "ldmia r12, {r0-r3}\n\t" "smlad r4, r9, r0, r4\n\t" "smlad r4, r9, r1, r4\n\t" "smlabt r4, r9, r3, r4\n\t"       \
    "movs r0, #0\n\t" "movs r1, #0\n\t" "movs r2, #0\n\t" "movs r3, #0\n\t" "stmia r12, {r0-r3}\n\t" "3:\n\t"        \
    "add r12, r12, #16\n\t" "cmp r10, #0\n\t" "bne 2b\n\t" "4:\n\t" "mov r5, r4\n\t" "stmia r11, {r4-r8}\n\t"        \
    "ldr r0, [sp, #188]\n\t" "str r0, [sp, #100]\n\t" "adds r0, r0, #1\n\t" "str r0, [sp, #188]\n\t"                 \
    "ldrd r2, r3, [sp, #192]\n\t" "str r3, [sp, #104]\n\t" "adds r0, r2, #1\n\t" "adds r3, r3, #1\n\t"               \
    "strd r0, r3, [sp, #192]\n\t" "ldr r1, [sp, #180]\n\t" "add r3, sp, #112\n\t" "ldr r9, [sp, #204]\n\t"           \
    "ldr r10, [sp, #224]\n\t" "adds r11, r10, #1\n\t" "str r11, [sp, #224]\n\t" "mov r5, r9\n\t"                     \
    "ldr r11, [sp, #220]\n\t" "cmp r11, #0\n\t" "beq 5f\n\t"
#define L5_PRIME "ldr r0, [sp, #152]\n\t" "add r0, r0, r10\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t"        \
    "pkhbt r6, r6, r7, lsl #16\n\t" "stmia r3!, {r5, r6}\n\t" "ldr r0, [sp, #156]\n\t" "add r0, r0, r10\n\t"         \
    "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t" "stmia r3!, {r5, r6}\n\t"          \
    "ldr r0, [sp, #160]\n\t" "add r0, r0, r10\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t"                     \
    "pkhbt r6, r6, r7, lsl #16\n\t" "stmia r3!, {r5, r6}\n\t" "ldr r0, [sp, #164]\n\t" "add r0, r0, r10\n\t"         \
    "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t" "stmia r3!, {r5, r6}\n\t"          \
    "ldr r0, [sp, #168]\n\t" "add r0, r0, r10\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t"                     \
    "pkhbt r6, r6, r7, lsl #16\n\t" "stmia r3!, {r5, r6}\n\t" "b 6f\n" "5:\n\t" "ldr r0, [sp, #152]\n\t"             \
    "add r0, r0, r10\n\t" "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t" "pkhbt r5, r5, r6, lsl #16\n\t"              \
    "add r0, r0, r1, lsl #1\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t"       \
    "stmia r3!, {r5, r6}\n\t" "ldr r0, [sp, #156]\n\t" "add r0, r0, r10\n\t" "ldrsb r5, [r0]\n\t"                    \
    "ldrsb r6, [r0, r1]\n\t" "pkhbt r5, r5, r6, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r6, [r0]\n\t"       \
    "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t" "stmia r3!, {r5, r6}\n\t" "ldr r0, [sp, #160]\n\t"      \
    "add r0, r0, r10\n\t" "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t" "pkhbt r5, r5, r6, lsl #16\n\t"              \
    "add r0, r0, r1, lsl #1\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t"       \
    "stmia r3!, {r5, r6}\n\t" "ldr r0, [sp, #164]\n\t" "add r0, r0, r10\n\t" "ldrsb r5, [r0]\n\t"                    \
    "ldrsb r6, [r0, r1]\n\t" "pkhbt r5, r5, r6, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r6, [r0]\n\t"       \
    "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t" "stmia r3!, {r5, r6}\n\t" "ldr r0, [sp, #168]\n\t"      \
    "add r0, r0, r10\n\t" "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t" "pkhbt r5, r5, r6, lsl #16\n\t"              \
    "add r0, r0, r1, lsl #1\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t"       \
    "stmia r3!, {r5, r6}\n\t" "6:\n\t"
#define L5_ENTER "push {r4-r11, lr}\n\t" "sub sp, sp, #228\n\t" "ldmia r0!, {r1-r7}\n\t" "add r12, sp, #152\n\t"     \
    "stmia r12!, {r1-r7}\n\t" "ldmia r0!, {r1-r6}\n\t" "stmia r12!, {r1-r6}\n\t" "ldmia r0, {r1-r6}\n\t"             \
    "stmia r12, {r1-r6}\n\t"
#define L5_LOOP "ldr r11, [sp, #104]\n\t" "cmp r2, r11\n\t" "beq 8f\n\t" "10:\n\t" L5_STEP(L5_LD_full)               \
    "strb r9, [r8]\n\t" "strb r10, [r8, r1]\n\t" "add r8, r8, r1, lsl #1\n\t" "str r8, [sp, #100]\n\t"               \
    "add r2, r2, r1, lsl #1\n\t" "ldr r11, [sp, #104]\n\t" "cmp r2, r11\n\t" "bne 10b\n\t" "8:\n\t"                  \
    "ldr r11, [sp, #212]\n\t" "cmp r11, #0\n\t" "beq 9f\n\t" "str r11, [sp, #108]\n\t" "ldr r11, [sp, #216]\n\t"     \
    "cmp r11, #0\n\t" "beq 12f\n\t" L5_STEP(L5_LD_a) L5_TSTORE "12:\n\t" "ldr r11, [sp, #108]\n\t" "cmp r11, #0\n\t" \
    "ble 9f\n\t" L5_STEP(L5_LD_b) L5_TSTORE "b 12b\n\t" "9:\n\t" "ldr r11, [sp, #200]\n\t" "subs r11, r11, #1\n\t"   \
    "str r11, [sp, #200]\n\t" "bne 1b\n\t" "add sp, sp, #228\n\t" "pop {r4-r11, pc}\n\t"
/* 7x7: frame 0 the weights, 168 bias x2, 176 record, 188 out, 192 the column offset after the
 * steps, 196 tail outputs left, 200 the carried pairs (3 a row), 284 the arguments. */
#define L7_LD_full "ldrsb r8, [r0, r2]\n\t" "add r0, r0, r1\n\t" "ldrsb r11, [r0, r2]\n\t"
#define L7_LD_a "ldrsb r8, [r0, r2]\n\t" "ldr r11, [sp, #336]\n\t"
#define L7_LD_b "ldr r8, [sp, #336]\n\t" "ldr r11, [sp, #336]\n\t"
#define L7_ROW(line, LD) "ldr r0, [sp, #" line "]\n\t" "ldmia r3, {r5, r6, r7}\n\t" LD                               \
    "pkhbt r8, r8, r11, lsl #16\n\t" "ldmia r4!, {r12, lr}\n\t" "smlad r9, r5, r12, r9\n\t"                          \
    "smlatb r10, r5, r12, r10\n\t" "smlad r9, r6, lr, r9\n\t" "ldmia r4!, {r12, lr}\n\t" "smlad r9, r7, r12, r9\n\t" \
    "smlad r10, r6, lr, r10\n\t" "ldmia r4!, {r12, lr}\n\t" "smlad r10, r7, r12, r10\n\t"                            \
    "smlabt r9, r8, lr, r9\n\t" "smlad r10, r8, lr, r10\n\t" "stmia r3!, {r6, r7, r8}\n\t"
#define L7_STEP(LD) "ldrd r9, r10, [sp, #168]\n\t" "add r3, sp, #200\n\t" "mov r4, sp\n\t" L7_ROW("284", LD)         \
    L7_ROW("288", LD) L7_ROW("292", LD) L7_ROW("296", LD) L7_ROW("300", LD) L7_ROW("304", LD) L7_ROW("308", LD)      \
    "ldrd r8, r11, [sp, #176]\n\t" "ldr r12, [sp, #184]\n\t" RQ("r9") RQ("r10") "ldr r8, [sp, #188]\n\t"
#define L7_TSTORE "strb r9, [r8]\n\t" "ldr r11, [sp, #196]\n\t" "cmp r11, #2\n\t" "blt 13f\n\t"                      \
    "strb r10, [r8, r1]\n\t" "13:\n\t" "add r8, r8, r1, lsl #1\n\t" "str r8, [sp, #188]\n\t"                         \
    "add r2, r2, r1, lsl #1\n\t" "subs r11, r11, #2\n\t" "str r11, [sp, #196]\n\t"
#define L7_SETUP "ldr r12, [sp, #316]\n\t" "mov r11, sp\n\t" "ldmia r12!, {r0-r7}\n\t" "stmia r11!, {r0-r7}\n\t"     \
    "ldmia r12!, {r0-r7}\n\t" "stmia r11!, {r0-r7}\n\t" "ldmia r12!, {r0-r7}\n\t" "stmia r11!, {r0-r7}\n\t"          \
    "ldmia r12!, {r0-r7}\n\t" "stmia r11!, {r0-r7}\n\t" "ldmia r12!, {r0-r7}\n\t" "stmia r11!, {r0-r7}\n\t"          \
    "ldmia r12!, {r0, r1}\n\t" "stmia r11!, {r0, r1}\n\t" "ldmia r12!, {r4, r6, r7, r8}\n\t"                         \
    "str r12, [sp, #316]\n\t" "ldr r10, [sp, #340]\n\t" "cmp r10, #0\n\t" "beq 4f\n\t" "ldr r9, [sp, #336]\n\t"      \
    "mov r12, sp\n\t" "2:\n\t" "lsrs r10, r10, #1\n\t" "bcc 3f\n\t" "ldmia r12, {r0-r2}\n\t"                         \
    "ldr r3, [r12, #20]\n\t" "smlad r4, r9, r0, r4\n\t" "smlad r4, r9, r1, r4\n\t" "smlad r4, r9, r2, r4\n\t"        \
    "smlabt r4, r9, r3, r4\n\t" "movs r0, #0\n\t" "movs r1, #0\n\t" "movs r2, #0\n\t" "movs r3, #0\n\t"              \
    "stmia r12, {r0-r3}\n\t" "strd r0, r1, [r12, #16]\n\t" "3:\n\t" "add r12, r12, #24\n\t" "cmp r10, #0\n\t"        \
    "bne 2b\n\t" "4:\n\t" "mov r5, r4\n\t" "stmia r11, {r4-r8}\n\t" "ldr r0, [sp, #320]\n\t"                         \
    "str r0, [sp, #188]\n\t" "adds r0, r0, #1\n\t" "str r0, [sp, #320]\n\t" "ldrd r2, r3, [sp, #324]\n\t"            \
    "str r3, [sp, #192]\n\t" "adds r0, r2, #1\n\t" "adds r3, r3, #1\n\t" "strd r0, r3, [sp, #324]\n\t"               \
    "ldr r1, [sp, #312]\n\t" "add r3, sp, #200\n\t" "ldr r9, [sp, #336]\n\t" "ldr r10, [sp, #356]\n\t"               \
    "adds r11, r10, #1\n\t" "str r11, [sp, #356]\n\t" "mov r5, r9\n\t" "ldr r11, [sp, #352]\n\t" "cmp r11, #0\n\t"   \
    "beq 5f\n\t"
#define L7_PRIME "ldr r0, [sp, #284]\n\t" "add r0, r0, r10\n\t" "ldrsb r7, [r0]\n\t" "pkhbt r6, r9, r7, lsl #16\n\t" \
    "ldrsb r7, [r0, r1]\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r8, [r0]\n\t" "pkhbt r7, r7, r8, lsl #16\n\t"       \
    "stmia r3!, {r5, r6, r7}\n\t" "ldr r0, [sp, #288]\n\t" "add r0, r0, r10\n\t" "ldrsb r7, [r0]\n\t"                \
    "pkhbt r6, r9, r7, lsl #16\n\t" "ldrsb r7, [r0, r1]\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r8, [r0]\n\t"       \
    "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t" "ldr r0, [sp, #292]\n\t" "add r0, r0, r10\n\t"     \
    "ldrsb r7, [r0]\n\t" "pkhbt r6, r9, r7, lsl #16\n\t" "ldrsb r7, [r0, r1]\n\t" "add r0, r0, r1, lsl #1\n\t"       \
    "ldrsb r8, [r0]\n\t" "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t" "ldr r0, [sp, #296]\n\t"      \
    "add r0, r0, r10\n\t" "ldrsb r7, [r0]\n\t" "pkhbt r6, r9, r7, lsl #16\n\t" "ldrsb r7, [r0, r1]\n\t"              \
    "add r0, r0, r1, lsl #1\n\t" "ldrsb r8, [r0]\n\t" "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t"  \
    "ldr r0, [sp, #300]\n\t" "add r0, r0, r10\n\t" "ldrsb r7, [r0]\n\t" "pkhbt r6, r9, r7, lsl #16\n\t"              \
    "ldrsb r7, [r0, r1]\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r8, [r0]\n\t" "pkhbt r7, r7, r8, lsl #16\n\t"       \
    "stmia r3!, {r5, r6, r7}\n\t" "ldr r0, [sp, #304]\n\t" "add r0, r0, r10\n\t" "ldrsb r7, [r0]\n\t"                \
    "pkhbt r6, r9, r7, lsl #16\n\t" "ldrsb r7, [r0, r1]\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r8, [r0]\n\t"       \
    "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t" "ldr r0, [sp, #308]\n\t" "add r0, r0, r10\n\t"     \
    "ldrsb r7, [r0]\n\t" "pkhbt r6, r9, r7, lsl #16\n\t" "ldrsb r7, [r0, r1]\n\t" "add r0, r0, r1, lsl #1\n\t"       \
    "ldrsb r8, [r0]\n\t" "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t" "b 6f\n" "5:\n\t"             \
    "ldr r0, [sp, #284]\n\t" "add r0, r0, r10\n\t" "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t"                     \
    "pkhbt r5, r5, r6, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t"       \
    "pkhbt r6, r6, r7, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r7, [r0]\n\t" "ldrsb r8, [r0, r1]\n\t"       \
    "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t" "ldr r0, [sp, #288]\n\t" "add r0, r0, r10\n\t"     \
    "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t" "pkhbt r5, r5, r6, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t"       \
    "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t"       \
    "ldrsb r7, [r0]\n\t" "ldrsb r8, [r0, r1]\n\t" "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t"      \
    "ldr r0, [sp, #292]\n\t" "add r0, r0, r10\n\t" "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t"                     \
    "pkhbt r5, r5, r6, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t"       \
    "pkhbt r6, r6, r7, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r7, [r0]\n\t" "ldrsb r8, [r0, r1]\n\t"       \
    "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t" "ldr r0, [sp, #296]\n\t" "add r0, r0, r10\n\t"     \
    "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t" "pkhbt r5, r5, r6, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t"       \
    "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t"       \
    "ldrsb r7, [r0]\n\t" "ldrsb r8, [r0, r1]\n\t" "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t"      \
    "ldr r0, [sp, #300]\n\t" "add r0, r0, r10\n\t" "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t"                     \
    "pkhbt r5, r5, r6, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t"       \
    "pkhbt r6, r6, r7, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r7, [r0]\n\t" "ldrsb r8, [r0, r1]\n\t"       \
    "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t" "ldr r0, [sp, #304]\n\t" "add r0, r0, r10\n\t"     \
    "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t" "pkhbt r5, r5, r6, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t"       \
    "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t" "pkhbt r6, r6, r7, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t"       \
    "ldrsb r7, [r0]\n\t" "ldrsb r8, [r0, r1]\n\t" "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t"      \
    "ldr r0, [sp, #308]\n\t" "add r0, r0, r10\n\t" "ldrsb r5, [r0]\n\t" "ldrsb r6, [r0, r1]\n\t"                     \
    "pkhbt r5, r5, r6, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r6, [r0]\n\t" "ldrsb r7, [r0, r1]\n\t"       \
    "pkhbt r6, r6, r7, lsl #16\n\t" "add r0, r0, r1, lsl #1\n\t" "ldrsb r7, [r0]\n\t" "ldrsb r8, [r0, r1]\n\t"       \
    "pkhbt r7, r7, r8, lsl #16\n\t" "stmia r3!, {r5, r6, r7}\n\t" "6:\n\t"
#define L7_ENTER "push {r4-r11, lr}\n\t" "sub sp, sp, #364\n\t" "ldmia r0!, {r1-r7}\n\t" "add r12, sp, #284\n\t"     \
    "stmia r12!, {r1-r7}\n\t" "ldmia r0!, {r1-r6}\n\t" "stmia r12!, {r1-r6}\n\t" "ldmia r0, {r1-r6}\n\t"             \
    "stmia r12, {r1-r6}\n\t"
#define L7_LOOP "ldr r11, [sp, #192]\n\t" "cmp r2, r11\n\t" "beq 8f\n\t" "10:\n\t" L7_STEP(L7_LD_full)               \
    "strb r9, [r8]\n\t" "strb r10, [r8, r1]\n\t" "add r8, r8, r1, lsl #1\n\t" "str r8, [sp, #188]\n\t"               \
    "add r2, r2, r1, lsl #1\n\t" "ldr r11, [sp, #192]\n\t" "cmp r2, r11\n\t" "bne 10b\n\t" "8:\n\t"                  \
    "ldr r11, [sp, #344]\n\t" "cmp r11, #0\n\t" "beq 9f\n\t" "str r11, [sp, #196]\n\t" "ldr r11, [sp, #348]\n\t"     \
    "cmp r11, #0\n\t" "beq 12f\n\t" L7_STEP(L7_LD_a) L7_TSTORE "12:\n\t" "ldr r11, [sp, #196]\n\t" "cmp r11, #0\n\t" \
    "ble 9f\n\t" L7_STEP(L7_LD_b) L7_TSTORE "b 12b\n\t" "9:\n\t" "ldr r11, [sp, #332]\n\t" "subs r11, r11, #1\n\t"   \
    "str r11, [sp, #332]\n\t" "bne 1b\n\t" "add sp, sp, #364\n\t" "pop {r4-r11, pc}\n\t"
#define S2_L(r) "ldrsb " r ", [r0, r2]\n\t"
#define S2_Z(r) "ldr " r ", [sp, #204]\n\t"
#define S2_ROW(line, F0, F1, F2, F3) "ldr r0, [sp, #" line "]\n\t" "ldmia r3, {r5, r6}\n\t" F0("r7")                 \
    "add r0, r0, r1\n\t" F1("r11") "pkhbt r7, r7, r11, lsl #16\n\t" "add r0, r0, r1\n\t" F2("r8")                    \
    "add r0, r0, r1\n\t" F3("r11") "pkhbt r8, r8, r11, lsl #16\n\t" "ldmia r4, {r12, lr}\n\t"                        \
    "smlad r9, r5, r12, r9\n\t" "smlad r10, r6, r12, r10\n\t" "smlad r9, r6, lr, r9\n\t"                             \
    "smlad r10, r7, lr, r10\n\t" "ldr r12, [r4, #12]\n\t" "add r4, r4, #16\n\t" "smlabt r9, r7, r12, r9\n\t"         \
    "smlabt r10, r8, r12, r10\n\t" "stmia r3!, {r7, r8}\n\t"
#define S2_STEP(F0, F1, F2, F3) "ldrd r9, r10, [sp, #80]\n\t" "add r3, sp, #112\n\t" "mov r4, sp\n\t"                \
    S2_ROW("152", F0, F1, F2, F3) S2_ROW("156", F0, F1, F2, F3) S2_ROW("160", F0, F1, F2, F3)                        \
    S2_ROW("164", F0, F1, F2, F3) S2_ROW("168", F0, F1, F2, F3) "ldrd r8, r11, [sp, #88]\n\t"                        \
    "ldr r12, [sp, #96]\n\t" RQ("r9") RQ("r10") "ldr r8, [sp, #100]\n\t"
#define S2_TSTORE "strb r9, [r8]\n\t" "ldr r11, [sp, #108]\n\t" "cmp r11, #2\n\t" "blt 13f\n\t"                      \
    "strb r10, [r8, r1]\n\t" "13:\n\t" "add r8, r8, r1, lsl #1\n\t" "str r8, [sp, #100]\n\t"                         \
    "add r2, r2, r1, lsl #2\n\t" "subs r11, r11, #2\n\t" "str r11, [sp, #108]\n\t"
#define S2_LOOP "ldr r11, [sp, #104]\n\t" "cmp r2, r11\n\t" "beq 8f\n\t" "10:\n\t" S2_STEP(S2_L, S2_L, S2_L, S2_L)   \
    "strb r9, [r8]\n\t" "strb r10, [r8, r1]\n\t" "add r8, r8, r1, lsl #1\n\t" "str r8, [sp, #100]\n\t"               \
    "add r2, r2, r1, lsl #2\n\t" "ldr r11, [sp, #104]\n\t" "cmp r2, r11\n\t" "bne 10b\n\t" "8:\n\t"                  \
    "ldr r11, [sp, #212]\n\t" "cmp r11, #0\n\t" "beq 9f\n\t" "str r11, [sp, #108]\n\t" "ldr r11, [sp, #216]\n\t"     \
    "cmp r11, #2\n\t" "bgt 23f\n\t" "beq 22f\n\t" "cmp r11, #1\n\t" "beq 21f\n\t" "b 25f\n\t" "21:\n\t"              \
    S2_STEP(S2_L, S2_Z, S2_Z, S2_Z) S2_TSTORE "b 24f\n\t" "22:\n\t" S2_STEP(S2_L, S2_L, S2_Z, S2_Z) S2_TSTORE        \
    "b 24f\n\t" "23:\n\t" S2_STEP(S2_L, S2_L, S2_L, S2_Z) S2_TSTORE "24:\n\t" "ldr r11, [sp, #108]\n\t"              \
    "cmp r11, #0\n\t" "ble 9f\n\t" "25:\n\t" S2_STEP(S2_Z, S2_Z, S2_Z, S2_Z) S2_TSTORE "b 24b\n\t" "9:\n\t"          \
    "ldr r11, [sp, #200]\n\t" "subs r11, r11, #1\n\t" "str r11, [sp, #200]\n\t" "bne 1b\n\t" "add sp, sp, #228\n\t"  \
    "pop {r4-r11, pc}\n\t"
#define T2_L(r) "ldrsb " r ", [r0, r2]\n\t"
#define T2_Z(r) "ldr " r ", [sp, #336]\n\t"
#define T2_ROW(line, F0, F1, F2, F3) "ldr r0, [sp, #" line "]\n\t" "ldmia r3, {r5, r6, r7}\n\t" F0("r8")             \
    "add r0, r0, r1\n\t" F1("r11") "pkhbt r8, r8, r11, lsl #16\n\t" "ldmia r4, {r12, lr}\n\t"                        \
    "smlad r9, r5, r12, r9\n\t" "smlad r10, r6, r12, r10\n\t" "smlad r9, r6, lr, r9\n\t"                             \
    "smlad r10, r7, lr, r10\n\t" "add r0, r0, r1\n\t" F2("r5") "add r0, r0, r1\n\t" F3("r11")                        \
    "pkhbt r5, r5, r11, lsl #16\n\t" "ldr r12, [r4, #8]\n\t" "ldr lr, [r4, #20]\n\t" "add r4, r4, #24\n\t"           \
    "smlad r9, r7, r12, r9\n\t" "smlad r10, r8, r12, r10\n\t" "smlabt r9, r8, lr, r9\n\t"                            \
    "smlabt r10, r5, lr, r10\n\t" "stmia r3!, {r7, r8}\n\t" "str r5, [r3], #4\n\t"
#define T2_STEP(F0, F1, F2, F3) "ldrd r9, r10, [sp, #168]\n\t" "add r3, sp, #200\n\t" "mov r4, sp\n\t"               \
    T2_ROW("284", F0, F1, F2, F3) T2_ROW("288", F0, F1, F2, F3) T2_ROW("292", F0, F1, F2, F3)                        \
    T2_ROW("296", F0, F1, F2, F3) T2_ROW("300", F0, F1, F2, F3) T2_ROW("304", F0, F1, F2, F3)                        \
    T2_ROW("308", F0, F1, F2, F3) "ldrd r8, r11, [sp, #176]\n\t" "ldr r12, [sp, #184]\n\t" RQ("r9") RQ("r10")        \
    "ldr r8, [sp, #188]\n\t"
#define T2_TSTORE "strb r9, [r8]\n\t" "ldr r11, [sp, #196]\n\t" "cmp r11, #2\n\t" "blt 13f\n\t"                      \
    "strb r10, [r8, r1]\n\t" "13:\n\t" "add r8, r8, r1, lsl #1\n\t" "str r8, [sp, #188]\n\t"                         \
    "add r2, r2, r1, lsl #2\n\t" "subs r11, r11, #2\n\t" "str r11, [sp, #196]\n\t"
#define T2_LOOP "ldr r11, [sp, #192]\n\t" "cmp r2, r11\n\t" "beq 8f\n\t" "10:\n\t" T2_STEP(T2_L, T2_L, T2_L, T2_L)   \
    "strb r9, [r8]\n\t" "strb r10, [r8, r1]\n\t" "add r8, r8, r1, lsl #1\n\t" "str r8, [sp, #188]\n\t"               \
    "add r2, r2, r1, lsl #2\n\t" "ldr r11, [sp, #192]\n\t" "cmp r2, r11\n\t" "bne 10b\n\t" "8:\n\t"                  \
    "ldr r11, [sp, #344]\n\t" "cmp r11, #0\n\t" "beq 9f\n\t" "str r11, [sp, #196]\n\t" "ldr r11, [sp, #348]\n\t"     \
    "cmp r11, #2\n\t" "bgt 23f\n\t" "beq 22f\n\t" "cmp r11, #1\n\t" "beq 21f\n\t" "b 25f\n\t" "21:\n\t"              \
    T2_STEP(T2_L, T2_Z, T2_Z, T2_Z) T2_TSTORE "b 24f\n\t" "22:\n\t" T2_STEP(T2_L, T2_L, T2_Z, T2_Z) T2_TSTORE        \
    "b 24f\n\t" "23:\n\t" T2_STEP(T2_L, T2_L, T2_L, T2_Z) T2_TSTORE "24:\n\t" "ldr r11, [sp, #196]\n\t"              \
    "cmp r11, #0\n\t" "ble 9f\n\t" "25:\n\t" T2_STEP(T2_Z, T2_Z, T2_Z, T2_Z) T2_TSTORE "b 24b\n\t" "9:\n\t"          \
    "ldr r11, [sp, #332]\n\t" "subs r11, r11, #1\n\t" "str r11, [sp, #332]\n\t" "bne 1b\n\t" "add sp, sp, #364\n\t"  \
    "pop {r4-r11, pc}\n\t"


static __attribute__((naked, noinline)) void line5_asm(line_args_t *a)
{
    (void)a;
    __asm__ volatile(L5_ENTER "1:\n\t" L5_SETUP L5_PRIME L5_LOOP);
}

/* 5x5 at stride 2: the same frame; new pairs P2, P3 a step, o1 from P1..P3. */
static __attribute__((naked, noinline)) void line5s2_asm(line_args_t *a)
{
    (void)a;
    __asm__ volatile(L5_ENTER "1:\n\t" L5_SETUP L5_PRIME S2_LOOP);
}

static __attribute__((naked, noinline)) void line7_asm(line_args_t *a)
{
    (void)a;
    __asm__ volatile(L7_ENTER "1:\n\t" L7_SETUP L7_PRIME L7_LOOP);
}

/* 7x7 at stride 2: new pairs P3, P4 a step (P4 where P0 was), o1 from P1..P4. */
static __attribute__((naked, noinline)) void line7s2_asm(line_args_t *a)
{
    (void)a;
    __asm__ volatile(L7_ENTER "1:\n\t" L7_SETUP L7_PRIME T2_LOOP);
}
#endif

/* Whether the assembly takes every row (fast mode, a 5x5 or 7x7 window, stride_w 1 or 2, dilation_w 1,
 * 'same' or 'valid' columns); the column offsets (from a row's start) of the first new pair and of the one after
 * the steps whose pairs lie inside, the outputs after them and how many of the first of those steps' new columns
 * lie inside (stride 1: whether its pair's first does). */
static int line_plan(const mcu_conv2d_params_t *p, const mcu_rq_mode_t *mode, int32_t *co0, int32_t *co_end,
                     int32_t *tail, int32_t *tail_a)
{
    const int32_t k = p->filter.w, m = k / 2, in_w = p->input.w, out_w = p->output.w, x0 = -p->pad_left;
    const int32_t sw = p->stride_w, news = 2 * sw; /* new columns a step */
    if (!MCU_DSP_ASM || !mode->fast || (k != 5 && k != 7) || (sw != 1 && sw != 2) ||
        p->dilation_w != 1 || (p->pad_left != 0 && p->pad_left != m) || in_w < 2 * m || out_w < 1) {
        return 0;
    }
    const int32_t first = x0 + 2 * m;         /* step s's new columns: first + news s .. + news - 1 */
    const int32_t room = in_w - first - news; /* >= 0: step 0's inside */
    int32_t steps = room < 0 ? 0 : room / news + 1;
    steps = steps < out_w / 2 ? steps : out_w / 2;
    *co0 = first * p->input.c;
    *co_end = *co0 + news * steps * p->input.c;
    *tail = out_w - 2 * steps;
    const int32_t inside = in_w - (first + news * steps);
    *tail_a = sw == 1 ? inside > 0 : (inside < 0 ? 0 : inside > 3 ? 3 : inside);
    return 1;
}

mcu_status_t mcu_dwconv2d_s8_dsp_line(const mcu_conv2d_params_t *params, const mcu_per_channel_quant_t *quant,
                                      const int8_t *input, const int8_t *filter, const int32_t *bias,
                                      int8_t *output)
{
    const mcu_conv2d_params_t *p = params;
    (void)bias; /* folded into the filter stream */
    mcu_status_t status = mcu_conv_check(p, quant, input, filter, output);
    if (status != MCU_OK) {
        return status;
    }
    if (!mcu_dw_shapes_ok(p) || p->filter.w % 2 == 0 || p->filter.w < 3 || p->filter.h > 7) {
        return MCU_ERR_SHAPE;
    }
    const int32_t c = p->input.c, in_h = p->input.h, in_w = p->input.w, kw = p->filter.w;
    const int32_t *w = (const int32_t *)(const void *)filter;
    mcu_rq_mode_t mode = {p->act_min, p->act_max, p->output_offset, 1, 0};
    for (int32_t ch = 0; ch < c; ++ch) {
        const int32_t *rec = w + ch * CH_WORDS(kw) + CH_WORDS(kw) - 3;
        if (mcu_rq3_check(rec, 1) != MCU_OK) {
            return MCU_ERR_ARG;
        }
        mode.records_fast = mode.records_fast && rec[1] >= 0;
    }
    mode.fast = mode.records_fast && p->act_min == MCU_Q7_MIN && p->act_max == MCU_Q7_MAX;
    int32_t co0 = 0, co_end = 0, tail = 0, tail_a = 0;
    const int asm_rows = p->filter.h == kw && line_plan(p, &mode, &co0, &co_end, &tail, &tail_a);
    int8_t *out = output;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_n = input + n * in_h * in_w * c;
        for (int32_t y = 0; y < p->output.h; ++y, out += p->output.w * c) {
#if MCU_DSP_ASM
            if (asm_rows) {
                line_args_t a = {{0}, c, w, out, co0, co_end, c, (uint32_t)(uint16_t)(int16_t)(-p->input_offset) *
                                 0x10001u, 0, tail, tail_a, p->pad_left != 0, 0};
                const int8_t *any = in_n;
                for (int32_t ky = 0; ky < kw; ++ky) {
                    const int32_t iy = y * p->stride_h - p->pad_top + ky * p->dilation_h;
                    a.line[ky] = iy >= 0 && iy < in_h ? in_n + iy * in_w * c : NULL;
                    any = a.line[ky] != NULL ? a.line[ky] : any;
                    a.pad_rows |= a.line[ky] != NULL ? 0u : 1u << ky;
                }
                for (int32_t ky = 0; ky < kw; ++ky) {
                    a.line[ky] = a.line[ky] != NULL ? a.line[ky] : any;
                }
                void (*run)(line_args_t *) = kw == 7 ? (p->stride_w == 2 ? line7s2_asm : line7_asm)
                                                     : (p->stride_w == 2 ? line5s2_asm : line5_asm);
                run(&a);
                continue;
            }
#else
            (void)asm_rows;
#endif
            row_c(p, in_n, y, w, &mode, out);
        }
    }
    return MCU_OK;
}
