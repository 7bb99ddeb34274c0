/* Float32 softmax over the last axis, with its own exp (no libm): e_i = exp(x_i - max), out_i = e_i / sum. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/mcu_kernels.h"

static float from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* exp(x), within 2 ulp (Cephes expf): x = k ln2 + r with |r| <= ln2 / 2 (ln2 split in two, Cody-Waite),
 * exp(r) by a degree-6 polynomial, times 2^k as two exact powers of two so a subnormal result rounds once. */
static float exp_f32(float x)
{
    if (x != x) {
        return x;
    }
    if (x < -103.972084f) {
        return 0.0f;
    }
    if (x > 88.7228394f) {
        return from_bits(0x7F800000u); /* +inf */
    }
    const float t = x * 1.44269504f + 0.5f;
    int32_t k = (int32_t)t; /* floor(t), t in [-150, 129) */
    if ((float)k > t) {
        k -= 1;
    }
    const float kf = (float)k;
    float r = x - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    const float z = r * r;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * z + r + 1.0f;
    const int32_t k1 = k / 2, k2 = k - k1; /* each in [-75, 64] */
    y = y * from_bits((uint32_t)(k1 + 127) << 23);
    return y * from_bits((uint32_t)(k2 + 127) << 23);
}

mcu_status_t mcu_softmax_f32(const mcu_softmax_params_t *params, const float *input, float *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->rows < 1 || params->cols < 1) {
        return MCU_ERR_ARG;
    }
    const int32_t cols = params->cols;
    for (int32_t r = 0; r < params->rows; ++r) {
        const float *in = input + r * cols;
        float *out = output + r * cols;
        float max = in[0];
        for (int32_t i = 1; i < cols; ++i) {
            max = in[i] > max ? in[i] : max;
        }
        float sum = 0.0f;
        for (int32_t i = 0; i < cols; ++i) {
            out[i] = exp_f32(in[i] - max); /* in[i] is read before out[i] is written: in place is safe */
            sum += out[i];
        }
        for (int32_t i = 0; i < cols; ++i) {
            out[i] = out[i] / sum;
        }
    }
    return MCU_OK;
}
