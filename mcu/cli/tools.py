"""`mcu profile`, `mcu debug`, `mcu eval`, `mcu report` and `mcu bench`: the tools (mcu.tools) on the command line."""
from __future__ import annotations

import sys

import numpy as np

from mcu.cli.inputs import float32, load_inputs
from mcu.cli.progress import ProgressBar, wanted
from mcu.errors import McuError
from mcu.metrics import FLOAT_TOLERANCE


def cmd_profile(args) -> None:
    import mcu
    from mcu.tools.profile import format_profile, profile_run
    pkg = mcu.load(args.dir)
    rows, total = profile_run(pkg, seed=args.seed, timeout=args.timeout)
    print(f"{pkg.out_dir} on {pkg.board} (QEMU instructions per op, seeded randn input {args.seed})")
    print(format_profile(rows, total))


def cmd_debug(args) -> None:
    import mcu
    from mcu.tools.debug import debug, first_divergence, format_rows
    pkg = mcu.load(args.dir)
    inputs = load_inputs(args.input)
    rows = debug(pkg, inputs, timeout=args.timeout, trust_model=args.trust_model)
    print(format_rows(rows))
    if first_divergence(rows) is not None:
        raise McuError("the device parts ways with the numpy reference (see the first divergence above)")


def cmd_generate(args) -> None:
    import mcu
    from mcu.tools.generate import generate
    pkg = mcu.load(args.dir)
    try:
        prompt = [int(t) for t in args.prompt.split(",") if t.strip()]
    except ValueError:
        raise McuError(f"--prompt {args.prompt!r}: give comma-separated token ids, e.g. --prompt 1,2,3") from None
    result = generate(pkg, prompt, args.tokens, temperature=args.temperature, top_k=args.top_k, seed=args.seed,
                      target="reference" if args.reference else "device", timeout=args.timeout)
    print(f"{pkg.out_dir} on {'the numpy reference' if args.reference else pkg.board}: {len(prompt)} prompt tokens, "
          f"{args.tokens} generated" + (f" (temperature {args.temperature:g}, top-k {args.top_k}, seed {args.seed})"
                                        if args.temperature > 0 else ""))
    print(result.summary())


def cmd_eval(args) -> None:
    import mcu
    from mcu.package import FLOAT_MODEL
    from mcu.tools.evaluate import load_float_model
    pkg = mcu.load(args.dir)
    try:
        data = [float32(np.load(f)) for f in args.data]
        labels = np.load(args.labels) if args.labels else None
    except Exception as exc:  # missing file, not an .npy
        raise McuError(f"cannot read the data ({type(exc).__name__}: {exc}); pass .npy files saved with np.save: "
                       f"--data [N, ...] per model input (torch order, no batch axis of 1), --labels [N] ints") from exc
    float_model = load_float_model(pkg) if args.trust_model else None
    if not args.trust_model and (pkg.out_dir / FLOAT_MODEL).exists():
        print("mcu: float model not loaded (pass --trust-model to load model.pt2 and compare with it)",
              file=sys.stderr)

    progress = ProgressBar("device", "input", wanted(args.progress))
    try:
        result = mcu.eval(pkg, data if len(data) > 1 else data[0], labels, float_model=float_model, progress=progress,
                          timeout=args.timeout)
    finally:
        progress.close()
    print(result.table())


def cmd_report(args) -> None:
    import mcu
    from mcu.tools.report import report
    print(f"wrote {report(mcu.load(args.dir), with_profile=not args.no_profile)}")


def cmd_bench(args) -> None:
    from mcu.tools.bench import bench, numerics, observer_sqnr
    if args.markdown:
        _bench_markdown(args)
        return
    if args.render_only:
        raise McuError("--render-only goes with --markdown PATH (the page to write from the JSON in --out)")
    if args.observers:
        observer_sqnr(args.models, args.out)
        return
    if args.numerics:
        rows = numerics(args.models, (args.boards or ["mps2-an386"])[0], args.out)
        if not all(r["exact"] or r["mode"] == "float32" for r in rows):
            raise McuError("a device output differs from the numpy reference (NO in the table above)")
        return
    rows = bench(args.models, args.boards, args.out, args.quantize)
    if not all(r["exact"] or r.get("rel_error_device", 1.0) <= FLOAT_TOLERANCE for r in rows):
        raise McuError("a device output differs from the numpy reference (exact = NO in the table above)")


def _bench_markdown(args) -> None:
    """mcu bench --markdown PATH: the three benchmark runs the page is made of (unless --render-only), then the page
    and the README summary table beside it (PATH's folder's parent holds README.md, as docs/ does)."""
    from pathlib import Path

    from mcu.tools.bench import FLOAT_BOARDS, bench, numerics
    from mcu.tools.bench_markdown import write
    if not args.render_only:
        for rows in (bench(None, None, args.out), numerics(None, "mps2-an386", args.out),
                     bench(None, FLOAT_BOARDS, args.out, "none")):
            if not all(r["exact"] or r.get("mode") == "float32" or r.get("rel_error_device", 1.0) <= FLOAT_TOLERANCE
                       for r in rows):
                raise McuError("a device output differs from the numpy reference (NO in the tables above); "
                               f"{args.markdown} not written")
    readme = Path(args.markdown).resolve().parent.parent / "README.md"
    path = write(args.out, args.markdown, readme if readme.is_file() else None)
    print(f"wrote {path}" + (f" and the summary table of {readme}" if readme.is_file() else ""))
