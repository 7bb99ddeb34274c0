"""The numpy integer reference of a lowered graph: runs each kernel's twin in schedule order.
The device must match it bit for bit."""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import DTYPES, Graph
from mcu.codegen.kernels import KERNELS


def twin(kernel: str):
    """The numpy twin of C kernel `kernel` (its registry entry's; a variant's is its portable kernel's)."""
    return KERNELS[kernel].twin


def run_reference(graph: Graph, inputs: list[np.ndarray], *, every_tensor: bool = False, override=None):
    """Integer inputs (stored shapes/layouts) in, integer outputs out; with every_tensor, the dict of
    every tensor's value instead (for the numerical debugger). override(node, value), if given, returns the
    value to keep for a call's output (mcu.tools.fidelity feeds each op another reference's inputs that way)."""
    values: dict[str, np.ndarray] = {}
    for name, arr in zip(graph.inputs, inputs, strict=True):
        t = graph.tensors[name]
        values[name] = np.asarray(arr, dtype=DTYPES[t.dtype]).reshape(t.shape)

    def get(name):
        if name is None:
            return None
        t = graph.tensors[name]
        return t.data if t.is_const else values[name]

    for node in graph.nodes:
        out = graph.tensors[node.outputs[0]]
        if node.op == "alias" and node.attrs.get("view") == "concat":  # written in place by its inputs' producers
            values[out.name] = twin("mcu_concat_s8")(node.attrs["params"], *map(get, node.inputs)).reshape(out.shape)
            continue
        if node.op == "alias":
            values[out.name] = values[node.inputs[0]].reshape(out.shape)
            continue
        c = node.call
        if c.unfused:  # a fused call (codegen/passes/fuse_add.py): its portable calls, one after another
            local = {}
            for step in c.unfused:
                args = [local[i] if i in local else get(i) for i in step["inputs"]]
                quant = [get(q) for q in step["quant"] or ()]
                local[step["output"]] = np.asarray(twin(step["kernel"])(step["params"], *quant, *args))
            result = local[node.outputs[0]].reshape(out.shape)
            values[out.name] = result if override is None else override(node, result)
            continue
        # a variant's prepared constants differ; its twin runs on the portable ones (select_kernels.py)
        quant, inputs = c.reference_args(node.inputs)
        result = twin(c.portable)(c.params, *map(get, quant), *map(get, inputs))
        if isinstance(result, tuple):  # several outputs (an LSTM's y and c_n): the first is the call's output
            for name, value in zip(node.outputs[1:], result[1:]):
                values[name] = np.asarray(value).reshape(graph.tensors[name].shape)
            result = result[0]
        result = np.asarray(result).reshape(out.shape)
        values[out.name] = result if override is None else override(node, result)
    return values if every_tensor else [values[o] for o in graph.outputs]
