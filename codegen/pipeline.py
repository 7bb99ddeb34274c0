"""The compiler's passes, in order. Each is a function Graph -> Graph; `verify` runs after each."""
from __future__ import annotations

from mcu.codegen.ir import Graph, verify
from mcu.codegen.lowering import lower
from mcu.codegen.passes.canonicalize import canonicalize
from mcu.codegen.passes.fuse_clamp import fuse_clamp
from mcu.codegen.passes.layout import to_nhwc

PASSES = [
    canonicalize,  # adaptive pools / means -> avg_pool2d; grouped convs -> depthwise
    fuse_clamp,    # standalone ReLU/ReLU6 -> the producer's output clamp
    to_nhwc,       # NCHW -> NHWC activations, OHWI weights, explicit transposes around reshapes
    lower,         # ops -> kernel calls with baked parameters (lowering table)
]


def run_passes(graph: Graph, passes=PASSES) -> Graph:
    for p in passes:
        graph = verify(p(graph))
    return graph
