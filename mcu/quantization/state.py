"""The qparams of a model's state (mcu.importer.state): one observer for where a state is read and where it is written."""
from __future__ import annotations

from torch.fx import GraphModule

import mcu.torchao_quiet  # noqa: F401  (before any torchao import)
from torchao.quantization.pt2e.quantizer import (
    FixedQParamsQuantizationSpec,
    QuantizationSpec,
    SharedQuantizationSpec,
)


def share_state_qparams(model: GraphModule, states: int) -> None:
    """Each state input is read on its update's qparams: one observer sees both (the value written back is the
    value read next call, with no requantization between calls). An update with fixed qparams (tanh, sigmoid) gives
    them to the state; one sharing its input's range shares that edge's observer."""
    inputs = [n for n in model.graph.nodes if n.op == "placeholder"][-states:]
    updates = list(next(n for n in model.graph.nodes if n.op == "output").args[0])[-states:]
    for p, u in zip(inputs, updates):
        ann = u.meta.get("quantization_annotation")
        readers = [c for c in model.graph.nodes if p in getattr(c.meta.get("quantization_annotation"),
                                                                  "input_qspec_map", {})]
        if ann is None or not readers:
            continue  # a float state keeps its form
        spec, first = ann.output_qspec, SharedQuantizationSpec((p, readers[0]))
        if isinstance(spec, FixedQParamsQuantizationSpec):
            for c in readers:
                c.meta["quantization_annotation"].input_qspec_map[p] = spec
        elif isinstance(spec, QuantizationSpec):
            ann.output_qspec = first  # observed first where the state is read, then shared by the update
        elif isinstance(spec, SharedQuantizationSpec) and isinstance(spec.edge_or_node, tuple) \
                and spec.edge_or_node != (p, readers[0]) \
                and isinstance(ann.input_qspec_map.get(spec.edge_or_node[0]), QuantizationSpec):
            ann.input_qspec_map[spec.edge_or_node[0]] = first  # the update shares its input's range
