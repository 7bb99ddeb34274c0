"""Data movement: transpose, concat (inputs as one array argument), nearest and bilinear upsampling, slice along one dim, gather by run-time indices.
Helium variants: the int8 transpose (gathers / scatters) and bilinear upsampling. C: runtime_c/kernels/shape, s16, float."""
from __future__ import annotations

from mcu.codegen.kernels import kernel, variant

SPECS = [
    kernel("mcu_transpose_s8", "shape", "mcu_transpose_params_t"),
    variant("mcu_transpose_s8_mve", "shape", "mcu_transpose_s8", ("mve",)),
    kernel("mcu_transpose_s16", "s16", "mcu_transpose_params_t"),
    kernel("mcu_transpose_f32", "float", "mcu_transpose_params_t"),
    kernel("mcu_concat_s8", "shape", "mcu_concat_params_t", input_array=True),
    kernel("mcu_concat_s16", "s16", "mcu_concat_params_t", input_array=True),
    kernel("mcu_concat_f32", "float", "mcu_concat_f32_params_t", input_array=True),
    kernel("mcu_upsample_nearest_s8", "shape", "mcu_upsample_params_t"),
    kernel("mcu_upsample_bilinear_s8", "shape", "mcu_upsample_bilinear_params_t"),
    variant("mcu_upsample_bilinear_s8_mve", "shape", "mcu_upsample_bilinear_s8", ("mve",)),
    kernel("mcu_upsample_nearest_f32", "float", "mcu_upsample_params_t"),
    kernel("mcu_slice_s8", "shape", "mcu_slice_params_t"),
    kernel("mcu_slice_s16", "s16", "mcu_slice_params_t"),
    kernel("mcu_slice_f32", "float", "mcu_slice_params_t"),
    kernel("mcu_gather_s8", "shape", "mcu_gather_params_t"),
    kernel("mcu_gather_s16", "s16", "mcu_gather_params_t"),
    kernel("mcu_gather_f32", "float", "mcu_gather_params_t"),
    kernel("mcu_scatter_s8", "shape", "mcu_gather_params_t"),
    kernel("mcu_scatter_s16", "s16", "mcu_gather_params_t"),
    kernel("mcu_scatter_f32", "float", "mcu_gather_params_t"),
    kernel("mcu_pad_s8", "shape", "mcu_pad_params_t"),
    kernel("mcu_pad_s16", "s16", "mcu_pad_params_t"),
    kernel("mcu_pad_f32", "float", "mcu_pad_params_t"),
]
