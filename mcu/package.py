"""The compiled model as a value and its folder's format.

- Package: the folder, manifest, lowered IR and memory plan of a compiled model, and the host-side conversions at its
  boundary (float inputs in torch order -> the stored integers, raw outputs -> float); RunResult: one device run.
- Sealing: the manifest carries the package format, the writer and the sha256 of itself and of the IR files, so a
  package changed after mcu wrote it is refused with one line (read_sealed) instead of being half-read.
- load(): nothing in a folder is executed or unpickled; the manifest and the IR are JSON checked field by field.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from mcu.codegen import serialize
from mcu.codegen.emit import emit
from mcu.codegen.ir import DTYPES, Graph
from mcu.codegen.memory import MemoryPlan
from mcu.codegen.names import NAME_RULE, is_valid_name, model_files
from mcu.state_region import initial_region, reference_step
from mcu.errors import InputError, McuError, PackageError
from mcu.paths import BUILD_DIR
from mcu.quantization.precision import PrecisionChoice

FLOAT_MODEL = "model.pt2"  # the float model, opened only by `mcu debug` (mcu.tools.debug.check_trusted)
IR_FILE = "ir.json"      # the lowered IR and memory plan, typed JSON (mcu.codegen.serialize)
IR_DATA = "ir_data"      # its arrays, <index>.npy, read with allow_pickle=False
OLD_IR_FILE = "ir.pkl"   # mcu 0.1.0 before package format 1: a pickle, never opened


def mcu_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("mcu")
    except PackageNotFoundError:
        return "unknown"


def _stored_input(spec: dict, x) -> np.ndarray:
    """One input as the device takes it: quantized (int8 / int16), float32 as it is, or int32 indices."""
    shape, index = torch_shape(spec), spec["dtype"] == "int32"
    kind = "an integer" if index else "a float"
    try:
        x = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"{spec['name']} must be {kind} tensor of shape {list(shape)} (torch order), "
                         f"got a {type(x).__name__} that is not one ({exc})") from None
    if tuple(x.shape) != shape or x.is_floating_point() == index or x.dtype == torch.bool:
        raise InputError(f"{spec['name']} must be {kind} tensor of shape {list(shape)} (torch order), got "
                         f"{x.dtype} {list(x.shape)}")
    if index:
        return to_stored(_checked_indices(spec, x.numpy()), spec)
    if spec["dtype"] == "float32":  # quantize="none": the input as it is
        return to_stored(x.float().numpy(), spec)
    if not torch.isfinite(x).all():
        raise InputError(f"{spec['name']} contains NaN or Inf, which int8 cannot represent; clean the input")
    info = torch.iinfo(getattr(torch, spec["dtype"]))  # int8, or int16 (a16w8)
    q = torch.ops.quantized_decomposed.quantize_per_tensor(
        x.float(), spec["scale"], spec["zero_point"], info.min, info.max, getattr(torch, spec["dtype"])).numpy()
    return to_stored(q, spec)


def _checked_indices(spec: dict, x: np.ndarray) -> np.ndarray:
    """Index input x as int32, refused (InputError) where a value lies outside the table it indexes: the device
    would return MCU_ERR_INDEX."""
    lo, hi = spec.get("index_range") or (np.iinfo(np.int32).min, np.iinfo(np.int32).max + 1)
    bad = np.flatnonzero((x < lo) | (x >= hi))
    if bad.size:
        at = np.unravel_index(bad[0], x.shape)
        raise InputError(f"{spec['name']}[{', '.join(map(str, at))}] = {int(x.flat[bad[0]])} is outside "
                         f"[{lo}, {hi}), the rows of {spec.get('index_use', 'its table')}; pass indices in "
                         f"range (negative indices do not wrap on the device)")
    return x.astype(np.int32)


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
    trusted: bool = field(default=False, repr=False)  # written by this process: its model.pt2 is ours (mcu.tools.debug)
    precision: PrecisionChoice | None = field(default=None, repr=False)  # what target_sqnr picked

    @property
    def name(self) -> str:
        """The model's name: the prefix of its C symbols, macros and files (codegen/names.py)."""
        return self.manifest["name"]

    @property
    def c_files(self) -> list[str]:
        """Its generated C files: <name>.c and its weights file (the header is <name>.h)."""
        return list(model_files(self.name)[1:])

    @property
    def arena_bytes(self) -> int:
        return self.manifest["arena_bytes"]

    @property
    def build_dir(self) -> Path:
        return self.out_dir / BUILD_DIR / self.board

    # -- host-side conversions at the model boundary ----------------------------------------
    def quantize_inputs(self, inputs) -> list[np.ndarray]:
        """Float inputs in torch order -> int8 arrays (float32 for a float package) in the stored order (NHWC
        for 4-d); integer (index) inputs -> int32, checked against the tables they index."""
        if isinstance(inputs, (torch.Tensor, np.ndarray)):
            inputs = (inputs,)
        specs = self.manifest["inputs"]
        if len(inputs) != len(specs):
            raise InputError(f"the model takes {len(specs)} input(s), got {len(inputs)}")
        return [_stored_input(spec, x) for spec, x in zip(specs, inputs)]

    def raw_outputs(self, data: bytes) -> list[np.ndarray]:
        """A run's output bytes (every output, one after the other, as the model writes them) -> one integer (or
        float32) array per output, in torch order."""
        raw, pos = [], 0
        for spec in self.manifest["outputs"]:
            raw.append(to_torch(np.frombuffer(data[pos:pos + spec["bytes"]], dtype=DTYPES[spec["dtype"]]).copy(),
                                spec))
            pos += spec["bytes"]
        return raw

    def dequantize_outputs(self, raw: list[np.ndarray]) -> list[np.ndarray]:
        return [r.astype(np.float32) if s["scale"] is None else
                ((r.astype(np.float32) - s["zero_point"]) * np.float32(s["scale"])).astype(np.float32)
                for r, s in zip(raw, self.manifest["outputs"])]

    def reference(self, inputs) -> list[np.ndarray]:
        """Raw outputs (torch order) of the numpy reference for float inputs: integer, or float32 for a float
        package (quantize="none"). A model with state runs from its initial state (mcu.session carries it)."""
        return self.reference_sequence([inputs])[0]

    def reference_sequence(self, sequence) -> list[list[np.ndarray]]:
        """reference() of each input tuple of `sequence` in order, a model's state carried from call to call."""
        region, out = initial_region(self.graph), []
        for inputs in sequence:
            raw, region = self.reference_call(inputs, region)
            out.append(raw)
        return out

    def reference_call(self, inputs, region: bytes) -> tuple[list[np.ndarray], bytes]:
        """One call of the numpy reference from the state region `region`: (raw outputs in torch order, the region
        after the call)."""
        raw, region = reference_step(self.graph, self.quantize_inputs(inputs), region)
        return [to_torch(r, s) for r, s in zip(raw, self.manifest["outputs"])], region

    @property
    def state_bytes(self) -> int:
        """The bytes of the state region (<PREFIX>_STATE_BYTES); 0 for a model without state."""
        return self.manifest.get("state_bytes", 0)

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
        from mcu.build.firmware import build_firmware
        return build_firmware(self.board, self.out_dir, self.build_dir)


@dataclass
class RunResult:
    outputs: list[np.ndarray]       # dequantized float32, torch order
    raw_outputs: list[np.ndarray]   # integer outputs, torch order
    instructions: int               # one inference, from SysTick under -icount shift=0
    stdout: str = ""
    stack_bytes: int = 0            # peak stack of the run, harness included (see mcu.build.stack for the bound)
    state: bytes = b""              # a model with state: the state region after the run


def torch_shape(spec) -> tuple[int, ...]:
    s = tuple(spec["shape"])
    return (s[0], s[3], s[1], s[2]) if spec["layout"] == "NHWC" else s


def to_stored(x: np.ndarray, spec) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if spec["layout"] == "NHWC" else x


def to_torch(x: np.ndarray, spec) -> np.ndarray:
    x = x.reshape(spec["shape"])
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if spec["layout"] == "NHWC" else x


def sha256(data: bytes) -> str:
    """The hex sha256 of data."""
    return hashlib.sha256(data).hexdigest()


def _manifest_digest(manifest: dict) -> str:
    """sha256 of the manifest's canonical JSON without the digest itself."""
    rest = dict(manifest)
    if isinstance(rest.get("package"), dict):
        rest["package"] = {k: v for k, v in rest["package"].items() if k != "manifest_sha256"}
    return sha256(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode())


def seal_manifest(manifest: dict, files: dict[str, bytes], n_arrays: int) -> dict:
    """The manifest with its "package" entry: format version, writer, and the sha256 of itself and of the IR files,
    so a package changed after mcu wrote it is refused with one line instead of being half-read."""
    manifest = {k: v for k, v in manifest.items() if k != "package"}
    manifest["package"] = {
        "format": serialize.VERSION, "written_by": f"mcu {mcu_version()}", "arrays": n_arrays,
        "sha256": {name: sha256(files[name]) for name in [IR_FILE, FLOAT_MODEL] + [f"{IR_DATA}/{i}.npy" for i in
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
    if expected is None or sha256(data) != expected:
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
    if not is_valid_name(manifest.get("name")):
        bad(f"model name {str(manifest.get('name'))[:40]!r} is not a valid model name ({NAME_RULE})")
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
            if s.get("scale") is None:  # float32, or int32 indices (token ids in, argmax out)
                if s.get("zero_point") is not None or s["dtype"] not in ("float32", "int32"):
                    bad(f"{key} {s['name']}: no scale for an integer tensor")
                limit = s.get("index_range")
                if limit is not None and not (isinstance(limit, list) and len(limit) == 2 and
                                              all(type(v) is int for v in limit) and 0 <= limit[0] < limit[1]):
                    bad(f"{key} {s['name']}: 'index_range' is not [low, high) integers")
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

    for key, names in (("inputs", graph.user_inputs), ("outputs", graph.user_outputs)):
        if len(manifest[key]) != len(names):
            bad(f"{len(manifest[key])} {key}")
        for s, t in zip(manifest[key], names):
            t = graph.tensors[t]
            if list(t.shape) != s["shape"] or t.dtype != s["dtype"]:
                bad(f"{key} {s['name']} is {s['dtype']} {s['shape']}")
    if manifest["arena_bytes"] != memory.arena_bytes:
        bad(f"the arena is {manifest['arena_bytes']} B")
    try:
        emitted = emit(graph, memory, name=manifest["name"], board=manifest["board"])[1].as_dict()
    except Exception as exc:  # a forged IR that passed the field checks: no bug of mcu's if it does not emit
        raise PackageError(f"{where.parent}: its IR does not make a model ({type(exc).__name__}: {str(exc)[:80]}); "
                           f"compile the model again with `mcu compile`") from None
    # "package" (the seal) and "flash_budget" (compile's option, what the widened weights were chosen within) are
    # the front end's, not emit's
    differ = sorted(k for k in set(emitted) | set(manifest) - {"package", "flash_budget"}
                    if emitted.get(k) != manifest.get(k))
    if differ:
        bad(f"{', '.join(differ)[:80]} differ from what this mcu writes for the IR")
