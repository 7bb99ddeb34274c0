"""`mcu compile`: a model and its calibration data -> a package folder, built and run on its board when it can be."""
from __future__ import annotations

import sys

from mcu.cli.inputs import load_calibration, load_model, randn_inputs
from mcu.cli.progress import ProgressBar, wanted


def cmd_compile(args) -> None:
    import mcu
    model, example_inputs = load_model(args.model)
    progress = ProgressBar("calibrating", "batch", wanted(args.progress))
    try:
        pkg = mcu.compile(model, example_inputs, board=args.board, calibration=load_calibration(args.calib),
                          out_dir=args.output, force=args.force, optimize=args.optimize, progress=progress,
                          observer=args.observer, bias_correction=not args.no_bias_correction,
                          quantize=args.quantize, weights=args.weights, mixed=dict(args.mixed or ()),
                          target_sqnr=args.target_sqnr, name=args.name, flash_budget=args.flash_budget,
                          log=(lambda line: print(line, file=sys.stderr, flush=True)) if args.target_sqnr else None)
    finally:
        progress.close()
    if pkg.precision is not None:
        print(pkg.precision.table())
    m = pkg.manifest
    print(f"wrote {pkg.out_dir}: {len(m['ops'])} ops, kernels: {', '.join(k.split('/')[-1] for k in m['kernels'])}")
    from mcu.build.firmware import missing_compiler
    missing = None if args.no_run else missing_compiler()
    built = not args.no_run and missing is None
    if not built:  # else the summary line below says it
        print(f"arena {m['arena_bytes']} B (liveness lower bound {m['arena_lower_bound']} B, {m['planner']}), "
              f"weights {m['weights_bytes']} B")
    if missing:
        print(f"not built: {missing}; the package is written, `mcu run {pkg.out_dir}` builds and runs it",
              file=sys.stderr)
    for f in m.get("fallbacks", []):
        where = f" at {f['source']}" if f["source"] else ""
        print(f"float32 fallback (no int8 kernel): {f['op']} -> {f['kernel']}{where}")
    from mcu.boards import load_board
    from mcu.build.softfloat import soft_float_note
    note = soft_float_note(pkg.graph, load_board(pkg.board))
    if note:
        print(note)
    if built:
        from mcu.errors import NotEmulatedError, QemuNotFoundError
        size = mcu.size(pkg)
        try:  # a .pt2 brings no example inputs here: seeded randn, as `mcu run`
            instructions = mcu.run(pkg, example_inputs or randn_inputs(pkg, 0)).instructions
        except (NotEmulatedError, QemuNotFoundError) as exc:
            instructions = None
            print(f"not run: {exc}", file=sys.stderr)
        print(summary_line(pkg.board, instructions, m["arena_bytes"], m["arena_lower_bound"], size))


def summary_line(board: str, instructions: int | None, arena: int, lower_bound: int, size) -> str:
    """`mcu compile`'s last line: one inference's QEMU instructions (on the example inputs), the arena and its
    liveness lower bound, and the firmware's flash (weights + code) against the board's."""
    run = "not run" if instructions is None else f"{instructions:,} instructions"
    capacity = f" of {size.flash_capacity:,} B" if size.flash_capacity else ""
    large = f", {size.large_region} {size.large_bytes:,} B" if size.large_bytes else ""  # weights too big for flash
    return (f"{board}: {run}, arena {arena:,} B (lower bound {lower_bound:,} B), flash "
            f"{size.flash_total - size.large_bytes:,} B{capacity}{large} (weights {size.flash_weights:,} B, code {size.flash_total - size.flash_weights:,} B)")
