"""Instructions per element of the int8 elementwise and table kernels on QEMU: the portable kernel against the variant
each board picks (issue #26 item 2), and for the adds the TFLite-arithmetic variant the 16-bit-multiplier one replaces.

    python scripts/ew_bench.py [--boards mps2-an386,mps3-an547] [--size 1,16,16,64]
Per board, three firmwares (portable calls, the calls select_kernels gives the board without the variants in another
arithmetic, and with them) run every case once under the profiler (-DMCU_PROFILE: SysTick around each call, as
mcu.tools.profile reads it); prints a Markdown table of instructions per output element.
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
from mcu.codegen.memory import plan_graph
from mcu.codegen.passes.select_kernels import select_kernels
from mcu.codegen.target import Target
from mcu.qemu.runner import INSTRUCTIONS_PER_SECOND, run_firmware

_LINE = re.compile(r"^MCU_PROFILE op=(\d+) ticks=(\d+)\s*$", re.MULTILINE)


def cases(shape: tuple[int, ...]) -> list[tuple[str, str, tuple, tuple, dict]]:
    """(label, portable kernel, input1 shape, input2 shape or (), params) with typical quantization: a gate's product
    scale about 2^-8, an add's TFLite rescales (left shift 20), a ReLU clamp on one add."""
    n, h, w, c = shape
    row, one = (1, 1, 1, c), (1, 1, 1, 1)
    mul = {"input1_offset": 3, "input2_offset": 128, "output_offset": -5, "output_multiplier": 1518500250,
           "output_shift": -7, "act_min": -128, "act_max": 127}
    add = {"subtract": 0, "left_shift": 20, "input1_offset": 7, "input1_multiplier": 1073741824, "input1_shift": 0,
           "input2_offset": -12, "input2_multiplier": 1431655765, "input2_shift": -1, "output_offset": 4,
           "output_multiplier": 1717986918, "output_shift": -19, "act_min": -128, "act_max": 127}
    return [("mul, channel gate [N,H,W,C] x [1,1,1,C]", "mcu_mul_s8", shape, row, mul),
            ("mul, same shapes", "mcu_mul_s8", shape, shape, mul),
            ("mul, scalar [1,1,1,1]", "mcu_mul_s8", shape, one, mul),
            ("add, row [1,1,1,C]", "mcu_add_broadcast_s8", shape, row, add),
            ("add, same shapes, ReLU", "mcu_add_broadcast_s8", shape, shape, {**add, "act_min": 4}),
            ("add, same shapes (mcu_add_s8)", "mcu_add_s8", shape, shape, add),
            ("sub, scalar [1,1,1,1]", "mcu_add_broadcast_s8", shape, one, {**add, "subtract": 1}),
            ("table activation (LUT)", "mcu_lut_s8", shape, (), {"size": n * h * w * c})]


def graph_of(shape) -> Graph:
    tensors, nodes, inputs, outputs = {}, [], [], []
    rng = np.random.default_rng(0)

    def io(name, s):
        tensors[name] = Tensor(name, tuple(s), "int8", QParams.tensor(0.05, 0), layout="NHWC")
        return name

    n, h, w, c = shape
    for i, (_, kernel, s1, s2, params) in enumerate(cases(shape)):
        y = io(f"y{i}", shape)
        if kernel == "mcu_lut_s8":
            t = f"t{i}"
            tensors[t] = Tensor(t, (256,), "int8", data=rng.integers(-128, 128, 256).astype(np.int8))
            args, params = (t, io(f"x{i}", s1)), params
            inputs.append(args[1])
        else:
            args = (io(f"x{i}", s1), io(f"z{i}", s2))
            if kernel == "mcu_add_s8":
                params = {"size": n * h * w * c, **{k: v for k, v in params.items() if k != "subtract"}}
            else:
                params = {"input1": s1, "input2": s2, "output": shape, **params}
            inputs += list(args)
        outputs.append(y)
        nodes.append(Node(f"n{i}", "call", args, (y,), call=Call(kernel, params)))
    return verify(Graph(tensors, tuple(nodes), tuple(inputs), tuple(outputs)))


def profile(graph: Graph, board: str, out: Path) -> list[tuple[str, int]]:
    """(kernel, instructions) per call of one profiled run of `graph` on `board`."""
    graph, mem = plan_graph(graph)
    texts, manifest = emit(graph, mem, board=board)
    out.mkdir(parents=True)
    for name, text in {**texts, "manifest.json": manifest.to_json()}.items():
        (out / name).write_text(text)
    b = load_board(board)
    elf = build_firmware(b, out, out / "build", defines=("MCU_PROFILE",))
    rng = np.random.default_rng(1)
    data = b"".join(rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8).tobytes() for t in graph.inputs)
    res = run_firmware(elf, b, data, timeout=120)
    ticks = {int(op): int(t) for op, t in _LINE.findall(res.stdout)}
    calls = [n for n in graph.nodes if n.op != "alias"]
    return [(n.call.kernel, (max(ticks.get(i, 0) - res.overhead_ticks, 0) * INSTRUCTIONS_PER_SECOND
                             + b.systick_hz // 2) // b.systick_hz) for i, n in enumerate(calls)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default="mps2-an386,mps3-an547")
    ap.add_argument("--size", default="1,16,16,64", help="the output shape N,H,W,C")
    args = ap.parse_args(argv)
    shape = tuple(int(v) for v in args.size.split(","))
    elements = int(np.prod(shape))
    boards = args.boards.split(",")
    portable = graph_of(shape)
    rows = {label: [] for label, *_ in cases(shape)}
    other = frozenset(k.name for k in KERNELS.values() if k.arithmetic)  # variants in another arithmetic
    with tempfile.TemporaryDirectory() as tmp:
        for board in boards:
            target = Target.of_board(load_board(board))
            runs = [profile(g, board, Path(tmp) / f"{board}-{i}") for i, g in enumerate(
                (portable, select_kernels(portable, target, skip=other), select_kernels(portable, target)))]
            for label, (_, n0), (k1, n1), (k2, n2) in zip(rows, *runs):
                rows[label].append(f"{n0 / elements:.2f} | " + " | ".join(
                    f"{n / elements:.2f} ({k.removeprefix('mcu_')})" for n, k in ((n1, k1), (n2, k2))))
    print(f"Instructions per output element, output {'x'.join(map(str, shape))} ({elements} elements)\n")
    print("| op | " + " | ".join(f"{b} portable | {b} TFLite-arithmetic variant | {b} variant" for b in boards) + " |")
    print("|---|" + "---:|---|---|" * len(boards))
    for label, cells in rows.items():
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
