"""Mutants of a real package for the loader fuzz (tests/test_package_fuzz.py, scripts/fuzz_package.py).

- `make_package(dir)` compiles a tiny int8 model (it keeps model.pt2) and returns the package folder.
- `mutants(pkg, rng)` yields (label, apply) pairs: apply(folder) damages a copy of the package, one file at a time:
  truncation, random bytes, bit flips, JSON edits (missing keys, wrong types, huge numbers, `../` and absolute
  names), .npy and .pt2 files replaced by pickle payloads that would create MARKER, an old package's ir.pkl;
  "resealed" JSON mutants recompute the manifest's checksums, as a deliberate forger would, so the field checks
  behind the checksums are fuzzed too.
- `check(folder, root, argv_fn)` runs the commands and returns a description of the first broken rule, or None.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import random
import shutil
import zipfile
from pathlib import Path

import numpy as np

MARKER_NAME = "MARKER"
COMMANDS = [["run"], ["size"], ["plan"], ["report", "--no-profile"], ["debug", "--input", "{x}"],
            ["debug", "--trust-model", "--input", "{x}"]]


def make_package(folder: Path) -> Path:
    import torch

    import mcu

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3)).eval()
    calib = [(torch.randn(1, 4),) for _ in range(4)]
    mcu.compile(model, calib[0], calibration=calib, out_dir=folder / "pkg")
    np.save(folder / "x.npy", np.ones((1, 4), np.float32))
    return folder / "pkg"


class _Boom:
    """Unpickling this creates the marker file: the proof that a loader ran code from the package."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def payload(marker: Path) -> bytes:
    return pickle.dumps(_Boom(marker))


def npy_payload(marker: Path) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array([_Boom(marker)], dtype=object), allow_pickle=True)
    return buf.getvalue()


def pt2_payload(original: bytes, marker: Path, member: str) -> bytes:
    """The .pt2 with the members whose name contains `member` replaced by a pickle payload."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(original)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, payload(marker) if member in info.filename else zin.read(info.filename))
    return out.getvalue()


def reseal(folder: Path) -> None:
    """Recompute the manifest's checksums after an edit (what someone forging a package would do)."""
    from mcu.package import IR_DATA, IR_FILE, _manifest_digest
    m = json.loads((folder / "manifest.json").read_text())
    info = m.get("package") if isinstance(m, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("sha256"), dict):
        return
    for name in list(info["sha256"]):
        p = folder / name
        if p.is_file():
            info["sha256"][name] = hashlib.sha256(p.read_bytes()).hexdigest()
    n = len([k for k in info["sha256"] if k.startswith(IR_DATA + "/")])
    info["arrays"] = n
    info["manifest_sha256"] = _manifest_digest(m)
    assert IR_FILE in info["sha256"]
    (folder / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")


BAD_NAMES = ["../../escape", "/tmp/abs", "..", "conv/../../../etc/passwd", "a/b/c", "", "x" * 5000, "con\x00v",
             "../model", "int8/mcu_conv2d_s8/../../x"]
WRONG = [None, True, 0, -1, 1.5, 10 ** 30, -(2 ** 63), 2 ** 64, "s", [], {}, [1, "a"], {"a": 1}, float("nan")]


def _paths(doc, prefix=()):
    """Every (path) to a value inside a JSON document."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:6]):
            yield from _paths(v, prefix + (i,))


def _edit_json(doc, rng: random.Random, string_paths):
    paths = [p for p in _paths(doc) if p]
    path = rng.choice(paths)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    kind = rng.choice(["delete", "wrong", "huge", "name", "name", "wrong"])
    if kind == "delete" and isinstance(parent, dict):
        del parent[key]
        return f"del {path}"
    if kind == "name" and string_paths:
        path = rng.choice(string_paths)
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        parent[path[-1]] = rng.choice(BAD_NAMES)
        return f"name {path}={parent[path[-1]]!r}"[:120]
    value = rng.choice([10 ** 30, 2 ** 63, -(2 ** 31) - 1, 1e308, -1]) if kind == "huge" else rng.choice(WRONG)
    if parent[key] == value and type(parent[key]) is type(value):
        value = "changed"
    parent[key] = value
    return f"{kind} {path}={value!r}"[:120]


def mutants(pkg: Path, rng: random.Random, marker: Path):
    """Endless (label, apply) pairs over the package's files."""
    files = sorted(p.relative_to(pkg).as_posix() for p in pkg.rglob("*")
                   if p.is_file() and ".mcu-build" not in p.parts and not p.name.startswith("mcu_runtime"))
    targets = ["manifest.json", "ir.json", "model.pt2"] + [f for f in files if f.startswith("ir_data/")]
    manifest = json.loads((pkg / "manifest.json").read_text())
    while True:
        name = rng.choice(targets)
        data = (pkg / name).read_bytes()
        kind = rng.choice(["truncate", "random", "flip", "json", "json", "resealed", "payload"])
        if kind == "truncate":
            n = rng.randrange(len(data))
            yield f"{name}: truncate to {n}", lambda d, name=name, n=n, data=data: (d / name).write_bytes(data[:n])
        elif kind == "random":
            junk = rng.randbytes(rng.choice([0, 1, 16, len(data)]))
            yield f"{name}: random bytes", lambda d, name=name, junk=junk: (d / name).write_bytes(junk)
        elif kind == "flip":
            b = bytearray(data)
            for _ in range(rng.choice([1, 1, 4, 32])):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
            if bytes(b) == data:
                b[0] ^= 1
            yield f"{name}: bit flips", lambda d, name=name, b=bytes(b): (d / name).write_bytes(b)
        elif kind in ("json", "resealed") and name.endswith(".json"):
            doc = json.loads(data)
            if name == "manifest.json" and kind == "resealed":
                string_paths = [("board",), ("name",)] + [("kernels", i) for i in range(len(manifest["kernels"]))] + \
                    [(k, 0, "name") for k in ("inputs", "outputs")]
                label = _edit_json(doc, rng, string_paths)
                if label.startswith("del") or "package" in label:  # keep the checksum entry the forger needs
                    continue
            elif name == "ir.json" and kind == "resealed":
                # the typed schema around the attrs: top-level keys, tensor and node fields, the memory plan
                doc_paths = [p for p in _paths(doc) if p and "attrs" not in p and len(p) <= 4]
                path = rng.choice(doc_paths)
                parent = doc
                for k in path[:-1]:
                    parent = parent[k]
                value = rng.choice(WRONG + ["../../x", "/abs"])
                if isinstance(parent[path[-1]], type(value)) or parent[path[-1]] == value:
                    continue
                parent[path[-1]] = value
                label = f"{path}={value!r}"[:120]
            else:
                label = _edit_json(doc, rng, [])
            text = json.dumps(doc)
            if text == json.dumps(json.loads(data)):
                continue

            def apply(d, name=name, text=text, resealed=kind == "resealed"):
                (d / name).write_text(text)
                if resealed:
                    reseal(d)
            yield f"{name}: {kind} {label}", apply
        elif kind == "payload":
            if name.endswith(".npy"):
                blob = npy_payload(marker)
            elif name == "model.pt2":
                blob = pt2_payload(data, marker, rng.choice(["sample_inputs", "weights/weight_0", "models/"]))
            else:
                blob = payload(marker)

            def apply(d, name=name, blob=blob):
                (d / name).write_bytes(blob)
                (d / "ir.pkl").write_bytes(payload(marker))  # an old package's pickle beside it: never opened
                if name.endswith(".npy") or name == "ir.json":
                    reseal(d)  # a forged package: checksums that match the payload
            yield f"{name}: pickle payload", apply


def tree(root: Path, skip: Path) -> dict[str, bytes]:
    """Every file under root (outside skip) with its content hash: what a command may not change."""
    out = {}
    for p in sorted(root.rglob("*")):
        if skip in p.parents or p == skip:
            continue
        out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).digest() if p.is_file() else b"dir"
    return out


def check_outcome(rc: int, stderr: str) -> str | None:
    """None if the command failed as it must: exit 1, exactly one `mcu: error:` line, no traceback."""
    lines = [ln for ln in stderr.splitlines() if ln.startswith("mcu: ")]
    if rc != 1:
        return f"exit {rc}: {stderr.strip()[-300:]}"
    if len(lines) != 1 or not lines[0].startswith("mcu: error: "):
        return f"not one error line: {stderr.strip()[-300:]}"
    if "Traceback" in stderr:
        return "traceback printed"
    return None


def harmless(folder: Path) -> bool:
    """Does a (forged) package load and give, for its IR, exactly the C and manifest it holds? Then the forgery
    changed nothing the commands use (e.g. the qparams of a constant no kernel reads) and may run."""
    import mcu
    from mcu.codegen.emit import emit
    try:
        pkg = mcu.load(folder)
    except mcu.McuError:
        return False
    texts, _ = emit(pkg.graph, pkg.memory, board=pkg.board)
    return all((folder / n).read_text() == t for n, t in texts.items())


def fresh_copy(pkg: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(pkg, dest, ignore=shutil.ignore_patterns(".mcu-build"))
    return dest
