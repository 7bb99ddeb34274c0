"""The public API: compile a model into a package folder, run it on its board, report its size."""
from __future__ import annotations

import dataclasses
import io
import json
import os
import pickle
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from mcu.codegen.emit import emit
from mcu.frontend import import_quantized
from mcu.frontend_float import import_float
from mcu.codegen.ir import DTYPES, Graph
from mcu.codegen.memory import MemoryPlan, picture, plan_graph
from mcu.codegen.target import Target
from mcu.codegen.pipeline import run_passes
from mcu.codegen.reference import run_reference
from mcu.errors import McuError, status_name
from mcu.export import example_inputs_of, export
from mcu.fit import check_fit
from mcu.package import FILES as DROPIN_FILES, dropin_files
from mcu.paths import BUILD_DIR
from mcu.quantize import Progress, quantize as quantize_pt2e

IR_FILE = "ir.pkl"
OUR_FILES = {"model.h", "model.c", "weights.c", "manifest.json", IR_FILE, "arena.svg", "model.pt2", "report.html", BUILD_DIR,
             *DROPIN_FILES}


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


def _saved(ep: torch.export.ExportedProgram) -> bytes:
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    return buf.getvalue()


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
            observer: str = "minmax", weights: str = "int8", mixed: dict | None = None) -> Package:
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
    if mixed and quantize == "none":
        raise McuError("mixed= sets precisions inside a quantized model; with quantize='none' every layer is "
                       "float32 already")
    if is_quantized(model):
        if calibration is not None:
            raise McuError("the model is quantized already (torchao's convert_pt2e output), so calibration does "
                           "not apply; pass calibration=None")
        ep, converted = None, model
    else:
        ep = export(model, example_inputs)
        if example_inputs is None:
            example_inputs = example_inputs_of(ep)
        converted = None if quantize == "none" else \
            quantize_pt2e(ep, tuple(example_inputs), calibration, progress, bias_correction, observer, weights,
                          precision=quantize, mixed=mixed)
    graph = run_passes(import_float(ep) if converted is None else import_quantized(converted), target)
    graph, memory = plan_graph(graph)
    texts = emit(graph, memory, board=board)
    manifest = json.loads(texts["manifest.json"])
    footprint = check_fit(graph, manifest, board_info)  # BoardFitError before anything is written
    files = {name: text.encode() for name, text in texts.items()}
    files.update(dropin_files(texts, manifest, board_info, footprint))
    files[IR_FILE] = pickle.dumps((graph, memory))
    files["arena.svg"] = picture(graph, memory, title=board).encode()
    if ep is not None:
        files["model.pt2"] = _saved(ep)  # the float model, for `mcu debug`
    out_dir = Path(out_dir)
    _write_package(out_dir, files, force)
    return Package(out_dir, board, manifest, graph, memory, converted)


def is_quantized(model) -> bool:
    """A GraphModule holding torchao's quantize/dequantize ops: convert_pt2e's output."""
    if not isinstance(model, torch.fx.GraphModule):
        return False
    return any(n.op == "call_function" and "quantized_decomposed" in str(n.target) for n in model.graph.nodes)


def load(out_dir: str | os.PathLike) -> Package:
    """Open a package folder written by compile()."""
    out_dir = Path(out_dir)
    manifest_path = out_dir / "manifest.json"
    if not manifest_path.is_file():
        raise McuError(f"{out_dir} is not an mcu package (no manifest.json); run `mcu compile` first")
    try:
        manifest = json.loads(manifest_path.read_text())
        graph, memory = pickle.loads((out_dir / IR_FILE).read_bytes())
        board = manifest["board"]
    except Exception as exc:  # json, pickle and a missing ir.pkl raise many types
        raise McuError(f"{out_dir} is a damaged mcu package or one from another mcu version ({type(exc).__name__}: "
                       f"{exc}); compile it again with `mcu compile`") from exc
    return Package(out_dir, board, manifest, graph, memory)


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
