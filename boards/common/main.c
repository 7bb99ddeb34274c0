/* Firmware test harness: input.bin -> model_run_v (timed with SysTick) -> output.bin, then one MCU_DONE line.
 *
 *  - Inputs are read from input.bin (all inputs concatenated, in order) into 16-byte aligned slots;
 *    outputs are written to output.bin the same way. Paths are relative to QEMU's working directory.
 *    A model with state (MODEL_STATE_BYTES > 0): input.bin starts with the state region's bytes and
 *    output.bin ends with them after the run (a batch: once before all records, once after them all).
 *  - ticks = SysTick ticks around the one model_run_v call; overhead = ticks of an empty measurement,
 *    which the host subtracts.
 *  - stack = peak stack bytes during the run (harness included): the free stack is painted with a
 *    pattern first and scanned afterwards; if the bottom word was overwritten the stack overflowed.
 *  - Errors print "MCU_ERROR <reason>" (or "MCU_STACK_OVERFLOW ...") and exit with failure; success
 *    prints "MCU_DONE status=<int> ticks=<uint> overhead=<uint> stack=<uint>" and exits with success.
 *  - Built with -DMCU_BATCH (mcu eval), main runs batch_main instead: batch.bin holds N records of
 *    MODEL_INPUTS_BYTES (each laid out as input.bin), one model_run_v per record, its outputs appended to
 *    batch_out.bin; "MCU_PROGRESS <done>" lines stream on the console, then "MCU_BATCH n=<N>" and one
 *    MCU_DONE line whose ticks sum all N runs and whose status is the first non-zero one.
 *  - Built with -DMCU_GENERATE (mcu generate; a decoder step model), main runs generate_main instead: input.bin
 *    holds the state region, then u32 n_prompt, u32 n_new, f32 temperature, i32 top_k, u32 seed (the
 *    xorshift32 state is model_rng_seed(seed); unused when temperature <= 0) and the n_prompt int32 prompt tokens; one
 *    model_generate_sampled call (temperature <= 0: greedy, model_generate's tokens); output.bin gets the n_new tokens (int32), the ticks up to each token (u32: the
 *    first covers the prompt) and the state region; then one MCU_DONE line whose ticks cover the whole call.
 *  - Built with -DMCU_PROFILE, the model calls mcu_pal_profile_begin/end(op) around each kernel; the
 *    ticks of each op are summed here and printed first as "MCU_PROFILE op=<index> ticks=<uint>" lines.
 */
#include <stdint.h>
#include <string.h>

#include "harness_model.h"
#include "semihost.h"
#include "systick.h"

#define SLOT_ALIGN 16u
#define ALIGN_UP(x) (((x) + (SLOT_ALIGN - 1u)) & ~(SLOT_ALIGN - 1u))
#define STACK_PAINT 0x57ACC0DEu

extern uint32_t __stack_bottom[]; /* from sections.ld */
extern uint32_t __stack_top[];

static uint8_t input_slots[MODEL_INPUTS_BYTES + SLOT_ALIGN * MODEL_NUM_INPUTS] __attribute__((aligned(16)));
static uint8_t output_slots[MODEL_OUTPUTS_BYTES + SLOT_ALIGN * MODEL_NUM_OUTPUTS] __attribute__((aligned(16)));

/* The model's working memory (and, in debug builds, the guard bytes after it); global so the size report finds
 * it by name. */
#if MODEL_STATE_BYTES > 0
static uint8_t mcu_state[MODEL_STATE_BYTES] __attribute__((aligned(16)));
#define STATE ((void *)mcu_state)
#else
#define STATE ((void *)0)
#endif

#if MODEL_ARENA_BYTES > 0
uint8_t mcu_arena[MODEL_ARENA_BYTES + MODEL_ARENA_GUARD_BYTES] __attribute__((aligned(MODEL_ARENA_ALIGN)));
#define ARENA ((void *)mcu_arena)
#else
#define ARENA ((void *)0)
#endif

#ifdef MCU_PROFILE
#define PROFILE_MAX_OPS 1024u
static uint64_t profile_start;
static uint32_t profile_ticks[PROFILE_MAX_OPS];
static uint32_t profile_ops; /* highest op index seen + 1 */

void mcu_pal_profile_begin(uint32_t op);
void mcu_pal_profile_end(uint32_t op);

void mcu_pal_profile_begin(uint32_t op)
{
    (void)op;
    profile_start = mcu_systick_now();
}

void mcu_pal_profile_end(uint32_t op)
{
    const uint64_t ticks = mcu_systick_now() - profile_start;
    if (op < PROFILE_MAX_OPS) {
        profile_ticks[op] += (uint32_t)ticks;
        profile_ops = op + 1u > profile_ops ? op + 1u : profile_ops;
    }
}

static void print_profile(void)
{
    for (uint32_t op = 0; op < profile_ops; ++op) {
        char line[64];
        char *p = mcu_fmt_str(line, "MCU_PROFILE op=");
        p = mcu_fmt_u64(p, op);
        p = mcu_fmt_str(p, " ticks=");
        p = mcu_fmt_u64(p, profile_ticks[op]);
        mcu_fmt_str(p, "\n");
        mcu_sh_puts(line);
    }
}
#endif

#ifdef MCU_DEBUG
/* mcu debug: every kernel's output, appended to debug.bin as (u32 op, u32 bytes, bytes) records. */
static int32_t debug_fd = -1;

void mcu_pal_debug_tensor(uint32_t op, const void *data, uint32_t bytes);

void mcu_pal_debug_tensor(uint32_t op, const void *data, uint32_t bytes)
{
    if (debug_fd < 0) {
        debug_fd = mcu_sh_open("debug.bin", MCU_SH_MODE_WB);
    }
    if (debug_fd >= 0) {
        const uint32_t header[2] = {op, bytes};
        (void)mcu_sh_write(debug_fd, header, sizeof header);
        (void)mcu_sh_write(debug_fd, data, bytes);
    }
}
#endif

static void __attribute__((noreturn)) fail(const char *tag, const char *reason, const char *detail)
{
    char line[128];
    char *p = mcu_fmt_str(line, tag);
    p = mcu_fmt_str(p, reason);
    p = mcu_fmt_str(p, detail);
    mcu_fmt_str(p, "\n");
    mcu_sh_puts(line);
    mcu_sh_exit(0);
}

/* Paints the stack below this function's frame (64 bytes of margin) with STACK_PAINT. */
static __attribute__((noinline)) void paint_stack(void)
{
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (uint32_t *p = __stack_bottom; p < sp - 16; ++p) {
        *p = STACK_PAINT;
    }
}

/* Bytes from the top of the stack down to the lowest word that lost its paint. */
static uint32_t stack_used(void)
{
    const uint32_t *p = __stack_bottom;
    while (p < __stack_top && *p == STACK_PAINT) {
        ++p;
    }
    return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

/* The state region's bytes, first in input.bin (batch.bin); nothing without state. */
static void read_state(int32_t fd)
{
#if MODEL_STATE_BYTES > 0
    if (mcu_sh_read(fd, mcu_state, MODEL_STATE_BYTES) != MODEL_STATE_BYTES) {
        fail("MCU_ERROR ", "short read of the state", "");
    }
#else
    (void)fd;
#endif
}

/* The state region's bytes after the run(s), last in output.bin (batch_out.bin). */
static void write_state(int32_t fd)
{
#if MODEL_STATE_BYTES > 0
    if (mcu_sh_write(fd, mcu_state, MODEL_STATE_BYTES) != MODEL_STATE_BYTES) {
        fail("MCU_ERROR ", "short write of the state", "");
    }
#else
    (void)fd;
#endif
}

static void read_inputs(const void *inputs[])
{
    int32_t fd = mcu_sh_open("input.bin", MCU_SH_MODE_RB);
    if (fd < 0) {
        fail("MCU_ERROR ", "cannot open input.bin", " (it must be in QEMU's working directory)");
    }
    int32_t have = mcu_sh_flen(fd);
    if (have != (int32_t)(MODEL_STATE_BYTES + MODEL_INPUTS_BYTES)) {
        char detail[64];
        char *p = mcu_fmt_str(detail, " has ");
        p = mcu_fmt_i32(p, have);
        p = mcu_fmt_str(p, " bytes, expected ");
        mcu_fmt_u64(p, MODEL_STATE_BYTES + MODEL_INPUTS_BYTES);
        fail("MCU_ERROR ", "input.bin", detail);
    }
    read_state(fd);
    uint32_t offset = 0;
    for (uint32_t i = 0; i < MODEL_NUM_INPUTS; ++i) {
        inputs[i] = &input_slots[offset];
        if (mcu_sh_read(fd, &input_slots[offset], model_input_bytes[i]) != model_input_bytes[i]) {
            fail("MCU_ERROR ", "short read from input.bin", "");
        }
        offset += ALIGN_UP(model_input_bytes[i]);
    }
    mcu_sh_close(fd);
}

static void write_outputs(void *const outputs[])
{
    int32_t fd = mcu_sh_open("output.bin", MCU_SH_MODE_WB);
    if (fd < 0) {
        fail("MCU_ERROR ", "cannot create output.bin", "");
    }
    for (uint32_t i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        if (mcu_sh_write(fd, outputs[i], model_output_bytes[i]) != model_output_bytes[i]) {
            fail("MCU_ERROR ", "short write to output.bin", "");
        }
    }
    write_state(fd);
    mcu_sh_close(fd);
}

#ifdef MCU_BATCH
#define PROGRESS_LINES 100u /* at most this many MCU_PROGRESS lines per batch */

static void print_count(const char *tag, uint32_t n)
{
    char line[48];
    char *p = mcu_fmt_str(line, tag);
    p = mcu_fmt_u64(p, n);
    mcu_fmt_str(p, "\n");
    mcu_sh_puts(line);
}

static void __attribute__((noreturn)) batch_main(void)
{
    const void *inputs[MODEL_NUM_INPUTS];
    void *outputs[MODEL_NUM_OUTPUTS];
    int32_t in_fd = mcu_sh_open("batch.bin", MCU_SH_MODE_RB);
    if (in_fd < 0) {
        fail("MCU_ERROR ", "cannot open batch.bin", " (it must be in QEMU's working directory)");
    }
    int32_t have = mcu_sh_flen(in_fd) - (int32_t)MODEL_STATE_BYTES;
    if (have <= 0 || (uint32_t)have % (uint32_t)MODEL_INPUTS_BYTES != 0u) {
        char detail[64];
        char *p = mcu_fmt_str(detail, " has ");
        p = mcu_fmt_i32(p, have);
        p = mcu_fmt_str(p, " bytes, not a multiple of ");
        mcu_fmt_u64(p, MODEL_INPUTS_BYTES);
        fail("MCU_ERROR ", "batch.bin", detail);
    }
    const uint32_t n = (uint32_t)have / (uint32_t)MODEL_INPUTS_BYTES;
    const uint32_t every = n / PROGRESS_LINES + 1u;
    int32_t out_fd = mcu_sh_open("batch_out.bin", MCU_SH_MODE_WB);
    if (out_fd < 0) {
        fail("MCU_ERROR ", "cannot create batch_out.bin", "");
    }
    read_state(in_fd);
    uint32_t offset = 0;
    for (uint32_t i = 0; i < MODEL_NUM_INPUTS; ++i) {
        inputs[i] = &input_slots[offset];
        offset += ALIGN_UP(model_input_bytes[i]);
    }
    offset = 0;
    for (uint32_t i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        outputs[i] = &output_slots[offset];
        offset += ALIGN_UP(model_output_bytes[i]);
    }

    paint_stack();
    mcu_systick_start();
    uint64_t empty_start = mcu_systick_now();
    uint64_t empty_end = mcu_systick_now();
    uint64_t ticks = 0;
    mcu_status_t first_error = MCU_OK;
    for (uint32_t k = 0; k < n; ++k) {
        for (uint32_t i = 0; i < MODEL_NUM_INPUTS; ++i) {
            if (mcu_sh_read(in_fd, (void *)inputs[i], model_input_bytes[i]) != model_input_bytes[i]) {
                fail("MCU_ERROR ", "short read from batch.bin", "");
            }
        }
        uint64_t start = mcu_systick_now();
        mcu_status_t status = MODEL_RUN_V(inputs, outputs, ARENA, STATE);
        ticks += mcu_systick_now() - start;
        if (status != MCU_OK && first_error == MCU_OK) {
            first_error = status;
        }
        for (uint32_t i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
            if (mcu_sh_write(out_fd, outputs[i], model_output_bytes[i]) != model_output_bytes[i]) {
                fail("MCU_ERROR ", "short write to batch_out.bin", "");
            }
        }
        if ((k + 1u) % every == 0u || k + 1u == n) {
            print_count("MCU_PROGRESS ", k + 1u);
        }
    }
    uint32_t stack = stack_used();
    if (stack >= (uint32_t)((uintptr_t)__stack_top - (uintptr_t)__stack_bottom)) {
        fail("MCU_STACK_OVERFLOW ", "the run overwrote the bottom of the stack", "");
    }
    write_state(out_fd);
    mcu_sh_close(in_fd);
    mcu_sh_close(out_fd);
    print_count("MCU_BATCH n=", n);

    char line[128];
    char *p = mcu_fmt_str(line, "MCU_DONE status=");
    p = mcu_fmt_i32(p, (int32_t)first_error);
    p = mcu_fmt_str(p, " ticks=");
    p = mcu_fmt_u64(p, ticks);
    p = mcu_fmt_str(p, " overhead=");
    p = mcu_fmt_u64(p, (empty_end - empty_start) * n);
    p = mcu_fmt_str(p, " stack=");
    p = mcu_fmt_u64(p, stack);
    mcu_fmt_str(p, "\n");
    mcu_sh_puts(line);
    mcu_sh_exit(1);
}
#endif

#ifdef MCU_GENERATE
#define GENERATE_MAX 1024u
static int32_t gen_prompt[GENERATE_MAX];
static int32_t gen_tokens[GENERATE_MAX];
static uint32_t gen_ticks[GENERATE_MAX];
static uint8_t gen_logits[MODEL_OUTPUT0_BYTES] __attribute__((aligned(16)));
static uint64_t gen_last;

/* Overrides the model's weak hook: the ticks since the previous token (the first: since the call began). */
void model_on_token(uint32_t k, int32_t token)
{
    const uint64_t now = mcu_systick_now();
    (void)token;
    if (k < GENERATE_MAX) {
        gen_ticks[k] = (uint32_t)(now - gen_last);
    }
    gen_last = now;
}

static void __attribute__((noreturn)) generate_main(void)
{
    uint32_t counts[5]; /* n_prompt, n_new, temperature's bits, top_k, seed */
    int32_t fd = mcu_sh_open("input.bin", MCU_SH_MODE_RB);
    if (fd < 0) {
        fail("MCU_ERROR ", "cannot open input.bin", "");
    }
    read_state(fd);
    if (mcu_sh_read(fd, counts, sizeof counts) != sizeof counts || counts[0] == 0u || counts[0] > GENERATE_MAX ||
        counts[1] > GENERATE_MAX) {
        fail("MCU_ERROR ", "input.bin", " needs n_prompt in [1, 1024] and n_new <= 1024");
    }
    if (mcu_sh_read(fd, gen_prompt, counts[0] * 4u) != counts[0] * 4u) {
        fail("MCU_ERROR ", "short read of the prompt", "");
    }
    mcu_sh_close(fd);
    paint_stack();
    mcu_systick_start();
    const uint64_t start = mcu_systick_now();
    gen_last = start;
    float temperature;
    memcpy(&temperature, &counts[2], sizeof temperature);
    uint32_t rng = model_rng_seed(counts[4]);
    mcu_status_t status = model_generate_sampled(gen_prompt, counts[0], gen_tokens, counts[1], temperature,
                                                 (int32_t)counts[3], &rng, gen_logits, ARENA, STATE);
    const uint64_t end = mcu_systick_now();
    uint32_t stack = stack_used();
    int32_t out = mcu_sh_open("output.bin", MCU_SH_MODE_WB);
    if (out < 0) {
        fail("MCU_ERROR ", "cannot create output.bin", "");
    }
    (void)mcu_sh_write(out, gen_tokens, counts[1] * 4u);
    (void)mcu_sh_write(out, gen_ticks, counts[1] * 4u);
    write_state(out);
    mcu_sh_close(out);
    char line[128];
    char *p = mcu_fmt_str(line, "MCU_DONE status=");
    p = mcu_fmt_i32(p, (int32_t)status);
    p = mcu_fmt_str(p, " ticks=");
    p = mcu_fmt_u64(p, end - start);
    p = mcu_fmt_str(p, " overhead=0 stack=");
    p = mcu_fmt_u64(p, stack);
    mcu_fmt_str(p, "\n");
    mcu_sh_puts(line);
    mcu_sh_exit(1);
}
#endif

int main(void)
{
#ifdef MCU_BATCH
    batch_main();
#endif
#ifdef MCU_GENERATE
    generate_main();
#endif
    const void *inputs[MODEL_NUM_INPUTS];
    void *outputs[MODEL_NUM_OUTPUTS];

    read_inputs(inputs);
    uint32_t offset = 0;
    for (uint32_t i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        outputs[i] = &output_slots[offset];
        offset += ALIGN_UP(model_output_bytes[i]);
    }

    paint_stack();
    mcu_systick_start();
    uint64_t empty_start = mcu_systick_now();
    uint64_t empty_end = mcu_systick_now();
    uint64_t start = mcu_systick_now();
    mcu_status_t status = MODEL_RUN_V(inputs, outputs, ARENA, STATE);
    uint64_t end = mcu_systick_now();
    uint32_t stack = stack_used();

    if (stack >= (uint32_t)((uintptr_t)__stack_top - (uintptr_t)__stack_bottom)) {
        fail("MCU_STACK_OVERFLOW ", "the run overwrote the bottom of the stack", "");
    }
    write_outputs(outputs);
#ifdef MCU_PROFILE
    print_profile();
#endif

    char line[128];
    char *p = mcu_fmt_str(line, "MCU_DONE status=");
    p = mcu_fmt_i32(p, (int32_t)status);
    p = mcu_fmt_str(p, " ticks=");
    p = mcu_fmt_u64(p, end - start);
    p = mcu_fmt_str(p, " overhead=");
    p = mcu_fmt_u64(p, empty_end - empty_start);
    p = mcu_fmt_str(p, " stack=");
    p = mcu_fmt_u64(p, stack);
    mcu_fmt_str(p, "\n");
    mcu_sh_puts(line);
    mcu_sh_exit(1);
}
