"""Every optimized kernel variant equals its portable twin bit for bit, on the board that picks it, under QEMU.

- A case group is one hand-made lowered graph of independent portable kernel calls with seeded random
  shapes and quantization (odd channel counts, K tails, batch 2, strides, padding, dilation, extreme
  offsets, shifts that take the slow path, narrow clamps), so one firmware build checks many variants.
- select_kernels swaps in the board's variants (Helium on mps3-an547, DSP on mps2-an386, scalar _fast on
  mps2-an385) and prepares their constants; codegen/reference.py runs the portable twins on the
  unprepared constants, so a wrong `prepare` fails here as surely as a wrong kernel.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mcu.boards import load_board
from mcu.build.firmware import build_firmware
from mcu.codegen.emit import emit
from mcu.codegen.ir import Graph, Node, QParams, Tensor, verify
from calls import call
from mcu.codegen.kernels import KERNELS
from mcu.codegen.kernels.geometry import FAST_WIDE_ROWS, is_dw_any_mve, is_fc_gemm
from mcu.codegen.memory import Location, plan_graph
from mcu.codegen.plan_verifier import verify_tensor_plan
from mcu.codegen.sharing import overlap_gap
from mcu.codegen.target import Target
from mcu.codegen.twins.add16 import h16_params, m16_params
from mcu.codegen.passes.select_kernels import select_kernels
from mcu.codegen.passes.widen_weights import widen_weights
from mcu.codegen.reference import run_reference
from mcu.memory_planner import Plan
from mcu.qemu.runner import run_firmware
from mcu.codegen.twins.quant import INT32_MAX, INT32_MIN, quantize_multipliers

BOARDS = ["mps2-an386", "mps3-an547", "mps2-an385"]
SUFFIX = {"mps2-an386": "_dsp", "mps3-an547": "_mve", "mps2-an385": "_fast"}


class GraphBuilder:
    """Independent portable calls, each reading its own graph input and writing its own graph output."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.expect: dict[str, str] = {}  # node name -> kernel suffix family ("1x1", "gemm", ...)

    def _io(self, name: str, shape) -> str:
        self.tensors[name] = Tensor(name, tuple(shape), "int8", QParams.tensor(0.05, 0), layout="NHWC")
        return name

    def _const(self, name: str, data: np.ndarray, dtype: str) -> str:
        self.tensors[name] = Tensor(name, tuple(data.shape), dtype, data=data)
        return name

    def _quant(self, name: str, channels: int, taps: int, wmax: int, mode: str) -> tuple[str, str]:
        """Per-channel (multiplier, shift) that keep most outputs inside int8, so rounding is what is tested:
        "normal" scales a random Q31 multiplier to the accumulator spread; "ties" uses 2^30 (x0.5) and shifts
        -1..-3 so many values land on rounding ties; "slow" uses shifts 0..2, the kernels' mcu_requantize path."""
        spread = np.sqrt(taps) * 74.0 * max(wmax / np.sqrt(3.0), 0.6)
        if mode == "ties":
            mult, shift = np.full(channels, 1 << 30), self.rng.integers(-3, 0, channels)
        elif mode == "slow":
            mult, shift = self.rng.integers(1 << 30, 1 << 31, channels), self.rng.integers(0, 3, channels)
        else:
            reals = 40.0 / spread * 2.0 ** self.rng.uniform(-1, 1, channels)
            mult, shift = quantize_multipliers(reals)
        return (self._const(f"{name}_m", np.asarray(mult, np.int32), "int32"),
                self._const(f"{name}_s", np.asarray(shift, np.int32), "int32"))

    def _offsets(self, extreme: bool | str):
        if extreme == "full":  # no clamp but int8's: the DSP variants' assembly (fast mode) runs
            return int(self.rng.integers(-127, 129)), int(self.rng.integers(-128, 128)), -128, 127
        if extreme:  # the ends of the ranges, and a clamp narrower than int8
            zo = int(self.rng.choice([-128, 127]))
            return int(self.rng.choice([-127, 128])), zo, max(-128, zo - 40), min(127, zo + 30)
        zo = int(self.rng.integers(-128, 128))
        act_min = zo if self.rng.random() < 0.5 else -128  # a fused ReLU, or none
        return int(self.rng.integers(-127, 129)), zo, act_min, 127

    def _call(self, kernel: str, params: dict, inputs, output: str, quant=None, family: str = "") -> None:
        name = f"n{len(self.nodes)}"
        self.nodes.append(call(name, KERNELS[kernel].name, inputs, output, params, quant))
        self.expect[name] = family

    def conv(self, n, h, w, c_in, c_out, kernel=(3, 3), stride=(1, 1), pad=(0, 0), dil=(1, 1), bias=True,
             depthwise=False, extreme=False, mode="normal", family="", pad_end=None, wmax=None):
        """pad_end: the padding after the input (default: pad), as TF's 'same' pads more there; wmax: the largest
        |weight| (default 127, 2 in the "ties" and "slow" modes)."""
        i = len(self.nodes)
        kh, kw = kernel
        end = pad if pad_end is None else pad_end
        oh = (h + pad[0] + end[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (w + pad[1] + end[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
        x = self._io(f"x{i}", (n, h, w, c_in))
        y = self._io(f"y{i}", (n, oh, ow, c_out))
        fshape = (1, kh, kw, c_out) if depthwise else (c_out, kh, kw, c_in)
        wmax = wmax or (127 if mode == "normal" else 2)
        wt = self._const(f"w{i}", self.rng.integers(-wmax, wmax + 1, fshape).astype(np.int8), "int8")
        bmax = 3000 if mode == "normal" else 30
        b = self._const(f"b{i}", self.rng.integers(-bmax, bmax, c_out).astype(np.int32), "int32") if bias else None
        in_off, zo, lo, hi = self._offsets(extreme)
        taps = kh * kw * (1 if depthwise else c_in)
        params = {"input": (n, h, w, c_in), "filter": fshape, "output": (n, oh, ow, c_out),
                  "stride_h": stride[0], "stride_w": stride[1], "pad_top": pad[0], "pad_left": pad[1],
                  "dilation_h": dil[0], "dilation_w": dil[1], "input_offset": in_off, "output_offset": zo,
                  "act_min": lo, "act_max": hi}
        kernel_name = "mcu_dwconv2d_s8" if depthwise else "mcu_conv2d_s8"
        self.inputs.append(x)
        self.outputs.append(y)
        self._call(kernel_name, params, (x, wt, b), y, self._quant(f"q{i}", c_out, taps, wmax, mode), family)

    def fc(self, batches, k, n_out, bias=True, extreme=False, mode="normal", family="fc", wmax=None):
        i = len(self.nodes)
        x, y = self._io(f"x{i}", (batches, k)), self._io(f"y{i}", (batches, n_out))
        bmax = 3000 if mode == "normal" else 30
        wmax = wmax or (127 if mode == "normal" else 2)
        wt = self._const(f"w{i}", self.rng.integers(-wmax, wmax + 1, (n_out, k)).astype(np.int8), "int8")
        b = self._const(f"b{i}", self.rng.integers(-bmax, bmax, n_out).astype(np.int32), "int32") if bias else None
        in_off, zo, lo, hi = self._offsets(extreme)
        params = {"batches": batches, "in_features": k, "out_features": n_out, "input_offset": in_off,
                  "output_offset": zo, "act_min": lo, "act_max": hi}
        self.inputs.append(x)
        self.outputs.append(y)
        self._call("mcu_fully_connected_s8", params, (x, wt, b), y, self._quant(f"q{i}", n_out, k, wmax, mode),
                   family)

    def add(self, size, extreme=False):
        i = len(self.nodes)
        a, b, y = self._io(f"x{i}", (1, size)), self._io(f"z{i}", (1, size)), self._io(f"y{i}", (1, size))
        r = self.rng
        m = [int(v) for v in r.integers(1 << 30, 1 << 31, 3)]
        in_off, zo, lo, hi = self._offsets(extreme)
        params = {"size": size, "left_shift": 20,
                  "input1_offset": in_off, "input1_multiplier": m[0], "input1_shift": int(r.integers(-3, 0)),
                  "input2_offset": int(r.integers(-127, 129)), "input2_multiplier": m[1],
                  "input2_shift": int(r.integers(-3, 0)), "output_offset": zo, "output_multiplier": m[2],
                  "output_shift": int(r.integers(-22, -17)), "act_min": lo, "act_max": hi}
        self.inputs += [a, b]
        self.outputs.append(y)
        self._call("mcu_add_s8", params, (a, b), y, None, "add")

    def avgpool(self, n, h, w, c, kernel, stride, pad=(0, 0), divisor=0, extreme=False):
        i = len(self.nodes)
        oh, ow = (h + 2 * pad[0] - kernel[0]) // stride[0] + 1, (w + 2 * pad[1] - kernel[1]) // stride[1] + 1
        x, y = self._io(f"x{i}", (n, h, w, c)), self._io(f"y{i}", (n, oh, ow, c))
        _, zp, lo, hi = self._offsets(extreme)
        params = {"input": (n, h, w, c), "output": (n, oh, ow, c), "kernel_h": kernel[0], "kernel_w": kernel[1],
                  "stride_h": stride[0], "stride_w": stride[1], "pad_top": pad[0], "pad_left": pad[1],
                  "zero_point": zp, "divisor": divisor, "act_min": lo, "act_max": hi}
        self.inputs.append(x)
        self.outputs.append(y)
        self._call("mcu_avgpool2d_s8", params, (x,), y, None, "avgpool")

    def graph(self) -> Graph:
        return verify(Graph(dict(self.tensors), tuple(self.nodes), tuple(self.inputs), tuple(self.outputs)))


def gemm_cases(seed: int) -> GraphBuilder:
    g = GraphBuilder(seed)
    g.conv(2, 5, 6, 13, 7, kernel=(1, 1), family="1x1")                        # odd channels, batch 2
    g.conv(1, 9, 8, 16, 10, kernel=(1, 1), stride=(2, 2), extreme=True, family="1x1")
    g.conv(1, 7, 7, 8, 6, pad=(1, 1), bias=False, family="gemm")               # DSP direct widening
    g.conv(1, 11, 10, 3, 5, stride=(2, 2), pad=(1, 1), family="gemm")          # c_in 3: gathered windows
    g.conv(1, 11, 8, 4, 9, kernel=(5, 3), stride=(2, 1), pad=(2, 1), dil=(1, 2), extreme=True, family="gemm")
    g.conv(1, 7, 6, 16, 4, family="gemm")                                      # MVE: rows read in place
    g.conv(1, 6, 6, 5, 3, kernel=(1, 1), mode="slow", family="1x1")           # shifts >= 0: mcu_requantize
    g.conv(1, 5, 5, 2, 5, kernel=(2, 2), mode="slow", extreme=True, family="gemm")
    g.fc(1, 37, 11)                                                            # K tails
    g.fc(3, 64, 4, bias=False, extreme=True)
    g.fc(2, 5, 9, mode="slow")
    g.conv(1, 5, 5, 8, 6, kernel=(1, 1), mode="ties", family="1x1")           # rounding ties
    g.conv(1, 5, 5, 7, 5, pad=(1, 1), mode="ties", extreme=True, family="gemm")
    g.conv(1, 6, 5, 16, 6, mode="ties", family="gemm")
    g.fc(2, 24, 7, mode="ties", extreme=True)
    g.fc(FAST_WIDE_ROWS, 21, 6, extreme=True)                                  # the _fast GEMM's split words
    return g


def dw_add_cases(seed: int) -> GraphBuilder:
    g = GraphBuilder(seed)
    g.conv(1, 6, 7, 13, 13, pad=(1, 1), depthwise=True, family="dw")          # channel tails
    g.conv(2, 9, 9, 24, 24, stride=(2, 2), pad=(1, 1), depthwise=True, extreme=True, family="dw")
    g.conv(1, 8, 8, 8, 8, pad=(2, 2), dil=(2, 2), depthwise=True, bias=False, family="dw")
    g.conv(1, 5, 5, 64, 64, depthwise=True, family="dw")
    g.conv(1, 5, 4, 6, 6, pad=(1, 1), depthwise=True, mode="slow", family="dw")
    g.conv(1, 5, 6, 4, 8, pad=(1, 1), depthwise=True, family="")               # ch_mult 2: stays portable
    g.conv(1, 6, 6, 12, 12, pad=(1, 1), depthwise=True, mode="ties", extreme=True, family="dw")
    g.conv(1, 6, 6, 20, 20, pad=(1, 1), depthwise=True, mode="ties", family="dw")
    g.add(1000)
    g.add(50, extreme=True)
    g.add(333)
    g.avgpool(1, 25, 5, 67, (25, 5), (1, 1))                                   # global pool, channel tail
    g.avgpool(2, 7, 7, 5, (3, 3), (2, 2), pad=(1, 1), extreme=True)            # padding skipped
    g.avgpool(1, 20, 20, 4, (20, 20), (1, 1), divisor=300)                     # > 257 taps: lanes flushed
    return g


def dsp_path_cases(seed: int) -> GraphBuilder:
    """Every assembly path of the DSP GEMM and depthwise variants, in fast mode (int8 clamp, shifts <= -2): 2x2 GEMM
    step counts at the control-word edges (S = 1, 2, 16, 17, 18, 33), odd channel and pixel counts, a C_out of 1,
    the strided 1x1 walker; compact windows (3 x 9-byte rows from the input, near its end, and gathered), window
    rows in pieces, dilation; depthwise runs (stride 1, 2), per-pixel windows (dilation, stride 3), border taps,
    channel tails, no interior at all, padding at the end only. Outputs of >= 256 pixels store int16 weights
    (geometry.dsp_wide): the same step counts and a narrow clamp (the C pair) in that layout too."""
    g = GraphBuilder(seed)
    f = "full"
    for c_in in (4, 8, 64, 68, 72, 132):
        g.conv(1, 3, 3, c_in, 6, kernel=(1, 1), extreme=f, family="1x1")      # 9 pixels: a lone last one
    g.conv(2, 5, 3, 16, 5, kernel=(1, 1), extreme=f, family="1x1")            # odd C_out, batch 2
    g.conv(1, 5, 5, 12, 1, kernel=(1, 1), extreme=f, family="1x1")            # C_out 1: no whole pair
    g.conv(1, 9, 7, 8, 3, kernel=(1, 1), stride=(2, 2), extreme=f, family="1x1")
    g.conv(1, 12, 11, 3, 8, stride=(2, 2), pad=(1, 1), extreme=f, family="gemm")   # RGB 3x3: 9-byte rows
    g.conv(1, 7, 7, 3, 5, pad=(1, 1), extreme=f, family="gemm")               # ... up to the input's end
    g.conv(1, 6, 6, 1, 4, pad=(1, 1), extreme=f, family="gemm")               # compact, gathered
    g.conv(1, 5, 5, 5, 3, kernel=(2, 2), extreme=f, family="gemm")            # compact 2 x 10
    g.conv(1, 8, 8, 48, 4, pad=(1, 1), extreme=f, family="gemm")              # rows in pieces
    g.conv(1, 9, 9, 16, 6, pad=(2, 2), dil=(2, 2), extreme=f, family="gemm")  # dilated: rows gathered
    g.conv(1, 12, 6, 1, 6, kernel=(10, 4), stride=(2, 2), pad=(4, 1), extreme=f, family="gemm")  # KWS-like
    g.conv(1, 9, 10, 8, 8, pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 10, 9, 16, 16, stride=(2, 2), pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 7, 7, 12, 12, depthwise=True, extreme=f, family="dw")           # no padding: runs only
    g.conv(2, 6, 6, 13, 13, pad=(1, 1), depthwise=True, extreme=f, family="dw")   # channel tail, batch 2
    g.conv(1, 8, 8, 68, 68, pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 9, 9, 8, 8, pad=(2, 2), dil=(2, 2), depthwise=True, extreme=f, family="dw")
    g.conv(1, 11, 11, 8, 8, stride=(3, 3), pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 3, 3, 4, 4, pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 2, 2, 8, 8, pad=(1, 1), depthwise=True, extreme=f, family="dw")  # no interior pixel
    g.conv(1, 8, 8, 8, 8, stride=(2, 2), pad_end=(1, 1), depthwise=True, extreme=f, family="dw")  # 'same'
    g.conv(1, 7, 8, 12, 12, pad_end=(2, 2), depthwise=True, extreme=f, family="dw")
    g.conv(1, 8, 8, 3, 6, stride=(2, 2), pad_end=(1, 1), extreme=f, family="gemm")
    for c_in in (4, 68, 72):                                                  # int16 weights: S = 1, 17, 18
        g.conv(1, 16, 17, c_in, 5, kernel=(1, 1), extreme=f, family="1x1")    # 272 pixels
    g.conv(1, 16, 16, 8, 3, pad=(1, 1), extreme=f, family="gemm")             # 256 pixels, S = 18
    g.conv(1, 16, 16, 8, 4, pad=(1, 1), extreme=True, family="gemm")          # narrow clamp: the C pair
    return g


def large_window_cases(seed: int) -> GraphBuilder:
    """Windows of more than 1024 taps (1024 channels for depthwise), which the DSP and scalar variants took only
    once their scratch came from the arena: 1x1, general (rows read in place and gathered in pieces at the
    borders, dilated, strided, rows not whole steps), depthwise 3x3 (channel tail) and fully connected, mostly
    in the DSP assembly's fast mode. Weights within +-7 keep the scalar GEMM's split exact (128 * sum|w| < 2^23)."""
    g = GraphBuilder(seed)
    f = "full"
    g.conv(1, 4, 3, 1100, 6, kernel=(1, 1), extreme=f, family="1x1", wmax=7)
    g.conv(1, 5, 5, 1030, 5, kernel=(1, 1), stride=(2, 2), mode="slow", family="1x1")
    g.conv(1, 7, 6, 150, 5, pad=(1, 1), extreme=f, family="gemm", wmax=7)            # K 1350, rows of 450
    g.conv(1, 9, 9, 130, 4, pad=(2, 2), dil=(2, 2), extreme=f, family="gemm", wmax=7)  # rows of 390: padded to 392
    g.conv(1, 9, 8, 48, 3, kernel=(5, 5), stride=(2, 2), extreme=f, family="gemm", wmax=7)  # K 1200, no padding
    g.conv(1, 6, 6, 120, 5, pad=(1, 1), extreme=True, family="gemm", wmax=7)         # K 1080, narrow clamp: C
    g.conv(1, 4, 4, 1100, 1100, pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(1, 5, 4, 1030, 1030, stride=(2, 2), pad=(1, 1), depthwise=True, family="dw")  # channel tail of 2
    g.fc(2, 1500, 10, extreme=f, wmax=7)
    g.fc(1, 2001, 5, mode="slow")
    return g


def mve_path_cases(seed: int) -> GraphBuilder:
    """Every path of the Helium GEMM (3 pixels x 4 channels) and its windows: rows of KW * C_in a multiple of 16
    read in place, rows in the vertical padding read as a zero-point row, rows clipped at the sides gathered,
    dilated rows gathered tap by tap; compact windows (rows not whole chunks) gathered through the byte-offset
    table (span <= 256), row by row (a wider span), dilated, at the borders; 1x1 strided, with K tails, batch 2;
    pixel counts 1 and 2 past a whole block; K <= 16 (inputs held across channels), K 17..32 (3 pixels' chunks
    held), K <= 64 (a pixel's chunks held); C_out not a multiple of 4 (1, 2, 5, 7); shifts >= 0 (the general
    requantization) and ties; narrow clamps."""
    g = GraphBuilder(seed)
    g.conv(1, 9, 8, 16, 8, pad=(1, 1), family="gemm")                                 # rows in place, zp rows
    g.conv(1, 9, 9, 32, 7, stride=(2, 2), pad=(1, 1), extreme=True, family="gemm")    # C_in 32, stride 2
    g.conv(1, 8, 7, 16, 5, pad=(2, 2), dil=(2, 2), family="gemm")                     # dilated rows gathered
    g.conv(1, 6, 6, 16, 4, kernel=(3, 1), pad=(1, 0), pad_end=(2, 0), family="gemm")  # KW 1, padding at the end
    g.conv(1, 10, 11, 3, 16, pad=(1, 1), family="gemm")                               # RGB: offsets gather
    g.conv(1, 11, 10, 3, 6, stride=(2, 2), pad=(1, 1), extreme=True, family="gemm")
    g.conv(1, 6, 100, 3, 5, pad=(1, 1), family="gemm")                                # span > 256: row copies
    g.conv(1, 9, 96, 3, 8, stride=(2, 2), pad=(1, 1), extreme=True, family="gemm")    # ... VWW's first layer
    g.conv(1, 9, 90, 3, 4, pad=(2, 1), dil=(2, 1), family="gemm")                     # ... dilated vertically
    g.conv(1, 9, 9, 5, 7, pad=(2, 2), dil=(2, 2), family="gemm")                      # compact, dilated
    g.conv(1, 12, 6, 1, 5, kernel=(10, 4), stride=(2, 2), pad=(4, 1), family="gemm")   # KWS-like K 40
    g.conv(1, 7, 7, 24, 2, pad=(1, 1), mode="slow", family="gemm")                    # compact K 216, shifts >= 0
    g.conv(1, 5, 5, 16, 1, pad=(1, 1), mode="ties", extreme=True, family="gemm")      # C_out 1
    g.conv(1, 8, 8, 16, 6, mode="slow", extreme=True, family="gemm")                  # rows, shifts >= 0
    g.conv(1, 9, 9, 16, 32, kernel=(1, 1), stride=(2, 2), family="1x1")               # 1x1 stride 2
    g.conv(1, 7, 7, 20, 9, kernel=(1, 1), stride=(2, 2), mode="slow", family="1x1")   # K tail of 4
    g.conv(2, 4, 5, 40, 6, kernel=(1, 1), extreme=True, family="1x1")                 # batch 2, 40 pixels
    g.conv(1, 2, 2, 7, 5, kernel=(1, 1), mode="ties", family="1x1")                   # 4 pixels: one past a block
    g.conv(1, 8, 9, 8, 16, kernel=(1, 1), family="1x1")                               # K <= 16: inputs held
    g.conv(1, 7, 7, 16, 10, kernel=(1, 1), extreme=True, family="1x1")                # ... K 16, C_out 10
    g.conv(1, 5, 8, 3, 8, kernel=(1, 1), mode="ties", family="1x1")                   # ... K 3, ties
    g.conv(1, 5, 5, 64, 16, kernel=(1, 1), family="1x1")                              # K 17..64, C_out 16, 20, ...:
    g.conv(1, 4, 5, 48, 20, kernel=(1, 1), extreme=True, family="1x1")                # one pixel's chunks held
    g.conv(1, 3, 7, 20, 16, kernel=(1, 1), mode="ties", family="1x1")                 # ... a tail of 4
    g.conv(1, 6, 5, 33, 24, kernel=(1, 1), stride=(2, 1), extreme=True, family="1x1")  # ... a tail of 1
    g.conv(1, 6, 7, 32, 12, kernel=(1, 1), mode="ties", family="1x1")                 # K 17..32: 3 pixels' chunks
    g.conv(1, 5, 7, 27, 8, kernel=(1, 1), extreme=True, family="1x1")                 # ... held (a tail of 11)
    g.fc(4, 40, 16)
    g.fc(1, 9, 5)
    g.fc(5, 48, 10, mode="slow", extreme=True)
    return g


def avgpool_mve_cases(seed: int) -> GraphBuilder:
    """The Helium average pool: channel counts around its vectors (1, 3, 4, 5, 16, 17) and 32-channel passes (64,
    100), global pools, 2x2 / 3x3 windows with stride and padding (border windows: fewer taps, divisor by count),
    divisor overrides (the vector division, and d = 1 and huge d: the scalar one), > 256 taps (int16 lanes flushed),
    batch 2, narrow clamps."""
    g = GraphBuilder(seed)
    g.avgpool(1, 8, 8, 64, (8, 8), (1, 1))                                     # IC's global pool
    g.avgpool(2, 5, 6, 100, (5, 6), (1, 1), extreme=True)                      # 3 passes + tail of 4, batch 2
    g.avgpool(1, 7, 7, 1, (7, 7), (1, 1))
    g.avgpool(1, 20, 20, 17, (20, 20), (1, 1), extreme=True)                   # 400 taps: flushed
    for c in (1, 3, 4, 5, 16, 17):
        g.avgpool(1, 7, 8, c, (3, 3), (2, 2), pad=(1, 1), extreme=c % 2 == 1)  # padding skipped
        g.avgpool(2, 6, 5, c, (2, 2), (2, 1))
    g.avgpool(1, 9, 9, 64, (3, 3), (1, 1), pad=(1, 1), divisor=9)             # count_include_pad-like
    g.avgpool(2, 6, 6, 100, (2, 2), (2, 2), divisor=3, extreme=True)
    g.avgpool(1, 5, 5, 17, (3, 3), (2, 2), pad=(1, 1), divisor=1)             # d = 1: scalar division
    g.avgpool(1, 4, 4, 5, (2, 2), (1, 1), divisor=70000)                      # n * d >= 2^32: scalar division
    g.avgpool(1, 6, 7, 33, (1, 1), (1, 1))                                     # 1 tap, count 1
    return g


def expected_kernel(node: Node, family: str, board: str) -> str:
    base = node.call.kernel
    if not family:
        return base
    stem = {"1x1": "mcu_conv2d_1x1_s8", "gemm": "mcu_conv2d_s8", "fc": "mcu_fully_connected_s8",
            "dw": "mcu_dwconv2d_3x3_s8", "add": "mcu_add_s8", "avgpool": "mcu_avgpool2d_s8"}[family]
    fast_add = {"mps2-an386": ("mcu_add_m16_flat_s8_dsp", m16_params), "mps3-an547": ("mcu_add_h16_flat_s8_mve",
                                                                                    h16_params)}
    if family == "add" and board in fast_add and fast_add[board][1](node.call.params):
        return fast_add[board][0]  # 16-bit multipliers where their error bound holds (codegen/twins/add16.py)
    if (family == "avgpool" and SUFFIX[board] == "_fast") or (family == "add" and board == "mps2-an386"):
        return stem + "_fast"  # one scalar kernel serves these cores
    if family == "dw" and board == "mps3-an547" and KERNELS["mcu_dwconv2d_s8_mve_planar"].applies(node.call.params):
        return "mcu_dwconv2d_s8_mve_planar"  # 3x3 at stride 1 on a large enough image: a channel at a time
    if family == "dw" and board == "mps3-an547" and is_dw_any_mve(node.call.params):
        return "mcu_dwconv2d_s8_mve"  # any window, and a 3x3 one on the in-place geometry
    if family == "fc" and board == "mps2-an386" and is_fc_gemm(node.call.params):
        return "mcu_fully_connected_gemm_s8_dsp"  # several rows: the 1x1 conv's 2x2 GEMM
    return stem + SUFFIX[board]


def selected(graph: Graph, board: str) -> Graph:
    """graph's calls as the board's variants, their weights widened at the fixed exchange rate (no budget)."""
    target = Target.of_board(load_board(board))
    return widen_weights(select_kernels(graph, target), target)


def run_on_board(graph: Graph, board: str, inputs: list[np.ndarray], out_dir, mem=None) -> list[np.ndarray]:
    """Plan (unless a plan `mem` is given), emit, build and run `graph` on `board`; the raw outputs in graph order."""
    if mem is None:
        graph, mem = plan_graph(graph)
    texts, manifest = emit(graph, mem, board=board)
    for name, text in {**texts, "manifest.json": manifest.to_json()}.items():
        (out_dir / name).write_text(text)
    elf = build_firmware(board, out_dir, out_dir / "build")
    res = run_firmware(elf, load_board(board), b"".join(x.tobytes() for x in inputs), timeout=60)
    assert res.status == 0, f"model returned status {res.status}"
    outs, pos = [], 0
    for name in graph.outputs:
        t = graph.tensors[name]
        outs.append(np.frombuffer(res.output_bytes[pos:pos + t.nbytes], np.dtype(t.dtype)).reshape(t.shape))
        pos += t.nbytes
    return outs


def assert_equal_int(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    bad = np.argwhere(actual != expected)
    if len(bad):
        i = tuple(int(v) for v in bad[0])
        raise AssertionError(f"{what}: {len(bad)} of {actual.size} differ; first at {i}: device {actual[i]}, "
                             f"reference {expected[i]}")


@pytest.mark.qemu
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("cases", [gemm_cases, dw_add_cases, dsp_path_cases], ids=["gemm", "dw_add", "dsp_paths"])
def test_variants_equal_portable_twins_on_device(board, cases, tmp_path):
    check_on_device(cases(seed=7), board, tmp_path)


@pytest.mark.qemu
@pytest.mark.parametrize("board", BOARDS)
def test_large_windows_equal_portable_twins_on_device(board, tmp_path):
    check_on_device(large_window_cases(seed=7), board, tmp_path)


@pytest.mark.qemu
def test_mve_paths_equal_portable_twins_on_mps3_an547(tmp_path):
    check_on_device(mve_path_cases(seed=7), "mps3-an547", tmp_path)


@pytest.mark.qemu
def test_avgpool_mve_equals_portable_twin_on_mps3_an547(tmp_path):
    check_on_device(avgpool_mve_cases(seed=7), "mps3-an547", tmp_path)


def check_on_device(builder: GraphBuilder, board: str, tmp_path) -> None:
    """The board picks the expected variants, and they compute what the portable twins do, bit for bit."""
    portable = builder.graph()
    graph = verify(selected(portable, board))
    for node, before in zip(graph.nodes, portable.nodes):
        assert node.call.kernel == expected_kernel(before, builder.expect[node.name], board), node.name
    rng = np.random.default_rng(11)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    actual = run_on_board(graph, board, inputs, tmp_path)
    for name, a, e in zip(graph.outputs, actual, expected):
        node = next(n for n in graph.nodes if n.outputs[0] == name)
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}) on {board}")


# ---- Host-only: the selection rules and the prepared constants -------------------------------------------

def test_fast_gemm_declines_weights_too_large_for_the_split():
    g = GraphBuilder(3)
    g.conv(1, 3, 3, 600, 2, kernel=(1, 1), family="1x1")
    graph = g.graph()
    w = graph.tensors["w0"].data
    graph.tensors["w0"] = graph.tensors["w0"].replace(data=np.full_like(w, 127))  # 128 * 600 * 127 >= 2^23
    picked = select_kernels(graph, Target.of_board(load_board("mps2-an385")))
    assert picked.nodes[0].call.kernel == "mcu_conv2d_s8"


def filter_headers(builders, board: str, kernels) -> set[tuple[str, int]]:
    """(kernel, the header word of its filter: its weight layout) of every call of `kernels` the builders' cases
    give on `board`."""
    seen = set()
    for cases in builders:
        graph = selected(cases(seed=7).graph(), board)
        seen |= {(n.call.kernel, int(graph.tensors[n.inputs[1]].data[:4].view("<i4")[0])) for n in graph.nodes
                 if n.call.kernel in kernels}
    return seen


def test_dsp_path_cases_store_both_weight_layouts():
    """dsp_path_cases (on QEMU above) reaches the DSP GEMM's int8 and int16 streams: header words 8 and 16."""
    dsp = ("mcu_conv2d_1x1_s8_dsp", "mcu_conv2d_s8_dsp")
    assert {h for _, h in filter_headers([dsp_path_cases], "mps2-an386", dsp)} == {8, 16}


def test_fast_gemm_cases_store_both_weight_layouts():
    """On the M3, gemm_cases and dsp_path_cases (on QEMU above) reach the scalar GEMM's int8 words and its split
    words (header words 4 and 8, geometry.fast_wide) in the 1x1 conv, the general conv and the fully connected
    layer."""
    fast = ("mcu_conv2d_1x1_s8_fast", "mcu_conv2d_s8_fast", "mcu_fully_connected_s8_fast")
    assert filter_headers([gemm_cases, dsp_path_cases], "mps2-an385", fast) == {(k, h) for k in fast for h in (4, 8)}


def test_folded_bias_wraps_like_int32():
    from mcu.codegen.kernels.packing import folded_bias
    rows = np.full((1, 4), 127, np.int8)
    folded = folded_bias(rows, np.array([INT32_MAX - 10], np.int32), 128)
    assert folded.dtype == np.int32 and int(folded[0]) == INT32_MAX - 10 + 128 * 4 * 127 - 2**32
    assert INT32_MIN <= int(folded[0]) <= INT32_MAX


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385"])
def test_variants_get_exactly_their_scratch(board):
    """A variant that takes scratch gets one arena tensor of its twin's size as its second output; the others none."""
    from mcu.codegen.kernels import KERNELS
    sizes = {v.name: v.scratch for v in KERNELS.values() if v.portable and v.mode == "speed"}
    graph = selected(large_window_cases(seed=7).graph(), board)
    scratched = 0
    for node in graph.nodes:
        size = sizes.get(node.call.kernel)
        if size is None:
            assert len(node.outputs) == 1, node.call.kernel
            continue
        scratched += 1
        assert node.outputs[1] == f"{node.name}_scratch"
        assert graph.tensors[node.outputs[1]].shape == (max(1, size(node.call.params)),)
    # the fully connected variants read their input in place, bar the DSP GEMM over 2 rows (a row pair widened)
    assert scratched == {"mps2-an386": 9, "mps2-an385": 8}[board]


# ---- Raster overlap on the device: each variant's output starts its derived gap below its dying input ----------

def overlap_cases(seed: int) -> GraphBuilder:
    """Convs, depthwise convs and average pools whose output outruns their input (C_out > C_in, stride 1, padding),
    so the gap matters; fast mode (int8 clamp) so the DSP assembly and its row order run; pixel counts not a
    multiple of the Helium block of 3."""
    g = GraphBuilder(seed)
    f = "full"
    g.conv(1, 5, 7, 16, 40, kernel=(1, 1), extreme=f, family="1x1")
    g.conv(2, 3, 5, 12, 8, kernel=(1, 1), extreme=f, family="1x1")
    g.conv(1, 7, 6, 8, 24, pad=(1, 1), extreme=f, family="gemm")
    g.conv(1, 9, 7, 3, 16, stride=(2, 2), pad=(1, 1), extreme=f, family="gemm")
    g.conv(1, 25, 5, 64, 64, pad=(1, 1), depthwise=True, extreme=f, family="dw")   # KWS's depthwise
    g.conv(1, 9, 11, 24, 24, pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.conv(2, 8, 9, 13, 13, stride=(2, 2), pad=(1, 1), depthwise=True, extreme=f, family="dw")
    g.avgpool(1, 6, 6, 17, (3, 3), (1, 1), pad=(1, 1))
    return g


def copy_node(name: str, src: str, dst: str, shape) -> Node:
    """A portable 1x1 max pool: dst = src."""
    params = {"input": shape, "output": shape, "kernel_h": 1, "kernel_w": 1, "stride_h": 1, "stride_w": 1,
              "pad_top": 0, "pad_left": 0, "zero_point": 0, "divisor": 0, "act_min": -128, "act_max": 127}
    return call(name, "mcu_maxpool2d_s8", (src,), dst, params)


def chained(graph: Graph) -> Graph:
    """Each call x -> y becomes x -> copy -> t -> call -> u -> copy -> y, so its input t and output u live in the
    arena and t dies at the call."""
    tensors, nodes = dict(graph.tensors), []
    for node in graph.nodes:
        x, y = node.inputs[0], node.outputs[0]
        t, u = f"t_{node.name}", f"u_{node.name}"
        tensors[t], tensors[u] = tensors[x].replace(name=t), tensors[y].replace(name=u)
        nodes += [copy_node(f"{node.name}a", x, t, tensors[x].shape),
                  node.replace(inputs=(t, *node.inputs[1:]), outputs=(u, *node.outputs[1:])),
                  copy_node(f"{node.name}b", u, y, tensors[y].shape)]
    return verify(Graph(tensors, tuple(nodes), graph.inputs, graph.outputs))


def placed_at_the_gap(graph: Graph, mem):
    """The plan with each chain in its own region: the call's output at the region's start, its input exactly
    overlap_gap bytes above (rounded up to the 16-byte alignment; a gap of 0, a kernel running in place,
    alternately exactly in place and 16 bytes above), its scratch above both. Checked by verify_tensor_plan,
    which re-derives every gap."""
    locations, base, gaps = dict(mem.locations), 0, {}
    for node in graph.nodes:
        if node.call.kernel == "mcu_maxpool2d_s8":
            continue
        t, u = node.inputs[0], node.outputs[0]
        gap = overlap_gap(node)
        assert gap is not None, f"{node.call.kernel} may not overlap its input"
        at = -(-gap // 16) * 16 if gap else 16 * (sum(g == 0 for g in gaps.values()) % 2)
        gaps[node.name] = gap
        locations[u], locations[t] = Location("arena", base), Location("arena", base + at)
        top = max(base + at + graph.tensors[t].nbytes, base + graph.tensors[u].nbytes)
        for s in node.outputs[1:]:  # scratch
            top = -(-top // 16) * 16
            locations[s] = Location("arena", top)
            top += graph.tensors[s].nbytes
        base = -(-top // 16) * 16
    placed = dataclasses.replace(mem, locations=locations, plan=Plan({}, base, "by hand"))
    verify_tensor_plan(graph, placed)
    return placed, gaps


def assert_exact_at_the_gap(graph: Graph, mem, gaps: dict, board: str, out_dir, seed: int) -> None:
    """graph planned as placed_at_the_gap placed it, run on board on seeded int8 inputs: every output equals the
    reference, a difference named by the call the copy into that output reads and its gap."""
    rng = np.random.default_rng(seed)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    for name, got, want in zip(graph.outputs, run_on_board(graph, board, inputs, out_dir, mem),
                               run_reference(graph, inputs)):
        node = graph.producer(graph.producer(name).inputs[0])  # the call the copy into the output reads
        assert_equal_int(got.reshape(want.shape), want, f"{node.call.kernel} ({node.name}, gap {gaps[node.name]}) "
                                                        f"on {board}")


@pytest.mark.qemu
@pytest.mark.parametrize("board", BOARDS)
def test_raster_variants_overlapping_their_input_on_device(board, tmp_path, monkeypatch):
    """Every raster variant's output starting its derived gap below its dying input gives the portable twin's
    result on the device, the DSP assembly's row order and the Helium blocks of 3 included; the 3x3 depthwise on
    the in-place geometry (stride 1, same dims) runs in place or just below its input (its ring of rows)."""
    # the planar Helium depthwise (a channel at a time) takes its input only exactly: test_dwconv_any_qemu
    monkeypatch.setitem(KERNELS, "mcu_dwconv2d_s8_mve_planar",
                        dataclasses.replace(KERNELS["mcu_dwconv2d_s8_mve_planar"], applies=lambda p: False))
    builder = overlap_cases(seed=5)
    graph = verify(selected(chained(builder.graph()), board))
    picked = {n.call.kernel for n in graph.nodes} - {"mcu_maxpool2d_s8"}
    assert picked == {expected_kernel(n, builder.expect[n.name], board) for n in builder.graph().nodes}
    graph, mem = plan_graph(graph)
    mem, gaps = placed_at_the_gap(graph, mem)
    kernel_of = {n.name: n.call.kernel for n in graph.nodes}
    in_place = [kernel_of[n] for n, g in gaps.items() if g == 0]
    dw = expected_kernel(builder.graph().nodes[4], "dw", board)  # KWS's depthwise: the in-place geometry
    # and the 1x1 conv from 12 to 8 channels: it reads each block (the DSP pixel pair, the scalar pixel, the Helium 3
    # pixels copied to scratch over a dying input) before writing it, so no gap at all
    assert in_place == [expected_kernel(call("", "mcu_conv2d_s8", (), ()), "1x1", board)] + [dw] * 2
    assert_exact_at_the_gap(graph, mem, gaps, board, tmp_path, seed=11)
