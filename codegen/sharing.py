"""Which tensors of a lowered graph may share arena bytes, and how: storage groups and overlap gaps.

- Storage groups: an `alias` node (reshape) gives its output its input's bytes; an op whose kernel
  is in-place "elementwise" (add) gives its output the bytes of a same-sized input whose last reader
  it is; a conv fused with its residual add (inplace "residual", codegen/passes/fuse_add.py) gives its
  output the bytes of the residual operand (its last input) if it dies there: the kernel reads
  residual[i] before it writes output[i]. Tensors of one group share one arena buffer; the group lives
  from its first producer to its last reader.
- Raster overlap: a kernel in RASTER_KERNELS writes its output pixels in order and reads, for output
  pixel p, only input pixels at or after the window corner of p (and of every later pixel). Its
  output may then start `gap` bytes below an input that dies there and overlap it (`raster_gap`), if the
  output is born at the node (not the bytes of a residual it took in place).
- In place: an in-place variant (its spec's `overwrites`; optimize="memory", codegen/passes/inplace.py) writes each
  output byte only once no later read needs the input bytes at or below it, so its output may start at
  its dying input's very offset (gap 0: in place) or below it; only for the geometry the kernel runs
  (mcu_kernels.h, the twins' `*_fits`). Its scratch is the node's second output: a tensor live during
  the call only.
- Concat views (optimize="memory", codegen/passes/inplace.py): each input of a concat that copies its inputs
  unchanged is written by its producer straight into its slice of the output's buffer, at the offset
  `group_offsets` gives; the concat runs no code. A slice is contiguous (every dim before the axis is 1) or, for
  a channel concat of NHWC tensors, interleaved: its producer (a STRIDED_KERNELS call) writes each pixel's
  C_i channels output_pixel_stride = C_total elements after the previous pixel's, starting c_offset elements
  into the buffer. Such a tensor's bytes run over `output_extent`, not its size; it never overlaps its input.
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import DTYPES, Graph
from mcu.codegen.kernels import KERNELS, names

# Kernel properties, from the registry (codegen/kernels): `raster` kernels run n, y, x (output pixels in order,
# in blocks of `raster_block` pixels or one row, every read of a block before any write of the next); `strided`
# ones honour params["output_pixel_stride"] (the portable conv and pool loop nests, mcu_kernels.h); an in-place
# variant's `overwrites` is the geometry it runs over its dying input.
RASTER_KERNELS = names(raster=True)
STRIDED_KERNELS = names(strided=True)

# a spec's `inplace` -> the inputs whose bytes the output may take exactly, if one dies at the node: any same-sized
# input of an elementwise kernel; the residual (last input) of a conv fused with its add (passes/fuse_add.py)
# (never the conv's input as well: its windows read ahead of the writes); the input of a depthwise conv whose
# output has its dims, when it writes each output byte only after reading every input byte at or before it in
# its own order, not in raster order, so it may not start below its input either (mcu_dwconv2d_s8_dsp_ring)
IN_PLACE_INPUTS = {"elementwise": lambda n: n.inputs,
                   "residual": lambda n: n.inputs[-1:] if n.inputs[-1] not in n.inputs[:-1] else (),
                   "same_dims": lambda n: n.inputs[:1] if tuple(n.call.params["input"]) == tuple(
                       n.call.params["output"]) else ()}


def inplace_kind(node) -> str:
    """The registry's `inplace` property of a call's kernel ("" for anything else)."""
    return KERNELS[node.call.kernel].inplace if node.op == "call" else ""


def storage_groups(graph: Graph) -> dict[str, str]:
    """tensor -> the representative tensor whose bytes it uses (see the module docstring)."""
    root: dict[str, str] = {}

    def find(t):
        while root.get(t, t) != t:
            t = root[t]
        return t

    for n in graph.nodes:
        if n.op == "alias" and n.attrs.get("view") == "concat":  # each input: a slice of the output's bytes
            for t in n.inputs:  # (its reshape chain is its group: one slice)
                root[find(t)] = find(n.outputs[0])
        elif n.op == "alias":
            root[find(n.outputs[0])] = find(n.inputs[0])
    last_read: dict[str, int] = {}  # alias group -> step of its last reader
    for step, n in enumerate(graph.nodes):
        for t in n.inputs:
            if t is not None:
                last_read[find(t)] = step
    pinned = {find(t) for t in graph.inputs + graph.outputs}
    for step, n in enumerate(graph.nodes):
        if (inplace_kind(n) not in IN_PLACE_INPUTS or find(n.outputs[0]) in pinned
                or find(n.outputs[0]) != n.outputs[0]):  # a concat slice keeps its slice
            continue
        out = graph.tensors[n.outputs[0]]
        for t in IN_PLACE_INPUTS[inplace_kind(n)](n):
            if t is None or graph.tensors[t].is_const or graph.tensors[t].nbytes != out.nbytes:
                continue
            if inplace_kind(n) == "residual" and find(n.inputs[0]) == find(t):
                continue  # the conv's input in other words (a reshape of it)
            g = find(t)
            if g not in pinned and last_read.get(g) == step:
                root[find(out.name)] = g
                last_read[g] = max(step, last_read.get(out.name, step))
                break
    return {t: find(t) for t in graph.tensors}


def concat_is_copy(params: dict) -> bool:
    """Every input of the concat is copied unchanged (its qparams equal the output's: lowering._requant's
    copy encoding)."""
    return all(m == 1 << 30 and s == 1 and off == -params["output_offset"]
               for m, s, off in zip(params["multiplier"], params["shift"], params["input_offset"]))


def concat_copies_exactly(params: dict) -> bool:
    """A concat whose inputs are each one contiguous slice of its output (every dim before the axis is 1) and
    copied unchanged."""
    return params["outer"] == 1 and concat_is_copy(params)


def is_channel_concat(graph: Graph, node) -> bool:
    """A concat (call or view) over the last axis of 4-d NHWC tensors with more than one pixel: each input is
    interleaved in the output, pixel by pixel."""
    out = graph.tensors[node.outputs[0]]
    p = node.call.params if node.op == "call" else node.attrs["params"]
    return (len(out.shape) == 4 and out.layout == "NHWC" and p["outer"] > 1
            and p["outer"] == int(np.prod(out.shape[:3])) and sum(p["sizes"]) == out.shape[3]
            and all(tuple(graph.tensors[t].shape) == (*out.shape[:3], c) for t, c in zip(node.inputs, p["sizes"])))


def pixel_stride(node) -> int | None:
    """The output pixel stride (elements) of a call that writes its pixels apart (stride > C_out), else None."""
    params = node.call.params if node.op == "call" else {}
    stride = params.get("output_pixel_stride", 0)
    return stride if stride and stride > params["output"][3] else None


def output_extent(graph: Graph, node) -> int:
    """Bytes from a call's first output byte past its last one: the tensor's size, or for a strided output
    ((pixels - 1) * stride + C_out) elements."""
    out = graph.tensors[node.outputs[0]]
    stride = pixel_stride(node)
    if stride is None:
        return out.nbytes
    n, h, w, c = node.call.params["output"]
    return ((n * h * w - 1) * stride + c) * (out.nbytes // (n * h * w * c))


def concat_offsets(graph: Graph, node) -> dict[str, int]:
    """input -> byte offset of its first element in the output of a concat view: the sizes laid end to end
    (outer == 1: whole slices; a channel concat: the channel offset of each pixel's slice)."""
    itemsize = np.dtype(DTYPES[graph.tensors[node.outputs[0]].dtype]).itemsize
    starts = np.cumsum((0,) + tuple(node.attrs["params"]["sizes"][:-1])) * itemsize
    return {t: int(o) for t, o in zip(node.inputs, starts)}


def reshape_chain(graph: Graph, t: str) -> list[str]:
    """t, then the tensors it is a reshape (alias) of, back to the one a call or a graph input produced."""
    chain = [t]
    while (p := graph.producer(chain[-1])) is not None and p.op == "alias" and not p.attrs.get("view"):
        chain.append(p.inputs[0])
    return chain


def group_offsets(graph: Graph) -> dict[str, int]:
    """tensor -> byte offset of its bytes in its storage group's buffer: a concat view's inputs (and what they
    reshape) sit at their slices (concat_offsets); every other tensor at 0."""
    return {u: o for n in graph.nodes if n.op == "alias" and n.attrs.get("view") == "concat"
            for t, o in concat_offsets(graph, n).items() for u in reshape_chain(graph, t)}


def raster_gap(params: dict, block: int | str = 1, first: bool = False) -> int:
    """Smallest safe (offset(input) - offset(output)) for a raster kernel with these params that works through
    its output pixels (n, y, x) in order in blocks of `block` pixels ("row": one output row): max over blocks of
    (bytes written up to the block's end) - (first input byte any pixel from the block's start on reads); when
    the kernel reads each block whole before writing any of it (`first`), from the next block's start on."""
    n, oh, ow, oc = params["output"]
    _, ih, iw, ic = params["input"]
    rows = np.maximum(np.arange(oh) * params["stride_h"] - params["pad_top"], 0)
    cols = np.maximum(np.arange(ow) * params["stride_w"] - params["pad_left"], 0)
    first_in = (np.arange(n)[:, None, None] * ih * iw + rows[None, :, None] * iw + cols[None, None, :]).ravel()
    first_in = np.minimum.accumulate(first_in[::-1])[::-1]  # what any later pixel still reads
    size = ow if block == "row" else int(block)
    starts = np.arange(0, first_in.size, size)
    written = np.minimum(starts + size, first_in.size) * oc  # through the block's last pixel
    if first:  # the block's own reads are done; the last block's writes meet no later read
        starts, written = starts[1:], written[:-1]
    return int(max(0, (written - first_in[starts] * ic).max())) if starts.size else 0


def kernel_raster_gap(kernel: str, params: dict, copy: bool = True) -> int:
    """raster_gap for a raster kernel, with its registry's block and order (`copy` False: a raster_copy kernel's
    plain gap, under which it copies nothing)."""
    spec = KERNELS[kernel]
    return raster_gap(params, spec.raster_block, spec.raster_first and (copy or not spec.raster_copy))


def overlap_gap(node, copy: bool = True) -> int | None:
    """How many bytes below its first input a call's output must start to overlap it, if that input dies
    at the call: 0 for an in-place kernel on geometry it runs, else raster_gap for a raster kernel (`copy` False:
    a raster_copy kernel's plain gap); None when the kernel's output may not overlap its input."""
    kernel = node.call.kernel if node.op == "call" else None
    if pixel_stride(node) is not None:  # raster_gap assumes contiguous pixels
        return None
    overwrites = KERNELS[kernel].overwrites if kernel else None
    if overwrites is not None and overwrites(node.call.params):
        return 0
    if kernel in RASTER_KERNELS:
        return kernel_raster_gap(kernel, node.call.params, copy)
    return None


def overwritable(graph: Graph, group: dict[str, str], external) -> list[bool]:
    """Per node: its output and its first input live in different arena buffers, and no later node reads
    the input's bytes, so the output may be written over them."""
    last_read: dict[str, int] = {}
    for step, n in enumerate(graph.nodes):
        for t in n.inputs:
            if t is not None:
                last_read[group[t]] = step
    born: dict[str, int] = {}
    for step, n in enumerate(graph.nodes):
        for t in n.outputs:
            born.setdefault(group[t], step)
    sliced = {group[t] for t in group_offsets(graph)}  # a concat's buffer: its slices are not at its start
    flags = []
    for step, n in enumerate(graph.nodes):
        src = group[n.inputs[0]] if n.inputs and n.inputs[0] is not None else None
        dst = group[n.outputs[0]]  # born here: not the bytes of an input it took in place (fused residual)
        flags.append(n.op == "call" and src is not None and not graph.tensors[n.inputs[0]].is_const
                     and src not in external and dst not in external and src != dst and last_read.get(src) == step
                     and born[dst] == step and dst not in sliced)
    return flags
