"""Elementwise arithmetic: add (same shapes, or broadcasting and sub), mul, and their int16 and float32 forms;
float32 division, minimum, maximum and power (mcu_binary_f32: float islands in integer models too);
the int8 add's Helium and scalar variants; the broadcasting int8 mul's and add's Helium and DSP variants (no constants
to prepare: their twins are the portable kernels'); the adds and the Helium mul in 16-bit arithmetics where their
error bounds hold. C: runtime_c/kernels/elementwise, s16, float."""
from __future__ import annotations

from mcu.codegen.kernels import kernel, variant
from mcu.codegen.twins.add16 import h16_params, m16_params
from mcu.codegen.twins.mul16 import mul_h16_params


def _rewrite(build):
    """A prepare switching an add to another arithmetic: `build`'s params (None: declined, the next variant)."""
    def prepare(node, tensors):
        params = build(node.call.params)
        return None if params is None else (node.with_call(params=params), {})
    return prepare


SPECS = [
    kernel("mcu_add_s8", "elementwise", "mcu_add_params_t", inplace="elementwise"),
    kernel("mcu_add_broadcast_s8", "elementwise", "mcu_add_broadcast_params_t"),
    kernel("mcu_mul_s8", "elementwise", "mcu_mul_params_t"),
    kernel("mcu_add_s16", "s16", "mcu_add_params_t", inplace="elementwise"),
    kernel("mcu_mul_s16", "s16", "mcu_mul_params_t"),
    kernel("mcu_add_broadcast_s16", "s16", "mcu_add_broadcast_params_t"),
    variant("mcu_add_broadcast_s16_mve", "s16", "mcu_add_broadcast_s16", ("mve",)),
    variant("mcu_add_broadcast_s16_dsp", "s16", "mcu_add_broadcast_s16", ("dsp",)),
    kernel("mcu_add_f32", "float", "mcu_binary_f32_params_t", inplace="elementwise"),
    kernel("mcu_mul_f32", "float", "mcu_binary_f32_params_t", inplace="elementwise"),
    kernel("mcu_binary_f32", "float", "mcu_binary_op_f32_params_t", inplace="elementwise"),
    variant("mcu_add_h16_flat_s8_mve", "elementwise", "mcu_add_s8", ("mve",), prepare=_rewrite(h16_params),
            arithmetic="mcu_add_h16_s8"),
    variant("mcu_add_m16_flat_s8_dsp", "elementwise", "mcu_add_s8", ("dsp",), prepare=_rewrite(m16_params),
            arithmetic="mcu_add_m16_s8"),
    variant("mcu_add_s8_mve", "elementwise", "mcu_add_s8", ("mve",)),
    variant("mcu_add_s8_fast", "elementwise", "mcu_add_s8"),
    kernel("mcu_add_m16_s8", "elementwise", "mcu_add_m16_params_t"),
    kernel("mcu_add_h16_s8", "elementwise", "mcu_add_m16_params_t"),
    # 16-bit multipliers where their error bound holds (codegen/twins/add16.py), else the TFLite arithmetic's
    variant("mcu_add_h16_s8_mve", "elementwise", "mcu_add_broadcast_s8", ("mve",), prepare=_rewrite(h16_params),
            arithmetic="mcu_add_h16_s8"),
    variant("mcu_add_m16_s8_dsp", "elementwise", "mcu_add_broadcast_s8", ("dsp",), prepare=_rewrite(m16_params),
            arithmetic="mcu_add_m16_s8"),
    variant("mcu_add_broadcast_s8_mve", "elementwise", "mcu_add_broadcast_s8", ("mve",)),
    variant("mcu_add_broadcast_s8_dsp", "elementwise", "mcu_add_broadcast_s8", ("dsp",)),
    # cores without DSP or Helium (and where the bound fails for theirs, this declines too): the scalar m16 add
    variant("mcu_add_m16_s8_fast", "elementwise", "mcu_add_broadcast_s8", prepare=_rewrite(m16_params),
            arithmetic="mcu_add_m16_s8"),
    kernel("mcu_mul_h16_s8", "elementwise", "mcu_mul_h16_params_t"),
    # int16 lanes where its error bound holds (codegen/twins/mul16.py), else the TFLite arithmetic's
    variant("mcu_mul_h16_s8_mve", "elementwise", "mcu_mul_s8", ("mve",), prepare=_rewrite(mul_h16_params),
            arithmetic="mcu_mul_h16_s8"),
    variant("mcu_mul_s8_mve", "elementwise", "mcu_mul_s8", ("mve",)),
    variant("mcu_mul_s8_dsp", "elementwise", "mcu_mul_s8", ("dsp",)),
]
