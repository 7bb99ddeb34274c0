"""Depthwise convolution speed on QEMU: MACs per instruction of the portable mcu_dwconv2d_s8, the 3x3 variants and
the any-window variants (mcu_dwconv2d_s8_dsp on the M4, mcu_dwconv2d_s8_mve on the M55), per window, stride and
channel count, on a 24x24 input, 'same'-padded (or 'valid': --valid).

    python scripts/dw_bench.py [--size 24] [--channels 8,16,64] [--boards mps2-an386,mps3-an547]
Prints a Markdown table. One profiling firmware (-DMCU_PROFILE: SysTick around every call, mcu/tools/profile.py)
per board, kernel set and channel count runs every window; the counts are per call, net of the harness.
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

from mcu.boards import load_board
from mcu.build.firmware import build_firmware
from mcu.codegen.emit import emit
from mcu.codegen.ir import Call, Graph, Node, QParams, Tensor, verify
from mcu.codegen.kernels import KERNELS
from mcu.codegen.macs import op_macs
from mcu.codegen.memory import plan_graph
from mcu.codegen.passes.select_kernels import as_variant
from mcu.codegen.twins.quant import quantize_multipliers
from mcu.qemu.runner import INSTRUCTIONS_PER_SECOND, run_firmware

NEW = {"mps2-an386": "mcu_dwconv2d_s8_dsp", "mps3-an547": "mcu_dwconv2d_s8_mve"}
LINEK = {"mps2-an386": "mcu_dwconv2d_s8_dsp_line",  # 5x5 and 7x7 at stride 1 and 2 (geometry.is_dwk_line)
         "mps3-an547": "mcu_dwconv2d_s8_mve_planar"}  # a channel at a time, every window
OLD3 = {"mps2-an386": "mcu_dwconv2d_3x3_s8_dsp", "mps3-an547": "mcu_dwconv2d_3x3_s8_mve"}
WIDE3 = {"mps2-an386": ("mcu_dwconv2d_3x3_s8_dsp_wide",)}  # int16 streams
RING = {"mps2-an386": "mcu_dwconv2d_s8_dsp_ring"}  # 3x3 at stride 1 (geometry.is_dw_ring)
GEOMETRIES = [(k, s) for k in (3, 5, 7) for s in (1, 2)]
_LINE = re.compile(r"^MCU_PROFILE op=(\d+) ticks=(\d+)\s*$", re.MULTILINE)


def dw_node(name: str, tensors: dict, x: str, size: int, c: int, k: int, s: int, rng, padded: bool = True) -> Node:
    """A k x k depthwise call of the portable kernel on x ('same'-padded, or 'valid'), its constants and output
    in tensors."""
    pad = k // 2 if padded else 0
    out = (size + 2 * pad - k) // s + 1
    tensors[f"{name}_w"] = Tensor(f"{name}_w", (1, k, k, c), "int8", data=rng.integers(-127, 128, (1, k, k, c),
                                                                                         dtype=np.int8))
    tensors[f"{name}_b"] = Tensor(f"{name}_b", (c,), "int32", data=rng.integers(-3000, 3000, c).astype(np.int32))
    mult, shift = quantize_multipliers(40.0 / (k * 74.0 * 73.0) * 2.0 ** rng.uniform(-1, 1, c))
    tensors[f"{name}_m"] = Tensor(f"{name}_m", (c,), "int32", data=np.asarray(mult, np.int32))
    tensors[f"{name}_s"] = Tensor(f"{name}_s", (c,), "int32", data=np.asarray(shift, np.int32))
    tensors[f"{name}_y"] = Tensor(f"{name}_y", (1, out, out, c), "int8", QParams.tensor(0.05, 0), layout="NHWC")
    params = {"input": (1, size, size, c), "filter": (1, k, k, c), "output": (1, out, out, c), "stride_h": s,
              "stride_w": s, "pad_top": pad, "pad_left": pad, "dilation_h": 1, "dilation_w": 1, "input_offset": 3,
              "output_offset": -5, "act_min": -128, "act_max": 127}
    return Node(name, "call", (x, f"{name}_w", f"{name}_b"), (f"{name}_y",),
                call=Call("mcu_dwconv2d_s8", params, (f"{name}_m", f"{name}_s")))


def firmware_graph(board: str, kernels: str, size: int, c: int, padded: bool = True) -> tuple[Graph, list[str]]:
    """Every geometry on one input, as the portable kernel ("portable") or the variants ("variants": the 3x3 one
    and the any-window one on each 3x3 geometry, the any-window one elsewhere); the kernel label of each call."""
    rng = np.random.default_rng(c)
    tensors = {"x": Tensor("x", (1, size, size, c), "int8", QParams.tensor(0.05, 0), layout="NHWC")}
    nodes, labels = [], []
    for k, s in GEOMETRIES:
        picks = ["mcu_dwconv2d_s8"] if kernels == "portable" else (
            ([OLD3[board], *WIDE3.get(board, ())] if k == 3 else []) + [NEW[board]]
            + ([LINEK[board]] if board in LINEK and (k > 3 or board == "mps3-an547") else [])
            + ([RING[board]] if board in RING and (k, s) == (3, 1) else []))
        for kernel in picks:
            node = dw_node(f"n{len(nodes)}", tensors, "x", size, c, k, s, rng, padded)
            if kernel != "mcu_dwconv2d_s8":
                node = as_variant(node, KERNELS[kernel], tensors)
            nodes.append(node)
            labels.append(kernel)
    graph = Graph(tensors, tuple(nodes), ("x",), tuple(n.outputs[0] for n in nodes))
    return verify(graph), labels


def instructions_per_call(graph: Graph, board_name: str, out_dir: Path) -> list[int]:
    board = load_board(board_name)
    graph, mem = plan_graph(graph)
    texts, manifest = emit(graph, mem, board=board_name)
    for name, text in {**texts, "manifest.json": manifest.to_json()}.items():
        (out_dir / name).write_text(text)
    elf = build_firmware(board, out_dir, out_dir / "build", defines=("MCU_PROFILE",))
    x = np.random.default_rng(0).integers(-128, 128, graph.tensors["x"].shape).astype(np.int8)
    res = run_firmware(elf, board, x.tobytes(), timeout=300)
    assert res.status == 0, f"model returned status {res.status}"
    ticks = {int(op): int(t) for op, t in _LINE.findall(res.stdout)}
    return [(max(ticks[i] - res.overhead_ticks, 0) * INSTRUCTIONS_PER_SECOND + board.systick_hz // 2)
            // board.systick_hz for i in range(len(graph.nodes))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=24)
    ap.add_argument("--channels", default="8,16,64")
    ap.add_argument("--boards", default="mps2-an386,mps3-an547")
    ap.add_argument("--valid", action="store_true", help="no padding (every window inside the input)")
    args = ap.parse_args(argv)
    boards, channels = args.boards.split(","), [int(c) for c in args.channels.split(",")]
    results: dict[tuple, float] = {}  # (board, kernel, k, s, c) -> MAC/instruction
    with tempfile.TemporaryDirectory() as tmp:
        for board in boards:
            for c in channels:
                for kernels in ("portable", "variants"):
                    graph, labels = firmware_graph(board, kernels, args.size, c, not args.valid)
                    out_dir = Path(tmp) / f"{board}-{kernels}-{c}"
                    out_dir.mkdir()
                    counts = instructions_per_call(graph, board, out_dir)
                    for node, label, n in zip(graph.nodes, labels, counts):
                        p = node.call.params
                        macs = op_macs("mcu_dwconv2d_s8", p)
                        results[(board, label, p["filter"][1], p["stride_h"], c)] = macs / n
                    print(f"# {board} C={c} {kernels}: done", file=sys.stderr)
    cores = {"mps2-an386": "M4", "mps3-an547": "M55"}
    head = ["window", "stride", "C"]
    for b in boards:
        head += [f"{cores.get(b, b)} portable", f"{cores.get(b, b)} 3x3 variant"]
        head += [f"{cores.get(b, b)} {w[4:]}" for w in WIDE3.get(b, ())]
        head += [f"{cores.get(b, b)} {NEW[b][4:]}"] + ([f"{cores.get(b, b)} {LINEK[b][4:]}"] if b in LINEK else [])
        head += [f"{cores.get(b, b)} {RING[b][4:]}"] if b in RING else []
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for k, s in GEOMETRIES:
        for c in channels:
            row = [f"{k}x{k}", str(s), str(c)]
            for b in boards:
                for kernel in ("mcu_dwconv2d_s8", OLD3[b], *WIDE3.get(b, ()), NEW[b], *([LINEK[b]] if b in LINEK else []),
                               *([RING[b]] if b in RING else [])):
                    v = results.get((b, kernel, k, s, c))
                    row.append("-" if v is None else f"{v:.3f}")
            print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
