"""No code path from a package (or a .pt2, or user data) to pickle, unrestricted torch.load or eval; packages carry
no user folders, so the same model compiled from two folders gives the same bytes."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["mcu", "codegen", "memory_planner", "qemu"]

# file -> why each match there is not a path from untrusted bytes to code (matched by the line's text)
ALLOWED = {
    # load_pt2 wraps torch.export.load: every torch.load inside it is forced to weights_only=True, pickle.loads and
    # torchbind's loader are replaced by refusals, sympify's strings are checked; the real torch.load it calls is
    # that wrapper's delegate
    ("mcu/importer/export.py", "return torch.export.load(str(path) if data is None else io.BytesIO(data))"),
    ("mcu/importer/export.py", "return real_load(f, *args, **kw)"),
}
PATTERNS = {
    "pickle.load": re.compile(r"\bpickle\.loads?\s*\("),
    "unpickler": re.compile(r"\bUnpickler\s*\("),
    "torch.load without weights_only=True": re.compile(r"\btorch\.load\s*\((?![^\n]*weights_only=True)"),
    "torch.export.load": re.compile(r"\btorch\.export\.load\s*\("),
    "eval/exec": re.compile(r"(?<![\w.])(eval|exec)\s*\("),
    "np.load with allow_pickle=True": re.compile(r"allow_pickle\s*=\s*True"),
    "real_load": re.compile(r"\breal_load\s*\("),
}


def _code_lines(path: Path):
    """(line number, text) of the lines that are code: comments, docstrings and string literals removed."""
    import io
    import tokenize
    src = path.read_text()
    keep = {i: [] for i in range(1, src.count("\n") + 2)}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING) or tok.type >= tokenize.N_TOKENS:
            continue
        if sys.version_info >= (3, 12) and tok.type in (tokenize.FSTRING_START, tokenize.FSTRING_MIDDLE,
                                                        tokenize.FSTRING_END):
            continue
        keep[tok.start[0]].append(tok.string)
    lines = src.splitlines()
    for i, toks in keep.items():
        if toks and i <= len(lines):
            yield i, lines[i - 1].strip(), " ".join(toks)


def test_no_unsafe_loader_in_the_source():
    found = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")) + sorted((ROOT / folder).rglob("*.scons")):
            rel = path.relative_to(ROOT).as_posix()
            for n, line, code in _code_lines(path) if path.suffix == ".py" else \
                    ((i + 1, ln.strip(), ln) for i, ln in enumerate(path.read_text().splitlines())):
                for what, pattern in PATTERNS.items():
                    if pattern.search(line) and pattern.search(code.replace(" ( ", "(").replace(" (", "(")
                                                               .replace(" . ", ".")) and (rel, line) not in ALLOWED:
                        found.append(f"{rel}:{n}: {what}: {line}")
    assert found == []


def test_the_scan_finds_what_it_looks_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import pickle, torch\nx = pickle.loads(b'')\ny = torch.load(f)\nz = torch.load(f, weights_only=False)\n"
                   "w = eval('1')\n# pickle.loads(b'') in a comment\ns = 'torch.load(f)'\nok = torch.load(f, weights_only=True)\n")
    hits = sorted({n for n, line, code in _code_lines(bad) for p in PATTERNS.values()
                   if p.search(line) and p.search(code.replace(" ( ", "(").replace(" (", "(").replace(" . ", "."))})
    assert hits == [2, 3, 4, 5]


TINY = '''
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.conv(x)), 1))


def build():
    torch.manual_seed(0)
    return Tiny().eval(), (torch.randn(1, 2, 4, 4),)
'''


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_same_model_from_two_folders_gives_identical_packages(tmp_path):
    outs = []
    for where in (tmp_path / "alice" / "proj", tmp_path / "bob" / "work" / "firmware"):
        where.mkdir(parents=True)
        (where / "tinymodel.py").write_text(TINY)
        np.save(where / "calib.npy", np.random.default_rng(0).standard_normal((4, 2, 4, 4)).astype(np.float32))
        # --no-run: the package as written (a build's cache, .mcu-build, holds absolute paths like any build's)
        proc = subprocess.run([sys.executable, "-m", "mcu.cli", "compile", "tinymodel:build", "--calib", "calib.npy",
                               "-o", "out", "--no-run"], cwd=where, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(_files(where / "out"))
    a, b = outs
    assert sorted(a) == sorted(b)
    assert [n for n in a if a[n] != b[n]] == []
    assert b"tinymodel.py:" in a["model.c"] and str(tmp_path).encode() not in a["model.c"]
    leaks = [n for n, data in a.items() if str(tmp_path).encode() in data]
    assert leaks == []
