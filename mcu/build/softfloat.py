"""What float32 costs on a core without an FPU (soft float), so `mcu compile` can say it before anything runs.

- Such a core (Cortex-M0/M0+/M3 here: board.toml fpu = "", float_abi = "soft") has no float instructions:
  every float add, multiply, divide and compare in the float32 kernels (quantize="none", and the int8 flow's
  float fallbacks) is a call into libgcc's soft-float routines (__aeabi_fadd, __aeabi_fmul, ...), which also
  take flash (fit.SOFT_FLOAT_FLASH_BYTES).
- The estimate counts the float work of the lowered graph: multiply-accumulates of conv / depthwise / fully
  connected calls (mcu.codegen.macs.op_macs), and one operation per tap or element of the other float calls; it prices
  them with INSTRUCTIONS, QEMU instruction counts measured with `mcu profile` on the example CNN and a small
  conv / pool / add / softmax model (per MAC: ~85 on the Cortex-M3, ~180 on the Cortex-M0, ~8 with an FPU).
  An estimate: `mcu run` and `mcu profile` measure the real count.
"""
from __future__ import annotations

import numpy as np

from mcu.codegen.ir import Graph
from mcu.codegen.kernels import KERNELS
from mcu.codegen.macs import op_macs
from mcu.build.fit import FLOAT_FAMILIES

# core -> (instructions per float multiply-accumulate, per other float operation); "fpu" for cores with one
INSTRUCTIONS = {"cortex-m0": (180, 170), "cortex-m0plus": (180, 170), "cortex-m3": (85, 80), "fpu": (8, 20)}
DEFAULT_SOFT = (180, 170)  # a soft-float core not measured: the slower figures


def float_calls(graph: Graph) -> list:
    return [n for n in graph.nodes if n.op == "call" and KERNELS[n.call.kernel].path.startswith(FLOAT_FAMILIES)]


def float_work(graph: Graph) -> tuple[int, int]:
    """(float multiply-accumulates, other float operations) of one inference."""
    macs = other = 0
    for n in float_calls(graph):
        p, kernel = n.call.params, n.call.kernel
        m = op_macs(kernel, p)
        if m:
            macs += m
        elif kernel.startswith(("mcu_maxpool2d", "mcu_avgpool2d")):
            other += int(np.prod(p["output"])) * p["kernel_h"] * p["kernel_w"]
        elif not kernel.startswith("mcu_transpose"):  # a transpose only moves bits
            other += int(np.prod(graph.tensors[n.outputs[0]].shape))
    return macs, other


def estimate(graph: Graph, cpu: str, fpu: bool) -> int:
    """Estimated instructions of the graph's float work on this core."""
    mac, op = INSTRUCTIONS["fpu"] if fpu else INSTRUCTIONS.get(cpu, DEFAULT_SOFT)
    macs, other = float_work(graph)
    return macs * mac + other * op


def soft_float_note(graph: Graph, board) -> str | None:
    """One line on what soft float costs this model on board, or None (an FPU, or no float kernels)."""
    if board.fpu or not float_calls(graph):
        return None
    macs, other = float_work(graph)
    soft, hard = estimate(graph, board.cpu, False), estimate(graph, board.cpu, True)
    core = board.cpu.replace("cortex-m", "Cortex-M")
    return (f"soft float: {core} has no FPU, so each float add, multiply and compare is a libgcc call; "
            f"{macs:,} float MACs and {other:,} other float ops take about {_count(soft)} instructions here "
            f"(about {_count(hard)} on a core with an FPU, {soft / max(hard, 1):.0f}x fewer); estimate, "
            f"`mcu run` measures it")


def _count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}K" if n >= 1e3 else str(n)
