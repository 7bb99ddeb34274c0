/* Helium int8 transpose: small blocks through one table of byte offsets, long runs by strided gathers / scatters. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_kernels.h"
#include "mcu/mcu_opt.h"
#include "mcu/mcu_util.h"

#if MCU_HAVE_MVE
#define BLOCK 64 /* elements of a block (its table of input offsets: stack) */

/* The block: the innermost output axes below `axis`, and `f` indices of `axis` (a prefix of its range), as long as
 * it holds at most BLOCK elements whose input offsets span at most 255 bytes; the table gets each element's input
 * offset in output order. Returns the block's elements for f indices of `axis` (0: no block of 16 or more). */
static int32_t plan_block(const mcu_transpose_plan_t *s, uint8_t *table, int32_t *axis, int32_t *f)
{
    int32_t size = 1, span = 0, k = 3;
    for (; k >= 0; --k) {
        const int32_t room = (255 - span) / s->st[k] + 1, take = BLOCK / size;
        int32_t n = s->od[k] < room ? s->od[k] : room;
        n = n < take ? n : take;
        if (n < s->od[k]) {
            *f = n;
            break;
        }
        size *= n;
        span += (n - 1) * s->st[k];
    }
    if (k < 0) { /* the whole tensor is one block */
        k = 0;
        *f = s->od[0];
        size /= s->od[0];
    }
    *axis = k;
    const int32_t block = size * *f;
    if (*f < 1 || block < 16) {
        return 0;
    }
    int32_t digit[4] = {0, 0, 0, 0}, off = 0; /* t's digits over axes k..3 (axis k's range f), output order */
    for (int32_t t = 0; t < block; ++t) {
        table[t] = (uint8_t)off;
        int32_t a = 3;
        for (; a > k && digit[a] + 1 == s->od[a]; --a) {
            off -= digit[a] * s->st[a];
            digit[a] = 0;
        }
        ++digit[a];
        off += s->st[a];
    }
    return block;
}

/* n elements to dst from src through the byte offsets at tab, 16 a step (a tail-predicated loop). */
MCU_INLINE void gather_table(const uint8_t *src, const uint8_t *tab, uint8_t *dst, int32_t n)
{
    __asm__ volatile("wlstp.8 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vldrb.u8 q1, [%[tab]], #16\n\t"
                     "vldrb.u8 q0, [%[src], q1]\n\t"
                     "vstrb.8 q0, [%[dst]], #16\n\t"
                     "letp lr, 1b\n"
                     "2:\n\t"
                     : [tab] "+r"(tab), [dst] "+r"(dst)
                     : [src] "r"(src), [n] "r"(n)
                     : "lr", "q0", "q1", "memory");
}

/* Every block: the axes above `axis` in full, `axis` f indices at a time (a last, shorter block). */
static void blocks(const mcu_transpose_plan_t *s, const uint8_t *table, int32_t axis, int32_t f, int32_t block,
                   const uint8_t *in, uint8_t *out)
{
    const int32_t inner = block / f;
    int32_t lim[4], step[4];
    for (int32_t a = 0; a < 4; ++a) {
        lim[a] = a <= axis ? s->od[a] : 1;
        step[a] = a == axis ? f : 1;
    }
    for (int32_t i0 = 0; i0 < lim[0]; i0 += step[0]) {
        for (int32_t i1 = 0; i1 < lim[1]; i1 += step[1]) {
            for (int32_t i2 = 0; i2 < lim[2]; i2 += step[2]) {
                const uint8_t *src = in + i0 * s->st[0] + i1 * s->st[1] + i2 * s->st[2];
                uint8_t *dst = out + i0 * s->ost[0] + i1 * s->ost[1] + i2 * s->ost[2];
                const int32_t adv_in = step[3] * s->st[3], adv_out = step[3] * s->ost[3];
                for (int32_t i3 = 0; i3 < lim[3]; i3 += step[3], src += adv_in, dst += adv_out) {
                    const int32_t i = axis == 0 ? i0 : axis == 1 ? i1 : axis == 2 ? i2 : i3;
                    const int32_t left = s->od[axis] - i;
                    gather_table(src, table, dst, (left < f ? left : f) * inner);
                }
            }
        }
    }
}

/* n elements from src (`sin` apart) to dst (`sout` apart), one of the strides 1, the other's lane offsets in off8
 * (16 lanes, stride <= 17) or off16 (8 lanes): tail-predicated loops of one gather or scatter and one contiguous
 * access a step. */
#define RUN_ASM(SIZE, LOAD, STORE, STEP)                                                                  \
    __asm__ volatile("wlstp." SIZE " lr, %[n], 2f\n"                                                      \
                     "1:\n\t" LOAD STORE "add %[" STEP "], %[" STEP "], %[adv]\n\t"                       \
                     "letp lr, 1b\n"                                                                      \
                     "2:\n\t"                                                                            \
                     : [src] "+r"(src), [dst] "+r"(dst)                                                   \
                     : [n] "r"(n), [o8] "w"(off8), [o16] "w"(off16), [adv] "r"(adv)                       \
                     : "lr", "q0", "memory")

static void run(const uint8_t *src, int32_t sin, uint8_t *dst, int32_t sout, int32_t n, uint8x16_t off8,
                uint16x8_t off16)
{
    if (sin == 1 && sout == 1) {
        const int32_t adv = 0;
        RUN_ASM("8", "vldrb.u8 q0, [%[src]], #16\n\t", "vstrb.8 q0, [%[dst]], #16\n\t", "src");
    } else if (sin == 1 && sout <= 17) { /* scatter */
        const int32_t adv = 16 * sout;
        RUN_ASM("8", "vldrb.u8 q0, [%[src]], #16\n\t", "vstrb.8 q0, [%[dst], %q[o8]]\n\t", "dst");
    } else if (sin == 1) {
        const int32_t adv = 8 * sout;
        RUN_ASM("16", "vldrb.u16 q0, [%[src]], #8\n\t", "vstrb.16 q0, [%[dst], %q[o16]]\n\t", "dst");
    } else if (sin <= 17) { /* gather */
        const int32_t adv = 16 * sin;
        RUN_ASM("8", "vldrb.u8 q0, [%[src], %q[o8]]\n\t", "vstrb.8 q0, [%[dst]], #16\n\t", "src");
    } else {
        const int32_t adv = 8 * sin;
        RUN_ASM("16", "vldrb.u16 q0, [%[src], %q[o16]]\n\t", "vstrb.16 q0, [%[dst]], #8\n\t", "src");
    }
}

/* Runs along output axis s->inner (the output's last, or the one the input reads in order where longer), the other
 * axes in output order: 16 elements a step through byte offsets (strides <= 17), 8 through halfword offsets
 * (<= 9362: 7 strides < 2^16), else one at a time. */
static void runs(const mcu_transpose_plan_t *s, const uint8_t *in, uint8_t *out)
{
    const int32_t inner = s->inner, *ax = s->ax;
    const int32_t sin = s->st[inner], sout = s->ost[inner], n = s->od[inner], stride = sin == 1 ? sout : sin;
    const uint8x16_t off8 = vmulq_n_u8(vidupq_n_u8(0, 1), (uint8_t)(stride <= 17 ? stride : 0));
    const uint16x8_t off16 = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)(stride <= 9362 ? stride : 0));
    for (int32_t i0 = 0; i0 < s->od[ax[0]]; ++i0) {
        for (int32_t i1 = 0; i1 < s->od[ax[1]]; ++i1) {
            const uint8_t *src = in + i0 * s->st[ax[0]] + i1 * s->st[ax[1]];
            uint8_t *dst = out + i0 * s->ost[ax[0]] + i1 * s->ost[ax[1]];
            for (int32_t i2 = 0; i2 < s->od[ax[2]]; ++i2, src += s->st[ax[2]], dst += s->ost[ax[2]]) {
                if (stride <= 9362) {
                    run(src, sin, dst, sout, n, off8, off16);
                } else {
                    for (int32_t i = 0; i < n; ++i) {
                        dst[i * sout] = src[i * sin];
                    }
                }
            }
        }
    }
}
#endif

mcu_status_t mcu_transpose_s8_mve(const mcu_transpose_params_t *params, const int8_t *input, int8_t *output)
{
#if MCU_HAVE_MVE
    mcu_transpose_plan_t s;
    const mcu_status_t status = mcu_transpose_plan(params, input, output, &s);
    if (status != MCU_OK) {
        return status;
    }
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    uint8_t table[BLOCK];
    int32_t axis, f;
    /* short runs: blocks of several runs where they fit the table */
    const int32_t block = s.od[s.inner] < 32 ? plan_block(&s, table, &axis, &f) : 0;
    if (block > s.od[s.inner]) {
        blocks(&s, table, axis, f, block, in, out);
    } else {
        runs(&s, in, out);
    }
    return MCU_OK;
#else
    (void)params, (void)input, (void)output;
    return MCU_ERR_ARG;
#endif
}
