"""optimize="memory": a residual add runs inside the conv that produces one of its operands.

- Unfused, the conv's output y lives from the conv to the add, beside the add's other operand r and the
  add's output. mcu_conv2d_add_s8 computes y element by element, adds r's element with mcu_add_s8's
  arithmetic and writes only the sum: y never exists. The sum may take r's bytes exactly (the kernel reads
  r[i] before it writes out[i]; codegen/memory.py, inplace "residual") when r dies at the add; otherwise it
  gets its own buffer, which still saves y's. Over the conv's input the sum may slide by the conv's raster gap.
- Fused where the add is mcu_add_s8 (same shapes) and one operand is the output of a portable conv
  (mcu_conv2d_s8, or its in-place 1x1 variant, which goes back to the portable loop) that no other node
  reads and that is not a graph output. When both operands qualify, the one whose fusion gives the smaller
  schedule peak (memory.schedule), the first on ties.
- The fused call keeps its C order (input, filter, bias, residual) and the conv's per-channel quant; its
  params are mcu_conv2d_add_params_t (the conv's fields, then the add's as add_*, y as input1: the add's
  operands are swapped when y was its second, a1 + a2 being symmetric). The Call's unfused keeps the two
  portable calls (kernel, params, quant, inputs, output), which the reference runs one after the other.
"""
from __future__ import annotations

from mcu.codegen.ir import Call, Graph, Node
from mcu.codegen.memory import schedule
from mcu.codegen.target import Target
from mcu.codegen.twins.conv import conv2d_add_params

FUSED = "mcu_conv2d_add_s8"  # its registry entry (codegen/kernels/conv.py) gives its aliasing: "residual"


def _swapped(add: dict) -> dict:
    """mcu_add_s8's params with input1 and input2 exchanged (the same sums)."""
    out = dict(add)
    for k in ("offset", "multiplier", "shift"):
        out[f"input1_{k}"], out[f"input2_{k}"] = add[f"input2_{k}"], add[f"input1_{k}"]
    return out


def _fusable_conv(graph: Graph, y: str) -> Node | None:
    conv = graph.producer(y)
    if conv is None or conv.op != "call" or y in graph.outputs or len(graph.consumers(y)) != 1:
        return None
    if conv.call.portable != "mcu_conv2d_s8" or conv.call.selected:
        return None
    return conv


def fuse(graph: Graph, add: Node, conv: Node) -> Graph:
    """`graph` with `conv` and `add` replaced by one mcu_conv2d_add_s8 call at the add's place."""
    y = conv.outputs[0]
    r = add.inputs[1] if add.inputs[0] == y else add.inputs[0]
    add_params = add.call.params if add.inputs[0] == y else _swapped(add.call.params)
    portable = {"kernel": "mcu_conv2d_s8", "params": conv.call.params, "quant": conv.call.quant,
                "inputs": conv.inputs, "output": y}
    summed = {"kernel": "mcu_add_s8", "params": add.call.params, "quant": None, "inputs": add.inputs,
              "output": add.outputs[0]}
    fused = add.replace(inputs=(*conv.inputs, r), outputs=add.outputs, call=Call(
        FUSED, conv2d_add_params(conv.call.params, add_params), conv.call.quant, add.call.float_node,
        unfused=(portable, summed)))
    tensors = {k: v for k, v in graph.tensors.items() if k != y and k not in conv.outputs[1:]}
    nodes = tuple(fused if n is add else n for n in graph.nodes if n is not conv)
    return graph.replace(nodes=nodes, tensors=tensors)


def fuse_residual_adds(graph: Graph, target: Target) -> Graph:
    if target.variants:  # optimize="speed": the board's fastest kernels, unfused
        return graph
    for name in [n.name for n in graph.nodes if n.op == "call" and n.call.kernel == "mcu_add_s8"]:
        add = next(n for n in graph.nodes if n.name == name)
        a, b = (graph.tensors[t] for t in add.inputs)
        if a.shape != b.shape or add.inputs[0] == add.inputs[1]:
            continue
        options = [fuse(graph, add, conv) for y in dict.fromkeys(add.inputs)
                   if (conv := _fusable_conv(graph, y)) is not None]
        if options:
            graph = min(options, key=lambda g: schedule(g)[2])
    return graph
