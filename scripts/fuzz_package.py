"""The long package-loader fuzz campaign: `python scripts/fuzz_package.py --count 10000 [--seed N]`.

The mutants of tests/package_fuzz.py (the CI test runs 120), each through mcu run, size, plan, report and debug
(with and without --trust-model) in this process (one argparse parser reused); a resealed forgery that loads
and emits exactly the package's C (it changed nothing the commands use) is counted as accepted, not run. One working copy of the package is mutated and restored per
mutant (only the fuzzed files change). Prints the count, the time and every mutant that broke a rule; exit 1 if any.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import mcu.cli  # noqa: E402
from package_fuzz import (COMMANDS, MARKER_NAME, check_outcome, fresh_copy, harmless, make_package,  # noqa: E402
                          mutants)


def snapshot(root: Path, skip: Path) -> dict:
    return {p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else "dir"
            for p in root.rglob("*") if not (skip in p.parents or p == skip)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="mcu-fuzz-"))
    try:
        pkg = make_package(root)
        x = root / "x.npy"
        work = root / "work"
        marker = root / MARKER_NAME
        fuzzed = ["manifest.json", "ir.json", "model.pt2"] + \
            [f"ir_data/{p.name}" for p in (pkg / "ir_data").iterdir()]
        original = {name: (pkg / name).read_bytes() for name in fuzzed}
        fresh_copy(pkg, work)
        parser = mcu.cli.build_parser()  # argparse setup is most of a refused command's time; the parser is reusable
        mcu.cli.build_parser = lambda: parser
        failures, count, runs, accepted = [], 0, 0, 0
        start = time.monotonic()
        for label, apply in mutants(pkg, random.Random(args.seed), marker):
            if count == args.count:
                break
            count += 1
            for name, data in original.items():  # restore the previous mutant's damage
                (work / name).write_bytes(data)
            (work / "ir.pkl").unlink(missing_ok=True)
            apply(work)
            if "resealed" in label and harmless(work):
                accepted += 1  # a forgery that changes nothing the commands use: it may run
                continue
            before = snapshot(root, work / ".mcu-build")
            cmds = [c for c in COMMANDS if c[0] == "debug"] if label.startswith("model.pt2") else COMMANDS
            for cmd in cmds:
                err = io.StringIO()
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    rc = mcu.cli.main([cmd[0], str(work)] + [a.format(x=x) for a in cmd[1:]])
                runs += 1
                problem = check_outcome(rc, err.getvalue())
                if problem is None and marker.exists():
                    problem = "the payload ran"
                if problem:
                    failures.append(f"{label} | mcu {cmd[0]}: {problem}")
                    print(failures[-1], flush=True)
            if snapshot(root, work / ".mcu-build") != before:  # once per mutant, after all its commands
                failures.append(f"{label}: a command wrote outside the package's build folder")
                print(failures[-1], flush=True)
            if count % 1000 == 0:
                print(f"{count} mutants, {runs} commands, {time.monotonic() - start:.0f} s, {len(failures)} failures",
                      flush=True)
        print(f"done: {count} mutants, {runs} command runs, {time.monotonic() - start:.0f} s, "
              f"{len(failures)} failures, {accepted} harmless forgeries accepted (seed {args.seed})")
        return 1 if failures else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
