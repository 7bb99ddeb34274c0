"""Mutation test of the arena verifier (issue 14, "the verifier must have teeth").

Each mutant changes ONE comparison or one +/- in verify_plan or Buffer.conflicts (memory_planner/planner.py):
< <-> <=, > <-> >=, == <-> !=, and <-> or, and a +/- b -> a +/- b +/- 1, as the issue's example (two buffers sharing one
byte) does. For each mutant a fresh Python process loads the mutated source over the real module
(exec into mcu.memory_planner.planner's namespace: no file is written), then runs the verifier's tests; a
mutant is killed when a test fails. Prints one line per mutant and `N mutants, K killed, S survived`; exit
status 1 when any survives.

    python scripts/mutate_verifiers.py [--list] [--tests tests/test_verifier_edges.py tests/test_planner.py]
"""
from __future__ import annotations

import argparse
import ast
import copy
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "memory_planner" / "planner.py"
TARGETS = {"verify_plan", "conflicts"}  # functions (methods too) whose comparisons are mutated
SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
TESTS = ["tests/test_verifier_edges.py", "tests/test_planner.py"]

RUNNER = """
import sys, pytest
import mcu.memory_planner.planner as planner
exec(compile(sys.stdin.read(), planner.__file__, "exec"), planner.__dict__)
import mcu.memory_planner as package
for name in dir(package):
    if hasattr(planner, name) and not name.startswith("_"):
        setattr(package, name, getattr(planner, name))
sys.exit(pytest.main(["-q", "-x", "-p", "no:cacheprovider", *sys.argv[1:]]))
"""


def _sites(tree: ast.Module):
    """(function name, node) of every comparison operator and +/- inside the target functions."""
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name in TARGETS:
            for node in ast.walk(fn):
                if isinstance(node, ast.Compare):
                    for k, op in enumerate(node.ops):
                        if type(op) in SWAP:
                            yield fn.name, node, ("compare", k)
                elif isinstance(node, ast.BoolOp):
                    yield fn.name, node, ("boolop", 0)
                elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                    yield fn.name, node, ("plus1", 0)
                    yield fn.name, node, ("minus1", 0)


def mutants(source: str):
    """(description, mutated source) for every mutation site."""
    tree = ast.parse(source)
    for index, (fn, node, (kind, k)) in enumerate(list(_sites(tree))):
        t = copy.deepcopy(tree)
        target = [n for _, n, _ in _sites(t)][index]
        before = ast.unparse(target)
        if kind == "compare":
            target.ops[k] = SWAP[type(target.ops[k])]()
        elif kind == "boolop":
            target.op = ast.And() if isinstance(target.op, ast.Or) else ast.Or()
        else:
            original = copy.deepcopy(target)
            target.left, target.right = original, ast.Constant(1)
            target.op = ast.Add() if kind == "plus1" else ast.Sub()
        yield f"{fn}:{node.lineno}: {before} -> {ast.unparse(target)}", ast.unparse(ast.fix_missing_locations(t))


def killed(source: str, tests: list[str]) -> bool:
    run = subprocess.run([sys.executable, "-c", RUNNER, *tests], input=source, text=True, cwd=ROOT,
                         capture_output=True, timeout=600)
    return run.returncode != 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--tests", nargs="+", default=TESTS)
    args = ap.parse_args(argv)
    source = SOURCE.read_text()
    if killed(source, args.tests):
        print("the unmutated verifier fails its own tests: fix that first", file=sys.stderr)
        return 2
    start, rows = time.time(), []
    for desc, mutated in mutants(source):
        if args.list:
            print(desc)
            continue
        rows.append((desc, killed(mutated, args.tests)))
        print(f"{'killed  ' if rows[-1][1] else 'SURVIVED'} {desc}", flush=True)
    if args.list:
        return 0
    survived = sum(1 for _, k in rows if not k)
    print(f"{len(rows)} mutants, {len(rows) - survived} killed, {survived} survived ({time.time() - start:.0f} s)")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
