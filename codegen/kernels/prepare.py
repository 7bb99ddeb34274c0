"""The `prepare` hooks of the optimized variants: (node, tensors) -> (node, new constants), or None to decline.

Each rewrites a call's constants into the form its variant wants (codegen/kernels/packing.py computes them):
the folded bias, the packed weights and the records become new constants named <node>_<variant>_{w,b,rq};
a DSP conv or depthwise reads one filter stream instead, its bias input None and quant pointing at one shared
zero word (QUANT_UNUSED). The kernel descriptions that use these live in codegen/kernels/<family>.py.
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import Node, Tensor
from mcu.codegen.twins.recurrent import RNN_GATES
from mcu.codegen.kernels.geometry import compact_window, is_1x1, is_dw_ring
from mcu.codegen.kernels.packing import (DW_MVE_LANES, folded_bias, pack_dw_pair_stream,
                                         pack_dwk_line_stream, pack_dw_stream, pack_g2_stream, pack_groups_s8,
                                         pack_quads_s8_sxtb16,
                                         pack_pairs_s32, pack_s4, pack_taps_s16, pad_rows, round_up, rq3_records,
                                         rq_records)

def _const(tensors: dict[str, Tensor], name: str) -> np.ndarray | None:
    return None if name is None else tensors[name].data


def _new(name: str, data: np.ndarray, dtype: str) -> Tensor:
    return Tensor(name, tuple(data.shape), dtype, data=data)


def _w_rows(node: Node, tensors: dict[str, Tensor]) -> np.ndarray:
    """The weights as [C_out, K] rows (OHWI conv, [N, K] fc)."""
    w = _const(tensors, node.inputs[1])
    return w.reshape(w.shape[0], -1)


def _prepared(node: Node, tensors: dict[str, Tensor], suffix: str, *, weights: np.ndarray,
              bias: np.ndarray, records=None) -> tuple[Node, dict[str, Tensor]]:
    """The node with new weight/bias (and record) constants named <node>_<suffix>_{w,b,rq}; with records (rq_records
    or rq3_records), both quant pointers point at them (the portable multipliers and shifts are not stored)."""
    new = {f"{node.name}_{suffix}_w": _new(f"{node.name}_{suffix}_w", weights, "int8"),
           f"{node.name}_{suffix}_b": _new(f"{node.name}_{suffix}_b", bias, "int32")}
    quant = node.call.quant
    if records:
        c_pad = bias.size
        mult, shift = (tensors[q].data for q in quant)
        rec = records(mult, shift, node.call.params["output_offset"], c_pad)
        new[f"{node.name}_{suffix}_rq"] = _new(f"{node.name}_{suffix}_rq", rec, "int32")
        quant = (f"{node.name}_{suffix}_rq",) * 2  # the kernels read the records only (shift: non-NULL)
    inputs = (node.inputs[0], f"{node.name}_{suffix}_w", f"{node.name}_{suffix}_b")
    return node.replace(inputs=inputs).with_call(quant=quant), new


QUANT_UNUSED = "mcu_quant_unused"  # one zero word: the quant pointers of kernels that read their records elsewhere


def _streamed(node: Node, stream: np.ndarray) -> tuple[Node, dict[str, Tensor]]:
    """The node reading one filter stream <node>_dsp_w (weights, folded biases and records): the bias argument
    becomes NULL and quant, checked non-NULL but not read, points twice at one shared zero word, so the
    portable multipliers and shifts are not stored beside the stream's records."""
    name = f"{node.name}_dsp_w"
    return (node.replace(inputs=(node.inputs[0], name, None)).with_call(quant=(QUANT_UNUSED,) * 2),
            {name: _new(name, stream, "int8"), QUANT_UNUSED: _new(QUANT_UNUSED, np.zeros(1, np.int32), "int32")})


def prepare_fast(node, tensors, wide: bool = False):
    """Scalar GEMM: folded bias, two channels per weight word (mcu_fast_split), widened at compile time (wide:
    codegen/passes/widen_weights.py decides) or in the loop, records. Declines (None) when the weights are too
    large for the split."""
    rows = _w_rows(node, tensors)
    packed = pack_pairs_s32(rows, wide)
    if packed is None:
        return None
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), node.call.params["input_offset"])
    c4 = round_up(rows.shape[0], 4)
    return _prepared(node, tensors, "fast", weights=packed, bias=pad_rows(bias, c4), records=rq_records)


def prepare_s4(node, tensors):
    """int4 weights: folded bias, rows packed two weights per byte, the portable multipliers and shifts (no
    records: flash is the point). Declines (None) unless every weight is in [-8, 7] (compile(weights="int4")
    quantizes them to [-7, 7])."""
    rows = _w_rows(node, tensors)
    packed = pack_s4(rows)
    if packed is None:
        return None
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), node.call.params["input_offset"])
    return _prepared(node, tensors, "s4", weights=packed, bias=bias)


def window_rows(node, tensors, rows: np.ndarray, multiple: int) -> np.ndarray:
    """A general conv's [C, KH*KW*C_in] weights with each window row (KW*C_in taps) padded with zero taps to
    a multiple of `multiple`, so the kernels can read every input row on its own; other nodes unchanged."""
    w = _const(tensors, node.inputs[1])
    if w.ndim != 4 or is_1x1(node.call.params):
        return rows
    c, seg = rows.shape[0], w.shape[2] * w.shape[3]
    padded = np.zeros((c, rows.shape[1] // seg, round_up(seg, multiple)), np.int8)
    padded[:, :, :seg] = rows.reshape(c, -1, seg)
    return padded.reshape(c, -1)


def prepare_dsp_conv(node, tensors, wide: bool = False):
    """2x2 SIMD32 GEMM (conv): one filter stream (pack_g2_stream) holding the folded biases, the weights in
    channel pairs (window rows padded to 4 taps; int8, or int16 when wide: codegen/passes/widen_weights.py
    decides) and 3-word records (_streamed)."""
    rows = _w_rows(node, tensors)
    p = node.call.params
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), p["input_offset"])
    c2 = round_up(rows.shape[0], 2)
    mult, shift = (tensors[q].data for q in node.call.quant)
    padded = rows if compact_window(p) else window_rows(node, tensors, rows, 4)
    stream = pack_g2_stream(padded, pad_rows(bias, c2), rq3_records(mult, shift, p["output_offset"], c2), wide)
    return _streamed(node, stream)


def prepare_dsp_gemm(node, tensors, wide: bool = False):
    """2x2 SIMD32 GEMM (fully connected over several rows, as a 1x1 conv over them): the 1x1 conv's filter stream
    (pack_g2_stream), K padded to 4 at its end; int8, or int16 when wide (codegen/passes/widen_weights.py)."""
    rows = _w_rows(node, tensors)
    p = node.call.params
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), p["input_offset"])
    c2 = round_up(rows.shape[0], 2)
    mult, shift = (tensors[q].data for q in node.call.quant)
    return _streamed(node, pack_g2_stream(rows, pad_rows(bias, c2), rq3_records(mult, shift, p["output_offset"], c2),
                                          wide))


def prepare_dsp(node, tensors):
    """SIMD32 GEMV (fully connected): folded bias; int8 weights per 4 channels and 4 taps, each channel's taps
    one word (pack_groups_s8, group 4, chunk 4), widened in the loop as the input is; 3-word records. Each
    weight meets one input row (batches are 1 on a microcontroller), so widening it in flash would save half an
    instruction a byte, far below any exchange rate (geometry.WIDEN_GAIN): int8 always."""
    rows = _w_rows(node, tensors)
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), node.call.params["input_offset"])
    c4 = round_up(rows.shape[0], 4)
    return _prepared(node, tensors, "dsp", weights=pack_groups_s8(rows, 4, 4), bias=pad_rows(bias, c4),
                     records=rq3_records)


def prepare_mve(node, tensors):
    """Helium GEMM (3 pixels x 4 channels, runtime_c/include/mcu/mcu_mve.h): folded bias; int8 weights with 2
    channels interleaved per 16 taps, K padded once at its end to 16 (the conv reads window rows of KW * C_in
    taps only when that is a multiple of 16, else a compact window); C_out padded to 4 with zero channels;
    multipliers and shifts as they are, padded to 4."""
    rows = _w_rows(node, tensors)
    c4 = round_up(rows.shape[0], 4)
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), node.call.params["input_offset"])
    node, new = _prepared(node, tensors, "mve", weights=pack_groups_s8(pad_rows(rows, c4), 2, 16),
                          bias=pad_rows(bias, c4))
    names = (f"{node.name}_mve_m", f"{node.name}_mve_s")
    for name, q in zip(names, node.call.quant):
        new[name] = _new(name, pad_rows(tensors[q].data.astype(np.int32), c4), "int32")
    return node.with_call(quant=names), new


def _dw_taps(node, tensors) -> np.ndarray:
    """Depthwise weights [1, KH, KW, C] as [C, KH*KW] (ch_mult 1)."""
    w = _const(tensors, node.inputs[1])
    return np.ascontiguousarray(w.reshape(-1, w.shape[3]).T)


def prepare_dw_fast(node, tensors):
    """Scalar depthwise: folded bias, int8 weights [C][9], records."""
    taps = _dw_taps(node, tensors)
    bias = folded_bias(taps, _const(tensors, node.inputs[2]), node.call.params["input_offset"])
    return _prepared(node, tensors, "fast", weights=taps.reshape(-1), bias=bias, records=rq_records)


DW_DSP_WIDE = "mcu_dwconv2d_3x3_s8_dsp_wide"
DW_DSP_RING = "mcu_dwconv2d_s8_dsp_ring"


def _dw_dsp(node, tensors, kernel: str | None):
    """The stream of the DSP 3x3 depthwise `kernel` (None: the int8 one), as _streamed."""
    taps = _dw_taps(node, tensors)
    p = node.call.params
    c4 = round_up(taps.shape[0], 4)
    bias = folded_bias(taps, _const(tensors, node.inputs[2]), p["input_offset"])
    mult, shift = (tensors[q].data for q in node.call.quant)
    stream = pack_dw_stream(taps, pad_rows(bias, c4), rq3_records(mult, shift, p["output_offset"], c4),
                            kernel == DW_DSP_WIDE)
    prepared, new = _streamed(node, stream)
    return (prepared.with_call(kernel=kernel) if kernel else prepared), new


def prepare_dw_dsp(node, tensors, wide: bool = False):
    """SIMD32 depthwise: one filter stream (pack_dw_stream) of folded biases, int8 weights and 3-word records
    per 4 channels (_streamed). Wide (where the flash budget pays for it, codegen/passes/widen_weights.py): int16
    weights, as DW_DSP_RING's stream (prepare_dwk_ring: int16 tap pairs, a channel pair at a time) at stride 1
    (geometry.is_dw_ring), else as DW_DSP_WIDE's (the same source as the int8 one, MCU_DSP_DW_WIDE: an LDRD for an
    LDR and two SXTB16 a tap of 4 channels)."""
    if not wide:
        return _dw_dsp(node, tensors, None)
    if is_dw_ring(node.call.params):
        prepared, new = prepare_dwk_ring(node, tensors)
        return prepared.with_call(kernel=DW_DSP_RING), new
    return _dw_dsp(node, tensors, DW_DSP_WIDE)


def prepare_dw_dsp_wide(node, tensors, wide: bool = True):
    """The int16-weight stream of DW_DSP_WIDE (pack_dw_stream, wide)."""
    return _dw_dsp(node, tensors, DW_DSP_WIDE)


def prepare_dwk_dsp(node, tensors):
    """SIMD32 depthwise, any window: one filter stream (pack_dw_pair_stream) of folded biases, weights as int16 pairs
    of neighbouring taps (for SMLAD; a zero weight pads an odd KW) and 3-word records per 4 channels (_streamed):
    4 * KH * ceil(KW / 2) flash bytes per channel instead of KH * KW (a 5x5: 60 for 25), plus 12 bytes of records
    (the portable quant's 8 not stored)."""
    taps = _dw_taps(node, tensors)
    p = node.call.params
    c4 = round_up(taps.shape[0], 4)
    bias = folded_bias(taps, _const(tensors, node.inputs[2]), p["input_offset"])
    mult, shift = (tensors[q].data for q in node.call.quant)
    stream = pack_dw_pair_stream(taps, p["filter"][1], p["filter"][2], pad_rows(bias, c4),
                                 rq3_records(mult, shift, p["output_offset"], c4))
    return _streamed(node, stream)


def prepare_dwk_line(node, tensors):
    """Tap-pair DSP depthwise, a k x k window (5x5, 7x7): one filter stream (pack_dwk_line_stream: per channel
    and window row the pairs of neighbouring taps starting at even and at odd columns, the folded bias, the
    record), 4 * (k * (k - 1) + 4) flash bytes a channel (a 5x5: 96, against 76 for mcu_dwconv2d_s8_dsp's)."""
    taps = _dw_taps(node, tensors)
    p = node.call.params
    bias = folded_bias(taps, _const(tensors, node.inputs[2]), p["input_offset"])
    mult, shift = (tensors[q].data for q in node.call.quant)
    stream = pack_dwk_line_stream(taps, p["filter"][2], bias,
                                  rq3_records(mult, shift, p["output_offset"], taps.shape[0]))
    return _streamed(node, stream)


def prepare_dwk_ring(node, tensors):
    """Ring DSP 3x3 depthwise at stride 1: pack_dwk_line_stream's stream, the taps transposed when the output has
    more rows than columns (the kernel then runs its window along the columns)."""
    p = node.call.params
    k = p["filter"][2]
    taps = _dw_taps(node, tensors)
    bias = folded_bias(taps, _const(tensors, node.inputs[2]), p["input_offset"])
    if p["output"][1] > p["output"][2]:
        taps = np.ascontiguousarray(taps.reshape(-1, k, k).transpose(0, 2, 1)).reshape(taps.shape)
    mult, shift = (tensors[q].data for q in node.call.quant)
    stream = pack_dwk_line_stream(taps, k, bias, rq3_records(mult, shift, p["output_offset"], taps.shape[0]))
    return _streamed(node, stream)


def prepare_dwk_mve(node, tensors):
    """Helium depthwise (any window, and the 3x3 one): int8 weights [C8 / 8][KH * KW][8] (8 channels a tap,
    widened by the load, VLDRB.S16); folded bias, multiplier and shift in lane order per 8 channels (even
    channels, then odd), padded to C8: flash grows by the padding of C to 8 only."""
    taps = _dw_taps(node, tensors)
    c8 = round_up(taps.shape[0], 8)
    bias = folded_bias(taps, _const(tensors, node.inputs[2]), node.call.params["input_offset"])
    w = np.ascontiguousarray(pad_rows(taps, c8).reshape(c8 // 8, 8, -1).transpose(0, 2, 1)).reshape(-1)

    def lanes(a):
        return pad_rows(np.asarray(a, np.int32), c8).reshape(-1, 8)[:, DW_MVE_LANES].reshape(-1)

    node, new = _prepared(node, tensors, "mve", weights=w, bias=lanes(bias))
    names = (f"{node.name}_mve_m", f"{node.name}_mve_s")
    for name, q in zip(names, node.call.quant):
        new[name] = _new(name, lanes(tensors[q].data), "int32")
    return node.with_call(quant=names), new


def _with_filter(node: Node, name: str, data: np.ndarray) -> tuple[Node, dict[str, Tensor]]:
    """The node reading `name` (new int8 bytes) as its filter; input, bias and quant unchanged."""
    return node.replace(inputs=(node.inputs[0], name) + tuple(node.inputs[2:])), {name: _new(name, data, "int8")}


def prepare_s16_conv_dsp(node, tensors):
    """int16-activation DSP conv: weights widened to int16 in channel pairs (pack_taps_s16, group 2); the int64
    bias and the portable multipliers and shifts as they are (zero point 0: nothing to fold)."""
    return _with_filter(node, f"{node.name}_dsp16_w", pack_taps_s16(_w_rows(node, tensors), 2))


S16_FC_DSP_WIDE = "mcu_fully_connected_s16_dsp_wide"


def prepare_s16_fc_dsp(node, tensors, wide: bool = False):
    """int16-activation DSP fully connected layer: int8 weights in quads of taps reordered for SXTB16
    (pack_quads_s8_sxtb16); wide (where the flash budget pays for it, codegen/passes/widen_weights.py): widened to
    int16 in quads (pack_taps_s16, group 4), run by S16_FC_DSP_WIDE, which saves 7 instructions per 4 taps of 4
    features (two SXTB16 a feature, one LDM less)."""
    rows = _w_rows(node, tensors)
    if not wide:
        return _with_filter(node, f"{node.name}_dsp16_w", pack_quads_s8_sxtb16(rows))
    prepared, new = _with_filter(node, f"{node.name}_dsp16_w", pack_taps_s16(rows, 4))
    return prepared.with_call(kernel=S16_FC_DSP_WIDE), new


def prepare_s16_fc_dsp_wide(node, tensors, wide: bool = True):
    """The int16 weights of S16_FC_DSP_WIDE (prepare_s16_fc_dsp, wide)."""
    return prepare_s16_fc_dsp(node, tensors, wide=True)


def prepare_s16_dw_dsp(node, tensors):
    """int16-activation DSP depthwise: int16 words (w_c, w_c+1) per channel pair and tap, [C2 / 2][KH * KW][2]."""
    taps = _dw_taps(node, tensors)
    w = pad_rows(taps.astype(np.int16), round_up(taps.shape[0], 2))
    w = np.ascontiguousarray(w.reshape(-1, 2, taps.shape[1]).transpose(0, 2, 1)).astype("<i2")
    return _with_filter(node, f"{node.name}_dsp16_w", w.reshape(-1).view(np.int8))


def prepare_lut_mve(node, tensors):
    """Helium look-up table: the table rotated by 128 (entry v & 0xFF holds the portable entry v + 128), so the
    kernel gathers with the raw input bytes as unsigned offsets."""
    table = _const(tensors, node.inputs[0])
    name = f"{node.name}_mve_t"
    rotated = np.concatenate([table[128:], table[:128]]).astype(np.int8)
    return node.replace(inputs=(name, *node.inputs[1:])), {name: _new(name, rotated, "int8")}


def rnn_quads(w: np.ndarray, gates: int) -> np.ndarray:
    """A recurrent layer's weights [gates * H, K] as quads of rows tap by tap: [gates][H4 / 4][K][4], each gate's
    rows padded with zeros to H4 = H rounded up to 4 (mcu_rnn_f32_quad, mcu_lstm_f32_quad)."""
    rows, k = w.shape
    h = rows // gates
    padded = np.zeros((gates, round_up(h, 4), k), np.float32)
    padded[:, :h] = w.reshape(gates, h, k)
    return np.ascontiguousarray(padded.reshape(gates, -1, 4, k).transpose(0, 1, 3, 2)).reshape(-1)


def prepare_rnn_quad(node, tensors):
    """A recurrent layer's w_ih and w_hh in quads (rnn_quads); x, h0 (c0) and the biases as they are."""
    lstm = node.call.kernel.startswith("mcu_lstm")
    gates = RNN_GATES[0 if lstm else node.call.params["cell"]]
    at = 3 if lstm else 2  # w_ih's input position
    new, names = {}, []
    for j, suffix in enumerate(("quad_ih", "quad_hh")):
        name = f"{node.name}_{suffix}"
        new[name] = _new(name, rnn_quads(_const(tensors, node.inputs[at + j]), gates), "float32")
        names.append(name)
    return node.replace(inputs=node.inputs[:at] + tuple(names) + node.inputs[at + 2:]), new
