"""Elementwise arithmetic: add (same shapes, or broadcasting and sub), mul, and their int16 and float32 forms;
float32 division, minimum, maximum and power (mcu_binary_f32: float islands in integer models too);
the int8 add's Helium and scalar variants; the broadcasting int8 mul's and add's Helium and DSP variants (no constants
to prepare: their twins are the portable kernels'). C: runtime_c/kernels/elementwise, s16, float."""
from __future__ import annotations

from mcu.codegen.kernels import kernel, variant

SPECS = [
    kernel("mcu_add_s8", "elementwise", "mcu_add_params_t", inplace="elementwise"),
    kernel("mcu_add_broadcast_s8", "elementwise", "mcu_add_broadcast_params_t"),
    kernel("mcu_mul_s8", "elementwise", "mcu_mul_params_t"),
    kernel("mcu_add_s16", "s16", "mcu_add_params_t", inplace="elementwise"),
    kernel("mcu_mul_s16", "s16", "mcu_mul_params_t"),
    kernel("mcu_add_f32", "float", "mcu_binary_f32_params_t", inplace="elementwise"),
    kernel("mcu_mul_f32", "float", "mcu_binary_f32_params_t", inplace="elementwise"),
    kernel("mcu_binary_f32", "float", "mcu_binary_op_f32_params_t", inplace="elementwise"),
    variant("mcu_add_s8_mve", "elementwise", "mcu_add_s8", ("mve",)),
    variant("mcu_add_s8_fast", "elementwise", "mcu_add_s8"),
    variant("mcu_add_broadcast_s8_mve", "elementwise", "mcu_add_broadcast_s8", ("mve",)),
    variant("mcu_add_broadcast_s8_dsp", "elementwise", "mcu_add_broadcast_s8", ("dsp",)),
    variant("mcu_mul_s8_mve", "elementwise", "mcu_mul_s8", ("mve",)),
    variant("mcu_mul_s8_dsp", "elementwise", "mcu_mul_s8", ("dsp",)),
]
