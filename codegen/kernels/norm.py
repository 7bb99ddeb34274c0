"""Normalization: integer layer norm and RMS norm over the last axis (int8, int16), no float island.
C: runtime_c/kernels/norm (shared steps in runtime_c/include/mcu/mcu_norm.h); twins: codegen/twins/norm.py."""
from __future__ import annotations

from mcu.codegen.kernels import kernel, variant

SPECS = [
    kernel("mcu_layer_norm_s8", "norm", "mcu_norm_params_t", inplace="elementwise"),
    variant("mcu_layer_norm_s8_mve", "norm", "mcu_layer_norm_s8", ("mve",), inplace="elementwise"),
    kernel("mcu_rms_norm_s8", "norm", "mcu_norm_params_t", inplace="elementwise"),
    kernel("mcu_layer_norm_s16", "norm", "mcu_norm_params_t", inplace="elementwise"),
    kernel("mcu_rms_norm_s16", "norm", "mcu_norm_params_t", inplace="elementwise"),
]
