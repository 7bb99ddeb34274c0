"""`mcu run`, `mcu size`, `mcu plan` and `mcu boards`: a package (or a bundle's models) on its board, its footprint
and memory plan."""
from __future__ import annotations

import numpy as np

from mcu.cli.inputs import load_inputs, randn_inputs
from mcu.errors import McuError
from mcu.metrics import FLOAT_TOLERANCE, relative_error


def cmd_run(args) -> None:
    import mcu
    from mcu.bundles import is_bundle
    if is_bundle(args.dir):
        return run_bundle(args)
    if args.model:
        raise McuError(f"--model picks a model of a bundle (`mcu bundle`); {args.dir} is one package")
    pkg = mcu.load(args.dir)
    if not run_package(pkg, load_inputs(args.input) if args.input else randn_inputs(pkg, args.seed), args.timeout):
        raise McuError("device output differs from the numpy reference")


def run_package(pkg, inputs, timeout: float) -> bool:
    """Run pkg once on its board, print its outputs and whether they equal the numpy reference (the result)."""
    import mcu
    res = mcu.run(pkg, inputs, timeout=timeout)
    ref = pkg.reference(inputs)
    agree = []
    for i, (raw, r, out) in enumerate(zip(res.raw_outputs, ref, res.outputs)):
        same = np.array_equal(raw, r)
        print(f"output{i} {list(out.shape)}: {np.array2string(out.ravel()[:16], precision=4)}")
        print(f"  device == numpy reference: {'yes' if same else 'NO'}")
        if not same and raw.dtype == np.float32:  # float32 (quantize="none"): held to a tolerance, not bits
            err = relative_error(raw, r)
            same = err <= FLOAT_TOLERANCE
            print(f"  relative error vs the numpy reference: {err:.2g} (tolerance {FLOAT_TOLERANCE:g})")
        agree.append(same)
    print(f"instructions: {res.instructions}")
    return all(agree)


def cmd_size(args) -> None:
    import mcu
    from mcu.build.stack import StackError, stack_depth
    from mcu.bundles import is_bundle
    if is_bundle(args.dir):
        return size_bundle(args)
    pkg = mcu.load(args.dir)
    print(mcu.size(pkg).format())
    try:
        print(stack_depth(pkg).format())
    except StackError as exc:
        print(f"stack: not computed ({exc})")


def run_bundle(args) -> None:
    """`mcu run` on a bundle: each model (or --model NAME) alone on its board under QEMU."""
    from mcu.bundles import load_bundle
    b = load_bundle(args.dir)
    pkgs = [b.package(args.model)] if args.model else list(b.packages)
    if args.input and len(pkgs) > 1:
        raise McuError(f"--input feeds one model; name it with --model ({', '.join(b.names)})")
    failed = []
    for p in pkgs:
        print(f"{p.name}:")
        inputs = load_inputs(args.input) if args.input else randn_inputs(p, args.seed)
        if not run_package(p, inputs, args.timeout):
            failed.append(p.name)
    if failed:
        raise McuError(f"device output differs from the numpy reference for {', '.join(failed)}")


def size_bundle(args) -> None:
    """`mcu size` on a bundle: each model's own flash, the shared kernels and runtime once, the saving."""
    from mcu.bundles import bundle_size, load_bundle
    print(bundle_size(load_bundle(args.dir)).format())


def cmd_plan(args) -> None:
    import mcu
    from mcu.codegen.memory import describe, picture
    pkg = mcu.load(args.dir)
    print(describe(pkg.graph, pkg.memory))
    path = pkg.out_dir / "arena.svg"
    path.write_text(picture(pkg.graph, pkg.memory, title=pkg.board))
    print(f"\npicture: {path}")


def cmd_boards(args) -> None:
    from mcu.boards import list_boards
    from mcu.build.fit import format_size
    rows = [("board", "core", "features", "flash", "RAM", "runs on")]
    for b in list_boards():
        feats = ", ".join(f for f, on in (("FPU", bool(b.fpu)), ("DSP", b.dsp), ("MVE", b.mve)) if on) or "-"
        flash = format_size(b.flash_size) + (f" + {format_size(b.large_size)} {b.large_name}" if b.large_size else "")
        rows.append((b.name, b.cpu.replace("cortex-m", "Cortex-M"), feats, flash,
                     format_size(b.ram_size), f"QEMU {b.qemu_machine}" if b.emulated else "build only"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [c.rjust(w) if i in (3, 4) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        print("  ".join(cells).rstrip())
    print("\nbuild only: the firmware is built and checked against the board's flash and RAM, but not run")
