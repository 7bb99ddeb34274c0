"""Numpy twins of runtime_c/kernels/shape: mcu_transpose_s8, mcu_concat_s8, mcu_upsample_nearest_s8."""
from __future__ import annotations

import numpy as np

from .quant import requantize, requantize_round, saturate


def transpose_s8(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_transpose_s8: input holds prod(in_dims) values; returns the int8 [in_dims[perm[i]]] tensor."""
    dims, perm = tuple(params["in_dims"]), tuple(params["perm"])
    if len(dims) != 4 or min(dims) < 1 or sorted(perm) != [0, 1, 2, 3]:
        raise ValueError(f"in_dims must be 4 positive ints and perm a permutation of 0..3, got {dims}, {perm}")
    x = np.asarray(input, dtype=np.int8)
    if x.size != int(np.prod(dims)):
        raise ValueError(f"input must hold {int(np.prod(dims))} values, got {x.size}")
    return np.ascontiguousarray(x.reshape(dims).transpose(perm))


def slice_s8(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_slice_s8 (and _s16, _f32: the same copy): [outer, in_len, inner] -> [outer, out_len, inner],
    keeping indices start, start + step, ... along the middle axis."""
    p = params
    last = p["start"] + (p["out_len"] - 1) * p["step"]
    if min(p["outer"], p["inner"], p["out_len"], p["step"]) < 1 or p["start"] < 0 or last >= p["in_len"]:
        raise ValueError(f"bad slice params {p}")
    x = np.asarray(input)
    if x.size != p["outer"] * p["in_len"] * p["inner"]:
        raise ValueError(f"input must hold {p['outer'] * p['in_len'] * p['inner']} values, got {x.size}")
    return np.ascontiguousarray(x.reshape(p["outer"], p["in_len"], p["inner"])[:, p["start"]:last + 1:p["step"]])


slice_s16 = slice_f32 = slice_s8


def gather_s8(params: dict, table: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Twin of mcu_gather_s8 (and _s16, _f32): table [outer, rows, inner], indices [count] -> [outer, count,
    inner]; an index outside [0, rows) is the C kernel's MCU_ERR_INDEX, a ValueError here."""
    p = params
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    if idx.size != p["count"] or min(p["outer"], p["rows"], p["count"], p["inner"]) < 1:
        raise ValueError(f"bad gather params {p} for {idx.size} indices")
    if idx.size and (idx.min() < 0 or idx.max() >= p["rows"]):
        raise ValueError(f"gather index outside [0, {p['rows']}): {idx.min()}..{idx.max()} (MCU_ERR_INDEX)")
    x = np.asarray(table).reshape(p["outer"], p["rows"], p["inner"])
    return np.ascontiguousarray(x[:, idx])


gather_s16 = gather_f32 = gather_s8


def scatter_s8(params: dict, table: np.ndarray, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Twin of mcu_scatter_s8 (and _s16, _f32): table [outer, rows, inner] with rows indices[i] replaced by
    values [outer, count, inner] (the last of repeated indices wins); outside [0, rows) is MCU_ERR_INDEX."""
    p = params
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    if idx.size != p["count"] or idx.min() < 0 or idx.max() >= p["rows"]:
        raise ValueError(f"scatter indices {idx.tolist()} outside [0, {p['rows']}) (MCU_ERR_INDEX) or not {p['count']}")
    out = np.array(table).reshape(p["outer"], p["rows"], p["inner"])
    vals = np.asarray(values).reshape(p["outer"], p["count"], p["inner"])
    for i, r in enumerate(idx):
        out[:, r] = vals[:, i]
    return out


scatter_s16 = scatter_f32 = scatter_s8


def pad_s8(params: dict, input: np.ndarray, dtype=np.int8) -> np.ndarray:
    """Twin of mcu_pad_s8 (_s16, _f32: value_f32): [outer, in_len, inner] -> [outer, before + in_len + after,
    inner], the new elements `value`."""
    p = params
    if min(p["outer"], p["inner"], p["in_len"]) < 1 or min(p["before"], p["after"]) < 0:
        raise ValueError(f"bad pad params {p}")
    x = np.asarray(input, dtype).reshape(p["outer"], p["in_len"], p["inner"])
    value = p["value_f32"] if dtype == np.float32 else p["value"]
    return np.pad(x, ((0, 0), (p["before"], p["after"]), (0, 0)), constant_values=dtype(value))


def pad_s16(params: dict, input: np.ndarray) -> np.ndarray:
    return pad_s8(params, input, np.int16)


def pad_f32(params: dict, input: np.ndarray) -> np.ndarray:
    return pad_s8(params, input, np.float32)


CONCAT_MAX_INPUTS = 8


def concat_s8(params: dict, *inputs: np.ndarray) -> np.ndarray:
    """Twin of mcu_concat_s8: input i holds outer * sizes[i] values; returns int8 [outer, sum(sizes)]."""
    p = params
    k, outer = p["num_inputs"], p["outer"]
    if not 1 <= k <= CONCAT_MAX_INPUTS or outer < 1 or not -128 <= p["output_offset"] <= 127:
        raise ValueError(f"num_inputs must be in [1, {CONCAT_MAX_INPUTS}], outer >= 1, output_offset int8")
    if len(inputs) != k:
        raise ValueError(f"expected {k} inputs, got {len(inputs)}")
    parts = []
    for i, x in enumerate(inputs):
        size, off, mult, shift = p["sizes"][i], p["input_offset"][i], p["multiplier"][i], p["shift"][i]
        if size < 1 or not -127 <= off <= 128 or mult < 0 or not -31 <= shift <= 30:
            raise ValueError(f"input {i}: bad size, offset or requantization")
        x = np.asarray(x, dtype=np.int64)
        if x.size != outer * size:
            raise ValueError(f"input {i} must hold {outer * size} values, got {x.size}")
        parts.append(saturate(requantize_round(x.reshape(outer, size) + off, mult, shift) + p["output_offset"],
                              -128, 127))
    return np.concatenate(parts, axis=1)


def upsample_nearest_s8(params: dict, input: np.ndarray, dtype=np.int8) -> np.ndarray:
    """Twin of mcu_upsample_nearest_s8 (and _f32): returns [N, H * scale_h, W * scale_w, C]."""
    dims, sh, sw = tuple(params["input"]), params["scale_h"], params["scale_w"]
    if min(dims) < 1 or sh < 1 or sw < 1:
        raise ValueError(f"dims and scales must be positive: {dims}, {sh}, {sw}")
    x = np.asarray(input, dtype=dtype)
    if x.size != int(np.prod(dims)):
        raise ValueError(f"input must hold {int(np.prod(dims))} values, got {x.size}")
    return np.repeat(np.repeat(x.reshape(dims), sh, axis=1), sw, axis=2)


def upsample_nearest_f32(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_upsample_nearest_f32: float32 [N, H * scale_h, W * scale_w, C]."""
    return upsample_nearest_s8(params, input, np.float32)


BILINEAR_BITS = 11  # MCU_BILINEAR_BITS


def bilinear_taps(in_size: int, out_size: int, align_corners: bool, scale: float | None) -> np.ndarray:
    """The int16 [out_size, 3] table (i0, i1, w1) of one axis of a bilinear resampling, torch's rule in float32
    (area_pixel_compute_source_index): source = ratio * o (align_corners), else ratio * (o + 0.5) - 0.5 clamped at
    0, ratio (in - 1) / (out - 1), else 1 / scale when the op was given one, else in / out; i0 = floor(source)
    (at most in - 1), i1 = i0 + 1 inside the input, w1 = source - i0 rounded to 2^-BILINEAR_BITS."""
    f = np.float32
    if in_size >= 2**15:
        raise ValueError(f"a bilinear axis of {in_size} exceeds the int16 tables")
    if align_corners:
        ratio = f(in_size - 1) / f(out_size - 1) if out_size > 1 else f(0)
        src = ratio * np.arange(out_size, dtype=f)
    else:
        ratio = f(1.0 / scale) if scale is not None and scale > 0 else f(in_size) / f(out_size)
        src = np.maximum(ratio * (np.arange(out_size, dtype=f) + f(0.5)) - f(0.5), f(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    lam = np.clip(src - i0.astype(f), f(0), f(1))
    i1 = np.minimum(i0 + 1, in_size - 1)
    w1 = np.round(lam.astype(np.float64) * (1 << BILINEAR_BITS)).astype(np.int64)
    return np.stack([i0, i1, w1], axis=1).astype(np.int16)


def upsample_bilinear_s8(params: dict, y_taps: np.ndarray, x_taps: np.ndarray, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_upsample_bilinear_s8: returns int8 of shape params["output"]."""
    p, one = params, 1 << BILINEAR_BITS
    (n, h, w, c), out = tuple(p["input"]), tuple(p["output"])
    if min(n, h, w, c) < 1 or min(out) < 1 or p["multiplier"] < 0 or not -31 <= p["shift"] <= 30:
        raise ValueError(f"bad dims or requantization: {p}")
    if not (-127 <= p["input_offset"] <= 128 and -128 <= p["output_offset"] <= 127
            and -128 <= p["act_min"] <= p["act_max"] <= 127):
        raise ValueError(f"offsets or clamp out of range: {p}")
    ty = np.asarray(y_taps, np.int64).reshape(-1, 3)
    tx = np.asarray(x_taps, np.int64).reshape(-1, 3)
    if out[0] != n or out[3] != c or ty.shape[0] != out[1] or tx.shape[0] != out[2]:
        raise ValueError(f"bilinear dims disagree: {p['input']} -> {p['output']}, tables {ty.shape} {tx.shape}")
    for t, size in ((ty, h), (tx, w)):
        if (t[:, :2] < 0).any() or (t[:, :2] >= size).any() or (t[:, 2] < 0).any() or (t[:, 2] > one).any():
            raise ValueError("a bilinear table's index or weight is out of range")
    x = np.asarray(input, np.int64).reshape(n, h, w, c)
    wx1 = tx[:, 2][None, :, None]
    rows = [(one - wx1) * x[:, r][:, tx[:, 0]] + wx1 * x[:, r][:, tx[:, 1]] for r in range(h)]  # [n, W_out, c] each
    rows = np.stack(rows, axis=1)
    wy1 = ty[:, 2][None, :, None, None]
    acc = (one - wy1) * rows[:, ty[:, 0]] + wy1 * rows[:, ty[:, 1]] + p["input_offset"] * one * one
    return saturate(requantize(acc, p["multiplier"], p["shift"]) + p["output_offset"], p["act_min"], p["act_max"])
