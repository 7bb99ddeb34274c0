"""The `mcu` command: compile a PyTorch model to int8 C for a Cortex-M board; run, size, plan, profile, debug,
report and benchmark it. Errors print one clear line (the traceback too with --verbose)."""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from pathlib import Path

import numpy as np

from mcu.errors import McuError
from mcu.metrics import FLOAT_TOLERANCE, relative_error


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
    try:
        result = factory()
    except Exception as exc:  # the user's code: its failure is theirs to fix, not an mcu bug
        raise McuError(f"{spec} raised {type(exc).__name__}: {exc}") from exc
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
            data = torch.load(p, weights_only=True)  # tensors and containers only: unpickling runs no code
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


def format_progress(done: int, total: int | None, elapsed: float) -> str:
    """One progress line: 'calibrating: 37/200 batches, 2.1 s elapsed, about 9.3 s left'."""
    if total is None:
        return f"calibrating: {done} batches, {elapsed:.1f} s elapsed"
    left = "done" if done >= total else f"about {elapsed / done * (total - done):.1f} s left"
    return f"calibrating: {done}/{total} batches, {elapsed:.1f} s elapsed, {left}"


class CalibrationProgress:
    """A progress callback for mcu.compile that writes to stream (default stderr).

    - on a terminal: one line, rewritten in place after every batch, ended with a newline at the last one;
    - otherwise (a log, a pipe): one line at each tenth of the way, the last batch included, so at most 10;
      without a known total, at batches 1, 10, 100, ...
    """

    def __init__(self, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.tty = self.stream.isatty()
        self.tenths = 0  # tenths of the way already printed (not on a terminal)
        self.width = 0  # length of the line being rewritten (on a terminal); 0: no line open

    def __call__(self, done: int, total: int | None, elapsed: float) -> None:
        line = format_progress(done, total, elapsed)
        if self.tty:
            self.stream.write("\r" + line.ljust(self.width))
            self.width = max(self.width, len(line))
            if total is not None and done >= total:
                self.close()
        elif total is None:
            if str(done).rstrip("0") == "1":
                self.stream.write(line + "\n")
        elif done * 10 // total > self.tenths:
            self.tenths = done * 10 // total
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End a line left open on a terminal (calibration failed or had no known total)."""
        if self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0


def _mixed_rule(text: str) -> tuple[str, str]:
    """MODULE=PRECISION (--mixed) -> (module name or type name, precision)."""
    from mcu.quantization.quantizer import PRECISIONS
    module, sep, precision = text.partition("=")
    if not sep or not module or precision not in PRECISIONS:
        raise argparse.ArgumentTypeError(f"{text!r}: write MODULE=PRECISION with PRECISION one of "
                                         f"{', '.join(PRECISIONS)}, e.g. classifier=float32")
    return module, precision


def cmd_compile(args) -> None:
    import mcu
    model, example_inputs = _load_model(args.model)
    progress = CalibrationProgress()
    try:
        pkg = mcu.compile(model, example_inputs, board=args.board, calibration=_load_calibration(args.calib),
                          out_dir=args.output, force=args.force, optimize=args.optimize, progress=progress,
                          observer=args.observer, bias_correction=not args.no_bias_correction,
                          quantize=args.quantize, weights=args.weights, mixed=dict(args.mixed or ()),
                          target_sqnr=args.target_sqnr,
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
            instructions = mcu.run(pkg, example_inputs or _randn_inputs(pkg, 0)).instructions
        except (NotEmulatedError, QemuNotFoundError) as exc:
            instructions = None
            print(f"not run: {exc}", file=sys.stderr)
        print(summary_line(pkg.board, instructions, m["arena_bytes"], m["arena_lower_bound"], size))


def summary_line(board: str, instructions: int | None, arena: int, lower_bound: int, size) -> str:
    """`mcu compile`'s last line: one inference's QEMU instructions (on the example inputs), the arena and its
    liveness lower bound, and the firmware's flash (weights + code) against the board's."""
    run = "not run" if instructions is None else f"{instructions:,} instructions"
    capacity = f" of {size.flash_capacity:,} B" if size.flash_capacity else ""
    return (f"{board}: {run}, arena {arena:,} B (lower bound {lower_bound:,} B), flash {size.flash_total:,} B"
            f"{capacity} (weights {size.flash_weights:,} B, code {size.flash_total - size.flash_weights:,} B)")


def cmd_run(args) -> None:
    import mcu
    pkg = mcu.load(args.dir)
    inputs = _load_inputs(args.input) if args.input else _randn_inputs(pkg, args.seed)
    res = mcu.run(pkg, inputs, timeout=args.timeout)
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
    if not all(agree):
        raise McuError("device output differs from the numpy reference")


def _randn_inputs(pkg, seed: int) -> list:
    """Seeded randn inputs of the package's input shapes (torch order)."""
    import torch
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(tuple(_shape(s)), generator=g) for s in pkg.manifest["inputs"]]


def _shape(spec):
    s = spec["shape"]
    return (s[0], s[3], s[1], s[2]) if spec["layout"] == "NHWC" else s


def cmd_size(args) -> None:
    import mcu
    from mcu.build.stack import StackError, stack_depth
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
    from mcu.tools.profile import format_profile, profile_run
    pkg = mcu.load(args.dir)
    rows, total = profile_run(pkg, seed=args.seed, timeout=args.timeout)
    print(f"{pkg.out_dir} on {pkg.board} (QEMU instructions per op, seeded randn input {args.seed})")
    print(format_profile(rows, total))


def cmd_debug(args) -> None:
    import mcu
    from mcu.tools.debug import debug, first_divergence, format_rows
    pkg = mcu.load(args.dir)
    inputs = _load_inputs(args.input)
    rows = debug(pkg, inputs, timeout=args.timeout, trust_model=args.trust_model)
    print(format_rows(rows))
    if first_divergence(rows) is not None:
        raise McuError("the device parts ways with the numpy reference (see the first divergence above)")


def cmd_eval(args) -> None:
    import mcu
    from mcu.tools.evaluate import FLOAT_MODEL, load_float_model
    pkg = mcu.load(args.dir)
    try:
        data = [_float32(np.load(f)) for f in args.data]
        labels = np.load(args.labels) if args.labels else None
    except Exception as exc:  # missing file, not an .npy
        raise McuError(f"cannot read the data ({type(exc).__name__}: {exc}); pass .npy files saved with np.save: "
                       f"--data [N, ...] per model input (torch order, no batch axis of 1), --labels [N] ints") from exc
    float_model = load_float_model(pkg) if args.trust_model else None
    if not args.trust_model and (pkg.out_dir / FLOAT_MODEL).exists():
        print("mcu: float model not loaded (pass --trust-model to load model.pt2 and compare with it)",
              file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar = "#" * (30 * done // total)
        print(f"\r  device {bar:<30} {done}/{total}", end="" if done < total else "\n", file=sys.stderr,
              flush=True)
    result = mcu.eval(pkg, data if len(data) > 1 else data[0], labels, float_model=float_model,
                      progress=progress if sys.stderr.isatty() or args.progress else None, timeout=args.timeout)
    print(result.table())


def cmd_report(args) -> None:
    import mcu
    from mcu.tools.report import report
    print(f"wrote {report(mcu.load(args.dir), with_profile=not args.no_profile)}")


def cmd_boards(args) -> None:
    from mcu.boards import list_boards
    from mcu.build.fit import format_size
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


def cmd_bench(args) -> None:
    from mcu.tools.bench import bench, numerics, observer_sqnr
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


EXIT_CODES = """exit status:
  0    success
  1    user error: arguments, model, calibration data, board or package (one "mcu: error:" line)
  2    internal error: a bug in mcu (rerun with --verbose for the traceback and report it)
  130  interrupted (Ctrl-C)"""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with mcu's exit codes: a usage error exits 1 (argparse's own 2 is mcu's internal error)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def _command(sub, name: str, fn, help: str, *examples: str) -> ArgumentParser:
    """A subcommand whose --help ends with example command lines; --verbose is accepted after it too."""
    verbose = ArgumentParser(add_help=False)
    verbose.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                         help="on an error, print the traceback too")
    p = sub.add_parser(name, help=help, description=help, parents=[verbose],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=("examples:\n" if len(examples) > 1 else "example:\n") +
                       "\n".join(f"  {e}" for e in examples))
    p.set_defaults(fn=fn)
    return p


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="mcu", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="examples:\n  mcu compile mcu.zoo:example_cnn --board mps2-an386 -o out/cnn\n"
                                   "  mcu run out/cnn\n  mcu compile --help\n\n" + EXIT_CODES)
    parser.add_argument("--verbose", action="store_true", help="on an error, print the traceback too")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    package = "package folder written by `mcu compile`"
    p = _command(sub, "compile", cmd_compile, "compile MODEL into a package folder",
                 "mcu compile mcu.zoo:example_cnn --board mps2-an386 -o out/cnn",
                 "mcu compile model.pt2 --calib calib.npy --board mps3-an547 --optimize memory -o out/model",
                 "mcu compile mcu.zoo:ic --quantize none --board mps2-an385 -o out/ic-float32",
                 "mcu compile mcu.zoo:kws --quantize a16w8 --mixed fc=float32 -o out/kws-a16w8",
                 "mcu compile mcu.zoo:vww --target-sqnr 30 -o out/vww-30db")
    p.add_argument("model", help=".pt2 file or module:function returning (model, example_inputs)")
    p.add_argument("--board", default="mps2-an386", help="target board, see `mcu boards` (default: mps2-an386)")
    p.add_argument("--calib", help=".npy [B, ...] / .npz / .pt list of input tuples (default: the example inputs)")
    p.add_argument("-o", "--output", default="mcu_out", help="package folder to write (default: mcu_out)")
    p.add_argument("--force", action="store_true", help="write into a folder holding other files")
    p.add_argument("--optimize", choices=("speed", "memory"), default="speed",
                   help="speed: the board's fastest kernels; memory: portable kernels, the smallest arena")
    p.add_argument("--observer", choices=("minmax", "percentile", "mse"), default="minmax",
                   help="activation ranges: every calibrated value (minmax), the 0.01-99.99th percentiles, or the "
                        "least L2 quantization error (mse) (default: minmax)")
    p.add_argument("--quantize", choices=("int8", "a16w8", "none"), default="int8",
                   help="int8 (default); a16w8: int16 activations, int8 weights; or none: the float model as it is, "
                        "float32 kernels (--calib unused)")
    p.add_argument("--mixed", nargs="+", metavar="MODULE=PRECISION", type=_mixed_rule,
                   help="keep modules (by name, e.g. classifier, or type, e.g. Linear) in int8, a16w8 or float32")
    p.add_argument("--target-sqnr", type=float, metavar="DB",
                   help="pick int8 / a16w8 / float32 per layer, at the least cost in flash and instructions, so "
                        "the SQNR vs the float model on the calibration data reaches DB; prints the choice")
    p.add_argument("--weights", choices=("int8", "int4"), default="int8",
                   help="int4: conv and linear weights in [-7, 7], two per byte in flash (default: int8)")
    p.add_argument("--no-bias-correction", action="store_true",
                   help="keep the float biases (default: correct them for the weights' rounding)")
    p.add_argument("--no-run", action="store_true",
                   help="only write the package (default: also build it and run the example inputs under QEMU, "
                        "and end with one line: instructions, arena and its lower bound, flash)")
    p = _command(sub, "run", cmd_run, "build and run a package on its board under QEMU",
                 "mcu run out/cnn", "mcu run out/cnn --input x.npy")
    p.add_argument("dir", help=package)
    p.add_argument("--input", nargs="*", help=".npy float inputs in torch order (default: seeded randn)")
    p.add_argument("--seed", type=int, default=0, help="seed of the randn inputs (default: 0)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before QEMU is stopped (default: 120)")
    p = _command(sub, "size", cmd_size, "flash and RAM of a package's firmware", "mcu size out/cnn")
    p.add_argument("dir", help=package)
    p = _command(sub, "plan", cmd_plan, "print a package's memory plan and draw it (arena.svg)", "mcu plan out/cnn")
    p.add_argument("dir", help=package)
    p = _command(sub, "profile", cmd_profile, "instructions, MACs and MACs/instruction per op on the board (QEMU)",
                 "mcu profile out/cnn", "mcu profile out/cnn --seed 1")
    p.add_argument("dir", help=package)
    p.add_argument("--seed", type=int, default=0, help="seed of the randn input (default: 0)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before QEMU is stopped (default: 120)")
    p = _command(sub, "debug", cmd_debug, "dump every op's output on the device and compare it op by op",
                 "mcu debug out/cnn --input x.npy")
    p.add_argument("dir", help=package)
    p.add_argument("--input", nargs="+", required=True, help=".npy float inputs in torch order")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before QEMU is stopped (default: 300)")
    p.add_argument("--trust-model", action="store_true",
                   help="load the package's model.pt2 (the float model, for the SQNR column); a .pt2 can run code "
                        "from whoever wrote it, so only for packages you trust")
    p = _command(sub, "eval", cmd_eval, "accuracy of the float model, the integer reference and the device on N inputs "
                 "(one QEMU run)", "mcu eval out/cnn --data x.npy --labels y.npy",
                 "mcu eval out/cnn --data x.npy --labels y.npy --trust-model")
    p.add_argument("dir", help=package)
    p.add_argument("--data", nargs="+", required=True, help=".npy float inputs [N, ...] in torch order, one per "
                   "model input, each row one input without its batch axis of 1")
    p.add_argument("--labels", help=".npy integer class labels [N] (default: agreement and SQNR instead of accuracy)")
    p.add_argument("--trust-model", action="store_true",
                   help="load the package's model.pt2 to add the float model's column; a .pt2 can run code "
                        "from whoever wrote it, so only for packages you trust")
    p.add_argument("--progress", action="store_true", help="show the progress bar even when stderr is not a terminal")
    p.add_argument("--timeout", type=float, default=None, help="seconds before QEMU is stopped (default: 120 + 2 per input)")
    p = _command(sub, "report", cmd_report, "write report.html: flash, RAM, arena timeline, per-op profile",
                 "mcu report out/cnn", "mcu report out/cnn --no-profile")
    p.add_argument("dir", help=package)
    p.add_argument("--no-profile", action="store_true", help="skip the QEMU profiling run")
    _command(sub, "boards", cmd_boards, "list the boards", "mcu boards")
    p = _command(sub, "bench", cmd_bench, "compile and run the model zoo on boards; print the table, write bench.json",
                 "mcu bench", "mcu bench --models kws ad --boards mps2-an386 --out out/bench",
                 "mcu bench --quantize none --boards mps2-an386", "mcu bench --numerics --models kws")
    p.add_argument("--models", nargs="*", metavar="MODEL", help="mcu.zoo models to run (default: all)")
    p.add_argument("--boards", nargs="*", metavar="BOARD",
                   help="boards to run on (default: mcu.tools.bench.BOARDS, the five Arm QEMU boards of the README table)")
    p.add_argument("--out", default="out/bench", help="folder for the packages and bench.json (default: out/bench)")
    p.add_argument("--quantize", choices=("int8", "none"), default="int8",
                   help="none: the float models, float32 kernels (flash, arena, instructions, relative error)")
    p.add_argument("--observers", action="store_true",
                   help="instead: each model's SQNR vs float under each activation observer (no QEMU)")
    p.add_argument("--numerics", action="store_true",
                   help="instead: int8, a16w8, int4 weights and float32 side by side on the first board (default "
                        "mps2-an386): SQNR vs float, flash, arena, instructions")
    return parser


def main(argv=None) -> int:
    """Run `mcu argv...`; returns the exit status (see EXIT_CODES)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (1)
        return exc.code
    try:
        args.fn(args)
    except McuError as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"mcu: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mcu: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.filename is None:  # not about a file of the user's: an internal error after all
            return _internal_error(exc, args.verbose)
        if args.verbose:
            traceback.print_exc()
        print(f"mcu: error: {exc.strerror or exc}: {exc.filename}; check that path (it exists, is writable, and "
              f"its disk has room)", file=sys.stderr)
        return 1
    except Exception as exc:
        return _internal_error(exc, args.verbose)
    return 0


def _internal_error(exc: BaseException, verbose: bool) -> int:
    if verbose:
        traceback.print_exc()
    msg = (str(exc).strip().splitlines() or [""])[0]
    print(f"mcu: internal error: {type(exc).__name__}: {msg} (this is a bug in mcu; rerun with --verbose for "
          f"the traceback and report it)", file=sys.stderr)
    return 2

