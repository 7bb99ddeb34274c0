"""Does a compiled model fit its board? Flash and RAM estimated after planning, before any C is built.

- flash = weights + generated code + kernels + runtime core + startup/libc:
  - weights: the constant arrays, exact (the manifest's weights_bytes);
  - generated code: CALL_BYTES per kernel call plus its baked parameter struct (4 bytes per integer),
    plus GENERATED_FIXED_BYTES (model_run_v, the I/O size tables);
  - kernels and runtime core: CODE_BYTES, .text + .rodata of each source as arm-none-eabi-gcc 12.2 -O2
    builds it on the board where it is largest, plus 25%; a source not in the table counts as
    DEFAULT_CODE_BYTES (tests/test_boards_more.py checks the table against the compiler);
  - startup/libc: STARTUP_FLASH_BYTES for the vector table, startup, test harness and libgcc helpers
    (measured: about 2.5 KB on ARMv7-M, 3 KB on the Cortex-M0), plus SOFT_FLOAT_FLASH_BYTES for libgcc's
    soft-float routines when float kernels run on a core without an FPU (measured: 1.3 KB on the Cortex-M3,
    4 KB on the Cortex-M0).
- RAM = arena + state region + inputs + outputs + stack (board.toml stack_bytes) + STARTUP_RAM_BYTES (the fault
  handler's stack, the harness's statics, the 16-byte alignment of each I/O slot).
- Placement: the weights stay in flash whenever the model fits it; when it does not, a board with a large region
  ([memory.large], e.g. DDR) takes the weights there if the rest then fits the flash (Footprint.weights_region),
  and emit_fitted writes them into the linker section the board's script places in that region.
- The flash budget (mcu.compile's flash_budget): what the weights may take; kernels store theirs widened where it
  saves the most instructions per byte until it is spent (codegen/passes/widen_weights.py). By default
  DEFAULT_FLASH_SHARE of the board's flash, the rest left for the application.
- A model that does not fit raises BoardFitError naming the numbers and the boards it would fit: the
  same estimate with each board's own stack (approximate there: another core may pick other kernel
  variants, with other weight layouts).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from mcu.boards import LARGE_WEIGHTS_SECTION, Board, list_boards
from mcu.codegen.emit import emit
from mcu.codegen.ir import Graph
from mcu.codegen.manifest import Manifest
from mcu.codegen.memory import MemoryPlan
from mcu.errors import BoardFitError, McuError
from mcu.paths import package_root

CODE_BYTES = {  # source under runtime_c/kernels (or core/<name>) without .c -> bytes of code and constants
    "activation/mcu_lut_s8": 128,
    "activation/mcu_lut_s8_fast": 320,
    "activation/mcu_lut_s8_mve": 128,
    "activation/mcu_softmax_s8": 384,
    "activation/mcu_softmax_s8_mve": 896,
    "conv/mcu_conv2d_1x1_s8_dsp": 1344,
    "conv/mcu_conv2d_1x1_s8_fast": 3072,
    "conv/mcu_conv2d_1x1_s8_inplace": 1408,
    "conv/mcu_conv2d_1x1_s8_mve": 1344,
    "conv/mcu_conv2d_add_s8": 2944,
    "conv/mcu_conv2d_grouped_s8": 1728,
    "conv/mcu_conv2d_s4": 2880,
    "conv/mcu_conv2d_s8": 1792,
    "conv/mcu_conv2d_s8_dsp": 3712,
    "conv/mcu_conv2d_s8_fast": 3904,
    "conv/mcu_conv2d_s8_mve": 3456,
    "conv/mcu_conv_transpose2d_s8": 2880,
    "conv/mcu_conv_transpose2d_s8_dsp": 2816,
    "conv/mcu_conv_transpose2d_s8_mve": 2496,
    "conv/mcu_dwconv2d_3x3_s8_dsp": 4352,
    "conv/mcu_dwconv2d_3x3_s8_dsp_wide": 4352,
    "conv/mcu_dwconv2d_s8_dsp_line": 13312,
    "conv/mcu_dwconv2d_s8_dsp_ring": 5632,
    "conv/mcu_dwconv2d_3x3_s8_fast": 1728,
    "conv/mcu_dwconv2d_3x3_s8_mve": 448,
    "conv/mcu_dwconv2d_s8": 1728,
    "conv/mcu_dwconv2d_s8_dsp": 3456,
    "conv/mcu_dwconv2d_s8_inplace": 1984,
    "conv/mcu_dwconv2d_s8_mve": 448,
    "conv/mcu_dwconv2d_s8_mve_planar": 7680,
    "elementwise/mcu_add_broadcast_s8": 2368,
    "elementwise/mcu_add_broadcast_s8_dsp": 6272,
    "elementwise/mcu_add_m16_s8_dsp": 7168,
    "elementwise/mcu_add_m16_flat_s8_dsp": 3904,
    "elementwise/mcu_add_m16_s8_fast": 1728,
    "elementwise/mcu_add_h16_s8_mve": 3776,
    "elementwise/mcu_add_h16_flat_s8_mve": 1024,
    "elementwise/mcu_add_broadcast_s8_mve": 4480,
    "elementwise/mcu_add_s8": 1728,
    "elementwise/mcu_add_s8_fast": 2944,
    "elementwise/mcu_add_s8_mve": 960,
    "elementwise/mcu_mul_s8": 1280,
    "elementwise/mcu_mul_s8_dsp": 5632,
    "elementwise/mcu_mul_s8_mve": 4160,
    "elementwise/mcu_mul_h16_s8": 1024,
    "elementwise/mcu_mul_h16_s8_mve": 3648,
    "fallback/mcu_dequantize_s8_f32": 192,
    "fallback/mcu_layer_norm_f32": 768,
    "fallback/mcu_quantize_f32_s8": 384,
    "fc/mcu_fully_connected_s4": 1728,
    "norm/mcu_layer_norm_s16": 1344,
    "norm/mcu_layer_norm_s8": 1344,
    "norm/mcu_layer_norm_s8_mve": 1856,
    "norm/mcu_rms_norm_s16": 1344,
    "norm/mcu_rms_norm_s8": 1344,
    "fc/mcu_fully_connected_s8": 960,
    "fc/mcu_fully_connected_gemm_s8_dsp": 704,
    "fc/mcu_fully_connected_s8_dsp": 2560,
    "fc/mcu_fully_connected_s8_fast": 2688,
    "fc/mcu_fully_connected_s8_mve": 576,
    "fc/mcu_matmul_s8": 1216,
    "fc/mcu_matmul_gemm_s8_dsp": 2368,
    "fc/mcu_matmul_gemm_s8_mve": 6784,
    "float/mcu_add_f32": 1024,
    "float/mcu_avgpool2d_f32": 1024,
    "float/mcu_clamp_f32": 192,
    "float/mcu_conv2d_f32": 1536,
    "float/mcu_dwconv2d_f32": 1280,
    "float/mcu_fully_connected_f32": 576,
    "float/mcu_lstm_f32": 3904,
    "float/mcu_lstm_f32_quad": 3712,
    "float/mcu_rnn_f32": 3520,
    "float/mcu_rnn_f32_quad": 3392,
    "float/mcu_maxpool2d_f32": 960,
    "float/mcu_mul_f32": 960,
    "float/mcu_reduce_f32": 896,
    "float/mcu_softmax_f32": 768,
    "float/mcu_unary_f32": 12864,
    "float/mcu_transpose_f32": 768,
    "pool/mcu_avgpool2d_s8": 1024,
    "pool/mcu_avgpool2d_s8_fast": 1280,
    "pool/mcu_avgpool2d_s8_dsp": 1536,
    "pool/mcu_avgpool2d_s8_mve": 2624,
    "pool/mcu_maxpool2d_s8": 832,
    "reduce/mcu_reduce_sum_s8": 1280,
    "s16/mcu_add_broadcast_s16_dsp": 6144,
    "s16/mcu_avgpool2d_s16": 960,
    "s16/mcu_concat_s16": 1024,
    "s16/mcu_conv2d_s16": 1920,
    "s16/mcu_conv2d_s16_dsp": 5312,
    "s16/mcu_convert_s16_s16": 512,
    "s16/mcu_convert_s16_s8": 640,
    "s16/mcu_convert_s8_s16": 896,
    "s16/mcu_dequantize_s16_f32": 128,
    "s16/mcu_dwconv2d_s16": 1664,
    "s16/mcu_dwconv2d_s16_dsp": 4608,
    "s16/mcu_fully_connected_s16": 896,
    "s16/mcu_fully_connected_s16_dsp": 1984,
    "s16/mcu_fully_connected_s16_dsp_wide": 1984,
    "s16/mcu_lut_s16": 128,
    "s16/mcu_maxpool2d_s16": 832,
    "s16/mcu_mul_s16": 1216,
    "s16/mcu_quantize_f32_s16": 320,
    "s16/mcu_softmax_s16": 1472,
    "s16/mcu_transpose_s16": 768,
    "shape/mcu_concat_s8": 960,
    "shape/mcu_transpose_s8": 704,
    "shape/mcu_transpose_s8_mve": 1728,
    "shape/mcu_upsample_bilinear_s8": 2048,
    "shape/mcu_upsample_bilinear_s8_mve": 960,
    "shape/mcu_upsample_nearest_s8": 384,
    "shared/mcu_gemm2_s8_dsp": 4224,
    "shared/mcu_gemm3_s8_dsp": 2432,
    "shared/mcu_dw_s8_mve": 7680,
    "shared/mcu_gemm_s8_mve": 6272,
}
DEFAULT_CODE_BYTES = 4096
CALL_BYTES = 64
GENERATED_FIXED_BYTES = 256
STARTUP_FLASH_BYTES = 4096
SOFT_FLOAT_FLASH_BYTES = 4096
FLOAT_FAMILIES = ("float/", "fallback/")  # kernel folders whose code computes in float
STARTUP_RAM_BYTES = 512
IO_SLOT_ALIGN = 16


@dataclass(frozen=True)
class Footprint:
    """Estimated bytes per category; the flash_* fields sum to flash, the ram_* fields to ram."""

    flash_weights: int
    flash_generated: int
    flash_kernels: int
    flash_runtime: int
    flash_startup: int
    ram_arena: int
    ram_inputs: int
    ram_outputs: int
    ram_stack: int
    ram_startup: int
    ram_state: int = 0  # the state region (KV caches, recurrent state): kept between calls, never in the arena
    weights_region: str = ""  # the board's large region holding the weights; "" for the flash

    @property
    def flash(self) -> int:
        """Everything the image holds, wherever it lies."""
        return self.flash_weights + self.flash_generated + self.flash_kernels + self.flash_runtime + self.flash_startup

    @property
    def flash_main(self) -> int:
        """What lies in the board's flash: all of it, or all but the weights when they lie in the large region."""
        return self.flash - (self.flash_weights if self.weights_region else 0)

    @property
    def ram(self) -> int:
        return self.ram_arena + self.ram_state + self.ram_inputs + self.ram_outputs + self.ram_stack + self.ram_startup

    def fits(self, board: Board) -> bool:
        large = self.flash_weights <= board.large_size if self.weights_region else True
        return self.flash_main <= board.flash_size and self.ram <= board.ram_size and large

    def flash_parts(self) -> str:
        """The parts of flash_main, and where the weights lie when elsewhere."""
        if self.weights_region:
            return _parts(("generated code", self.flash_generated), ("kernels", self.flash_kernels),
                          ("runtime", self.flash_runtime), ("startup/libc", self.flash_startup)) + \
                f"; weights {self.flash_weights:,} in {self.weights_region}"
        return _parts(("weights", self.flash_weights), ("generated code", self.flash_generated),
                      ("kernels", self.flash_kernels), ("runtime", self.flash_runtime),
                      ("startup/libc", self.flash_startup))

    def ram_parts(self) -> str:
        return _parts(("arena", self.ram_arena), ("state", self.ram_state), ("inputs", self.ram_inputs),
                      ("outputs", self.ram_outputs),
                      ("stack", self.ram_stack), ("startup", self.ram_startup))


DEFAULT_FLASH_SHARE = 0.5


def check_flash_budget(budget, board: Board) -> int:
    """The flash budget for the weights on board: the one given, checked, or DEFAULT_FLASH_SHARE of its flash."""
    if budget is None:
        return int(board.flash_size * DEFAULT_FLASH_SHARE)
    room = board.flash_size + board.large_size
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise McuError(f"flash_budget={budget!r}: give the bytes of flash the weights may take, a positive "
                       f"integer (e.g. flash_budget=96 * 1024; --flash-budget 96K)")
    if budget > room:
        raise McuError(f"flash_budget={budget:,} B is more than {board.name} has ({format_size(room)}); give at "
                       f"most {room:,} B, or leave it out for the default ({DEFAULT_FLASH_SHARE:.0%} of the flash)")
    return budget


def format_size(n: int) -> str:
    """Bytes the way datasheets write them: 4 MB, 256 KB, 1,234 B."""
    if n >= 1 << 30 and n % (1 << 30) == 0:
        return f"{n >> 30} GB"
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10} KB"
    return f"{n:,} B"


def _parts(*items: tuple[str, int]) -> str:
    return " + ".join(f"{label} {value:,}" for label, value in items if value)


def _param_bytes(value) -> int:
    if isinstance(value, dict):
        return sum(_param_bytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_param_bytes(v) for v in value)
    return 4


def code_bytes(source: str) -> int:
    """Estimated flash of one runtime source (kernel path, or core/<name>)."""
    return CODE_BYTES.get(source, DEFAULT_CODE_BYTES)


def estimate(graph: Graph, manifest: dict, board: Board) -> Footprint:
    """The flash and RAM that graph (planned and emitted as manifest) needs on board."""
    calls = [n for n in graph.nodes if n.op == "call"]
    generated = GENERATED_FIXED_BYTES + sum(
        CALL_BYTES + _param_bytes(n.call.params) + (8 if n.call.quant else 0) for n in calls)
    core = sorted(p.stem for p in (package_root("mcu.runtime_c") / "core").glob("*.c"))
    need = Footprint(
        flash_weights=manifest["weights_bytes"],
        flash_generated=generated,
        flash_kernels=sum(code_bytes(k) for k in manifest["kernels"]),
        flash_runtime=sum(code_bytes(f"core/{c}") for c in core),
        flash_startup=STARTUP_FLASH_BYTES + (SOFT_FLOAT_FLASH_BYTES if not board.fpu and any(
            k.startswith(FLOAT_FAMILIES) for k in manifest["kernels"]) else 0),
        ram_arena=manifest["arena_bytes"],
        ram_state=manifest.get("state_bytes", 0),
        ram_inputs=sum(_align(x["bytes"]) for x in manifest["inputs"]),
        ram_outputs=sum(_align(x["bytes"]) for x in manifest["outputs"]),
        ram_stack=board.stack_bytes,
        ram_startup=STARTUP_RAM_BYTES,
    )
    return _placed(need, board)


def _placed(need: Footprint, board: Board) -> Footprint:
    """need with the weights in the board's large region when the flash cannot hold them but holds the rest."""
    if need.flash <= board.flash_size or not board.large_size or need.flash - need.flash_weights > board.flash_size:
        return need
    return replace(need, weights_region=board.large_name)


def emit_fitted(graph: Graph, memory: MemoryPlan, name: str, board: Board) -> tuple[dict[str, str], Manifest]:
    """emit's texts and manifest for board, the weights in the large region's section when the fit puts them there
    (emitted again then: placement needs the manifest's kernels, which emit computes)."""
    texts, emitted = emit(graph, memory, name=name, board=board.name)
    if estimate(graph, emitted.as_dict(), board).weights_region:
        texts, emitted = emit(graph, memory, name=name, board=board.name, weights_section=LARGE_WEIGHTS_SECTION)
    return texts, emitted


def _align(n: int) -> int:
    return (n + IO_SLOT_ALIGN - 1) // IO_SLOT_ALIGN * IO_SLOT_ALIGN


def bundle_large_weights(parts: list[tuple[Graph, dict]], board: Board) -> list[bool]:
    """For models (graph, manifest) in one firmware on board, whether each one's weights go to the board's large
    region: those that go there alone, then, while the bundle (weights + generated code, the union of kernels, one
    runtime and startup) overflows the flash, the largest weights left."""
    needs = [estimate(g, m, board) for g, m in parts]
    moved = [bool(n.weights_region) for n in needs]
    kernels = {k for _, m in parts for k in m["kernels"]}
    shared = sum(code_bytes(k) for k in kernels) + max(n.flash_runtime + n.flash_startup for n in needs)

    def flash() -> int:
        return shared + sum(n.flash_generated + (0 if out else n.flash_weights) for n, out in zip(needs, moved))

    order = sorted(range(len(needs)), key=lambda i: -needs[i].flash_weights)
    for i in order if board.large_size else ():
        if flash() <= board.flash_size:
            break
        moved[i] = True
    return moved


def check_fit(graph: Graph, manifest: dict, board: Board) -> Footprint:
    """The footprint of the model on board; BoardFitError if it needs more flash or RAM than board has."""
    need = estimate(graph, manifest, board)
    if need.fits(board):
        return need
    others = [b for b in list_boards() if b.name != board.name]
    fits = sorted((b for b in others if estimate(graph, manifest, b).fits(b)),
                  key=lambda b: (b.flash_size + b.ram_size, not b.emulated, b.name))
    core = board.cpu.replace("cortex-m", "Cortex-M")
    lines = [f"the model does not fit {board.name} ({core}, {format_size(board.flash_size)} flash, "
             f"{format_size(board.ram_size)} RAM):"]
    lines += _fit_lines(need, board)
    options = []
    if fits:
        names = ", ".join(f"{b.name} ({format_size(b.flash_size)} flash, {format_size(b.ram_size)} RAM"
                          f"{'' if b.emulated else ', build only'})" for b in fits[:4])
        options.append(f"compile for a board with room for it: {names}")
    else:
        options.append("no board mcu knows has room for it")
    if need.flash_main > board.flash_size or need.weights_region and need.flash_weights > board.large_size:
        options.append("shrink the weights (fewer or narrower layers, or int4 weights, two per byte: --weights int4)")
    if need.ram > board.ram_size:
        options.append("shrink the arena and I/O (a smaller input, narrower early layers)")
    lines.append("  to make it fit: " + "; or ".join(options))
    raise BoardFitError("\n".join(lines), board=board.name, flash_needed=need.flash, flash_capacity=board.flash_size,
                        ram_needed=need.ram, ram_capacity=board.ram_size, fits=tuple(b.name for b in fits))


def _fit_lines(need: Footprint, board: Board) -> list[str]:
    """One line per memory: what the model needs of it, against what the board has."""
    rows = [("flash", need.flash_main, board.flash_size, need.flash_parts())]
    if need.weights_region:
        rows.append((need.weights_region, need.flash_weights, board.large_size, "weights"))
    elif board.large_size and need.flash > board.flash_size:
        rows[0] = ("flash", need.flash, board.flash_size, need.flash_parts() + f" (the rest does not fit even with "
                   f"the weights in {board.large_name})")
    rows.append(("RAM", need.ram, board.ram_size, need.ram_parts()))
    lines = []
    for title, needed, capacity, parts in rows:
        verdict = f"{needed - capacity:,} B too many" if needed > capacity else "fits"
        lines.append(f"  {title + ':':6} needs {needed:,} B of {capacity:,} B ({verdict}): {parts}")
    return lines
