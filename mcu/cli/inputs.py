"""Reading what the user names on the command line: the model, calibration data and input arrays."""
from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

from mcu.errors import McuError


def load_model(spec: str):
    """MODEL is a .pt2 file, or module:function returning (model, example_inputs)."""
    if spec.endswith(".pt2") or Path(spec).is_file():
        return spec, None
    if ":" not in spec:
        raise McuError(f"MODEL '{spec}' is neither a .pt2 file nor module:function "
                       f"(e.g. mcu.zoo:example_cnn)")
    mod, fn = spec.split(":", 1)
    try:
        factory = getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as exc:
        raise McuError(f"cannot load {spec}: {exc}; MODEL is module:function with the module importable from "
                       f"here (on PYTHONPATH), or a .pt2 file") from exc
    try:
        result = factory()
    except Exception as exc:  # the user's code: its failure is theirs to fix, not an mcu bug
        raise McuError(f"{spec} raised {type(exc).__name__}: {exc}") from exc
    try:
        model, example_inputs = result
    except (TypeError, ValueError):
        raise McuError(f"{spec} returned a {type(result).__name__}; it must return (model, example_inputs)") from None
    return model, example_inputs


def load_calibration(path: str | None):
    """A .npy/.npz/.pt file: an array [B, ...] (one input, one batch per row) or a list of tuples."""
    if path is None:
        return None
    import torch
    p = Path(path)
    if not p.is_file():
        raise McuError(f"calibration file {p} does not exist")
    try:
        if p.suffix == ".pt":
            data = torch.load(p, weights_only=True)  # tensors and containers only: unpickling runs no code
            return [tuple(b) if isinstance(b, (tuple, list)) else (b,) for b in data]
        if p.suffix == ".npz":
            arrays = [float32(v) for _, v in sorted(np.load(p).items())]
            return [tuple(torch.from_numpy(a[i:i + 1]) for a in arrays) for i in range(len(arrays[0]))] if arrays else []
        arr = float32(np.load(p))
        return [(torch.from_numpy(arr[i:i + 1]),) for i in range(len(arr))]
    except Exception as exc:  # numpy, pickle and torch raise many types for unreadable files
        raise McuError(f"cannot read calibration file {p} ({type(exc).__name__}: {exc}); save one array [B, ...] "
                       f"with np.save (.npy), several with np.savez (.npz), or a list of input tuples with "
                       f"torch.save (.pt)") from exc


def float32(a: np.ndarray) -> np.ndarray:
    """float64 (numpy's default) as float32, the dtype models take; other dtypes as they are."""
    return a.astype(np.float32) if a.dtype == np.float64 else a


def load_inputs(paths) -> list:
    """Model inputs (torch order) from .npy files, one per input, as float32 tensors."""
    import torch
    inputs = []
    for f in paths:
        try:
            inputs.append(torch.from_numpy(np.load(f).astype(np.float32)))
        except Exception as exc:  # missing file, not an .npy, non-numeric array
            raise McuError(f"cannot read input file {f} ({type(exc).__name__}: {exc}); pass .npy files saved "
                           f"with np.save, one per model input, in torch order") from exc
    return inputs


def randn_inputs(pkg, seed: int) -> list:
    """Seeded randn inputs of the package's input shapes (torch order); an index input: seeded ids in its range."""
    import torch

    from mcu.package import torch_shape
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(*s.get("index_range", (0, 1)), tuple(torch_shape(s)), generator=g) if s["dtype"] == "int32"
            else torch.randn(tuple(torch_shape(s)), generator=g) for s in pkg.manifest["inputs"]]
