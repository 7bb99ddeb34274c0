"""Converts between precisions (requantization int8 <-> int16, dequantize to and quantize from float32) and the
float32 layer norm (quantize="none"; int8 and int16 run codegen/kernels/norm.py's). C: runtime_c/kernels/fallback,
s16."""
from __future__ import annotations

from mcu.codegen.kernels import kernel

SPECS = [
    kernel("mcu_convert_s8_s16", "s16", "mcu_convert_params_t"),
    kernel("mcu_convert_s16_s8", "s16", "mcu_convert_params_t"),
    kernel("mcu_convert_s16_s16", "s16", "mcu_convert_params_t"),
    kernel("mcu_dequantize_s8_f32", "fallback", "mcu_dequantize_params_t"),
    kernel("mcu_quantize_f32_s8", "fallback", "mcu_quantize_params_t"),
    kernel("mcu_dequantize_s16_f32", "s16", "mcu_dequantize_params_t"),
    kernel("mcu_quantize_f32_s16", "s16", "mcu_quantize_params_t"),
    kernel("mcu_layer_norm_f32", "fallback", "mcu_layer_norm_params_t", inplace="elementwise"),
]
