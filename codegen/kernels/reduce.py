"""Reductions over any dims (sum; mean through the multiplier or divisor). C: runtime_c/kernels/reduce, float."""
from __future__ import annotations

from mcu.codegen.kernels import kernel

SPECS = [
    kernel("mcu_reduce_sum_s8", "reduce", "mcu_reduce_params_t"),
    kernel("mcu_reduce_f32", "float", "mcu_reduce_f32_params_t"),
    kernel("mcu_arg_f32", "float", "mcu_arg_params_t"),
    kernel("mcu_argsort_f32", "float", "mcu_argsort_params_t"),
]
