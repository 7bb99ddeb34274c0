"""The `mcu` command: compile a PyTorch model to int8 C for a Cortex-M board; run, size, plan, profile, debug,
report and benchmark it. Errors print one clear line (the traceback too with --verbose).

The parser is built here; each command's handler lives in a module of this folder (compile, run, tools) and is
imported only when that command runs, so `mcu --help` and argument errors never import torch."""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from mcu.errors import McuError


def _mixed_rule(text: str) -> tuple[str, str]:
    """MODULE=PRECISION (--mixed) -> (module name or type name, precision)."""
    from mcu.quantization.quantizer import PRECISIONS
    module, sep, precision = text.partition("=")
    if not sep or not module or precision not in PRECISIONS:
        raise argparse.ArgumentTypeError(f"{text!r}: write MODULE=PRECISION with PRECISION one of "
                                         f"{', '.join(PRECISIONS)}, e.g. classifier=float32")
    return module, precision


DESCRIPTION = __doc__.split("\n\n")[0]  # what `mcu --help` says of mcu
PACKAGE_HELP = "package folder written by `mcu compile`"
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


def _command(sub, name: str, handler: str, help: str, *examples: str) -> ArgumentParser:
    """A subcommand whose --help ends with example command lines; --verbose is accepted after it too. handler:
    "module:function" in this folder, imported when the command runs."""
    verbose = ArgumentParser(add_help=False)
    verbose.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                         help="on an error, print the traceback too")
    p = sub.add_parser(name, help=help, description=help, parents=[verbose],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=("examples:\n" if len(examples) > 1 else "example:\n") +
                       "\n".join(f"  {e}" for e in examples))
    p.set_defaults(handler=handler)
    return p


def build_parser() -> ArgumentParser:
    """The whole `mcu` parser: every command and option (the docs test reads it too)."""
    parser = ArgumentParser(prog="mcu", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="examples:\n  mcu compile mcu.zoo:example_cnn --board mps2-an386 -o out/cnn\n"
                                   "  mcu run out/cnn\n  mcu compile --help\n\n" + EXIT_CODES)
    parser.add_argument("--verbose", action="store_true", help="on an error, print the traceback too")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_compile_command, _package_commands, _tool_commands, _zoo_commands):
        add(sub)
    return parser


def _compile_command(sub) -> None:
    """`mcu compile`'s arguments."""
    p = _command(sub, "compile", "compile:cmd_compile", "compile MODEL into a package folder",
                 "mcu compile mcu.zoo:example_cnn --board mps2-an386 -o out/cnn",
                 "mcu compile model.pt2 --calib calib.npy --board mps3-an547 --optimize memory -o out/model",
                 "mcu compile mcu.zoo:ic --quantize none --board mps2-an385 -o out/ic-float32",
                 "mcu compile mcu.zoo:kws --quantize a16w8 --mixed fc=float32 -o out/kws-a16w8",
                 "mcu compile mcu.zoo:vww --target-sqnr 30 -o out/vww-30db",
                 "mcu compile mcu.zoo:kws --name kws -o out/kws")
    p.add_argument("model", help=".pt2 file or module:function returning (model, example_inputs)")
    p.add_argument("--board", default="mps2-an386", help="target board, see `mcu boards` (default: mps2-an386)")
    p.add_argument("--calib", help=".npy [B, ...] / .npz / .pt list of input tuples (default: the example inputs)")
    p.add_argument("-o", "--output", default="mcu_out", help="package folder to write (default: mcu_out)")
    p.add_argument("--name", default="model",
                   help="the model's name, a lowercase C identifier: the prefix of its C symbols, macros and files "
                        "(kws: kws_run, KWS_ARENA_BYTES, kws.h; default: model)")
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
    p.add_argument("--flash-budget", type=_bytes_arg, metavar="BYTES",
                   help="flash the model's weights may take (e.g. 96000, 96K, 2M); layers store their weights "
                        "widened where that saves the most instructions per byte until it is spent (default: "
                        "half the board's flash, the rest left for your application)")
    p.add_argument("--no-bias-correction", action="store_true",
                   help="keep the float biases (default: correct them for the weights' rounding)")
    p.add_argument("--progress", action="store_true",
                   help="show the calibration progress bar even when stderr is not a terminal")
    p.add_argument("--no-run", action="store_true",
                   help="only write the package (default: also build it and run the example inputs under QEMU, "
                        "and end with one line: instructions, arena and its lower bound, flash)")


def _bytes_arg(text: str) -> int:
    """A byte count: digits, or digits with K or M (1024s), e.g. 96K."""
    scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a byte count; write e.g. 98304, 96K or 2M")
    return int(digits) * scale


def _package_commands(sub) -> None:
    """The commands on one package folder: run, size, plan; and bundle, on several."""
    p = _command(sub, "run", "run:cmd_run", "build and run a package (or each model of a bundle) on its board under "
                 "QEMU", "mcu run out/cnn", "mcu run out/cnn --input x.npy", "mcu run out/bundle --model kws")
    p.add_argument("dir", help=PACKAGE_HELP + ", or a bundle folder written by `mcu bundle`")
    p.add_argument("--model", metavar="NAME", help="in a bundle: run only the model NAME (default: each in turn)")
    p.add_argument("--input", nargs="*", help=".npy float inputs in torch order (default: seeded randn)")
    p.add_argument("--seed", type=int, default=0, help="seed of the randn inputs (default: 0)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before QEMU is stopped (default: 120)")
    p = _command(sub, "size", "run:cmd_size", "flash and RAM of a package's firmware; of a bundle: each model's "
                 "own flash, the shared kernels and runtime once, the saving", "mcu size out/cnn",
                 "mcu size out/bundle")
    p.add_argument("dir", help=PACKAGE_HELP + ", or a bundle folder written by `mcu bundle`")
    p = _command(sub, "bundle", "bundle:cmd_bundle", "merge packages compiled for one board by one mcu, under "
                 "distinct names (--name), into one drop-in folder: one runtime, each kernel once",
                 "mcu bundle out/kws out/ad -o out/bundle")
    p.add_argument("dirs", nargs="+", metavar="PKG_DIR", help=PACKAGE_HELP)
    p.add_argument("-o", "--output", default="mcu_bundle", help="bundle folder to write (default: mcu_bundle)")
    p.add_argument("--force", action="store_true", help="write into a folder holding other files")
    p = _command(sub, "plan", "run:cmd_plan", "print a package's memory plan and draw it (arena.svg)", "mcu plan out/cnn")
    p.add_argument("dir", help=PACKAGE_HELP)


def _tool_commands(sub) -> None:
    """The tools on one package folder: profile, debug, eval, generate, report."""
    p = _command(sub, "profile", "tools:cmd_profile", "instructions, MACs and MACs/instruction per op on the board (QEMU)",
                 "mcu profile out/cnn", "mcu profile out/cnn --seed 1")
    p.add_argument("dir", help=PACKAGE_HELP)
    p.add_argument("--seed", type=int, default=0, help="seed of the randn input (default: 0)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before QEMU is stopped (default: 120)")
    p = _command(sub, "debug", "tools:cmd_debug", "dump every op's output on the device and compare it op by op",
                 "mcu debug out/cnn --input x.npy")
    p.add_argument("dir", help=PACKAGE_HELP)
    p.add_argument("--input", nargs="+", required=True, help=".npy float inputs in torch order")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before QEMU is stopped (default: 300)")
    p.add_argument("--trust-model", action="store_true",
                   help="load the package's model.pt2 (the float model, for the SQNR column); a .pt2 can run code "
                        "from whoever wrote it, so only for packages you trust")
    p = _command(sub, "eval", "tools:cmd_eval", "accuracy of the float model, the integer reference and the device on N inputs "
                 "(one QEMU run)", "mcu eval out/cnn --data x.npy --labels y.npy",
                 "mcu eval out/cnn --data x.npy --labels y.npy --trust-model")
    p.add_argument("dir", help=PACKAGE_HELP)
    p.add_argument("--data", nargs="+", required=True, help=".npy float inputs [N, ...] in torch order, one per "
                   "model input, each row one input without its batch axis of 1")
    p.add_argument("--labels", help=".npy integer class labels [N] (default: agreement and SQNR instead of accuracy)")
    p.add_argument("--trust-model", action="store_true",
                   help="load the package's model.pt2 to add the float model's column; a .pt2 can run code "
                        "from whoever wrote it, so only for packages you trust")
    p.add_argument("--progress", action="store_true", help="show the progress bar even when stderr is not a terminal")
    p.add_argument("--timeout", type=float, default=None, help="seconds before QEMU is stopped (default: 120 + 2 per input)")
    p = _command(sub, "generate", "tools:cmd_generate", "greedy or sampled decoding of a decoder-step package on its "
                 "board: the prompt and every token in one firmware run, the loop in C",
                 "mcu generate out/llm --prompt 1,2,3 --tokens 32",
                 "mcu generate out/llm --prompt 1,2,3 --tokens 32 --temperature 0.8 --top-k 40 --seed 7")
    p.add_argument("dir", help=PACKAGE_HELP)
    p.add_argument("--prompt", required=True, help="comma-separated token ids, e.g. 1,2,3")
    p.add_argument("--tokens", type=int, default=16, help="new tokens to generate (default: 16)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="sample each token at this temperature (default: 0, greedy)")
    p.add_argument("--top-k", type=int, default=0, help="sample among the k largest logits only (default: 0, all)")
    p.add_argument("--seed", type=int, default=1, help="the xorshift32 generator's nonzero seed (default: 1)")
    p.add_argument("--reference", action="store_true", help="decode on the numpy reference instead of QEMU")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before QEMU is stopped (default: 600)")
    p = _command(sub, "report", "tools:cmd_report", "write report.html: flash, RAM, arena timeline, per-op profile",
                 "mcu report out/cnn", "mcu report out/cnn --no-profile")
    p.add_argument("dir", help=PACKAGE_HELP)
    p.add_argument("--no-profile", action="store_true", help="skip the QEMU profiling run")


def _zoo_commands(sub) -> None:
    """The commands without a package: boards, bench."""
    _command(sub, "boards", "run:cmd_boards", "list the boards", "mcu boards")
    p = _command(sub, "bench", "tools:cmd_bench", "compile and run the model zoo on boards; print the table, write bench.json",
                 "mcu bench", "mcu bench --models kws ad --boards mps2-an386 --out out/bench",
                 "mcu bench --quantize none --boards mps2-an386", "mcu bench --numerics --models kws",
                 "mcu bench --markdown docs/benchmarks.md")
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
    p.add_argument("--markdown", metavar="PATH",
                   help="instead: run the zoo on every board, --numerics and --quantize none into --out, then write "
                        "PATH (docs/benchmarks.md) and the summary table of the README.md beside its folder")
    p.add_argument("--render-only", action="store_true",
                   help="with --markdown: write PATH from the JSON already in --out, run nothing")


def _handler(spec: str):
    """The function "module:function" of this folder names."""
    module, function = spec.split(":")
    return getattr(importlib.import_module(f"mcu.cli.{module}"), function)


def main(argv=None) -> int:
    """Run `mcu argv...`; returns the exit status (see EXIT_CODES)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (1)
        return exc.code
    try:
        _handler(args.handler)(args)
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

