"""The front end's shape, kept: imports among mcu/'s modules form no circle and at most 5 levels; the compiler
(mcu/importer, mcu/quantization, mcu/build, mcu/api.py, mcu/package.py, codegen/) never imports a tool or the CLI,
and codegen/ nothing of the front end; no file over 400 lines and no function over 60 in mcu/ and codegen/; the
README a front page of at most 200 lines."""
from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LEVELS, MAX_FILE, MAX_FUNCTION = 5, 400, 60


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in (ROOT / "mcu").rglob("*.py")}


def imported(path: Path) -> set[str]:
    """The modules `path` imports (anywhere in it, functions included), by absolute name."""
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            out |= {base, *(f"{base}.{a.name}" for a in node.names)}
    return out


GRAPH = {m: {d for d in imported(p) if d in MODULES and d not in (m, "mcu")} for m, p in MODULES.items()}


@cache
def level(module: str, path: tuple[str, ...] = ()) -> int:
    """1 + the deepest level among the modules `module` imports; a circle raises."""
    if module in path:
        raise AssertionError("import circle: " + " -> ".join(path[path.index(module):] + (module,)))
    return 1 + max((level(d, path + (module,)) for d in GRAPH[module]), default=0)


def test_no_import_circle_and_at_most_5_levels():
    deepest = max(MODULES, key=level)
    assert level(deepest) <= MAX_LEVELS, f"{deepest} is {level(deepest)} import levels deep (at most {MAX_LEVELS})"


COMPILER = ("mcu.importer", "mcu.quantization", "mcu.build", "mcu.api", "mcu.package", "mcu.writer", "mcu.errors")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(COMPILER)))
def test_the_compiler_imports_no_tool_and_no_cli(module):
    above = sorted(d for d in imported(MODULES[module]) if d.startswith(("mcu.tools", "mcu.cli")))
    assert not above, f"{module} imports {above}: tools and the CLI sit above the compiler"


def test_codegen_imports_nothing_of_the_front_end():
    front = ("mcu.importer", "mcu.quantization", "mcu.build", "mcu.tools", "mcu.cli", "mcu.api", "mcu.package")
    for path in (ROOT / "codegen").rglob("*.py"):
        bad = [d for d in imported(path) if d.startswith(front)]
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def _sources():
    return sorted(p for d in ("mcu", "codegen") for p in (ROOT / d).rglob("*.py"))


def test_no_file_over_400_lines_and_no_function_over_60():
    long = []
    for path in _sources():
        text = path.read_text()
        if text.count("\n") > MAX_FILE:
            long.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION:
                    long.append(f"{path.relative_to(ROOT)}:{node.name}: {n} lines")
    assert long == []


def test_the_checks_catch_a_circle():
    GRAPH["mcu.errors"].add("mcu.api")
    level.cache_clear()
    try:
        with pytest.raises(AssertionError, match="import circle"):
            level("mcu.api")
    finally:
        GRAPH["mcu.errors"].discard("mcu.api")
        level.cache_clear()


def test_the_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 200, f"README.md has {lines} lines; the guide, benchmarks and architecture live in docs/"
