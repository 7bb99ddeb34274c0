"""The public API: compile a model into a package folder, run it on its board, report its size."""
from __future__ import annotations

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
from mcu.codegen.frontend import import_quantized
from mcu.codegen.ir import DTYPES, Graph
from mcu.codegen.memory import MemoryPlan, picture, plan_graph
from mcu.codegen.passes.select_kernels import Target
from mcu.codegen.pipeline import run_passes
from mcu.codegen.reference import run_reference
from mcu.errors import McuError
from mcu.export import example_inputs_of, export
from mcu.fit import check_fit
from mcu.package import FILES as DROPIN_FILES, dropin_files
from mcu.quantize import quantize as quantize_pt2e

IR_FILE = "ir.pkl"
OUR_FILES = {"model.h", "model.c", "weights.c", "manifest.json", IR_FILE, "arena.svg", "model.pt2", "report.html", "build",
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
        return self.out_dir / "build" / self.board

    # -- host-side conversions at the model boundary ----------------------------------------
    def quantize_inputs(self, inputs) -> list[np.ndarray]:
        """Float inputs in torch order -> int8 arrays in the stored order (NHWC for 4-d)."""
        if isinstance(inputs, (torch.Tensor, np.ndarray)):
            inputs = (inputs,)
        specs = self.manifest["inputs"]
        if len(inputs) != len(specs):
            raise InputError(f"the model takes {len(specs)} input(s), got {len(inputs)}")
        out = []
        for spec, x in zip(specs, inputs):
            x = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
            shape = _torch_shape(spec)
            if tuple(x.shape) != shape or not x.is_floating_point():
                raise InputError(f"{spec['name']} must be a float tensor of shape {list(shape)}, got "
                                 f"{x.dtype} {list(x.shape)}")
            q = torch.ops.quantized_decomposed.quantize_per_tensor(
                x.float(), spec["scale"], spec["zero_point"], -128, 127, torch.int8).numpy()
            out.append(_to_stored(q, spec))
        return out

    def dequantize_outputs(self, raw: list[np.ndarray]) -> list[np.ndarray]:
        return [((r.astype(np.float32) - s["zero_point"]) * np.float32(s["scale"])).astype(np.float32)
                for r, s in zip(raw, self.manifest["outputs"])]

    def reference(self, inputs) -> list[np.ndarray]:
        """Integer outputs (torch order) of the numpy reference for float inputs."""
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


def _write_package(out_dir: Path, files: dict[str, bytes], force: bool) -> None:
    """Write files into out_dir atomically: build beside it, then swap. Refuse to touch a folder
    holding files mcu did not write, unless force (which still only replaces our own files)."""
    out_dir = Path(out_dir)
    if out_dir.exists():
        if not out_dir.is_dir():
            raise McuError(f"{out_dir} exists and is not a folder; choose another output path")
        foreign = sorted(p.name for p in out_dir.iterdir() if p.name not in OUR_FILES)
        if foreign and not force:
            raise McuError(f"{out_dir} holds files mcu did not write ({', '.join(foreign[:5])}); choose an "
                           f"empty or new folder, or pass --force (force=True) to write beside them")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        for name, data in files.items():  # a name with "/" lands in a folder (mcu_runtime/...)
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        out_dir.mkdir(exist_ok=True)
        stale_build = out_dir / "build"
        if stale_build.is_dir():
            shutil.rmtree(stale_build)
        for name in sorted({n.split("/")[0] for n in files}):
            if (tmp / name).is_dir() and (out_dir / name).is_dir():
                os.replace(out_dir / name, tmp / f"{name}.old")  # a folder is swapped whole: old one aside
            os.replace(tmp / name, out_dir / name)  # atomic per file and per folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compile(model, example_inputs=None, *, board: str = "mps2-an386", calibration=None,
            quantize: str = "int8", out_dir: str | os.PathLike = "mcu_out", force: bool = False) -> Package:
    """Export, quantize, lower, plan and emit `model` for `board` into out_dir. Returns the Package."""
    from mcu.boards import load_board

    board_info = load_board(board)  # unknown boards fail before any slow work
    target = Target.of_board(board_info)
    if quantize != "int8":
        raise McuError(f"quantize={quantize!r} is not supported yet; use quantize='int8'")
    ep = export(model, example_inputs)
    if example_inputs is None:
        example_inputs = example_inputs_of(ep)
    converted = quantize_pt2e(ep, tuple(example_inputs), calibration)
    graph = run_passes(import_quantized(converted), target)
    graph, memory = plan_graph(graph)
    texts = emit(graph, memory, board=board)
    manifest = json.loads(texts["manifest.json"])
    footprint = check_fit(graph, manifest, board_info)  # BoardFitError before anything is written
    files = {name: text.encode() for name, text in texts.items()}
    files.update(dropin_files(texts, manifest, board_info, footprint))
    files[IR_FILE] = pickle.dumps((graph, memory))
    files["arena.svg"] = picture(graph, memory, title=board).encode()
    files["model.pt2"] = _saved(ep)  # the float model, for `mcu debug`
    out_dir = Path(out_dir)
    _write_package(out_dir, files, force)
    return Package(out_dir, board, manifest, graph, memory, converted)


def load(out_dir: str | os.PathLike) -> Package:
    """Open a package folder written by compile()."""
    out_dir = Path(out_dir)
    manifest_path = out_dir / "manifest.json"
    if not manifest_path.is_file():
        raise McuError(f"{out_dir} is not an mcu package (no manifest.json); run `mcu compile` first")
    manifest = json.loads(manifest_path.read_text())
    graph, memory = pickle.loads((out_dir / IR_FILE).read_bytes())
    return Package(out_dir, manifest["board"], manifest, graph, memory)


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
        raise McuError(f"the model returned status {res.status} on the device (1 = bad argument, "
                       f"2 = bad shape): a code generator bug; please report it")
    return RunResult(pkg.dequantize_outputs(raw), raw, res.instructions, res.stdout)


def size(pkg: Package):
    """The flash/RAM size report of pkg's firmware (built if needed)."""
    from mcu.boards import load_board
    from mcu.elfsize import size_report
    return size_report(pkg.build(), pkg.build_dir, load_board(pkg.board))
