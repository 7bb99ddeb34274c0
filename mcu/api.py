"""The public API: compile a model into a package folder, run it on its board, report its size, load it again.

compile() is the pipeline as a short driver over named steps: check the options, export, (choose precisions,)
quantize, import to mcu IR and lower (mcu.codegen), plan the arena, emit the C and the package's files, write them.
"""
from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import torch

from mcu.build.dropin import dropin_names, dropin_files
from mcu.build.fit import check_fit, check_flash_budget, emit_fitted
from mcu.codegen import serialize
from mcu.codegen.ir import Graph
from mcu.codegen.memory import MemoryPlan, picture, plan_graph
from mcu.codegen.names import DEFAULT_NAME, check_name, model_files
from mcu.codegen.passes.widen_weights import constant_bytes
from mcu.codegen.pipeline import run_passes
from mcu.codegen.target import Target
from mcu.errors import MCU_ERR_INDEX, BoardFitError, McuError, status_name
from mcu.importer.export import example_inputs_of, export
from mcu.importer.from_float import import_float
from mcu.importer.from_quantized import import_quantized
from mcu.importer.ops import portable_source, portable_stack_trace
from mcu.importer.state import attach_state, ep_states
from mcu.package import FLOAT_MODEL, IR_DATA, IR_FILE, OLD_IR_FILE, Package, RunResult, load, seal_manifest
from mcu.paths import BUILD_DIR
from mcu.quantization.precision import PrecisionChoice, choose_precision
from mcu.quantization.quantizer import Progress, quantize as quantize_pt2e
from mcu.writer import write_package

__all__ = ["compile", "run", "size", "load", "is_quantized", "Package", "RunResult"]

# Every top-level name compile writes into a package folder whatever the model's name (mcu.writer: a folder holding
# others is the user's); our_files adds the named ones, OUR_FILES are those of the default name.
COMMON_FILES = {"manifest.json", IR_FILE, IR_DATA, OLD_IR_FILE, "arena.svg", FLOAT_MODEL, "report.html", BUILD_DIR}
OUR_FILES = COMMON_FILES | {*model_files(DEFAULT_NAME), *dropin_names(DEFAULT_NAME)}
MAX_TARGET_DB = 144.0  # float32's own SQNR (24-bit significands): no precision mix gets past it
FLASH_MARGIN = 64 * 1024  # code, runtime and startup next to the weights, for target_sqnr's flash budget


def compile(model, example_inputs=None, *, board: str = "mps2-an386", calibration=None,
            quantize: str = "int8", out_dir: str | os.PathLike = "mcu_out", force: bool = False,
            optimize: str = "speed", progress: Progress | None = None, bias_correction: bool = True,
            observer: str = "minmax", weights: str = "int8", mixed: dict | None = None,
            target_sqnr: float | None = None, log=None, name: str = DEFAULT_NAME,
            flash_budget: int | None = None) -> Package:
    """Export, quantize, lower, plan and emit `model` for `board` into out_dir. Returns the Package.
    optimize="speed" picks the board's fastest kernel variants; "memory" keeps the portable kernels,
    whose outputs may overlap their dying inputs, and runs depthwise and 1x1 convs in place over an
    input that dies there, for the smallest arena. progress(done, total, seconds),
    if given, is called after each calibration batch (total is None for a calibration set without len()).
    bias_correction subtracts each conv/linear's weight-rounding shift at the calibration mean from its
    bias (mcu.quantization.bias); the user's model is never modified. observer sets activation ranges: "minmax",
    "percentile" or "mse" (mcu.quantization.observers.OBSERVERS). weights="int4" quantizes conv and linear weights to
    [-7, 7] and stores them two per byte (the int4 kernels; depthwise and grouped convs keep int8 storage).
    quantize="a16w8" runs int16 activations with int8 weights (TFLite's 16x8). mixed maps module names or types
    (or op families: "op:softmax", "op:matmul", "op:mul", ...)
    to "int8", "a16w8" or "float32", e.g. mixed={"classifier": "float32"}: those layers run in that precision,
    with converts planned at the boundaries (mcu.quantization.quantizer).
    target_sqnr (dB) picks those precisions itself: the cheapest per-layer int8 / a16w8 / float32 mix whose SQNR vs
    the float model, on the calibration data, reaches the target (mcu.quantization.precision); `mixed` entries stay as pinned.
    The choice is pkg.precision (its .table(), and .mixed to pin it); log(line), if given, hears each step.

    A model quantized already (torchao's convert_pt2e output, e.g. after quantization-aware training with
    McuQuantizer(qat=True)) compiles as it is, with the same integer semantics; it takes no calibration.

    name (a lowercase C identifier, codegen/names.py) prefixes every exported symbol, macro and file: name="kws"
    gives kws_run, KWS_ARENA_BYTES, kws.h, the CMake target mcu_kws; the default "model" gives model.h as ever.

    flash_budget (bytes) is what the model's weights may take of the flash: kernels that can store their weights
    widened (int16) do so where it saves the most instructions per byte until the budget is spent
    (codegen/passes/widen_weights.py); the default is half the board's flash (mcu.build.fit.default_flash_budget),
    the rest left for the application. The manifest lists the widened layers; `mcu size` shows what they bought."""
    check_name(name)
    board_info, target = _target(board, optimize, weights)
    target = dataclasses.replace(target, flash_budget=check_flash_budget(flash_budget, board_info))
    _check_options(model, quantize, calibration, mixed, target_sqnr)
    ep, choice, converted = None, None, model
    if not is_quantized(model):
        ep = export(model, example_inputs)
        if example_inputs is None:
            example_inputs = example_inputs_of(ep)
        options = dict(bias_correction=bias_correction, observer=observer, weights=weights)
        if target_sqnr is not None:
            calibration = None if calibration is None else list(calibration)  # measured on, then calibrated on
            choice = _choose_precision(model, ep, example_inputs, calibration, board_info, target, float(target_sqnr),
                                       dict(quantize=quantize, optimize=optimize, **options), mixed, log)
            mixed = {**choice.mixed, **(mixed or {})}
        converted = None if quantize == "none" else \
            quantize_pt2e(ep, tuple(example_inputs), calibration, progress, bias_correction, observer, weights,
                          precision=quantize, mixed=mixed)
    graph, memory = _lower(ep, converted, target)
    if flash_budget is not None and constant_bytes(graph) > flash_budget:
        raise McuError(f"the model's weights need {constant_bytes(graph):,} B of flash stored as narrow as its "
                       f"kernels allow; the flash budget is {flash_budget:,} B: raise flash_budget "
                       f"(--flash-budget), or store the weights as int4 (weights='int4', --weights int4)")
    files, manifest = _package_files(graph, memory, ep, board_info, name, target.flash_budget)
    out_dir = Path(out_dir)
    write_package(out_dir, files, force, our_files(name, out_dir))
    return Package(out_dir, board, manifest, graph, memory, converted, trusted=True, precision=choice)


def _target(board: str, optimize: str, weights: str) -> tuple:
    """The board (unknown boards fail before any slow work) and the code generator's target for it."""
    from mcu.boards import load_board

    board_info = load_board(board)
    target = Target.of_board(board_info)
    if optimize not in ("speed", "memory"):
        raise McuError(f"optimize={optimize!r}: use 'speed' (the board's fastest kernels) or 'memory' "
                       f"(portable kernels whose outputs may overlap their inputs: the smallest arena)")
    return board_info, dataclasses.replace(target, variants=optimize == "speed",
                                           features=target.features | ({"int4"} if weights == "int4" else set()))


def _check_options(model, quantize: str, calibration, mixed: dict | None, target_sqnr: float | None) -> None:
    """compile's options that contradict each other or the model, refused before any slow work."""
    if quantize not in ("int8", "a16w8", "none"):
        raise McuError(f"quantize={quantize!r} is not supported; use quantize='int8', 'a16w8' (int16 activations) "
                       f"or 'none' (float32)")
    if target_sqnr is not None and not math.isfinite(target_sqnr):
        raise McuError(f"target_sqnr={target_sqnr} is not a number of dB; pass the SQNR vs the float model to "
                       f"reach, e.g. target_sqnr=30 (--target-sqnr 30)")
    if target_sqnr is not None and target_sqnr > MAX_TARGET_DB:
        raise McuError(f"target_sqnr={target_sqnr:g} dB is out of reach: float32 arithmetic itself stops near "
                       f"{MAX_TARGET_DB:.0f} dB (24-bit significands); lower the target (30 to 60 dB is typical)")
    if target_sqnr is not None and quantize == "none":
        raise McuError("target_sqnr picks int8 / a16w8 / float32 per layer of a quantized model; use "
                       "quantize='int8' (or 'a16w8') with it, not 'none'")
    if target_sqnr is not None and is_quantized(model):
        raise McuError("the model is quantized already, so target_sqnr cannot choose its precisions; pass the "
                       "float model")
    if mixed and quantize == "none":
        raise McuError("mixed= sets precisions inside a quantized model; with quantize='none' every layer is "
                       "float32 already")
    if is_quantized(model) and calibration is not None:
        raise McuError("the model is quantized already (torchao's convert_pt2e output), so calibration does "
                       "not apply; pass calibration=None")


def _choose_precision(model, ep, example_inputs, calibration, board_info, target: Target, target_db: float,
                      options: dict, pinned: dict | None, log) -> PrecisionChoice:
    """target_sqnr's per-layer precisions (mcu.quantization.precision), each candidate checked on the integer
    reference of the whole compiled model."""
    quantize, optimize = options.pop("quantize"), options.pop("optimize")

    def verify(mixed_, inputs, want):  # the integer reference of the whole compiled candidate
        with tempfile.TemporaryDirectory() as tmp:
            try:
                pkg = compile(model, example_inputs, board=board_info.name, calibration=calibration,
                              quantize=quantize, out_dir=tmp, optimize=optimize, mixed=mixed_, **options)
            except BoardFitError:
                return float("-inf")  # this mix does not fit the board: as good as none
            got = [np.concatenate([o.ravel() for o in pkg.dequantize_outputs(raw)])
                   for raw in pkg.reference_sequence(inputs)]
        err = float(np.mean((np.concatenate(got) - np.concatenate(want)) ** 2))
        signal = float(np.mean(np.concatenate(want) ** 2))
        return float("inf") if err == 0 else float(10 * np.log10(signal / err))

    # room for more weights: the board's flash less the run's (at most ~2.5 B per parameter, DSP kernels
    # storing int8 weights widened) and a margin for code; a mix past it is refused by check_fit anyway
    params = sum(p.numel() for p in ep.state_dict.values())
    budget = board_info.flash_size - 2.5 * params - FLASH_MARGIN
    return choose_precision(ep, tuple(example_inputs), calibration, target_db, target.features, quantize_pt2e,
                            precision=quantize, pinned=pinned, progress=log, verify=verify,
                            flash_budget=budget, state=tuple(s.init for s in ep_states(ep)), **options)


def _lower(ep, converted, target: Target) -> tuple[Graph, MemoryPlan]:
    """mcu IR from the converted (or, for quantize='none', the float) program, lowered and planned."""
    graph = import_float(ep) if converted is None else import_quantized(converted)
    graph = run_passes(attach_state(graph, ep_states(ep) if ep is not None else ()), target)
    return plan_graph(_portable_sources(graph))


def our_files(name: str, out_dir: Path) -> set[str]:
    """The top-level names mcu writes into out_dir for model `name`, and those of the model out_dir held before (a
    package compiled again under another name)."""
    names = {name}
    try:
        previous = json.loads((out_dir / "manifest.json").read_text()).get("name")
        if isinstance(previous, str) and len(previous) < 64:
            names.add(previous)
    except (OSError, ValueError, AttributeError):
        pass
    return COMMON_FILES | {f for n in names for f in (*model_files(n), *dropin_names(n))}


def _package_files(graph: Graph, memory: MemoryPlan, ep, board_info, name: str,
                   flash_budget: int | None = None) -> tuple[dict[str, bytes], dict]:
    """Every file of the package folder by name, and its sealed manifest; BoardFitError before anything is written."""
    texts, emitted = emit_fitted(graph, memory, name, board_info)  # the weights where they fit
    manifest = emitted.as_dict() | ({"flash_budget": flash_budget} if flash_budget is not None else {})
    footprint = check_fit(graph, manifest, board_info)
    files = {name: text.encode() for name, text in texts.items()}
    files.update(dropin_files(texts, manifest, board_info, footprint))
    ir_text, arrays = serialize.dump(graph, memory)
    files[IR_FILE] = ir_text.encode()
    for i, a in enumerate(arrays):
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        files[f"{IR_DATA}/{i}.npy"] = buf.getvalue()
    if ep is not None:
        files[FLOAT_MODEL] = _saved(ep)  # the float model, for `mcu debug`
    manifest = seal_manifest(manifest, files, len(arrays))
    files["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    files["arena.svg"] = picture(graph, memory, title=board_info.name).encode()
    return files, manifest


def _portable_sources(graph: Graph) -> Graph:
    """The graph with each op's source line naming its file as mcu.importer.export.portable_path does: a package carries no
    user folders, and the same model compiled from two folders gives the same bytes (errors keep full paths)."""
    return graph.replace(nodes=tuple(n.replace(source=portable_source(n.source)) if n.source else n
                                     for n in graph.nodes),
                         state=tuple(dataclasses.replace(s, source=portable_source(s.source)) for s in graph.state))


def _saved(ep: torch.export.ExportedProgram) -> bytes:
    """ep as torch.export.save writes it, its stack traces naming files as portable_path does (no user folders)."""
    nodes = [n for n in ep.graph.nodes if n.meta.get("stack_trace")]
    traces = [n.meta["stack_trace"] for n in nodes]
    try:
        for n in nodes:
            n.meta["stack_trace"] = portable_stack_trace(n.meta["stack_trace"])
        buf = io.BytesIO()
        torch.export.save(ep, buf)
        return buf.getvalue()
    finally:
        for n, t in zip(nodes, traces):  # the program may be the user's: as it was
            n.meta["stack_trace"] = t


def is_quantized(model) -> bool:
    """A GraphModule holding torchao's quantize/dequantize ops: convert_pt2e's output."""
    if not isinstance(model, torch.fx.GraphModule):
        return False
    return any(n.op == "call_function" and "quantized_decomposed" in str(n.target) for n in model.graph.nodes)


def run(pkg: Package, inputs, *, timeout: float = 120.0, state: bytes | None = None) -> RunResult:
    """Build pkg's firmware if needed and run one inference on its board under QEMU. A model with state starts
    from `state` (the region's bytes; None: its initial state) and returns the region after the call in
    RunResult.state (mcu.session carries it from call to call)."""
    from mcu.qemu.runner import run_firmware
    from mcu.state_region import initial_region

    raw_in = pkg.quantize_inputs(inputs)
    region = b"" if not pkg.state_bytes else initial_region(pkg.graph) if state is None else bytes(state)
    if len(region) != pkg.state_bytes:
        raise McuError(f"a state of {len(region)} bytes for a model whose state region is {pkg.state_bytes}; "
                       f"pass the RunResult.state of this model's previous call")
    elf = pkg.build()
    res = run_firmware(elf, pkg.board, region + b"".join(x.tobytes() for x in raw_in), timeout=timeout)
    raw = pkg.raw_outputs(res.output_bytes)
    if res.status != 0:
        raise McuError(f"the model returned {status_name(res.status)} on the device: a code generator bug; "
                       f"please report it" if res.status != MCU_ERR_INDEX else
                       f"the model returned {status_name(res.status)} on the device: an index input outside its "
                       f"table (the manifest's index_range)")
    return RunResult(pkg.dequantize_outputs(raw), raw, res.instructions, res.stdout, res.stack_bytes,
                     res.output_bytes[len(res.output_bytes) - pkg.state_bytes:] if pkg.state_bytes else b"")


def size(pkg: Package):
    """The flash/RAM size report of pkg's firmware (built if needed)."""
    from mcu.boards import load_board
    from mcu.build.elfsize import size_report
    report = size_report(pkg.build(), pkg.build_dir, load_board(pkg.board), name=pkg.name)
    widened = pkg.manifest.get("widened", [])
    return dataclasses.replace(report, weights_budget=pkg.manifest.get("flash_budget"), widened=(
        len(widened), sum(w["bytes"] for w in widened), sum(w["instructions"] for w in widened)))
