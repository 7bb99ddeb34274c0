"""Fold a zero constant pad into the conv that reads it: the conv's pad_top/pad_left grow, and its
kernel skips the taps outside the input, which is exactly padding with real 0.0 (the zero point).
Asymmetric pads (TF 'same' with stride 2) come out right because the output size is kept. Any other pad
stays a pad node (lowered to mcu_pad, one call per padded dim)."""
from __future__ import annotations

from mcu.codegen.ir import Graph

CONVS = {"conv2d", "depthwise_conv2d"}


def fold_pad(graph: Graph) -> Graph:
    nodes = list(graph.nodes)
    tensors = dict(graph.tensors)
    for pad in [n for n in nodes if n.op == "pad"]:
        out = pad.outputs[0]
        users = [n for n in nodes if out in n.inputs]
        pads = pad.attrs["pads"]  # torch order: (left, right, top, bottom, ...) from the last dim
        ok = (len(users) == 1 and users[0].op in CONVS and users[0].inputs[0] == out and pad.attrs["value"] == 0.0
              and len(pads) == 4 and min(pads) >= 0 and out not in graph.outputs)
        if not ok:
            continue  # lowered on its own (mcu_pad)
        left, right, top, bottom = pads
        conv = users[0]
        ph, pw = conv.attrs["padding"]
        folded = conv.replace(inputs=(pad.inputs[0],) + conv.inputs[1:],
                              attrs={**conv.attrs, "padding": (ph + top, pw + left)})
        nodes[nodes.index(conv)] = folded
        nodes.remove(pad)
        del tensors[out]
    return graph.replace(nodes=tuple(nodes), tensors=tensors)
