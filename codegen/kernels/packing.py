"""Kernel constants prepared at compile time for the optimized variants, and the geometry each variant takes.

- `prepare` hooks, (node, tensors) -> (node, new constants) or None to decline, rewrite a call's constants into
  the form its variant wants (all exact integer transforms, so the variant's output equals the portable
  kernel's bit for bit):
    fold    bias' = bias + input_offset * sum(w) per output channel (a NULL bias becomes one), so the
            inner loop multiplies raw int8 inputs; padded taps then read -input_offset (the zero point);
    pack    weights reordered (DSP conv: int8 or int16 words per channel pair; DSP fc: int8 words per channel
            quad; fast: per tap of 4 channels two int32 words of two channels each, or one int8 word they are
            built from), stored as bytes so the `const int8_t *filter` signature stays, in the order the kernel
            streams them; channels padded with zero rows, bias and quant arrays padded likewise;
    records per-channel requantization constants replacing both quant arrays (see
            runtime_c/include/mcu/mcu_opt.h): {mult, sh, round_lo, round_hi} (the _fast kernels) or
            {mult, sh, rh} (DSP fc);
    stream  (DSP convs and depthwise) folded biases, packed weights and 3-word records {mult, sh, rh}
            interleaved into the filter in the order the kernel's assembly reads them (pack_g2_stream,
            pack_dw_stream); the bias input becomes None and quant points at the portable shifts twice.
  The layouts are documented with the kernels in runtime_c/include/mcu/mcu_kernels.h.
- `applies` predicates (is_1x1, is_dw3x3, ...) say which params a variant runs.
The kernel descriptions that use these live in codegen/kernels/<family>.py.
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import Node, Tensor
from mcu.codegen.twins.conv import dsp_conv_compact

# ---- Constant preparation (pure numpy; each returns new arrays) ---------------------------------------------

def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def folded_bias(w_rows: np.ndarray, bias: np.ndarray | None, input_offset: int) -> np.ndarray:
    """bias + input_offset * sum(w) per row of w_rows [C, K], as int32 (wrapping like the kernels' int32
    accumulators: any result that fits int32 comes out the same)."""
    b = np.zeros(w_rows.shape[0], np.int64) if bias is None else np.asarray(bias, np.int64)
    folded = b + input_offset * w_rows.astype(np.int64).sum(axis=1)
    return folded.astype(np.uint32).view(np.int32) if folded.size else folded.astype(np.int32)


def pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    out = np.zeros((rows,) + a.shape[1:], a.dtype)
    out[:a.shape[0]] = a
    return out


def rq_records(mult: np.ndarray, shift: np.ndarray, output_offset: int, channels: int) -> np.ndarray:
    """{mult, sh, round_lo, round_hi} per channel (padded to `channels` with zero records), int32 [4 * channels]."""
    rec = np.zeros((channels, 4), np.int64)
    for c, (m, s) in enumerate(zip(np.asarray(mult, np.int64), np.asarray(shift, np.int64))):
        e = -int(s)
        rnd = (1 << (30 + e)) + output_offset * (1 << (31 + e)) if e >= 1 else 0
        # e <= 24 (as mcu_rq_record): hi32(round + acc * mult) is about output_offset * 2^(e-1), which
        # leaves int32 from e = 25 on, though round alone may still fit
        if 1 <= e <= 24 and -(1 << 63) <= rnd < (1 << 63) and -(1 << 31) <= rnd >> 32 < (1 << 31):
            rec[c] = (m, e - 1, rnd & 0xFFFFFFFF, rnd >> 32)
        else:
            rec[c] = (m, -1, s, 0)
    return rec.reshape(-1).astype(np.uint32).view(np.int32) if rec.size else rec.reshape(-1).astype(np.int32)


def rq3_records(mult: np.ndarray, shift: np.ndarray, output_offset: int, channels: int) -> np.ndarray:
    """{mult, sh, rh} per channel (padded to `channels` with zero records), int32 [3 * channels]: the fast form
    (rh + hi32(acc * mult)) >> sh where the 4-word record's round has a zero low word (2 <= -shift <= 24),
    else {mult, -1, shift} (mcu_rq3_record in runtime_c/include/mcu/mcu_opt.h)."""
    rec = np.zeros((channels, 3), np.int64)
    for c, (m, s) in enumerate(zip(np.asarray(mult, np.int64), np.asarray(shift, np.int64))):
        e = -int(s)
        rh = (1 << (e - 2)) + output_offset * (1 << (e - 1)) if e >= 2 else 0
        if 2 <= e <= 24 and -(1 << 31) <= rh < (1 << 31):
            rec[c] = (m, e - 1, rh)
        else:
            rec[c] = (m, -1, s)
    return rec.reshape(-1).astype(np.int32)


G2_CHUNK = 16  # steps per chunk of the 2x2 DSP GEMM's stream and loop body (MCU_DSP_G2_CHUNK in mcu_opt.h)


def _words(a: np.ndarray) -> np.ndarray:
    """int32 [rows, n] -> little-endian bytes [rows, 4n] (int8)."""
    return np.ascontiguousarray(np.asarray(a, np.int64).astype(np.uint32).astype("<u4")).view(np.int8)


def g2_ctrl_after(steps: int) -> list[int]:
    """The steps (0-based) of a 2x2 GEMM pair followed by a control word: step 0 when there is only one, else
    the S - 1 steps after the first in chunks of G2_CHUNK, the first chunk r steps, so that the last ends at
    the last step (mcu_dsp_g2_first in mcu_opt.h)."""
    if steps == 1:
        return [0]
    first = steps - 1 - G2_CHUNK * ((steps - 2) // G2_CHUNK)
    return list(range(first, steps, G2_CHUNK))


def pack_g2_stream(w_rows: np.ndarray, bias: np.ndarray, rec: np.ndarray, wide: bool = False) -> np.ndarray:
    """The 2x2 DSP GEMM's filter (mcu_opt.h, mcu_dsp_g2_t), from int8 weights [C, K], the folded bias [C2] and
    3-word records [3 * C2] (C2 = C rounded up to 2, zero rows): a header word, the weight bytes per step (8, or
    16 when `wide`); per pair of channels the two biases; per step of 4 taps (K padded to 4) the int8 words
    c0 (w0, w1, w2, w3), c1 (w0, w1, w2, w3) (the kernel widens them with SXTB16), or when `wide` the int16
    words c0 (w0, w2), c0 (w1, w3), c1 (w0, w2), c1 (w1, w3); a control word after the steps g2_ctrl_after
    names, 0 inside the pair and at its end 1, or -1 for the last whole pair; then the pair's 6 record words.
    As bytes (int8)."""
    c, k = w_rows.shape
    k4, c2 = round_up(max(k, 1), 4), round_up(c, 2)
    steps, pairs = k4 // 4, c2 // 2
    w = np.zeros((c2, k4), np.int16 if wide else np.int8)
    w[:c, :k] = w_rows
    w = w.reshape(pairs, 2, steps, 4)[..., [0, 2, 1, 3]] if wide else w.reshape(pairs, 2, steps, 4)
    w = np.ascontiguousarray(w.transpose(0, 2, 1, 3)).astype("<i2" if wide else np.int8)  # [pair, step, ch, tap]
    w = w.reshape(pairs, steps, 8).view(np.int8)                                          # 8 or 16 bytes a step
    parts, start = [_words(np.asarray(bias, np.int64).reshape(pairs, 2))], 0
    for after in g2_ctrl_after(steps):
        parts.append(w[:, start:after + 1].reshape(pairs, -1))
        ctrl = np.zeros((pairs, 1), np.int64)
        if after == steps - 1:
            ctrl[:] = 1
            ctrl[max(c // 2 - 1, 0):] = -1  # the last whole pair (the assembly stops there)
        parts.append(_words(ctrl))
        start = after + 1
    parts.append(_words(np.asarray(rec, np.int64).reshape(pairs, 6)))
    header = _words(np.array([[16 if wide else 8]]))
    return np.concatenate([header.reshape(-1), np.ascontiguousarray(np.concatenate(parts, axis=1)).reshape(-1)])


def pack_groups_s8(w_rows: np.ndarray, group: int, chunk: int) -> np.ndarray:
    """int8 [C, K] -> per `group` channels, per `chunk` taps: the group's chunks in turn (C padded to a
    multiple of group, K to a multiple of chunk, with zeros)."""
    c, k = w_rows.shape
    k_pad = round_up(k, chunk)
    w = np.zeros((round_up(c, group), k_pad), np.int8)
    w[:c, :k] = w_rows
    return np.ascontiguousarray(w.reshape(-1, group, k_pad // chunk, chunk).transpose(0, 2, 1, 3)).reshape(-1)


# ---- Prepare hooks ------------------------------------------------------------------------------------------

# The exchange rate between speed and flash: a variant stores its weights widened (int16, or the scalar GEMM's
# two-channel words) rather than int8 only in a layer where that saves at least this many instructions per
# inference per flash byte it costs (dsp_wide, fast_wide).
WIDEN_GAIN = 64


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
    a = node.attrs
    quant = a["quant"]
    if records:
        c_pad = bias.size
        mult, shift = (tensors[q].data for q in quant)
        rec = records(mult, shift, a["params"]["output_offset"], c_pad)
        new[f"{node.name}_{suffix}_rq"] = _new(f"{node.name}_{suffix}_rq", rec, "int32")
        quant = (f"{node.name}_{suffix}_rq",) * 2  # the kernels read the records only (shift: non-NULL)
    inputs = (node.inputs[0], f"{node.name}_{suffix}_w", f"{node.name}_{suffix}_b")
    return node.replace(inputs=inputs, attrs={**a, "quant": quant}), new


QUANT_UNUSED = "mcu_quant_unused"  # one zero word: the quant pointers of kernels that read their records elsewhere


def _streamed(node: Node, stream: np.ndarray) -> tuple[Node, dict[str, Tensor]]:
    """The node reading one filter stream <node>_dsp_w (weights, folded biases and records): the bias argument
    becomes NULL and quant, checked non-NULL but not read, points twice at one shared zero word, so the
    portable multipliers and shifts are not stored beside the stream's records."""
    name = f"{node.name}_dsp_w"
    return (node.replace(inputs=(node.inputs[0], name, None), attrs={**node.attrs, "quant": (QUANT_UNUSED,) * 2}),
            {name: _new(name, stream, "int8"), QUANT_UNUSED: _new(QUANT_UNUSED, np.zeros(1, np.int32), "int32")})


SPLIT = 1 << 24  # mcu_fast_split: two channels per 32-bit weight word, the low one's sum within +-2^23


def pack_pairs_s32(w_rows: np.ndarray, wide: bool = True) -> np.ndarray | None:
    """The scalar GEMM's filter (mcu_fast_gemm_row) from int8 [C, K]: a header word, the weight bytes per tap of 4
    channels, then per 4 channels, per tap, when `wide` the int32 split words w0 + w1 * 2^24 and w2 + w3 * 2^24,
    else one int8 word of bytes (w1, w0, w2, w3 - [w2 < 0]) that the kernel turns into the same two (mcu_fast_words);
    as bytes. None when a low channel's sum could leave +-2^23 (128 * sum |w| >= 2^23), or a word could leave
    int32 (a high weight of -128 beside a negative low one; the quantizer's weights stay in [-127, 127])."""
    c, k = w_rows.shape
    w = pad_rows(w_rows.astype(np.int64), round_up(c, 4)).reshape(-1, 2, 2, k)  # [quad, pair, lo/hi, k]
    if (128 * np.abs(w[:, :, 0, :]).sum(axis=-1) >= SPLIT // 2).any():
        return None
    words = w[:, :, 0, :] + w[:, :, 1, :] * SPLIT                                  # [quad, pair, k]
    if words.size and words.min() < np.iinfo(np.int32).min:
        return None
    if wide:
        body = np.ascontiguousarray(words.transpose(0, 2, 1)).astype("<i4").reshape(-1).view(np.int8)
    else:
        lo_a, hi_a, lo_b, hi_b = w[:, 0, 0], w[:, 0, 1], w[:, 1, 0], w[:, 1, 1]   # [quad, k] each
        body = np.stack([hi_a, lo_a, lo_b, hi_b - (lo_b < 0)], axis=-1).astype(np.int8).reshape(-1)
    return np.concatenate([_words(np.array([[8 if wide else 4]])).reshape(-1), body])


# A _fast GEMM widens its weights to the split words at compile time, or builds them in its loop from int8 words
# (mcu_fast_words): its ARMv7-M loop of 4 taps of 4 channels takes 31 instructions instead of 16 (MCU_FAST_ASM in
# mcu_opt.h). Widening costs one flash byte per weight and saves 15/16 instruction per weight per output row, so a
# layer widens where that is at least WIDEN_GAIN instructions per inference a byte: 69 output rows (pixels, or
# batches of a fully connected layer).
FAST_WIDE_ROWS = -(-WIDEN_GAIN * 16 // 15)


def output_rows(params: dict) -> int:
    """The GEMM rows of a conv (output pixels) or fully connected layer (batches): how often each weight is used."""
    return params["batches"] if "batches" in params else int(np.prod(params["output"][:3]))


def fast_wide(params: dict) -> bool:
    """Whether the _fast GEMM with these params (conv or fully connected) stores the split words (FAST_WIDE_ROWS)."""
    return output_rows(params) >= FAST_WIDE_ROWS


def prepare_fast(node, tensors):
    """Scalar GEMM: folded bias, two channels per weight word (mcu_fast_split), widened at compile time or in
    the loop (fast_wide), records. Declines (None) when the weights are too large for the split."""
    rows = _w_rows(node, tensors)
    packed = pack_pairs_s32(rows, fast_wide(node.attrs["params"]))
    if packed is None:
        return None
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), node.attrs["params"]["input_offset"])
    c4 = round_up(rows.shape[0], 4)
    return _prepared(node, tensors, "fast", weights=packed, bias=pad_rows(bias, c4), records=rq_records)


def pack_s4(w_rows: np.ndarray) -> np.ndarray | None:
    """int8 [C, K] with values in [-8, 7] -> int4, two per byte (tap 2i low nibble, 2i+1 high), each row padded
    to whole bytes; None for a weight outside int4."""
    if w_rows.size and (w_rows.min() < -8 or w_rows.max() > 7):
        return None
    c, k = w_rows.shape
    w = np.zeros((c, round_up(k, 2)), np.uint8)
    w[:, :k] = w_rows.astype(np.int8).view(np.uint8) & 0x0F
    return (w[:, 0::2] | (w[:, 1::2] << 4)).reshape(-1).view(np.int8)


def prepare_s4(node, tensors):
    """int4 weights: folded bias, rows packed two weights per byte, the portable multipliers and shifts (no
    records: flash is the point). Declines (None) unless every weight is in [-8, 7] (compile(weights="int4")
    quantizes them to [-7, 7])."""
    rows = _w_rows(node, tensors)
    packed = pack_s4(rows)
    if packed is None:
        return None
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), node.attrs["params"]["input_offset"])
    return _prepared(node, tensors, "s4", weights=packed, bias=bias)


def window_rows(node, tensors, rows: np.ndarray, multiple: int) -> np.ndarray:
    """A general conv's [C, KH*KW*C_in] weights with each window row (KW*C_in taps) padded with zero taps to
    a multiple of `multiple`, so the kernels can read every input row on its own; other nodes unchanged."""
    w = _const(tensors, node.inputs[1])
    if w.ndim != 4 or is_1x1(node.attrs["params"]):
        return rows
    c, seg = rows.shape[0], w.shape[2] * w.shape[3]
    padded = np.zeros((c, rows.shape[1] // seg, round_up(seg, multiple)), np.int8)
    padded[:, :, :seg] = rows.reshape(c, -1, seg)
    return padded.reshape(c, -1)


# A general conv whose window rows are not whole 4-tap steps and whose window is small: the DSP conv widens the
# window whole (its taps in one run), not row by row (mcu_dsp_conv_compact in mcu_kernels.h).
compact_window = dsp_conv_compact


# A DSP conv keeps its weights int8 in flash and widens them in its loop: 4 SXTB16 per 16 MACs of a 2x2 block,
# so widening them at compile time instead saves MACs / 4 instructions for 1 more flash byte per weight, i.e.
# (output pixels) / 4 instructions per byte. A layer widens when that is at least WIDEN_GAIN instructions per
# inference a byte (WIDE_PIXELS = 256 pixels): large feature maps with few weights (VWW's and IC's early layers);
# the weight-heavy layers of small maps stay int8. M4, instructions / weight flash, all int8 -> this rule -> all
# int16: KWS 3.55 M / 35.7 KB (125 pixels: all int8), VWW 9.83 M / 272 KB -> 9.60 M / 273 KB -> 8.33 M /
# 468 KB, IC 12.02 M / 92 KB -> 11.10 M / 107 KB -> 10.18 M / 164 KB.
WIDE_PIXELS = 4 * WIDEN_GAIN


def dsp_wide(params: dict) -> bool:
    """Whether the DSP conv with these params stores its weights widened to int16 (see WIDE_PIXELS)."""
    return output_rows(params) >= WIDE_PIXELS


def prepare_dsp_conv(node, tensors):
    """2x2 SIMD32 GEMM (conv): one filter stream (pack_g2_stream) holding the folded biases, the weights in
    channel pairs (window rows padded to 4 taps; int8, or int16 where dsp_wide) and 3-word records
    (_streamed)."""
    rows = _w_rows(node, tensors)
    p = node.attrs["params"]
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), p["input_offset"])
    c2 = round_up(rows.shape[0], 2)
    mult, shift = (tensors[q].data for q in node.attrs["quant"])
    padded = rows if compact_window(p) else window_rows(node, tensors, rows, 4)
    stream = pack_g2_stream(padded, pad_rows(bias, c2), rq3_records(mult, shift, p["output_offset"], c2), dsp_wide(p))
    return _streamed(node, stream)


def prepare_dsp(node, tensors):
    """SIMD32 GEMV (fully connected): folded bias; int8 weights per 4 channels and 4 taps, each channel's taps
    one word (pack_groups_s8, group 4, chunk 4), widened in the loop as the input is; 3-word records. Each
    weight meets one input row (batches are 1 on a microcontroller), so widening it in flash would save half an
    instruction a byte, far below WIDEN_GAIN: int8 always."""
    rows = _w_rows(node, tensors)
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), node.attrs["params"]["input_offset"])
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
    bias = folded_bias(rows, _const(tensors, node.inputs[2]), node.attrs["params"]["input_offset"])
    node, new = _prepared(node, tensors, "mve", weights=pack_groups_s8(pad_rows(rows, c4), 2, 16),
                          bias=pad_rows(bias, c4))
    names = (f"{node.name}_mve_m", f"{node.name}_mve_s")
    for name, q in zip(names, node.attrs["quant"]):
        new[name] = _new(name, pad_rows(tensors[q].data.astype(np.int32), c4), "int32")
    return node.replace(attrs={**node.attrs, "quant": names}), new


def _dw_taps(node, tensors) -> np.ndarray:
    """Depthwise weights [1, KH, KW, C] as [C, KH*KW] (ch_mult 1)."""
    w = _const(tensors, node.inputs[1])
    return np.ascontiguousarray(w.reshape(-1, w.shape[3]).T)


def prepare_dw_fast(node, tensors):
    """Scalar depthwise: folded bias, int8 weights [C][9], records."""
    taps = _dw_taps(node, tensors)
    bias = folded_bias(taps, _const(tensors, node.inputs[2]), node.attrs["params"]["input_offset"])
    return _prepared(node, tensors, "fast", weights=taps.reshape(-1), bias=bias, records=rq_records)


def pack_dw_stream(taps: np.ndarray, bias: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """The DSP depthwise filter stream (mcu_opt.h), from int8 taps [C, 9], the folded bias [C4] and 3-word
    records [3 * C4] (C4 = C rounded up to 4, zero channels): per group of 4 channels the 4 biases, per tap
    the int8 word (w_c0, w_c1, w_c2, w_c3) (the kernel widens it: SXTB16, SXTB16 ROR 8), then the 4 records.
    As bytes (int8)."""
    c4 = round_up(taps.shape[0], 4)
    groups = c4 // 4
    w = pad_rows(taps, c4).reshape(groups, 4, 9)                                         # [group, lane, tap]
    w = np.ascontiguousarray(w.transpose(0, 2, 1)).reshape(groups, 36)
    return np.ascontiguousarray(np.concatenate(
        [_words(np.asarray(bias, np.int64).reshape(groups, 4)), w,
         _words(np.asarray(rec, np.int64).reshape(groups, 12))], axis=1)).reshape(-1)


def prepare_dw_dsp(node, tensors):
    """SIMD32 depthwise: one filter stream (pack_dw_stream) of folded biases, int8 weights and 3-word records
    per 4 channels (_streamed). The weights stay int8 on every map: widening them would save 2 instructions a
    tap of 4 channels per pixel, which pays WIDEN_GAIN only from 128 pixels, and a second layout would double
    the kernel's four assembly loops (about 1.5 KB of code) for the few bytes a large map's depthwise holds."""
    taps = _dw_taps(node, tensors)
    p = node.attrs["params"]
    c4 = round_up(taps.shape[0], 4)
    bias = folded_bias(taps, _const(tensors, node.inputs[2]), p["input_offset"])
    mult, shift = (tensors[q].data for q in node.attrs["quant"])
    stream = pack_dw_stream(taps, pad_rows(bias, c4), rq3_records(mult, shift, p["output_offset"], c4))
    return _streamed(node, stream)


DW_MVE_LANES = [0, 2, 4, 6, 1, 3, 5, 7]  # VMULLB/VMULLT split 8 channels into even and odd lanes


def prepare_dw_mve(node, tensors):
    """Helium depthwise: int8 weights [9][C8] (the kernel widens them as it loads them, VLDRB.S16); folded bias,
    multiplier and shift in lane order per 8 channels (even channels, then odd), padded to C8."""
    taps = _dw_taps(node, tensors)
    c8 = round_up(taps.shape[0], 8)
    bias = folded_bias(taps, _const(tensors, node.inputs[2]), node.attrs["params"]["input_offset"])
    w = np.ascontiguousarray(pad_rows(taps, c8).T).reshape(-1)

    def lanes(a):
        return pad_rows(np.asarray(a, np.int32), c8).reshape(-1, 8)[:, DW_MVE_LANES].reshape(-1)

    node, new = _prepared(node, tensors, "mve", weights=w, bias=lanes(bias))
    names = (f"{node.name}_mve_m", f"{node.name}_mve_s")
    for name, q in zip(names, node.attrs["quant"]):
        new[name] = _new(name, lanes(tensors[q].data), "int32")
    return node.replace(attrs={**node.attrs, "quant": names}), new


def pack_taps_s16(w_rows: np.ndarray, group: int) -> np.ndarray:
    """int8 [C, K] -> int16 [C_g / group][K4 / 2][group channels][2 taps] as little-endian bytes (int8), C_g = C
    rounded up to `group` and K4 = K rounded up to 4, with zeros: the int16-activation DSP GEMMs' layout (group 2
    for the conv, 4 for the fully connected layer)."""
    c, k = w_rows.shape
    k4 = round_up(max(k, 1), 4)
    w = np.zeros((round_up(c, group), k4), np.int16)
    w[:c, :k] = w_rows
    w = np.ascontiguousarray(w.reshape(-1, group, k4 // 2, 2).transpose(0, 2, 1, 3)).astype("<i2")
    return w.reshape(-1).view(np.int8)


def _with_filter(node: Node, name: str, data: np.ndarray) -> tuple[Node, dict[str, Tensor]]:
    """The node reading `name` (new int8 bytes) as its filter; input, bias and quant unchanged."""
    return node.replace(inputs=(node.inputs[0], name) + tuple(node.inputs[2:])), {name: _new(name, data, "int8")}


def prepare_s16_conv_dsp(node, tensors):
    """int16-activation DSP conv: weights widened to int16 in channel pairs (pack_taps_s16, group 2); the int64
    bias and the portable multipliers and shifts as they are (zero point 0: nothing to fold)."""
    return _with_filter(node, f"{node.name}_dsp16_w", pack_taps_s16(_w_rows(node, tensors), 2))


def prepare_s16_fc_dsp(node, tensors):
    """int16-activation DSP fully connected layer: weights widened to int16 in quads (pack_taps_s16, group 4)."""
    return _with_filter(node, f"{node.name}_dsp16_w", pack_taps_s16(_w_rows(node, tensors), 4))


def prepare_s16_dw_dsp(node, tensors):
    """int16-activation DSP depthwise: int16 words (w_c, w_c+1) per channel pair and tap, [C2 / 2][KH * KW][2]."""
    taps = _dw_taps(node, tensors)
    w = pad_rows(taps.astype(np.int16), round_up(taps.shape[0], 2))
    w = np.ascontiguousarray(w.reshape(-1, 2, taps.shape[1]).transpose(0, 2, 1)).astype("<i2")
    return _with_filter(node, f"{node.name}_dsp16_w", w.reshape(-1).view(np.int8))


# ---- Applicability ------------------------------------------------------------------------------------------

def is_1x1(p: dict) -> bool:
    return p["filter"][1] == 1 and p["filter"][2] == 1 and p["pad_top"] == 0 and p["pad_left"] == 0


def is_dw3x3(p: dict) -> bool:
    """3x3 depthwise with channel multiplier 1 (any stride, padding, dilation, channel count)."""
    return p["filter"][1] == 3 and p["filter"][2] == 3 and p["output"][3] == p["input"][3]


def is_groups1(p: dict) -> bool:
    return p["filter"][3] == p["input"][3]


S16_DW_MAX_TAPS = 511  # MCU_S16_DW_MAX_TAPS: the window's products summed in int32 must fit


def is_dw_s16(p: dict) -> bool:
    """Channel multiplier 1 and at most 511 taps (mcu_dwconv2d_s16_dsp)."""
    return p["output"][3] == p["input"][3] and p["filter"][1] * p["filter"][2] <= S16_DW_MAX_TAPS


INT4 = ("int4",)  # a variant for weights packed as int4 (compile(weights="int4")), in either build mode
