"""Activations: softmax and elementwise functions through tables (int8: 256 entries; int16: 513, interpolated),
float32 softmax, clamp and the elementwise functions (mcu_unary_f32: exp, log, sin, ... without libm); the int8 table's
Helium (gathers from the table rotated by 128) and scalar variants; the int8 softmax's Helium variant (exp table
gathers, the row's division by a multiply-high). C: runtime_c/kernels/activation, s16, float."""
from __future__ import annotations

from mcu.codegen.kernels import kernel, variant
from mcu.codegen.kernels.prepare import prepare_lut_mve

SPECS = [
    kernel("mcu_softmax_s8", "activation", "mcu_softmax_params_t"),
    variant("mcu_softmax_s8_mve", "activation", "mcu_softmax_s8", ("mve",)),
    kernel("mcu_lut_s8", "activation", "mcu_lut_params_t", inplace="elementwise"),
    kernel("mcu_softmax_s16", "s16", "mcu_softmax_s16_params_t"),
    kernel("mcu_lut_s16", "s16", "mcu_lut_params_t", inplace="elementwise"),
    kernel("mcu_softmax_f32", "float", "mcu_softmax_params_t", inplace="elementwise"),
    kernel("mcu_clamp_f32", "float", "mcu_clamp_f32_params_t", inplace="elementwise"),
    kernel("mcu_unary_f32", "float", "mcu_unary_f32_params_t", inplace="elementwise"),
    variant("mcu_lut_s8_mve", "activation", "mcu_lut_s8", ("mve",), prepare=prepare_lut_mve),
    variant("mcu_lut_s8_fast", "activation", "mcu_lut_s8"),
]
