/* Status codes and the shared parameter structs of the mcu runtime (C99, freestanding). */
#ifndef MCU_TYPES_H
#define MCU_TYPES_H

#include <stdint.h>

typedef enum {
    MCU_OK = 0,
    MCU_ERR_ARG = 1,         /* a NULL pointer or an out-of-range parameter */
    MCU_ERR_SHAPE = 2,       /* dims that do not agree with each other */
    MCU_ERR_ARENA_ALIGN = 3, /* a model's arena is not aligned to <MODEL>_ARENA_ALIGN */
    MCU_ERR_ARENA_SIZE = 4,  /* a model's arena is smaller than it needs (<model>_run_sized) */
    MCU_ERR_ARENA_GUARD = 5, /* debug builds: an op overwrote the guard bytes after the model's arena */
    MCU_ERR_INDEX = 6        /* an index input (a token id, a position) outside its table: nothing was read */
} mcu_status_t;

/* Tensor dims, always [N, H, W, C] (NHWC). A 2-d tensor [B, K] is {B, 1, 1, K}. */
typedef struct {
    int32_t n, h, w, c;
} mcu_dims_t;

/* Per-output-channel requantization: real multiplier = multiplier * 2^(shift - 31). */
typedef struct {
    const int32_t *multiplier; /* Q31, in [2^30, 2^31) or 0 */
    const int32_t *shift;      /* in [-31, 30]; > 0 shifts left */
} mcu_per_channel_quant_t;

#endif /* MCU_TYPES_H */
