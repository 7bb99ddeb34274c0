"""Numpy twin of runtime_c/kernels/shape: mcu_transpose_s8."""
from __future__ import annotations

import numpy as np


def transpose_s8(params: dict, input: np.ndarray) -> np.ndarray:
    """Twin of mcu_transpose_s8: input holds prod(in_dims) values; returns the int8 [in_dims[perm[i]]] tensor."""
    dims, perm = tuple(params["in_dims"]), tuple(params["perm"])
    if len(dims) != 4 or min(dims) < 1 or sorted(perm) != [0, 1, 2, 3]:
        raise ValueError(f"in_dims must be 4 positive ints and perm a permutation of 0..3, got {dims}, {perm}")
    x = np.asarray(input, dtype=np.int8)
    if x.size != int(np.prod(dims)):
        raise ValueError(f"input must hold {int(np.prod(dims))} values, got {x.size}")
    return np.ascontiguousarray(x.reshape(dims).transpose(perm))
