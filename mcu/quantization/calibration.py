"""The calibration set's checks, batch by batch: its inputs' form (check_batch) and what they make the model output
(check_finite). Each failure is one McuError naming the batch, the input or the op and its source line, and the fix."""
from __future__ import annotations

import torch
from torch.fx import GraphModule

from mcu.errors import McuError
from mcu.importer.ops import op_name, source_line


def check_batch(batch, example_inputs, k: int = 0) -> tuple:
    """Batch k of the calibration set as a tuple of tensors, or an McuError naming what is wrong with it."""
    if isinstance(batch, torch.Tensor):
        batch = (batch,)
    try:
        batch = tuple(batch)
    except TypeError:
        raise McuError(f"calibration batch {k} is a {type(batch).__name__}; pass an iterable of input "
                       f"tuples") from None
    if len(batch) != len(example_inputs):
        raise McuError(f"calibration batch {k} has {len(batch)} inputs but the model takes "
                       f"{len(example_inputs)}; pass an iterable of input tuples")
    for i, (b, e) in enumerate(zip(batch, example_inputs)):
        if not isinstance(b, torch.Tensor) or b.shape != e.shape or b.dtype != e.dtype:
            got = f"{tuple(b.shape)} {b.dtype}" if isinstance(b, torch.Tensor) else type(b).__name__
            raise McuError(f"calibration batch {k}: input {i} is {got}, expected {tuple(e.shape)} {e.dtype} "
                           f"like the example input")
        if b.is_floating_point() and not torch.isfinite(b).all():
            raise McuError(f"calibration batch {k}: input {i} contains NaN or Inf; clean the calibration data")
    return batch


def check_finite(prepared: GraphModule, k: int) -> None:
    """An McuError naming the first op whose output calibration batch k made NaN (a value outside the op's domain,
    e.g. log1p below -1): a NaN has no int8 range, and torchao's observer would fail on it only at conversion."""
    for node in prepared.graph.nodes:
        observer = prepared.get_submodule(node.target) if node.op == "call_module" else None
        seen = [getattr(observer, name, None) for name in ("min_val", "max_val")]
        if not all(isinstance(v, torch.Tensor) and v.numel() for v in seen) or not any(v.isnan().any() for v in seen):
            continue
        src = node.args[0]
        where = source_line(src) or "an unknown source line"
        raise McuError(f"calibration batch {k} makes {op_name(src)} at {where} output NaN, which has no int8 "
                       f"range: keep that op's inputs in its domain (clamp them in the model, or fix the "
                       f"calibration data and example inputs)")
