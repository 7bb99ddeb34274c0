"""The optimized variants' constants as numpy arrays: folded biases, packed weights and requantization records.

All exact integer transforms, so a variant's output equals the portable kernel's bit for bit:
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
            pack_dw_stream).
The layouts are documented with the kernels in runtime_c/include/mcu/mcu_kernels.h; codegen/kernels/prepare.py
applies them to a call's constants.
"""
from __future__ import annotations

import numpy as np

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


def pack_quads_s8_sxtb16(w_rows: np.ndarray) -> np.ndarray:
    """int8 [C, K] -> [C4 / 4][K4 / 4][4 channels][taps k, k+2, k+1, k+3] (zeros padding C and K to 4): the
    int16-activation DSP fully connected layer's int8 weights, which SXTB16 splits into the tap pairs (k, k+1) and
    (k+2, k+3) of the input's int16 words."""
    return np.ascontiguousarray(pack_groups_s8(w_rows, 4, 4).reshape(-1, 4)[:, [0, 2, 1, 3]]).reshape(-1)


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


def pack_s4(w_rows: np.ndarray) -> np.ndarray | None:
    """int8 [C, K] with values in [-8, 7] -> int4, two per byte (tap 2i low nibble, 2i+1 high), each row padded
    to whole bytes; None for a weight outside int4."""
    if w_rows.size and (w_rows.min() < -8 or w_rows.max() > 7):
        return None
    c, k = w_rows.shape
    w = np.zeros((c, round_up(k, 2)), np.uint8)
    w[:, :k] = w_rows.astype(np.int8).view(np.uint8) & 0x0F
    return (w[:, 0::2] | (w[:, 1::2] << 4)).reshape(-1).view(np.int8)


def pack_dw_stream(taps: np.ndarray, bias: np.ndarray, rec: np.ndarray, wide: bool = False) -> np.ndarray:
    """The DSP depthwise filter stream (mcu_opt.h), from int8 taps [C, 9], the folded bias [C4] and 3-word
    records [3 * C4] (C4 = C rounded up to 4, zero channels): per group of 4 channels the 4 biases, per tap
    the int8 word (w_c0, w_c1, w_c2, w_c3) (the kernel widens it: SXTB16, SXTB16 ROR 8) or, wide, the int16
    words (w_c0, w_c2), (w_c1, w_c3) (MCU_DSP_DW_WIDE), then the 4 records. As bytes (int8)."""
    c4 = round_up(taps.shape[0], 4)
    groups = c4 // 4
    if wide:
        w = pad_rows(taps.astype(np.int16), c4).reshape(groups, 4, 9)[:, [0, 2, 1, 3], :]   # [group, lane, tap]
        w = np.ascontiguousarray(w.transpose(0, 2, 1)).astype("<i2").reshape(groups, 36).view(np.int8)
    else:
        w = pad_rows(taps, c4).reshape(groups, 4, 9)                                     # [group, lane, tap]
        w = np.ascontiguousarray(w.transpose(0, 2, 1)).reshape(groups, 36)
    return np.ascontiguousarray(np.concatenate(
        [_words(np.asarray(bias, np.int64).reshape(groups, 4)), w,
         _words(np.asarray(rec, np.int64).reshape(groups, 12))], axis=1)).reshape(-1)


def pack_dw_pair_stream(taps: np.ndarray, kh: int, kw: int, bias: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """The filter stream of the any-window DSP depthwise (mcu_dwconv2d_s8_dsp), from int8 taps [C, KH * KW], the
    folded bias [C4] and 3-word records [3 * C4] (C4 = C rounded up to 4, zero channels): per group of 4 channels
    the 4 biases; per window row, per pair of taps (kx = 2j, 2j + 1; a zero weight past KW) one word per channel
    c0..c3 holding the pair as int16 (w_2j low), for SMLAD with the input pair (x[2j], x[2j + 1]); then the 4
    records. 4 * (16 + 4 KH ceil(KW / 2)) bytes a group; as bytes (int8)."""
    c4, pairs = round_up(taps.shape[0], 4), -(-kw // 2)
    groups = c4 // 4
    w = np.zeros((c4, kh, 2 * pairs), np.int64)
    w[:taps.shape[0], :, :kw] = taps.reshape(-1, kh, kw)
    w = w.reshape(groups, 4, kh, pairs, 2).transpose(0, 2, 3, 1, 4)                      # [group, ky, j, lane, 2]
    words = (w[..., 0] & 0xFFFF) | ((w[..., 1] & 0xFFFF) << 16)
    return np.ascontiguousarray(np.concatenate(
        [_words(np.asarray(bias, np.int64).reshape(groups, 4)), _words(words.reshape(groups, -1)),
         _words(np.asarray(rec, np.int64).reshape(groups, 12))], axis=1)).reshape(-1)


def pack_dwk_line_stream(taps: np.ndarray, k: int, bias: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """The filter stream of the tap-pair DSP depthwise (mcu_dwconv2d_s8_dsp_line, a k x k window, k = 2m + 1),
    from int8 taps [C, k * k], the folded bias [C] and 3-word records [3 * C]: per channel, per window row the
    int16 pairs E_j = (w_2j, w_2j+1) for j < m, then O_j = (w_2j-1, w_2j) for j = 1..m (low halfword first), the
    folded bias, the record. 4 * (k * (k - 1) + 4) bytes a channel; as bytes (int8)."""
    c, m = taps.shape[0], k // 2
    t = np.asarray(taps, np.int64).reshape(c, k, k) & 0xFFFF
    even = [t[:, :, 2 * j] | (t[:, :, 2 * j + 1] << 16) for j in range(m)]
    odd = [t[:, :, 2 * j - 1] | (t[:, :, 2 * j] << 16) for j in range(1, m + 1)]
    pairs = np.stack(even + odd, axis=2).reshape(c, k * 2 * m)
    return np.ascontiguousarray(np.concatenate(
        [_words(pairs), _words(np.asarray(bias, np.int64).reshape(c, 1)),
         _words(np.asarray(rec, np.int64).reshape(c, 3))], axis=1)).reshape(-1)


DW_MVE_LANES = [0, 2, 4, 6, 1, 3, 5, 7]  # VMULLB/VMULLT split 8 channels into even and odd lanes


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
