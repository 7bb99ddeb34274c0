"""Multiply-accumulates of a lowered call, from its kernel name and parameters (mcu profile, soft-float prices)."""
from __future__ import annotations

import numpy as np


def op_macs(kernel: str, params: dict) -> int:
    """Multiply-accumulates of one call of `kernel` (a portable name; variants share their twin's)."""
    if kernel in ("mcu_conv2d_s8", "mcu_conv2d_grouped_s8", "mcu_conv2d_f32"):
        return int(np.prod(params["output"])) * int(np.prod(params["filter"][1:]))
    if kernel == "mcu_conv_transpose2d_s8":  # every input pixel times every tap (those cropped by padding too)
        return int(np.prod(params["input"])) * int(np.prod(params["filter"][:3]))
    if kernel == "mcu_upsample_bilinear_s8":
        return 4 * int(np.prod(params["output"]))
    if kernel in ("mcu_dwconv2d_s8", "mcu_dwconv2d_f32"):
        return int(np.prod(params["output"])) * params["filter"][1] * params["filter"][2]
    if kernel in ("mcu_fully_connected_s8", "mcu_fully_connected_f32"):
        return params["batches"] * params["in_features"] * params["out_features"]
    if kernel in ("mcu_rnn_f32", "mcu_lstm_f32"):  # per step, every gate's w_ih x and w_hh h
        gates = 4 if kernel == "mcu_lstm_f32" else 3 if params["cell"] == 1 else 1
        return params["batches"] * params["steps"] * gates * params["hidden"] * (params["input_size"] + params["hidden"])
    if kernel in ("mcu_matmul_s8", "mcu_matmul_f32"):
        return params["batches"] * params["m"] * params["k"] * params["n"]
    return 0
