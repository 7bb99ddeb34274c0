"""Fully connected and attention matmul speed over T token rows on QEMU: MACs per instruction of the int8 fully
connected layer one row at a time (mcu_fully_connected_s8_dsp on the M4: before the GEMM variant), as the board's
registry picks it (mcu_fully_connected_gemm_s8_dsp on the M4, _mve on the M55), and of the 1x1 conv variant on the
same GEMM (input [1, 1, T, K] -> [1, 1, T, N]), per T, K and N; with --matmul, the int8 matmul of two activations
as attention runs it (q @ k^T reading k's rows, and attn @ v) per heads, T and head dim, the variant the registry
picks beside the one-row-pair DSP / Helium matmul (mcu_matmul_s8_dsp, _mve).

    python scripts/fc_bench.py [--rows 8,16,32] [--sizes 64,128,256] [--boards mps2-an386,mps3-an547]
    python scripts/fc_bench.py --matmul [--heads 4,8] [--rows 16,32,64] [--head-dims 8,16,32]
Prints a Markdown table. One profiling firmware (-DMCU_PROFILE, as scripts/dw_bench.py) per board and row count
runs every shape; the counts are per call, net of the harness.
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

from mcu.codegen.ir import Call, Graph, Node, QParams, Tensor, verify
from mcu.codegen.kernels import KERNELS, variants_of
from mcu.codegen.passes.select_kernels import as_variant
from mcu.codegen.twins.quant import quantize_multipliers

from mcu.boards import load_board
from mcu.build.firmware import build_firmware
from mcu.codegen.emit import emit
from mcu.codegen.memory import plan_graph
from mcu.qemu.runner import INSTRUCTIONS_PER_SECOND, run_firmware

_LINE = re.compile(r"^MCU_PROFILE op=(\d+) ticks=(\d+)\s*$", re.MULTILINE)

FEATURES = {"mps2-an386": {"dsp"}, "mps3-an547": {"dsp", "mve"}}
ROW = {"mps2-an386": "mcu_fully_connected_s8_dsp"}  # one row at a time, where the board picks a GEMM instead
CONV1X1 = {"mps2-an386": "mcu_conv2d_1x1_s8_dsp", "mps3-an547": "mcu_conv2d_1x1_s8_mve"}
KINDS = ("row", "fc", "conv")
MATMUL = {"mps2-an386": "mcu_matmul_s8_dsp", "mps3-an547": "mcu_matmul_s8_mve"}  # the variants before the GEMM


def _consts(tensors: dict, name: str, k: int, n: int, wshape: tuple, rng) -> None:
    tensors[f"{name}_w"] = Tensor(f"{name}_w", wshape, "int8", data=rng.integers(-127, 128, wshape, dtype=np.int8))
    tensors[f"{name}_b"] = Tensor(f"{name}_b", (n,), "int32", data=rng.integers(-3000, 3000, n).astype(np.int32))
    mult, shift = quantize_multipliers(60.0 / (np.sqrt(k) * 74.0 * 73.0) * 2.0 ** rng.uniform(-1, 1, n))
    tensors[f"{name}_m"] = Tensor(f"{name}_m", (n,), "int32", data=np.asarray(mult, np.int32))
    tensors[f"{name}_s"] = Tensor(f"{name}_s", (n,), "int32", data=np.asarray(shift, np.int32))


def fc_node(name: str, tensors: dict, x: str, t: int, k: int, n: int, rng) -> Node:
    """A fully connected call of the portable kernel over t rows of k, n outputs."""
    _consts(tensors, name, k, n, (n, k), rng)
    tensors[f"{name}_y"] = Tensor(f"{name}_y", (t, n), "int8", QParams.tensor(0.05, 0))
    params = {"batches": t, "in_features": k, "out_features": n, "input_offset": 3, "output_offset": -5,
              "act_min": -128, "act_max": 127}
    return Node(name, "call", (x, f"{name}_w", f"{name}_b"), (f"{name}_y",),
                call=Call("mcu_fully_connected_s8", params, (f"{name}_m", f"{name}_s")))


def conv_node(name: str, tensors: dict, x: str, t: int, k: int, n: int, rng) -> Node:
    """The same GEMM as a 1x1 conv of the portable kernel over [1, 1, t, k]."""
    _consts(tensors, name, k, n, (n, 1, 1, k), rng)
    tensors[f"{name}_y"] = Tensor(f"{name}_y", (1, 1, t, n), "int8", QParams.tensor(0.05, 0), layout="NHWC")
    params = {"input": (1, 1, t, k), "filter": (n, 1, 1, k), "output": (1, 1, t, n), "stride_h": 1, "stride_w": 1,
              "pad_top": 0, "pad_left": 0, "dilation_h": 1, "dilation_w": 1, "input_offset": 3, "output_offset": -5,
              "act_min": -128, "act_max": 127}
    return Node(name, "call", (x, f"{name}_w", f"{name}_b"), (f"{name}_y",),
                call=Call("mcu_conv2d_s8", params, (f"{name}_m", f"{name}_s")))


def selected(node: Node, board: str, tensors: dict) -> Node:
    """node as the first variant select_kernels would pick on the board (default build)."""
    for v in variants_of(node.call.kernel):
        if v.requires <= FEATURES[board] and v.applies(node.call.params):
            cand = as_variant(node, v, tensors)
            if cand is not None:
                return cand
    return node


def firmware_graph(board: str, t: int, sizes: list[int], kind: str) -> tuple[Graph, list[tuple]]:
    """Every (K, N) on one input of t rows of max(sizes): the fully connected layer one row at a time ("row"), as
    selected ("fc"), or the 1x1 conv variant ("conv"); labels (kernel, K, N) per call."""
    conv = kind == "conv"
    rng = np.random.default_rng(t)
    kmax = max(sizes)
    shape = (1, 1, t, kmax) if conv else (t, kmax)
    tensors = {"x": Tensor("x", shape, "int8", QParams.tensor(0.05, 0), layout="NHWC" if conv else None)}
    nodes, labels = [], []
    for k in sizes:
        for n in sizes:
            name = f"n{len(nodes)}"
            x = "x"
            if k != kmax:  # the first k features of each row: its own input tensor
                x = f"{name}_x"
                tensors[x] = Tensor(x, shape[:-1] + (k,), "int8", QParams.tensor(0.05, 0),
                                    layout="NHWC" if conv else None)
            node = (conv_node if conv else fc_node)(name, tensors, x, t, k, n, rng)
            if kind == "fc":
                node = selected(node, board, tensors)
            else:
                node = as_variant(node, KERNELS[(CONV1X1 if conv else ROW)[board]], tensors)
            nodes.append(node)
            labels.append((node.call.kernel, k, n))
    inputs = tuple(dict.fromkeys(nd.inputs[0] for nd in nodes))
    graph = Graph(tensors, tuple(nodes), inputs, tuple(nd.outputs[0] for nd in nodes))
    return verify(graph), labels


def matmul_node(name: str, tensors: dict, h: int, t: int, d: int, qk: bool) -> Node:
    """Attention's product for h heads over t tokens of head dim d as the portable call: q @ k^T (lhs [h, t, d],
    rhs k [h, t, d] read transposed) or attn @ v (lhs [h, t, t], rhs v [h, t, d]); its operands are graph inputs."""
    q = QParams.tensor(0.05, 3)
    lhs, rhs, out = (f"{name}_{s}" for s in ("a", "b", "y"))
    k, n = (d, t) if qk else (t, d)
    tensors[lhs] = Tensor(lhs, (h, t, k), "int8", q)
    tensors[rhs] = Tensor(rhs, (h, t, d), "int8", q)
    tensors[out] = Tensor(out, (h, t, n), "int8", q)
    mult, shift = quantize_multipliers(np.array([30.0 / (np.sqrt(k) * 74.0 * 74.0)]))
    params = {"batches": h, "lhs_batches": h, "rhs_batches": h, "m": t, "k": k, "n": n, "lhs_offset": -3,
              "rhs_offset": -3, "output_offset": 3, "output_multiplier": int(mult[0]), "output_shift": int(shift[0]),
              "act_min": -128, "act_max": 127, "rhs_group": 1, "rhs_transposed": int(qk)}
    return Node(name, "call", (lhs, rhs), (out,), call=Call("mcu_matmul_s8", params))


def matmul_graph(board: str, t: int, heads: list[int], dims: list[int], kind: str) -> tuple[Graph, list[tuple]]:
    """Every (heads, head dim, q @ k^T or attn @ v) at t tokens, as selected ("sel") or as the old variant ("old");
    labels (kernel, h, d, qk, MACs) per call."""
    tensors, nodes, labels = {}, [], []
    for h in heads:
        for d in dims:
            for qk in (True, False):
                node = matmul_node(f"n{len(nodes)}", tensors, h, t, d, qk)
                if kind == "sel":
                    node = selected(node, board, tensors)
                else:
                    node = as_variant(node, KERNELS[MATMUL[board]], tensors)
                nodes.append(node)
                labels.append((node.call.kernel, h, d, qk, h * t * t * d))
    inputs = tuple(t for nd in nodes for t in nd.inputs)
    graph = Graph(tensors, tuple(nodes), inputs, tuple(nd.outputs[0] for nd in nodes))
    return verify(graph), labels


def matmul_main(args) -> int:
    boards, rows = args.boards.split(","), [int(t) for t in args.rows.split(",")]
    heads, dims = [int(h) for h in args.heads.split(",")], [int(d) for d in args.head_dims.split(",")]
    results: dict[tuple, tuple[float, str]] = {}  # (board, kind, t, h, d, qk) -> (MAC/instruction, kernel)
    with tempfile.TemporaryDirectory() as tmp:
        for board in boards:
            for t in rows:
                for kind in ("old", "sel"):
                    graph, labels = matmul_graph(board, t, heads, dims, kind)
                    out_dir = Path(tmp) / f"{board}-{t}-{kind}"
                    out_dir.mkdir()
                    counts, _ = instructions_per_call(graph, board, out_dir)
                    for (kernel, h, d, qk, macs), count in zip(labels, counts):
                        results[(board, kind, t, h, d, qk)] = (macs / count, kernel[4:])
                    print(f"# {board} T={t} {kind}: done", file=sys.stderr)
    cores = {"mps2-an386": "M4", "mps3-an547": "M55"}
    head = ["product", "heads", "T", "head dim"] + [f"{cores.get(b, b)} {w}" for b in boards
                                                     for w in ("before", "after", "kernel")]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for qk in (True, False):
        for h in heads:
            for t in rows:
                for d in dims:
                    row = ["q @ k^T" if qk else "attn @ v", str(h), str(t), str(d)]
                    for b in boards:
                        (old, _), (new, kernel) = results[(b, "old", t, h, d, qk)], results[(b, "sel", t, h, d, qk)]
                        row += [f"{old:.3f}", f"{new:.3f}", kernel]
                    print("| " + " | ".join(row) + " |")
    return 0


def instructions_per_call(graph: Graph, board_name: str, out_dir: Path) -> tuple[list[int], int]:
    """Instructions of each call (net of the harness) and the arena bytes, on one profiling firmware."""
    board = load_board(board_name)
    graph, mem = plan_graph(graph)
    texts, manifest = emit(graph, mem, board=board_name)
    for name, text in {**texts, "manifest.json": manifest.to_json()}.items():
        (out_dir / name).write_text(text)
    elf = build_firmware(board, out_dir, out_dir / "build", defines=("MCU_PROFILE",))
    rng = np.random.default_rng(0)
    x = b"".join(rng.integers(-128, 128, graph.tensors[i].shape).astype(np.int8).tobytes() for i in graph.inputs)
    res = run_firmware(elf, board, x, timeout=300)
    assert res.status == 0, f"model returned status {res.status}"
    ticks = {int(op): int(t) for op, t in _LINE.findall(res.stdout)}
    return [(max(ticks[i] - res.overhead_ticks, 0) * INSTRUCTIONS_PER_SECOND + board.systick_hz // 2)
            // board.systick_hz for i in range(len(graph.nodes))], mem.arena_bytes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="8,16,32")
    ap.add_argument("--sizes", default="64,128,256", help="K and N, each of these")
    ap.add_argument("--boards", default="mps2-an386,mps3-an547")
    ap.add_argument("--no-conv", action="store_true", help="the fully connected layer only")
    ap.add_argument("--matmul", action="store_true", help="attention's matmuls instead (--rows: tokens T)")
    ap.add_argument("--heads", default="4,8")
    ap.add_argument("--head-dims", default="8,16,32")
    args = ap.parse_args(argv)
    if args.matmul:
        if args.rows == ap.get_default("rows"):
            args.rows = "16,32,64"
        return matmul_main(args)
    boards, rows = args.boards.split(","), [int(t) for t in args.rows.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = {b: [k for k in KINDS if (k != "row" or b in ROW) and (k != "conv" or not args.no_conv)] for b in boards}
    results: dict[tuple, float] = {}  # (board, kind, t, k, n) -> MAC/instruction
    kernels: dict[tuple, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for board in boards:
            for t in rows:
                for kind in kinds[board]:
                    graph, labels = firmware_graph(board, t, sizes, kind)
                    out_dir = Path(tmp) / f"{board}-{t}-{kind}"
                    out_dir.mkdir()
                    counts, _ = instructions_per_call(graph, board, out_dir)
                    for (kernel, k, n), count in zip(labels, counts):
                        results[(board, kind, t, k, n)] = t * k * n / count
                        kernels[(board, kind)] = kernel
                    print(f"# {board} T={t} {kind}: done", file=sys.stderr)
    cores = {"mps2-an386": "M4", "mps3-an547": "M55"}
    head = ["T", "K", "N"] + [f"{cores.get(b, b)} {kernels[(b, kind)][4:]}" for b in boards for kind in kinds[b]]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for t in rows:
        for k in sizes:
            for n in sizes:
                row = [str(t), str(k), str(n)]
                row += [f"{results[(b, kind, t, k, n)]:.3f}" for b in boards for kind in kinds[b]]
                print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
