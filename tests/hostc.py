"""Host-compiler harness: build runtime C into a cached shared library and call it with the twins' arguments.

- build(sources) compiles with the host gcc and the project's warning flags (-Werror) into a shared library
  under a content-hash-keyed directory in /tmp (built once across pytest-xdist workers: a file lock) and returns
  a ctypes.CDLL.
- The ctypes mirrors of the C structs, the status codes and the kernel prototypes are parsed from the public
  headers, so they cannot drift from the contract; struct(name, d) fills one from the dict a twin takes
  (mcu_dims_t fields are 4-tuples (n, h, w, c), arrays are sequences, pointers are numpy arrays or None).
- call(lib, kernel, *twin_args, out=...) calls a kernel with exactly the arguments of its numpy twin.
- MCU_HOSTC_EXTRA_CFLAGS adds flags to every build, e.g. "-fsanitize=undefined -fsanitize-undefined-trap-on-error".
"""
from __future__ import annotations

import ctypes
import fcntl
import functools
import hashlib
import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "runtime_c" / "include"
KERNELS = ROOT / "runtime_c" / "kernels"
HEADERS = [INCLUDE / "mcu" / "mcu_types.h", INCLUDE / "mcu" / "mcu_kernels.h"]
CC = os.environ.get("CC", "gcc")
WARNINGS = ("-Wall", "-Wextra", "-Wshadow", "-Wdouble-promotion", "-Wcast-align", "-Werror")
CFLAGS = ("-std=c99", "-O2", "-fPIC", "-shared", *WARNINGS)


class CompileError(RuntimeError):
    pass


def kernel_sources() -> list[Path]:
    """Every kernel .c file (runtime_c/kernels/<family>/*.c)."""
    return sorted(KERNELS.glob("*/*.c"))


@functools.cache
def _compiler_id() -> str:
    return subprocess.run([CC, "--version"], capture_output=True, text=True, check=True).stdout


def build(sources, extra_flags=()) -> ctypes.CDLL:
    """Compile `sources` (+ runtime_c/include) into one shared library, reusing a cached build if inputs match."""
    sources = [Path(s).resolve() for s in sources]
    flags = [*CFLAGS, *shlex.split(os.environ.get("MCU_HOSTC_EXTRA_CFLAGS", "")), *extra_flags]
    key = hashlib.sha256(_compiler_id().encode())
    for part in flags:
        key.update(part.encode() + b"\0")
    for path in sources + sorted(INCLUDE.rglob("*.h")):
        key.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    out_dir = Path(tempfile.gettempdir()) / f"mcu-hostc-{os.getuid()}" / key.hexdigest()[:20]
    lib = out_dir / "lib.so"
    if not lib.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        with open(out_dir / "lock", "w") as lock:  # one builder; a concurrent worker waits for its library
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not lib.exists():
                tmp = out_dir / f"lib.so.{os.getpid()}.tmp"
                cmd = [CC, *flags, f"-I{INCLUDE}", *map(str, sources), "-o", str(tmp)]
                res = subprocess.run(cmd, capture_output=True, text=True)
                if res.returncode != 0:
                    raise CompileError(f"{shlex.join(cmd)}\n{res.stderr}")
                os.replace(tmp, lib)  # atomic: a reader never sees part of a file
    return bind(ctypes.CDLL(str(lib)))


def build_source(code: str, name: str = "wrapper") -> ctypes.CDLL:
    """Compile a C snippet (e.g. a test wrapper around a static inline function) into a cached library."""
    src_dir = Path(tempfile.gettempdir()) / f"mcu-hostc-{os.getuid()}" / "src"
    src_dir.mkdir(parents=True, exist_ok=True)
    src = src_dir / f"{name}_{hashlib.sha256(code.encode()).hexdigest()[:16]}.c"
    if not src.exists():
        tmp = src.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(code)
        os.replace(tmp, src)
    return build([src])


# ---- The C contract, parsed from the public headers -------------------------------------------------------------

_SCALARS = {"int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8, "int16_t": ctypes.c_int16,
            "uint16_t": ctypes.c_uint16, "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32,
            "int64_t": ctypes.c_int64, "float": ctypes.c_float}
_DTYPES = {"int8_t": np.int8, "uint8_t": np.uint8, "int16_t": np.int16, "uint16_t": np.uint16,
           "int32_t": np.int32, "uint32_t": np.uint32, "int64_t": np.int64, "float": np.float32}


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def _parse_headers():
    text = "\n".join(_strip_comments(h.read_text()) for h in HEADERS)
    status = {name: int(value) for name, value in re.findall(r"\b(MCU_[A-Z_]+)\s*=\s*(\d+)", text)}
    structs: dict[str, type[ctypes.Structure]] = {}
    for body, name in re.findall(r"typedef\s+struct\s*\{(.*?)\}\s*(\w+)\s*;", text, flags=re.S):
        fields = []
        for decl in filter(None, (d.strip() for d in body.split(";"))):
            m = re.fullmatch(r"(?:const\s+)?(\w+)\s+(.+)", decl, flags=re.S)
            base = _SCALARS.get(m.group(1)) or structs[m.group(1)]
            for item in m.group(2).split(","):
                f = re.fullmatch(r"\s*(\*?)\s*(\w+)\s*(?:\[(\d+)\])?\s*", item)
                ctype = ctypes.POINTER(base) if f.group(1) else base
                if f.group(3):
                    ctype = ctype * int(f.group(3))
                fields.append((f.group(2), ctype))
        structs[name] = type(name, (ctypes.Structure,), {"_fields_": fields})
    prototypes = {}
    for fname, args in re.findall(r"mcu_status_t\s+(mcu_\w+)\s*\(([^)]*)\)\s*;", text):
        # `const T *const name[]` (an array of input pointers) is recorded as type "T[]"
        prototypes[fname] = [(m.group(1) + ("[]" if m.group(3) else ""), m.group(2)) for m in (
            re.fullmatch(r"\s*(?:const\s+)?(\w+)\s*\*\s*(?:const\s*)?(\w+)\s*(\[\])?\s*", a)
            for a in args.split(","))]
    return status, structs, prototypes


STATUS, STRUCTS, PROTOTYPES = _parse_headers()
MCU_OK, MCU_ERR_ARG, MCU_ERR_SHAPE = STATUS["MCU_OK"], STATUS["MCU_ERR_ARG"], STATUS["MCU_ERR_SHAPE"]


# Fields the generated code leaves to its designated initializers (0) unless a pass sets them (mcu_kernels.h).
DEFAULT_FIELDS = {"output_pixel_stride": 0}


def struct(name: str, values: dict) -> ctypes.Structure:
    """The C struct `name` filled from a twin's dict; every field must be given (but DEFAULT_FIELDS), no unknown
    keys allowed.
    Arrays behind pointer fields are kept alive on the returned object (attribute _keep)."""
    cls = STRUCTS[name]
    names = [f for f, _ in cls._fields_]
    values = {**{f: v for f, v in DEFAULT_FIELDS.items() if f in names}, **values}
    if set(values) != set(names):
        raise KeyError(f"{name}: missing {sorted(set(names) - set(values))}, unknown {sorted(set(values) - set(names))}")
    obj, keep = cls(), []
    for field, ctype in cls._fields_:
        v = values[field]
        if isinstance(ctype, type) and issubclass(ctype, ctypes.Structure):
            v = ctype(*v) if not isinstance(v, dict) else struct(ctype.__name__, v)
        elif isinstance(ctype, type) and issubclass(ctype, ctypes.Array):
            v = ctype(*v)
        elif isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer):
            if v is None:
                v = ctype()
            else:
                arr = _array(v, ctype._type_)
                keep.append(arr)
                v = arr.ctypes.data_as(ctype)
        else:
            v = float(v) if ctype is ctypes.c_float else int(v)
        setattr(obj, field, v)
    obj._keep = keep
    return obj


def _array(value, ctype) -> np.ndarray:
    want = next(np.dtype(d) for t, d in _DTYPES.items() if _SCALARS[t] is ctype)
    arr = np.ascontiguousarray(value)
    if arr.dtype != want:
        raise TypeError(f"expected a {want} array, got {arr.dtype}")
    return arr


def bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    """Declare every header prototype the library defines: all arguments are pointers, the result a status."""
    for fname, args in PROTOTYPES.items():
        if hasattr(lib, fname):
            fn = getattr(lib, fname)
            fn.argtypes = [ctypes.c_void_p] * len(args)
            fn.restype = ctypes.c_int
    return lib


_END = object()


def call(lib: ctypes.CDLL, kernel: str, *twin_args, out: np.ndarray | None) -> int:
    """Call C `kernel` with the arguments its twin takes (a per-channel quant struct is the twin's
    (multiplier, shift) pair; (None, None) passes NULL; an array of input pointers takes all remaining
    twin arguments); the result is written into `out`; returns the status."""
    args, it, keep = [], iter(twin_args), []
    for ctype_name, _ in PROTOTYPES[kernel][:-1]:
        if ctype_name.endswith("[]"):
            arrays = [None if v is None else _array(v, _SCALARS[ctype_name[:-2]]) for v in it]
            keep.append(arrays)
            ptrs = (ctypes.c_void_p * len(arrays))(*[None if a is None else a.ctypes.data for a in arrays])
            keep.append(ptrs)
            args.append(ctypes.cast(ptrs, ctypes.c_void_p))
            continue
        value = next(it)
        if ctype_name == "mcu_per_channel_quant_t":
            shift = next(it)
            value = None if value is None and shift is None else {"multiplier": value, "shift": shift}
        if value is None:
            args.append(None)
        elif ctype_name in STRUCTS:
            s = struct(ctype_name, value)
            keep.append(s)
            args.append(ctypes.byref(s))
        else:
            arr = _array(value, _SCALARS[ctype_name])
            keep.append(arr)
            args.append(arr.ctypes.data)
    if next(it, _END) is not _END:
        raise TypeError(f"{kernel}: too many arguments")
    out_type = PROTOTYPES[kernel][-1][0]
    if out is not None and (out.dtype != _DTYPES[out_type] or not out.flags.c_contiguous):
        raise TypeError(f"{kernel}: out must be a C-contiguous {_DTYPES[out_type].__name__} array")
    args.append(None if out is None else out.ctypes.data)
    return getattr(lib, kernel)(*args)
