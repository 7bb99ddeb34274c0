/* Float32 elementwise functions of one tensor (and scalars): one loop per function, through mcu_fmath.h. */
#include <stddef.h>
#include <stdint.h>

#include "mcu/mcu_fmath.h"
#include "mcu/mcu_kernels.h"

/* log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|)). */
static float softplus(float x)
{
    const float a = x < 0.0f ? -x : x;
    return (x > 0.0f ? x : 0.0f) + mcu_logf(1.0f + mcu_expf(-a));
}

static float apply(int32_t op, float x, float a, float b, float c)
{
    switch (op) {
    case MCU_UNARY_ABS: return mcu_f32_from_bits(mcu_f32_bits(x) & 0x7FFFFFFFu);
    case MCU_UNARY_NEG: return -x;
    case MCU_UNARY_EXP: return mcu_expf(x);
    case MCU_UNARY_LOG: return mcu_logf(x);
    case MCU_UNARY_SQRT: return mcu_sqrtf(x);
    case MCU_UNARY_RSQRT: return 1.0f / mcu_sqrtf(x);
    case MCU_UNARY_RECIPROCAL: return 1.0f / x;
    case MCU_UNARY_SQUARE: return x * x;
    case MCU_UNARY_SIN: return mcu_sincosf(x, 0);
    case MCU_UNARY_COS: return mcu_sincosf(x, 1);
    case MCU_UNARY_SIGMOID: return mcu_sigmoidf(x);
    case MCU_UNARY_TANH: return mcu_tanhf(x);
    case MCU_UNARY_FLOOR: return mcu_floorf(x);
    case MCU_UNARY_CEIL: return mcu_ceilf(x);
    case MCU_UNARY_ROUND: return mcu_rintf(x);
    case MCU_UNARY_TRUNC: return mcu_truncf(x);
    case MCU_UNARY_SIGN: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
    case MCU_UNARY_ERF: return mcu_erff(x);
    case MCU_UNARY_LEAKY_RELU: return x > 0.0f ? x : x * a;
    case MCU_UNARY_ELU: return x > 0.0f ? x * b : (mcu_expf(x * c) - 1.0f) * a * b;
    case MCU_UNARY_HARDSWISH: {
        float t = x + 3.0f;
        t = t < 0.0f ? 0.0f : (t > 6.0f ? 6.0f : t);
        return x * t / 6.0f;
    }
    case MCU_UNARY_HARDSIGMOID: {
        float t = x + 3.0f;
        t = t < 0.0f ? 0.0f : (t > 6.0f ? 6.0f : t);
        return t / 6.0f;
    }
    case MCU_UNARY_SILU: return x * mcu_sigmoidf(x);
    case MCU_UNARY_MISH: return x * mcu_tanhf(softplus(x));
    case MCU_UNARY_SOFTPLUS: return x * a > b ? x : softplus(x * a) / a;
    case MCU_UNARY_GELU: return 0.5f * x * (1.0f + mcu_erff(x * 0.707106781f));
    case MCU_UNARY_GELU_TANH: return 0.5f * x * (1.0f + mcu_tanhf(0.797884561f * (x + 0.044715f * x * x * x)));
    case MCU_UNARY_HARDSHRINK: return (x > a || x < -a) ? x : 0.0f;
    case MCU_UNARY_SOFTSHRINK: return x > a ? x - a : (x < -a ? x + a : 0.0f);
    case MCU_UNARY_THRESHOLD: return x > a ? x : b;
    case MCU_UNARY_LOG_SIGMOID: return -softplus(-x);
    case MCU_UNARY_AFFINE: return x * a + b;
    case MCU_UNARY_DIV: return x / a;
    case MCU_UNARY_POW: return mcu_expf(a * mcu_logf(x));
    case MCU_UNARY_LOG1P: return mcu_logf(1.0f + x);
    case MCU_UNARY_EXPM1: return mcu_expf(x) - 1.0f;
    case MCU_UNARY_ATAN: return mcu_atanf(x);
    case MCU_UNARY_ASIN: return mcu_asinf(x);
    case MCU_UNARY_ACOS: return mcu_acosf(x);
    default: return x;
    }
}

mcu_status_t mcu_unary_f32(const mcu_unary_f32_params_t *params, const float *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->size < 1 || params->op < 0 || params->op >= MCU_UNARY_COUNT) {
        return MCU_ERR_ARG;
    }
    const int32_t op = params->op;
    const float a = params->a, b = params->b, c = params->c;
    for (int32_t i = 0; i < params->size; ++i) {
        output[i] = apply(op, input[i], a, b, c);
    }
    return MCU_OK;
}
