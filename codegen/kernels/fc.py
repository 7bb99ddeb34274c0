"""Fully connected layers, matmuls and recurrent layers (float32 GRU / RNN / LSTM over a sequence): portable int8,
int16 and float32, the int8 variants (int4 weights, Helium, DSP, scalar), the int16 DSP variants and the recurrent
layers' quad-weight variants. Constants: codegen/kernels/prepare.py; C: runtime_c/kernels/fc, s16, float."""
from __future__ import annotations

from mcu.codegen.kernels import GEMM2_DSP, GEMM3_DSP, GEMM_MVE, kernel, variant
from mcu.codegen.kernels.geometry import (INT4, dsp_widen_gain, fast_widen_gain, is_fc_gemm, is_matmul_gemm_dsp,
                                          is_matmul_gemm_mve, s16_fc_widen_gain)
from mcu.codegen.kernels.prepare import (prepare_dsp, prepare_dsp_gemm, prepare_fast, prepare_mve, prepare_rnn_quad,
                                         prepare_s4, prepare_s16_fc_dsp, prepare_s16_fc_dsp_wide)
from mcu.codegen.twins.fc import (fully_connected_gemm_s8_dsp_scratch_bytes, matmul_gemm_s8_dsp_scratch_bytes,
                                  matmul_gemm_s8_mve_scratch_bytes)
from mcu.codegen.twins.s16 import fully_connected_s16_dsp_scratch_bytes

FC = "mcu_fc_params_t"

SPECS = [
    kernel("mcu_fully_connected_s8", "fc", FC),
    kernel("mcu_fully_connected_s16", "s16", FC),
    kernel("mcu_fully_connected_f32", "float", "mcu_fc_f32_params_t"),
    kernel("mcu_matmul_s8", "fc", "mcu_matmul_params_t"),
    kernel("mcu_matmul_s16", "s16", "mcu_matmul_params_t"),
    kernel("mcu_matmul_f32", "float", "mcu_matmul_f32_params_t"),
    # recurrent layers over a whole sequence (mcu.importer.recurrent): the time loop inside the kernel
    kernel("mcu_rnn_f32", "float", "mcu_rnn_f32_params_t"),
    kernel("mcu_lstm_f32", "float", "mcu_rnn_f32_params_t"),
    variant("mcu_rnn_f32_quad", "float", "mcu_rnn_f32", prepare=prepare_rnn_quad),
    variant("mcu_lstm_f32_quad", "float", "mcu_lstm_f32", prepare=prepare_rnn_quad),
    variant("mcu_fully_connected_s4", "fc", "mcu_fully_connected_s8", INT4, prepare=prepare_s4),
    variant("mcu_fully_connected_s8_mve", "fc", "mcu_fully_connected_s8", ("mve",), prepare=prepare_mve,
            links=(GEMM_MVE,)),
    # over several rows: the 1x1 conv's 2x2 GEMM (is_fc_gemm), else one row at a time
    variant("mcu_fully_connected_gemm_s8_dsp", "fc", "mcu_fully_connected_s8", ("dsp",), is_fc_gemm,
            prepare_dsp_gemm, fully_connected_gemm_s8_dsp_scratch_bytes, links=(GEMM2_DSP, GEMM3_DSP),
            widen=dsp_widen_gain),
    variant("mcu_fully_connected_s8_dsp", "fc", "mcu_fully_connected_s8", ("dsp",), prepare=prepare_dsp),
    variant("mcu_fully_connected_s8_fast", "fc", "mcu_fully_connected_s8", prepare=prepare_fast,
            widen=fast_widen_gain),
    # rows sharing an rhs batch: its columns packed into the Helium GEMM core's weights (is_matmul_gemm_mve)
    variant("mcu_matmul_gemm_s8_mve", "fc", "mcu_matmul_s8", ("mve",), is_matmul_gemm_mve,
            scratch=matmul_gemm_s8_mve_scratch_bytes, links=(GEMM_MVE,)),
    variant("mcu_matmul_s8_mve", "fc", "mcu_matmul_s8", ("mve",)),
    # rows sharing an rhs batch: its columns packed into the 2x2 GEMM's stream (is_matmul_gemm_dsp), else row pairs
    variant("mcu_matmul_gemm_s8_dsp", "fc", "mcu_matmul_s8", ("dsp",), is_matmul_gemm_dsp,
            scratch=matmul_gemm_s8_dsp_scratch_bytes, links=(GEMM2_DSP,)),
    variant("mcu_matmul_s8_dsp", "fc", "mcu_matmul_s8", ("dsp",)),
    variant("mcu_matmul_s16_mve", "s16", "mcu_matmul_s16", ("mve",)),
    variant("mcu_matmul_s16_dsp", "s16", "mcu_matmul_s16", ("dsp",)),
    # int8 weights widened in the loop; stored int16 (_wide) where the flash budget pays (widen_weights)
    variant("mcu_fully_connected_s16_dsp", "s16", "mcu_fully_connected_s16", ("dsp",), prepare=prepare_s16_fc_dsp,
            scratch=fully_connected_s16_dsp_scratch_bytes, widen=s16_fc_widen_gain),
    variant("mcu_fully_connected_s16_dsp_wide", "s16", "mcu_fully_connected_s16", ("dsp",),
            prepare=prepare_s16_fc_dsp_wide, scratch=fully_connected_s16_dsp_scratch_bytes),
]
