"""Mutation test of the arena verifier (issue 14, "the verifier must have teeth").

Each mutant changes ONE comparison or one +/- in a verifier: verify_plan and Buffer.conflicts
(memory_planner/planner.py, buffer by buffer) or verify_tensor_plan and its residual rule _apart_or_raster
(codegen/plan_verifier.py, tensor by tensor: aliases, in-place kernels, concat views, raster gaps):
< <-> <=, > <-> >=, == <-> !=, and <-> or, and a +/- b -> a +/- b +/- 1, as the issue's example (two buffers sharing one
byte) does. For each mutant a fresh Python process loads the mutated source over the real module
(exec into the module's namespace: no file is written), then runs that verifier's tests; a mutant is killed
when a test fails or the tests hang (300 s). Prints one line per mutant and `N mutants, K killed, S survived`;
exit status 1 when any survives. A mutant no placement can tell apart is listed in EQUIVALENT with the reason.

    python scripts/mutate_verifiers.py [--list] [--only planner|memory] [--tests tests/...]
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
SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
# name -> (source, module, functions (methods too) whose comparisons are mutated, the tests that must catch them)
VERIFIERS = {
    "planner": (ROOT / "memory_planner" / "planner.py", "mcu.memory_planner.planner", {"verify_plan", "conflicts"},
                ["tests/test_verifier_edges.py", "tests/test_planner.py"]),
    "memory": (ROOT / "codegen" / "plan_verifier.py", "mcu.codegen.plan_verifier",
               {"verify_tensor_plan", "live_spans", "concat_view_pairs", "same_bytes_pairs", "exact_pairs",
                "raster_pairs", "components", "check_overlaps", "_in_arena", "_apart_or_raster"},
               ["tests/test_tensor_verifier_edges.py", "tests/test_memory.py", "tests/test_inplace_rules.py",
                "tests/test_concat_inplace.py"]),
}

# Mutants no placement can tell from the original (reported as such, not as survivors): function -> mutated
# text -> why.
EQUIVALENT = {
    "components": {
        "a in comp or b in comp": "an allowed pair shares one location, so both are in the arena or neither is",
    },
    "same_bytes_pairs": {
        "t is None and out is None": "an absent input has no location: every rule after it is false for it",
    },
    "check_overlaps": {
        "i + 1 - 1": "each tensor is then also compared with itself, which is always its own component",
    },
}
# argv: module, pytest arguments; stdin: the mutated source. The package re-exports the module's names.
RUNNER = """
import importlib, sys, pytest
module = importlib.import_module(sys.argv[1])
exec(compile(sys.stdin.read(), module.__file__, "exec"), module.__dict__)
package = importlib.import_module(sys.argv[1].rpartition(".")[0])
for name in dir(package):
    if hasattr(module, name) and not name.startswith("_"):
        setattr(package, name, getattr(module, name))
sys.exit(pytest.main(["-q", "-x", "-p", "no:cacheprovider", *sys.argv[2:]]))
"""


def _sites(tree: ast.Module, targets: set[str]):
    """(function name, node) of every comparison operator and +/- inside the target functions."""
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name in targets:
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


def mutants(source: str, targets: set[str]):
    """(description, mutated source) for every mutation site."""
    tree = ast.parse(source)
    for index, (fn, node, (kind, k)) in enumerate(list(_sites(tree, targets))):
        t = copy.deepcopy(tree)
        target = [n for _, n, _ in _sites(t, targets)][index]
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


def killed(module: str, source: str, tests: list[str], timeout: float = 300) -> bool:
    """A test fails, or the tests hang (a mutant that loops forever, e.g. in the union-find, is caught too)."""
    try:
        run = subprocess.run([sys.executable, "-c", RUNNER, module, *tests], input=source, text=True, cwd=ROOT,
                             capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return True
    return run.returncode != 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--only", choices=sorted(VERIFIERS), help="one verifier (default: both)")
    ap.add_argument("--tests", nargs="+", help="tests to run instead of the verifier's own")
    args = ap.parse_args(argv)
    start, rows, equivalent = time.time(), [], 0
    for name in [args.only] if args.only else VERIFIERS:
        path, module, targets, tests = VERIFIERS[name]
        tests = args.tests or tests
        source = path.read_text()
        if not args.list and killed(module, source, tests):
            print(f"the unmutated {name} verifier fails its own tests: fix that first", file=sys.stderr)
            return 2
        for desc, mutated in mutants(source, targets):
            fn, _, change = desc.partition(":")
            why = next((w for text, w in EQUIVALENT.get(fn, {}).items() if change.endswith("-> " + text)), None)
            if args.list or why:
                print(f"equivalent {desc} ({why})" if why else desc)
                equivalent += bool(why)
                continue
            rows.append((desc, killed(module, mutated, tests)))
            print(f"{'killed  ' if rows[-1][1] else 'SURVIVED'} {desc}", flush=True)
    if args.list:
        return 0
    survived = sum(1 for _, k in rows if not k)
    print(f"{len(rows) + equivalent} mutants, {len(rows) - survived} killed, {equivalent} equivalent, "
          f"{survived} survived ({time.time() - start:.0f} s)")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
