"""The compiler's passes, in order. Each is a function Graph -> Graph; `verify` runs after each."""
from __future__ import annotations

from functools import partial

from mcu.codegen.ir import Graph, verify
from mcu.codegen.passes.cancel_transposes import cancel_transposes
from mcu.codegen.passes.canonicalize import canonicalize
from mcu.codegen.passes.decompose import copy_aliased_outputs, decompose
from mcu.codegen.passes.fold_matmul_operands import fold_matmul_operands
from mcu.codegen.passes.fold_pad import fold_pad
from mcu.codegen.passes.fold_scale import fold_scale
from mcu.codegen.passes.fuse_add import fuse_residual_adds
from mcu.codegen.passes.fuse_clamp import fuse_clamp
from mcu.codegen.passes.inplace import use_inplace_kernels
from mcu.codegen.passes.layout import to_nhwc
from mcu.codegen.passes.lower import lower
from mcu.codegen.target import Target
from mcu.codegen.passes.select_kernels import select_kernels
from mcu.codegen.passes.share_constants import share_constants
from mcu.codegen.passes.slice_first import slice_first
from mcu.codegen.passes.widen_weights import widen_weights


def passes(target: Target = Target()) -> list:
    return [
        slice_first,                          # slice(quantize(x)) -> quantize(slice(x)): convert what is kept
        fold_matmul_operands,                 # matmul reads k^T and repeated (grouped-query) heads where they lie
        fold_scale,                           # matmul then x * c: c in the matmul's requantization
        decompose,                            # 1-d ops -> 2-d ops on views; keepdim reductions; long concats
        canonicalize,                         # adaptive pools / means -> avg_pool2d; grouped convs -> depthwise
        fuse_clamp,                           # standalone ReLU/ReLU6 -> the producer's output clamp
        fold_pad,                             # zero pads -> the consuming conv's padding
        to_nhwc,                              # NCHW -> NHWC activations, OHWI weights, transposes around reshapes
        cancel_transposes,                    # drop transposes that undo each other or move only size-1 dims
        copy_aliased_outputs,                 # an output that is an input (or a view of one) gets a copy
        lower,                                # ops -> portable kernel calls, on (op, element type); converts
        partial(select_kernels, target=target),  # portable -> the board's fastest variant
        partial(widen_weights, target=target),   # flash budget -> widened weights where they save the most
        partial(use_inplace_kernels, target=target),  # concats written in place; memory: in-place variants
        partial(fuse_residual_adds, target=target),  # optimize="memory": conv + residual add in one call
        share_constants,                      # identical constant arrays (an unrolled GRU's weights) stored once
    ]


PASSES = passes()


def run_passes(graph: Graph, target: Target = Target()) -> Graph:
    for p in passes(target):
        graph = verify(p(graph))
    return graph
