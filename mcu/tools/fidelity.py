"""Agreement with torchao's converted model, op by op.

End to end, a deep network turns one differently rounded element into many: torchao computes each op in
float32 (its own summation order) and rounds once, while the numpy reference computes the exact integer
result and rounds once, so the two part on the rare values that float32 puts on the other side of a rounding
boundary, and later layers spread the difference. Op by op, with each op fed torchao's own int8 inputs
(teacher forcing), what is left is each op's own disagreement, which is what this module measures.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mcu.codegen.reference import run_reference
from mcu.tools.debug import record_outputs


@dataclass(frozen=True)
class OpAgreement:
    node: str
    kernel: str
    elements: int
    differ: int    # elements that differ from torchao's int8 value
    max_lsb: int


def torchao_int_tensors(converted, inputs) -> dict[str, np.ndarray]:
    """torchao's int8 value of every quantized activation (torch order), by the name of the node it quantizes."""
    def quantized(n):
        target = str(n.target)
        return n.args[0].name if "quantize_per_tensor" in target and "dequantize" not in target else None

    return record_outputs(converted, inputs, quantized)


def _stored(value: np.ndarray, layout: str) -> np.ndarray:
    return value.transpose(0, 2, 3, 1) if layout == "NHWC" and value.ndim == 4 else value


def op_agreement(pkg, inputs) -> list[OpAgreement]:
    """Each call's output against torchao's, the call fed torchao's values wherever torchao has them
    (float inputs, torch order; needs a package compiled in this process)."""
    if isinstance(inputs, (torch.Tensor, np.ndarray)):
        inputs = (inputs,)
    theirs = torchao_int_tensors(pkg.converted, inputs)
    rows = []

    def force(node, ours):
        t = pkg.graph.tensors[node.outputs[0]]
        value = theirs.get(node.call.float_node or "")
        if value is None or value.size != ours.size:
            return ours
        value = _stored(value, t.layout).reshape(ours.shape).astype(ours.dtype)
        diff = np.abs(ours.astype(np.int64) - value.astype(np.int64))
        rows.append(OpAgreement(node.name, node.call.kernel, int(diff.size), int((diff > 0).sum()),
                                int(diff.max(initial=0))))
        return value

    run_reference(pkg.graph, pkg.quantize_inputs(inputs), override=force)
    return rows
