"""Max and average pools (portable loop nests: raster order, strided output) in int8, int16 and float32, and the
int8 average pool's Helium, DSP and scalar variants. C: runtime_c/kernels/pool, s16, float."""
from __future__ import annotations

from mcu.codegen.kernels import kernel, variant

POOL, POOL_F32 = "mcu_pool2d_params_t", "mcu_pool2d_f32_params_t"

SPECS = [
    kernel("mcu_maxpool2d_s8", "pool", POOL, raster=True, strided=True),
    kernel("mcu_avgpool2d_s8", "pool", POOL, raster=True, strided=True),
    kernel("mcu_maxpool2d_s16", "s16", POOL, strided=True),
    kernel("mcu_avgpool2d_s16", "s16", POOL, strided=True),
    kernel("mcu_maxpool2d_f32", "float", POOL_F32, strided=True),
    kernel("mcu_avgpool2d_f32", "float", POOL_F32, strided=True),
    variant("mcu_avgpool2d_s8_mve", "pool", "mcu_avgpool2d_s8", ("mve",), raster=True, strided=True),
    variant("mcu_avgpool2d_s8_dsp", "pool", "mcu_avgpool2d_s8", ("dsp",), raster=True, strided=True),
    variant("mcu_avgpool2d_s8_fast", "pool", "mcu_avgpool2d_s8", raster=True, strided=True),
]
