"""The `mcu` command: compile, run, size, boards. Errors print one clear line (traceback with --verbose)."""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

from mcu.errors import McuError


def _load_model(spec: str):
    """MODEL is a .pt2 file, or module:function returning (model, example_inputs)."""
    if spec.endswith(".pt2") or Path(spec).is_file():
        return spec, None
    if ":" not in spec:
        raise McuError(f"MODEL '{spec}' is neither a .pt2 file nor module:function "
                       f"(e.g. mcu.zoo:example_cnn)")
    mod, fn = spec.split(":", 1)
    try:
        factory = getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as exc:
        raise McuError(f"cannot load {spec}: {exc}; MODEL is module:function with the module importable from "
                       f"here (on PYTHONPATH), or a .pt2 file") from exc
    result = factory()
    try:
        model, example_inputs = result
    except (TypeError, ValueError):
        raise McuError(f"{spec} returned a {type(result).__name__}; it must return (model, example_inputs)") from None
    return model, example_inputs


def _load_calibration(path: str | None):
    """A .npy/.npz/.pt file: an array [B, ...] (one input, one batch per row) or a list of tuples."""
    if path is None:
        return None
    import torch
    p = Path(path)
    if not p.is_file():
        raise McuError(f"calibration file {p} does not exist")
    try:
        if p.suffix == ".pt":
            data = torch.load(p)
            return [tuple(b) if isinstance(b, (tuple, list)) else (b,) for b in data]
        if p.suffix == ".npz":
            arrays = [_float32(v) for _, v in sorted(np.load(p).items())]
            return [tuple(torch.from_numpy(a[i:i + 1]) for a in arrays) for i in range(len(arrays[0]))] if arrays else []
        arr = _float32(np.load(p))
        return [(torch.from_numpy(arr[i:i + 1]),) for i in range(len(arr))]
    except Exception as exc:  # numpy, pickle and torch raise many types for unreadable files
        raise McuError(f"cannot read calibration file {p} ({type(exc).__name__}: {exc}); save one array [B, ...] "
                       f"with np.save (.npy), several with np.savez (.npz), or a list of input tuples with "
                       f"torch.save (.pt)") from exc


def _float32(a: np.ndarray) -> np.ndarray:
    """float64 (numpy's default) as float32, the dtype models take; other dtypes as they are."""
    return a.astype(np.float32) if a.dtype == np.float64 else a


def _load_inputs(paths) -> list:
    """Model inputs (torch order) from .npy files, one per input, as float32 tensors."""
    import torch
    inputs = []
    for f in paths:
        try:
            inputs.append(torch.from_numpy(np.load(f).astype(np.float32)))
        except Exception as exc:  # missing file, not an .npy, non-numeric array
            raise McuError(f"cannot read input file {f} ({type(exc).__name__}: {exc}); pass .npy files saved "
                           f"with np.save, one per model input, in torch order") from exc
    return inputs


def cmd_compile(args) -> None:
    import mcu
    model, example_inputs = _load_model(args.model)
    pkg = mcu.compile(model, example_inputs, board=args.board, calibration=_load_calibration(args.calib),
                      out_dir=args.output, force=args.force, optimize=args.optimize)
    m = pkg.manifest
    print(f"wrote {pkg.out_dir}: {len(m['ops'])} ops, kernels: {', '.join(k.split('/')[-1] for k in m['kernels'])}")
    print(f"arena {m['arena_bytes']} B (liveness lower bound {m['arena_lower_bound']} B, {m['planner']}), "
          f"weights {m['weights_bytes']} B")
    for f in m.get("fallbacks", []):
        where = f" at {f['source']}" if f["source"] else ""
        print(f"float32 fallback (no int8 kernel): {f['op']} -> {f['kernel']}{where}")


def cmd_run(args) -> None:
    import mcu
    import torch
    pkg = mcu.load(args.dir)
    if args.input:
        inputs = _load_inputs(args.input)
    else:
        g = torch.Generator().manual_seed(args.seed)
        inputs = [torch.randn(tuple(_shape(s)), generator=g) for s in pkg.manifest["inputs"]]
    res = mcu.run(pkg, inputs, timeout=args.timeout)
    ref = pkg.reference(inputs)
    for i, (raw, r, out) in enumerate(zip(res.raw_outputs, ref, res.outputs)):
        same = np.array_equal(raw, r)
        print(f"output{i} {list(out.shape)}: {np.array2string(out.ravel()[:16], precision=4)}")
        print(f"  device == numpy reference: {'yes' if same else 'NO'}")
    print(f"instructions: {res.instructions}")
    if not all(np.array_equal(a, b) for a, b in zip(res.raw_outputs, ref)):
        raise McuError("device output differs from the numpy reference")


def _shape(spec):
    s = spec["shape"]
    return (s[0], s[3], s[1], s[2]) if spec["layout"] == "NHWC" else s


def cmd_size(args) -> None:
    import mcu
    from mcu.stack import StackError, stack_depth
    pkg = mcu.load(args.dir)
    print(mcu.size(pkg).format())
    try:
        print(stack_depth(pkg).format())
    except StackError as exc:
        print(f"stack: not computed ({exc})")


def cmd_plan(args) -> None:
    import mcu
    from mcu.codegen.memory import describe, picture
    pkg = mcu.load(args.dir)
    print(describe(pkg.graph, pkg.memory))
    path = pkg.out_dir / "arena.svg"
    path.write_text(picture(pkg.graph, pkg.memory, title=pkg.board))
    print(f"\npicture: {path}")


def cmd_profile(args) -> None:
    import mcu
    from mcu.profile import format_profile, profile_run
    pkg = mcu.load(args.dir)
    rows, total = profile_run(pkg, seed=args.seed, timeout=args.timeout)
    print(f"{pkg.out_dir} on {pkg.board} (QEMU instructions per op, seeded randn input {args.seed})")
    print(format_profile(rows, total))


def cmd_debug(args) -> None:
    import mcu
    from mcu.debug import debug, first_divergence, format_rows
    pkg = mcu.load(args.dir)
    inputs = _load_inputs(args.input)
    rows = debug(pkg, inputs, timeout=args.timeout)
    print(format_rows(rows))
    if first_divergence(rows) is not None:
        raise McuError("the device parts ways with the numpy reference (see the first divergence above)")


def cmd_report(args) -> None:
    import mcu
    from mcu.report import report
    print(f"wrote {report(mcu.load(args.dir), with_profile=not args.no_profile)}")


def cmd_boards(args) -> None:
    from mcu.boards import list_boards
    from mcu.fit import format_size
    rows = [("board", "core", "features", "flash", "RAM", "runs on")]
    for b in list_boards():
        feats = ", ".join(f for f, on in (("FPU", bool(b.fpu)), ("DSP", b.dsp), ("MVE", b.mve)) if on) or "-"
        rows.append((b.name, b.cpu.replace("cortex-m", "Cortex-M"), feats, format_size(b.flash_size),
                     format_size(b.ram_size), f"QEMU {b.qemu_machine}" if b.emulated else "build only"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [c.rjust(w) if i in (3, 4) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        print("  ".join(cells).rstrip())
    print("\nbuild only: the firmware is built and checked against the board's flash and RAM, but not run")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="mcu", description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("compile", help="compile MODEL into a package folder")
    p.add_argument("model", help=".pt2 file or module:function returning (model, example_inputs)")
    p.add_argument("--board", default="mps2-an386")
    p.add_argument("--calib", help=".npy [B, ...] / .npz / .pt list of input tuples")
    p.add_argument("-o", "--output", default="mcu_out")
    p.add_argument("--force", action="store_true", help="write into a folder holding other files")
    p.add_argument("--optimize", choices=("speed", "memory"), default="speed",
                   help="speed: the board's fastest kernels; memory: portable kernels, the smallest arena")
    p.set_defaults(fn=cmd_compile)
    p = sub.add_parser("run", help="build and run a package on its board under QEMU")
    p.add_argument("dir")
    p.add_argument("--input", nargs="*", help=".npy float inputs in torch order (default: seeded randn)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120.0)
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("size", help="flash and RAM of a package's firmware")
    p.add_argument("dir")
    p.set_defaults(fn=cmd_size)
    p = sub.add_parser("plan", help="print a package's memory plan and draw it (arena.svg)")
    p.add_argument("dir")
    p.set_defaults(fn=cmd_plan)
    p = sub.add_parser("profile", help="instructions, MACs and MACs/instruction per op on the board (QEMU)")
    p.add_argument("dir")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120.0)
    p.set_defaults(fn=cmd_profile)
    p = sub.add_parser("debug", help="dump every op's output on the device and compare it op by op")
    p.add_argument("dir")
    p.add_argument("--input", nargs="+", required=True, help=".npy float inputs in torch order")
    p.add_argument("--timeout", type=float, default=300.0)
    p.set_defaults(fn=cmd_debug)
    p = sub.add_parser("report", help="write report.html: flash, RAM, arena timeline, per-op profile")
    p.add_argument("dir")
    p.add_argument("--no-profile", action="store_true", help="skip the QEMU profiling run")
    p.set_defaults(fn=cmd_report)
    p = sub.add_parser("boards", help="list the boards")
    p.set_defaults(fn=cmd_boards)
    args = parser.parse_args(argv)
    try:
        args.fn(args)
    except McuError as exc:
        if args.verbose:
            raise
        print(f"mcu: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
