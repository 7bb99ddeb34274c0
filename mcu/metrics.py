"""Accuracy metrics shared by the example, the benchmark and the tests."""
from __future__ import annotations

import numpy as np


def sqnr_db(reference, actual) -> float:
    """Signal-to-quantization-noise ratio of `actual` against `reference` (arrays or lists of arrays,
    pooled), in dB."""
    ref = np.concatenate([np.asarray(r, np.float64).ravel() for r in (reference if isinstance(reference, list) else [reference])])
    act = np.concatenate([np.asarray(a, np.float64).ravel() for a in (actual if isinstance(actual, list) else [actual])])
    noise = float(np.sum((ref - act) ** 2))
    return float("inf") if noise == 0 else 10.0 * np.log10(float(np.sum(ref ** 2)) / noise)


def lsb_error(raw: np.ndarray, real: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """|raw - quantize(real)| in LSBs: integer outputs against a float (e.g. torchao) reference."""
    q = np.round(np.asarray(real, np.float64) / scale) + zero_point
    return np.abs(raw.astype(np.int64) - q.astype(np.int64))


# quantize="none": the float32 kernels against torch (issue 8: relative error <= 1e-5 on the zoo)
FLOAT_TOLERANCE = 1e-5


def relative_error(actual, reference) -> float:
    """max |actual - reference| / max |reference| over all elements (arrays or lists of arrays, pooled):
    the float32 flow's error measure, relative to the output's own scale, so near-zero elements do not blow it up."""
    ref = np.concatenate([np.asarray(r, np.float64).ravel() for r in (reference if isinstance(reference, list) else [reference])])
    act = np.concatenate([np.asarray(a, np.float64).ravel() for a in (actual if isinstance(actual, list) else [actual])])
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    diff = float(np.abs(act - ref).max()) if ref.size else 0.0
    return diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))
