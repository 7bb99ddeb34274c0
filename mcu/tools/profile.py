"""Per-op instruction counts on the device: a firmware built with -DMCU_PROFILE reads SysTick around every
kernel call (templates/model.c.j2 hooks, boards/common/main.c), and this module turns its lines into a table.

- The profiling firmware lives in its own build dir (<package>/.mcu-build/<board>-profile), so the normal
  firmware and its timings stay untouched.
- Each op's count is its ticks minus the harness's empty-measurement overhead, converted like the
  whole-run count (qemu/runner.py); they sum to the whole run up to the glue between calls.
- MACs come from the kernel parameters (conv, depthwise, fully connected); other ops have none.
"""
from __future__ import annotations

import re


from mcu.boards import load_board
from mcu.codegen.macs import op_macs
from mcu.build.firmware import build_firmware
from mcu.paths import BUILD_DIR
from mcu.qemu.runner import INSTRUCTIONS_PER_SECOND, run_firmware
from mcu.state_region import initial_region

_LINE = re.compile(r"^MCU_PROFILE op=(\d+) ticks=(\d+)\s*$", re.MULTILINE)


def _inputs(pkg, inputs, seed: int) -> bytes:
    if inputs is None:
        import torch
        g = torch.Generator().manual_seed(seed)
        shapes = [(s["shape"][0], s["shape"][3], s["shape"][1], s["shape"][2]) if s["layout"] == "NHWC"
                  else tuple(s["shape"]) for s in pkg.manifest["inputs"]]
        inputs = [torch.randint(*s.get("index_range", (0, 1)), shape, generator=g) if s["dtype"] == "int32"
                  else torch.randn(shape, generator=g) for shape, s in zip(shapes, pkg.manifest["inputs"])]
    return initial_region(pkg.graph) + b"".join(x.tobytes() for x in pkg.quantize_inputs(inputs))


def profile_run(pkg, inputs=None, *, seed: int = 0, timeout: float = 120.0) -> tuple[list[dict], int]:
    """(one row per kernel call, the whole run's instructions) of one inference of pkg on its board."""
    board = load_board(pkg.board)
    elf = build_firmware(board, pkg.out_dir, pkg.out_dir / BUILD_DIR / f"{board.name}-profile",
                         defines=("MCU_PROFILE",))
    res = run_firmware(elf, board, _inputs(pkg, inputs, seed), timeout=timeout)
    ticks = {int(op): int(t) for op, t in _LINE.findall(res.stdout)}
    calls = [n for n in pkg.graph.nodes if n.op != "alias"]
    rows = []
    for i, node in enumerate(calls):
        net = max(ticks.get(i, 0) - res.overhead_ticks, 0)
        instructions = (net * INSTRUCTIONS_PER_SECOND + board.systick_hz // 2) // board.systick_hz
        macs = op_macs(node.call.portable, node.call.params)
        rows.append({"index": i, "op": node.name, "kernel": node.call.kernel,
                     "shape": list(pkg.graph.tensors[node.outputs[0]].shape), "macs": macs,
                     "instructions": instructions,
                     "macs_per_instruction": macs / instructions if macs and instructions else None})
    return rows, res.instructions


def profile(pkg, inputs=None, *, seed: int = 0, timeout: float = 120.0) -> list[dict]:
    """One row per kernel call: op, kernel, shape, macs, instructions, macs_per_instruction."""
    return profile_run(pkg, inputs, seed=seed, timeout=timeout)[0]


def format_profile(rows: list[dict], total: int | None = None) -> str:
    """The rows as a text table, with a sum line (and the whole run's count when given)."""
    head = f"{'#':>3}  {'op':24} {'kernel':30} {'shape':18} {'MACs':>11} {'instructions':>13} {'MAC/instr':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:
        mpi = f"{r['macs_per_instruction']:.3f}" if r["macs_per_instruction"] else "-"
        shape = "x".join(map(str, r["shape"]))
        lines.append(f"{r['index']:>3}  {r['op'][:24]:24} {r['kernel'][:30]:30} {shape[:18]:18} {r['macs']:>11,} "
                     f"{r['instructions']:>13,} {mpi:>9}")
    macs, instructions = sum(r["macs"] for r in rows), sum(r["instructions"] for r in rows)
    lines.append("-" * len(head))
    mpi = f"{macs / instructions:.3f}" if macs and instructions else "-"
    lines.append(f"{'':3}  {'sum of ops':24} {'':30} {'':18} {macs:>11,} {instructions:>13,} {mpi:>9}")
    if total is not None:
        lines.append(f"{'':3}  {'whole run':24} {'':30} {'':18} {'':>11} {total:>13,}")
    return "\n".join(lines)
