"""The public API: compile a model into a package folder, run it on its board, report its size."""
from __future__ import annotations

import dataclasses
import io
import json
import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from mcu.codegen.emit import emit
from mcu.frontend import import_quantized
from mcu.frontend_float import import_float
from mcu.codegen import serialize
from mcu.codegen.ir import DTYPES, Graph
from mcu.codegen.memory import MemoryPlan, picture, plan_graph
from mcu.codegen.target import Target
from mcu.codegen.pipeline import run_passes
from mcu.codegen.reference import run_reference
from mcu.errors import BoardFitError, McuError, status_name
from mcu.export import example_inputs_of, export
from mcu.fit import check_fit
from mcu.package import FILES as DROPIN_FILES, dropin_files
from mcu.paths import BUILD_DIR
from mcu.precision import PrecisionChoice, choose_precision
from mcu.quantize import Progress, quantize as quantize_pt2e

FLOAT_MODEL = "model.pt2"  # the float model, opened only by `mcu debug` (mcu.debug.check_trusted)
IR_FILE = "ir.json"      # the lowered IR and memory plan, typed JSON (mcu.codegen.serialize)
IR_DATA = "ir_data"      # its arrays, <index>.npy, read with allow_pickle=False
OLD_IR_FILE = "ir.pkl"   # mcu 0.1.0 before package format 1: a pickle, never opened
OUR_FILES = {"model.h", "model.c", "weights.c", "manifest.json", IR_FILE, IR_DATA, OLD_IR_FILE, "arena.svg", FLOAT_MODEL,
             "report.html", BUILD_DIR, *DROPIN_FILES}


def mcu_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("mcu")
    except PackageNotFoundError:
        return "unknown"


FLASH_MARGIN = 64 * 1024  # code, runtime and startup next to the weights, for target_sqnr's flash budget


class PackageError(McuError):
    """A package folder that this mcu does not accept: damaged, changed by hand, foreign or from another version."""


class InputError(McuError):
    """Inputs passed to mcu.run do not match the model."""


@dataclass
class Package:
    """A compiled model: its folder, the lowered IR and memory plan, and (when compiled in this
    process) torchao's converted model, the integer reference of the whole graph."""
    out_dir: Path
    board: str
    manifest: dict
    graph: Graph
    memory: MemoryPlan
    converted: torch.fx.GraphModule | None = field(default=None, repr=False)
    trusted: bool = field(default=False, repr=False)  # written by this process: its model.pt2 is ours (mcu.debug)
    precision: PrecisionChoice | None = field(default=None, repr=False)  # what target_sqnr picked

    @property
    def arena_bytes(self) -> int:
        return self.manifest["arena_bytes"]

    @property
    def build_dir(self) -> Path:
        return self.out_dir / BUILD_DIR / self.board

    # -- host-side conversions at the model boundary ----------------------------------------
    def quantize_inputs(self, inputs) -> list[np.ndarray]:
        """Float inputs in torch order -> int8 arrays (float32 for a float package) in the stored order (NHWC
        for 4-d)."""
        if isinstance(inputs, (torch.Tensor, np.ndarray)):
            inputs = (inputs,)
        specs = self.manifest["inputs"]
        if len(inputs) != len(specs):
            raise InputError(f"the model takes {len(specs)} input(s), got {len(inputs)}")
        out = []
        for spec, x in zip(specs, inputs):
            shape = _torch_shape(spec)
            try:
                x = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
            except (TypeError, ValueError, RuntimeError) as exc:
                raise InputError(f"{spec['name']} must be a float tensor of shape {list(shape)} (torch order), "
                                 f"got a {type(x).__name__} that is not one ({exc})") from None
            if tuple(x.shape) != shape or not x.is_floating_point():
                raise InputError(f"{spec['name']} must be a float tensor of shape {list(shape)} (torch order), got "
                                 f"{x.dtype} {list(x.shape)}")
            if spec["dtype"] == "float32":  # quantize="none": the input as it is
                out.append(_to_stored(x.float().numpy(), spec))
                continue
            if not torch.isfinite(x).all():
                raise InputError(f"{spec['name']} contains NaN or Inf, which int8 cannot represent; clean the input")
            info = torch.iinfo(getattr(torch, spec["dtype"]))  # int8, or int16 (a16w8)
            q = torch.ops.quantized_decomposed.quantize_per_tensor(
                x.float(), spec["scale"], spec["zero_point"], info.min, info.max, getattr(torch, spec["dtype"])).numpy()
            out.append(_to_stored(q, spec))
        return out

    def dequantize_outputs(self, raw: list[np.ndarray]) -> list[np.ndarray]:
        return [r.astype(np.float32) if s["scale"] is None else
                ((r.astype(np.float32) - s["zero_point"]) * np.float32(s["scale"])).astype(np.float32)
                for r, s in zip(raw, self.manifest["outputs"])]

    def reference(self, inputs) -> list[np.ndarray]:
        """Raw outputs (torch order) of the numpy reference for float inputs: integer, or float32 for a float
        package (quantize="none")."""
        raw = run_reference(self.graph, self.quantize_inputs(inputs))
        return [_to_torch(r, s) for r, s in zip(raw, self.manifest["outputs"])]

    def torchao_reference(self, inputs) -> list[np.ndarray]:
        """Float outputs of torchao's converted (Q/DQ) model; needs a package compiled in this process."""
        if self.converted is None:
            raise McuError("the torchao reference exists only for packages compiled in this process")
        if isinstance(inputs, (torch.Tensor, np.ndarray)):
            inputs = (inputs,)
        with torch.no_grad():
            out = self.converted(*[torch.as_tensor(x) for x in inputs])
        out = out if isinstance(out, (tuple, list)) else (out,)
        return [o.numpy() for o in out]

    def build(self) -> Path:
        from mcu.build import build_firmware
        return build_firmware(self.board, self.out_dir, self.build_dir)


@dataclass
class RunResult:
    outputs: list[np.ndarray]       # dequantized float32, torch order
    raw_outputs: list[np.ndarray]   # integer outputs, torch order
    instructions: int               # one inference, from SysTick under -icount shift=0
    stdout: str = ""
    stack_bytes: int = 0            # peak stack of the run, harness included (see mcu.stack for the bound)


def _torch_shape(spec) -> tuple[int, ...]:
    s = tuple(spec["shape"])
    return (s[0], s[3], s[1], s[2]) if spec["layout"] == "NHWC" else s


def _to_stored(x: np.ndarray, spec) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if spec["layout"] == "NHWC" else x


def _to_torch(x: np.ndarray, spec) -> np.ndarray:
    x = x.reshape(spec["shape"])
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if spec["layout"] == "NHWC" else x


def _portable_sources(graph: Graph) -> Graph:
    """The graph with each op's source line naming its file as mcu.export.portable_path does: a package carries no
    user folders, and the same model compiled from two folders gives the same bytes (errors keep full paths)."""
    from mcu.export import portable_source
    return graph.replace(nodes=tuple(n.replace(source=portable_source(n.source)) if n.source else n
                                     for n in graph.nodes))


def _saved(ep: torch.export.ExportedProgram) -> bytes:
    """ep as torch.export.save writes it, its stack traces naming files as portable_path does (no user folders)."""
    from mcu.export import portable_stack_trace

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


# Names mcu writes that a user's own folder may hold too: they count as mcu's only in a folder holding mcu's manifest.
GENERIC_FILES = {"README.md", "CMakeLists.txt"}


def _is_package(out_dir: Path) -> bool:
    """Does out_dir hold a manifest.json written by mcu (a previous compile)?"""
    try:
        manifest = json.loads((out_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and {"kernels", "arena_bytes"} <= manifest.keys()


def _keep(path: Path, copy: Path) -> None:
    """A second name for path's current content (a hard link; a copy where links are not supported)."""
    try:
        os.link(path, copy, follow_symlinks=False)
    except OSError:
        shutil.copy2(path, copy, follow_symlinks=False)


def _write_package(out_dir: Path, files: dict[str, bytes], force: bool) -> None:
    """Write files into out_dir, all or nothing.

    - A folder holding entries mcu did not write is refused unless force; force writes beside them but never
      replaces one. Entries count as mcu's by name (OUR_FILES); README.md, CMakeLists.txt and build/ only in a
      folder that holds mcu's manifest.json.
    - Everything is written to a temporary folder beside out_dir first; then each top-level entry is swapped in
      (files by rename over the old one, so a file is always whole; folders whole). The old entries are kept
      aside until the end: any failure, an interrupt included, puts them back, so the previous output stays.
    - Only mcu's own firmware builds (.mcu-build/<board> folders holding SCons' database) are deleted, as stale.
    """
    out_dir = Path(out_dir)
    names = sorted({n.split("/")[0] for n in files})  # a name with "/" lands in a folder (mcu_runtime/...)
    if out_dir.exists():
        if not out_dir.is_dir():
            raise McuError(f"{out_dir} exists and is not a folder; choose another output path")
        ours = OUR_FILES if _is_package(out_dir) else OUR_FILES - GENERIC_FILES
        foreign = sorted(p.name for p in out_dir.iterdir() if p.name not in ours)
        if foreign and not force:
            raise McuError(f"{out_dir} holds files mcu did not write ({', '.join(foreign[:5])}); choose an "
                           f"empty or new folder, or pass --force (force=True) to write beside them")
        clash = [n for n in foreign if n in names]
        if clash:
            raise McuError(f"{out_dir} holds {', '.join(clash)}, which mcu did not write and would replace; "
                           f"--force writes beside other files but never replaces them: move them or choose "
                           f"another folder")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    old = tmp / ".old"
    swapped: list[str] = []
    try:
        for name, data in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        out_dir.mkdir(exist_ok=True)
        old.mkdir()
        try:
            for name in names:
                target = out_dir / name
                if target.is_dir() and not target.is_symlink():
                    os.replace(target, old / name)  # a folder is swapped whole: the old one aside
                elif target.exists() or target.is_symlink():
                    _keep(target, old / name)  # the rename below replaces the file atomically
                swapped.append(name)
                os.replace(tmp / name, target)
        except BaseException:
            for name in reversed(swapped):  # put the previous output back
                target = out_dir / name
                if (old / name).exists() or (old / name).is_symlink():
                    if target.is_dir() and not target.is_symlink():
                        shutil.rmtree(target)
                    os.replace(old / name, target)
                elif target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                elif target.exists() or target.is_symlink():
                    target.unlink()
            raise
        build = out_dir / BUILD_DIR
        if build.is_dir() and not build.is_symlink():
            for stale in build.iterdir():
                if stale.is_dir() and not stale.is_symlink() and (stale / ".sconsign.dblite").is_file():
                    shutil.rmtree(stale)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compile(model, example_inputs=None, *, board: str = "mps2-an386", calibration=None,
            quantize: str = "int8", out_dir: str | os.PathLike = "mcu_out", force: bool = False,
            optimize: str = "speed", progress: Progress | None = None, bias_correction: bool = True,
            observer: str = "minmax", weights: str = "int8", mixed: dict | None = None,
            target_sqnr: float | None = None, log=None) -> Package:
    """Export, quantize, lower, plan and emit `model` for `board` into out_dir. Returns the Package.
    optimize="speed" picks the board's fastest kernel variants; "memory" keeps the portable kernels,
    whose outputs may overlap their dying inputs, and runs depthwise and 1x1 convs in place over an
    input that dies there, for the smallest arena. progress(done, total, seconds),
    if given, is called after each calibration batch (total is None for a calibration set without len()).
    bias_correction subtracts each conv/linear's weight-rounding shift at the calibration mean from its
    bias (mcu.quantize); the user's model is never modified. observer sets activation ranges: "minmax",
    "percentile" or "mse" (mcu.quantize.OBSERVERS). weights="int4" quantizes conv and linear weights to
    [-7, 7] and stores them two per byte (the int4 kernels; depthwise and grouped convs keep int8 storage).
    quantize="a16w8" runs int16 activations with int8 weights (TFLite's 16x8). mixed maps module names or types
    to "int8", "a16w8" or "float32", e.g. mixed={"classifier": "float32"}: those layers run in that precision,
    with converts planned at the boundaries (mcu.quantize).
    target_sqnr (dB) picks those precisions itself: the cheapest per-layer int8 / a16w8 / float32 mix whose SQNR vs
    the float model, on the calibration data, reaches the target (mcu.precision); `mixed` entries stay as pinned.
    The choice is pkg.precision (its .table(), and .mixed to pin it); log(line), if given, hears each step.

    A model quantized already (torchao's convert_pt2e output, e.g. after quantization-aware training with
    McuQuantizer(qat=True)) compiles as it is, with the same integer semantics; it takes no calibration."""
    from mcu.boards import load_board

    board_info = load_board(board)  # unknown boards fail before any slow work
    target = Target.of_board(board_info)
    if optimize not in ("speed", "memory"):
        raise McuError(f"optimize={optimize!r}: use 'speed' (the board's fastest kernels) or 'memory' "
                       f"(portable kernels whose outputs may overlap their inputs: the smallest arena)")
    target = dataclasses.replace(target, variants=optimize == "speed",
                                 features=target.features | ({"int4"} if weights == "int4" else set()))
    if quantize not in ("int8", "a16w8", "none"):
        raise McuError(f"quantize={quantize!r} is not supported; use quantize='int8', 'a16w8' (int16 activations) "
                       f"or 'none' (float32)")
    if target_sqnr is not None and quantize == "none":
        raise McuError("target_sqnr picks int8 / a16w8 / float32 per layer of a quantized model; use "
                       "quantize='int8' (or 'a16w8') with it, not 'none'")
    if target_sqnr is not None and is_quantized(model):
        raise McuError("the model is quantized already, so target_sqnr cannot choose its precisions; pass the "
                       "float model")
    if mixed and quantize == "none":
        raise McuError("mixed= sets precisions inside a quantized model; with quantize='none' every layer is "
                       "float32 already")
    if is_quantized(model):
        if calibration is not None:
            raise McuError("the model is quantized already (torchao's convert_pt2e output), so calibration does "
                           "not apply; pass calibration=None")
        ep, converted, choice = None, model, None
    else:
        ep = export(model, example_inputs)
        if example_inputs is None:
            example_inputs = example_inputs_of(ep)
        choice = None
        if target_sqnr is not None:
            calibration = None if calibration is None else list(calibration)  # measured on, then calibrated on
            options = dict(bias_correction=bias_correction, observer=observer, weights=weights)

            def verify(mixed_, inputs, want):  # the integer reference of the whole compiled candidate
                with tempfile.TemporaryDirectory() as tmp:
                    try:
                        pkg = compile(model, example_inputs, board=board, calibration=calibration,
                                      quantize=quantize, out_dir=tmp, optimize=optimize, mixed=mixed_, **options)
                    except BoardFitError:
                        return float("-inf")  # this mix does not fit the board: as good as none
                    got = [np.concatenate([o.ravel() for o in pkg.dequantize_outputs(pkg.reference(x))])
                           for x in inputs]
                err = float(np.mean((np.concatenate(got) - np.concatenate(want)) ** 2))
                signal = float(np.mean(np.concatenate(want) ** 2))
                return float("inf") if err == 0 else float(10 * np.log10(signal / err))

            # room for more weights: the board's flash less the run's (at most ~2.5 B per parameter, DSP kernels
            # storing int8 weights widened) and a margin for code; a mix past it is refused by check_fit anyway
            params = sum(p.numel() for p in ep.state_dict.values())
            budget = board_info.flash_size - 2.5 * params - FLASH_MARGIN
            choice = choose_precision(ep, tuple(example_inputs), calibration, float(target_sqnr), target.features,
                                      precision=quantize, pinned=mixed, progress=log, verify=verify,
                                      flash_budget=budget, **options)
            mixed = {**choice.mixed, **(mixed or {})}
        converted = None if quantize == "none" else \
            quantize_pt2e(ep, tuple(example_inputs), calibration, progress, bias_correction, observer, weights,
                          precision=quantize, mixed=mixed)
    graph = run_passes(import_float(ep) if converted is None else import_quantized(converted), target)
    graph = _portable_sources(graph)
    graph, memory = plan_graph(graph)
    texts, emitted = emit(graph, memory, board=board)
    manifest = emitted.as_dict()
    footprint = check_fit(graph, manifest, board_info)  # BoardFitError before anything is written
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
    files["arena.svg"] = picture(graph, memory, title=board).encode()
    out_dir = Path(out_dir)
    _write_package(out_dir, files, force)
    return Package(out_dir, board, manifest, graph, memory, converted, trusted=True,
                   precision=choice)


def is_quantized(model) -> bool:
    """A GraphModule holding torchao's quantize/dequantize ops: convert_pt2e's output."""
    if not isinstance(model, torch.fx.GraphModule):
        return False
    return any(n.op == "call_function" and "quantized_decomposed" in str(n.target) for n in model.graph.nodes)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest_digest(manifest: dict) -> str:
    """sha256 of the manifest's canonical JSON without the digest itself."""
    rest = dict(manifest)
    if isinstance(rest.get("package"), dict):
        rest["package"] = {k: v for k, v in rest["package"].items() if k != "manifest_sha256"}
    return _sha256(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode())


def seal_manifest(manifest: dict, files: dict[str, bytes], n_arrays: int) -> dict:
    """The manifest with its "package" entry: format version, writer, and the sha256 of itself and of the IR files,
    so a package changed after mcu wrote it is refused with one line instead of being half-read."""
    manifest = {k: v for k, v in manifest.items() if k != "package"}
    manifest["package"] = {
        "format": serialize.VERSION, "written_by": f"mcu {mcu_version()}", "arrays": n_arrays,
        "sha256": {name: _sha256(files[name]) for name in [IR_FILE, FLOAT_MODEL] + [f"{IR_DATA}/{i}.npy" for i in
                                                                                  range(n_arrays)] if name in files}}
    manifest["package"]["manifest_sha256"] = _manifest_digest(manifest)
    return manifest


_C_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_KERNEL = re.compile(r"[a-z0-9_]{1,32}/[A-Za-z0-9_]{1,96}\Z")
MAX_FILE = 1 << 28  # 256 MB: no package file mcu writes comes near


def read_sealed(pkg: Package, name: str) -> bytes:
    """A package file whose sha256 the manifest holds (load checked the manifest's own), refused if changed."""
    expected = pkg.manifest["package"]["sha256"].get(name)
    data = _read(pkg.out_dir / name, name)
    if expected is None or _sha256(data) != expected:
        raise PackageError(f"{pkg.out_dir / name} was changed after mcu wrote it (its sha256 is not the one in "
                           f"manifest.json); compile the model again with `mcu compile`")
    return data


def _read(path: Path, what: str) -> bytes:
    if path.is_symlink() or not path.is_file():
        raise PackageError(f"{path} is missing or not a regular file; the package is damaged: compile it again "
                           f"with `mcu compile`")
    if path.stat().st_size > MAX_FILE:
        raise PackageError(f"{path} is larger than any {what} mcu writes; the package is damaged")
    return path.read_bytes()


def check_manifest(manifest, where: Path) -> dict:
    """The manifest's names and numbers, checked before any of them reaches SCons, CMake or the filesystem:
    the board is one of boards/, every kernel a source the registry names (a kernel's or a shared core's),
    the model name a C name."""
    from mcu.boards import board_names
    from mcu.codegen.kernels import SOURCES

    def bad(what: str):
        raise PackageError(f"{where}: {what}; the package is damaged or was not written by mcu: compile it again "
                           f"with `mcu compile`")

    if not isinstance(manifest, dict):
        bad("not a JSON object")
    board = manifest.get("board")
    if not isinstance(board, str) or board not in board_names():
        bad(f"board {str(board)[:40]!r} is not one of mcu's boards (`mcu boards`)")
    if not isinstance(manifest.get("name"), str) or not _C_NAME.match(manifest["name"]):
        bad(f"model name {str(manifest.get('name'))[:40]!r} is not a C identifier")
    kernels = manifest.get("kernels")
    if not isinstance(kernels, list) or not kernels:
        bad("'kernels' is not a list of kernel names")
    for k in kernels:
        if not isinstance(k, str) or not _KERNEL.match(k):
            bad(f"kernel {str(k)[:60]!r} is not family/name (no '..', no absolute path)")
        if k not in SOURCES:
            bad(f"kernel {k!r} is not in mcu's kernel registry")
    for key in ("arena_bytes", "weights_bytes", "arena_lower_bound"):
        if type(manifest.get(key)) is not int or not 0 <= manifest[key] < 1 << 32:
            bad(f"{key!r} is not a byte count")
    for key in ("inputs", "outputs"):
        specs = manifest.get(key)
        if not isinstance(specs, list) or not specs:
            bad(f"{key!r} is not a list of tensors")
        for s in specs:
            if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not _C_NAME.match(s["name"]):
                bad(f"an entry of {key!r} has no C name")
            shape = s.get("shape")
            if not isinstance(shape, list) or not 1 <= len(shape) <= 8 or \
                    any(type(d) is not int or not 0 < d < 1 << 24 for d in shape):
                bad(f"{key} {s['name']}: 'shape' is not a list of sizes")
            if s.get("layout") not in ("torch order", "NHWC") or (s.get("layout") == "NHWC" and len(shape) != 4):
                bad(f"{key} {s['name']}: 'layout' is not 'torch order' or 'NHWC' (4-d)")
            if not isinstance(s.get("dtype"), str) or s["dtype"] not in DTYPES:
                bad(f"{key} {s['name']}: 'dtype' {str(s.get('dtype'))[:20]!r} is not one of {', '.join(DTYPES)}")
            n = int(np.prod(shape, dtype=np.int64)) * np.dtype(DTYPES[s["dtype"]]).itemsize
            if s.get("bytes") != n:
                bad(f"{key} {s['name']}: 'bytes' is not {n}, the size of its shape and dtype")
            if s.get("scale") is None:
                if s.get("zero_point") is not None or s["dtype"] != "float32":
                    bad(f"{key} {s['name']}: no scale for an integer tensor")
            elif type(s.get("scale")) is not float or not 0 < s["scale"] < 1e30 or type(s.get("zero_point")) is not int \
                    or not -(1 << 31) <= s["zero_point"] < 1 << 31:
                bad(f"{key} {s['name']}: 'scale'/'zero_point' are not a positive float and an integer")
    if not isinstance(manifest.get("ops"), list):
        bad("'ops' is not a list")
    return manifest


def load(out_dir: str | os.PathLike) -> Package:
    """Open a package folder written by compile(). Nothing in it is executed or unpickled: the manifest and the IR
    are JSON checked field by field (and against the sha256 the manifest holds), arrays .npy without pickles; any
    other content raises PackageError (an McuError: one line)."""
    out_dir = Path(out_dir)
    manifest_path = out_dir / "manifest.json"
    if not manifest_path.is_file():
        raise McuError(f"{out_dir} is not an mcu package (no manifest.json); run `mcu compile` first")
    try:
        manifest = json.loads(_read(manifest_path, "manifest"),
                              parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not JSON")))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise PackageError(f"{manifest_path} is not valid JSON ({str(exc)[:80]}); the package is damaged: compile it "
                           f"again with `mcu compile`") from None
    info = manifest.get("package") if isinstance(manifest, dict) else None
    if not isinstance(info, dict) or "format" not in info:
        if (out_dir / OLD_IR_FILE).exists() or isinstance(manifest, dict) and "kernels" in manifest:
            raise PackageError(f"{out_dir} was written by an older mcu (mcu 0.1.0 before package format "
                               f"{serialize.VERSION}: its IR is a pickle, which mcu no longer opens); compile the "
                               f"model again with this mcu ({mcu_version()}): `mcu compile MODEL -o {out_dir}`")
        raise PackageError(f"{manifest_path} is not an mcu manifest; compile the model with `mcu compile`")
    if info.get("format") != serialize.VERSION:
        raise PackageError(f"{out_dir} was written by {str(info.get('written_by'))[:40]} in package format "
                           f"{str(info.get('format'))[:20]}; this mcu ({mcu_version()}) reads format "
                           f"{serialize.VERSION}: compile the model again with `mcu compile MODEL -o {out_dir}`")
    sums = info.get("sha256")
    n = info.get("arrays")
    if info.get("manifest_sha256") != _manifest_digest(manifest) or type(n) is not int or not 0 <= n < 1 << 20 or \
            not isinstance(sums, dict) or set(sums) - {FLOAT_MODEL} != {IR_FILE, *(f"{IR_DATA}/{i}.npy" for i in range(n))} \
            or not all(isinstance(v, str) for v in sums.values()):
        raise PackageError(f"{manifest_path} was changed after mcu wrote it (its checksum does not match); compile "
                           f"the model again with `mcu compile`")
    check_manifest(manifest, manifest_path)

    def checked(name: str) -> bytes:
        return read_sealed(Package(out_dir, "", manifest, None, None), name)

    def read_array(i: int) -> np.ndarray:
        if not i < n:
            raise PackageError(f"{out_dir / IR_FILE} names array {i}; the package holds {n}")
        try:
            return np.load(io.BytesIO(checked(f"{IR_DATA}/{i}.npy")), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise PackageError(f"{out_dir / IR_DATA / f'{i}.npy'} is not a plain .npy array ({str(exc)[:80]})") from None

    try:
        text = checked(IR_FILE).decode()
    except UnicodeDecodeError:
        raise PackageError(f"{out_dir / IR_FILE} is not UTF-8 text; the package is damaged") from None
    try:
        graph, memory = serialize.load(text, read_array)
    except serialize.FormatError as exc:
        raise PackageError(f"{out_dir}: {exc}; the package is damaged: compile it again with `mcu compile`") from None
    _check_consistent(manifest, graph, memory, manifest_path)
    if (out_dir / BUILD_DIR).is_symlink():
        raise PackageError(f"{out_dir / BUILD_DIR} is a symbolic link; mcu builds only inside the package folder: "
                           f"remove it")
    return Package(out_dir, manifest["board"], manifest, graph, memory)


def _check_consistent(manifest: dict, graph: Graph, memory: MemoryPlan, where: Path) -> None:
    """The manifest's I/O, arena and kernels say what the IR says."""
    def bad(what):
        raise PackageError(f"{where}: {what}, unlike the package's IR; compile the model again with `mcu compile`")

    for key, names in (("inputs", graph.inputs), ("outputs", graph.outputs)):
        if len(manifest[key]) != len(names):
            bad(f"{len(manifest[key])} {key}")
        for s, t in zip(manifest[key], names):
            t = graph.tensors[t]
            if list(t.shape) != s["shape"] or t.dtype != s["dtype"]:
                bad(f"{key} {s['name']} is {s['dtype']} {s['shape']}")
    if manifest["arena_bytes"] != memory.arena_bytes:
        bad(f"the arena is {manifest['arena_bytes']} B")
    try:
        emitted = emit(graph, memory, board=manifest["board"])[1].as_dict()
    except Exception as exc:  # a forged IR that passed the field checks: no bug of mcu's if it does not emit
        raise PackageError(f"{where.parent}: its IR does not make a model ({type(exc).__name__}: {str(exc)[:80]}); "
                           f"compile the model again with `mcu compile`") from None
    differ = sorted(k for k in set(emitted) | set(manifest) - {"package"} if emitted.get(k) != manifest.get(k))
    if differ:
        bad(f"{', '.join(differ)[:80]} differ from what this mcu writes for the IR")


def run(pkg: Package, inputs, *, timeout: float = 120.0) -> RunResult:
    """Build pkg's firmware if needed and run one inference on its board under QEMU."""
    from mcu.qemu.runner import run_firmware

    raw_in = pkg.quantize_inputs(inputs)
    elf = pkg.build()
    res = run_firmware(elf, pkg.board, b"".join(x.tobytes() for x in raw_in), timeout=timeout)
    raw, pos = [], 0
    for spec in pkg.manifest["outputs"]:
        chunk = res.output_bytes[pos:pos + spec["bytes"]]
        pos += spec["bytes"]
        raw.append(_to_torch(np.frombuffer(chunk, dtype=DTYPES[spec["dtype"]]).copy(), spec))
    if res.status != 0:
        raise McuError(f"the model returned {status_name(res.status)} on the device: a code generator bug; "
                       f"please report it")
    return RunResult(pkg.dequantize_outputs(raw), raw, res.instructions, res.stdout, res.stack_bytes)


def size(pkg: Package):
    """The flash/RAM size report of pkg's firmware (built if needed)."""
    from mcu.boards import load_board
    from mcu.elfsize import size_report
    return size_report(pkg.build(), pkg.build_dir, load_board(pkg.board))
