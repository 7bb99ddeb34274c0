"""The `mcu` command itself: --help with examples on every command, exit codes (0 ok, 1 user error, 2 internal
error, 130 interrupted) and calibration progress (the callback of mcu.compile and the CLI's printer)."""
from __future__ import annotations

import argparse
import dataclasses
import io
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import mcu
import mcu.cli
import mcu.cli.compile
import mcu.cli.run
from mcu.cli import build_parser
from mcu.cli.progress import ProgressBar
from test_errors import cli, models, npy, one_error  # noqa: F401  (models is a fixture)

COMMANDS = ["compile", "run", "size", "bundle", "plan", "profile", "debug", "eval", "generate", "report", "boards",
            "bench"]
INTERNAL = "(this is a bug in mcu; rerun with --verbose for the traceback and report it)"


def run_main(capsys, *argv) -> tuple[int, str, str]:
    """`mcu argv...` in this process: (exit status, stdout, stderr)."""
    rc = mcu.cli.main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return rc, out, err


# ---- --help ---------------------------------------------------------------------------------------------------

def test_the_commands_are_the_ones_tested_here():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command, capsys):
    rc, out, err = run_main(capsys, command, "--help")
    assert rc == 0 and err == ""
    assert out.startswith(f"usage: mcu {command} ")
    assert re.search(rf"\nexamples?:\n  mcu {command}\b", out), out
    assert "--verbose" in out


def test_top_level_help_has_examples_and_exit_codes(capsys):
    rc, out, err = run_main(capsys, "--help")
    assert rc == 0 and err == ""
    assert "\nexamples:\n  mcu compile mcu.zoo:example_cnn --board mps2-an386 -o out/cnn\n" in out
    assert ("exit status:\n  0    success\n  1    user error: arguments, model, calibration data, board or package "
            "(one \"mcu: error:\" line)\n  2    internal error: a bug in mcu (rerun with --verbose for the traceback "
            "and report it)\n  130  interrupted (Ctrl-C)\n") in out


# ---- exit codes -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    ([], "mcu: error: the following arguments are required: COMMAND"),
    (["frob"], "mcu: error: argument COMMAND: invalid choice: 'frob' (choose from 'compile', 'run', 'size', "
               "'bundle', 'plan', 'profile', 'debug', 'eval', 'generate', 'report', 'boards', 'bench')"),
    (["run"], "mcu run: error: the following arguments are required: dir"),
    (["compile", "m.pt2", "--optimize", "fast"],
     "mcu compile: error: argument --optimize: invalid choice: 'fast' (choose from 'speed', 'memory')"),
    (["boards", "--nope"], "mcu: error: unrecognized arguments: --nope"),
])
def test_usage_errors_exit_1_with_usage_and_message(argv, message, capsys):
    rc, out, err = run_main(capsys, *argv)
    assert rc == 1 and out == ""
    assert err.startswith("usage: mcu") and err.splitlines()[-1] == message, err


def test_user_error_exits_1_with_one_line(capsys, tmp_path):
    rc, err = cli(capsys, "run", tmp_path / "nope")
    assert rc == 1 and err.count("\n") == 1
    assert one_error(err) == f"{tmp_path / 'nope'} is not an mcu package (no manifest.json); run `mcu compile` first"


def test_bundle_of_a_missing_package_is_one_line(capsys, tmp_path):
    rc, err = cli(capsys, "bundle", tmp_path / "nope", "-o", tmp_path / "b")
    assert rc == 1 and err.count("\n") == 1
    assert one_error(err) == f"{tmp_path / 'nope'} is not an mcu package (no manifest.json); run `mcu compile` first"
    assert not (tmp_path / "b").exists()


def test_a_failing_model_factory_is_a_user_error(models, capsys):  # noqa: F811
    models[0].boom = lambda: 1 / 0
    rc, err = cli(capsys, "compile", "errmodels:boom")
    assert rc == 1 and one_error(err) == "errmodels:boom raised ZeroDivisionError: division by zero"


def test_verbose_after_the_command_prints_the_traceback(capsys, tmp_path):
    rc, _, err = run_main(capsys, "size", tmp_path / "nope", "--verbose")
    assert rc == 1 and err.startswith("Traceback")
    assert err.splitlines()[-1].startswith("mcu: error: ")


def _raise(exc):
    def fn(args):
        raise exc
    return fn


def test_internal_error_exits_2_with_one_line(capsys, monkeypatch):
    monkeypatch.setattr(mcu.cli.run, "cmd_boards", _raise(RuntimeError("kaboom\nsecond line")))
    rc, out, err = run_main(capsys, "boards")
    assert rc == 2 and out == ""
    assert err == f"mcu: internal error: RuntimeError: kaboom {INTERNAL}\n"
    rc, _, err = run_main(capsys, "--verbose", "boards")
    assert rc == 2 and err.startswith("Traceback") and "RuntimeError: kaboom" in err
    assert err.splitlines()[-1] == f"mcu: internal error: RuntimeError: kaboom {INTERNAL}"


def test_a_file_the_system_refuses_is_a_user_error(capsys, monkeypatch):
    """Permission denied, a full disk or a missing folder is the user's to fix: exit 1, the path named."""
    denied = PermissionError(13, "Permission denied", "/out/model.c")
    monkeypatch.setattr(mcu.cli.run, "cmd_boards", _raise(denied))
    assert run_main(capsys, "boards") == (1, "", "mcu: error: Permission denied: /out/model.c; check that path (it "
                                                 "exists, is writable, and its disk has room)\n")
    monkeypatch.setattr(mcu.cli.run, "cmd_boards", _raise(OSError("socket closed")))  # no file: still a bug of ours
    rc, _, err = run_main(capsys, "boards")
    assert rc == 2 and err == f"mcu: internal error: OSError: socket closed {INTERNAL}\n"


def test_interrupt_exits_130(capsys, monkeypatch):
    monkeypatch.setattr(mcu.cli.run, "cmd_boards", _raise(KeyboardInterrupt()))
    assert run_main(capsys, "boards") == (130, "", "mcu: interrupted\n")


# ---- calibration progress -------------------------------------------------------------------------------------

def _linear():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 2), (torch.randn(1, 4),)


def test_compile_reports_each_calibration_batch_and_prints_nothing(capsys, tmp_path):
    calls = []
    model, example = _linear()
    mcu.compile(model, example, calibration=[(torch.randn(1, 4),) for _ in range(5)], out_dir=tmp_path / "o",
                progress=lambda *a: calls.append(a))
    assert [(done, total) for done, total, _ in calls] == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
    seconds = [s for _, _, s in calls]
    assert seconds == sorted(seconds) and seconds[0] >= 0
    assert capsys.readouterr() == ("", "")


def test_calibration_without_len_reports_no_total(tmp_path):
    calls = []
    model, example = _linear()
    mcu.compile(model, example, calibration=((torch.randn(1, 4),) for _ in range(3)), out_dir=tmp_path / "o",
                progress=lambda *a: calls.append(a))
    assert [(done, total) for done, total, _ in calls] == [(1, None), (2, None), (3, None)]


def test_cli_compile_draws_progress_only_when_asked_off_a_terminal(models, capsys, tmp_path):  # noqa: F811
    calib = npy(tmp_path, "calib.npy", np.random.default_rng(0).standard_normal((3, 20)).astype(np.float32))
    rc, err = cli(capsys, "compile", "errmodels:linear", "--calib", calib, "-o", tmp_path / "o")
    assert rc == 0 and "calibrating" not in err, err  # stderr is not a terminal here: quiet
    rc, err = cli(capsys, "compile", "errmodels:linear", "--calib", calib, "-o", tmp_path / "p", "--progress")
    assert rc == 0, err
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    assert re.match(r"calibrating: 100%\|.*\| 3/3 ", last), err


def test_cli_compile_ends_with_one_line_of_instructions_arena_and_flash(models, capsys, tmp_path):  # noqa: F811
    """The line's numbers are the package's: a QEMU run of the example inputs, the manifest's arena and lower
    bound, the ELF's flash; --no-run writes the same package without building it."""
    rc, out, err = run_main(capsys, "compile", "errmodels:linear", "-o", tmp_path / "o")
    assert rc == 0, err
    pkg = mcu.load(tmp_path / "o")
    size = mcu.size(pkg)
    instructions = mcu.run(pkg, models[0].linear()[1]).instructions
    m = pkg.manifest
    assert out.splitlines()[-1] == mcu.cli.compile.summary_line("mps2-an386", instructions, m["arena_bytes"],
                                                         m["arena_lower_bound"], size)
    assert re.fullmatch(r"mps2-an386: [\d,]+ instructions, arena [\d,]+ B \(lower bound [\d,]+ B\), flash [\d,]+ B "
                        r"of 4,194,304 B \(weights [\d,]+ B, code [\d,]+ B\)", out.splitlines()[-1])
    rc, out, err = run_main(capsys, "compile", "errmodels:linear", "-o", tmp_path / "p", "--no-run")
    assert rc == 0, err
    assert "instructions" not in out and f"arena {m['arena_bytes']} B" in out
    assert not mcu.load(tmp_path / "p").build_dir.exists()


def test_cli_compile_without_the_cross_compiler_writes_the_package_and_says_so(models, capsys, tmp_path,  # noqa: F811
                                                                             monkeypatch):
    import shutil
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "arm-none-eabi-gcc" else which(name))
    rc, out, err = run_main(capsys, "compile", "errmodels:linear", "-o", tmp_path / "o")
    assert rc == 0, err
    assert "not built: arm-none-eabi-gcc is not installed" in err and "arena " in out and "instructions" not in out
    assert (tmp_path / "o" / "model.c").is_file()


def test_summary_line():
    from mcu.build.elfsize import SizeReport
    size = SizeReport(flash_weights=34904, flash_generated=1500, flash_kernels=13000, flash_runtime=300,
                      flash_other=3040, ram_arena=10816, ram_static=0, ram_stack=2048, flash_capacity=4194304)
    assert mcu.cli.compile.summary_line("mps2-an386", 3549680, 10816, 8704, size) == (
        "mps2-an386: 3,549,680 instructions, arena 10,816 B (lower bound 8,704 B), flash 52,744 B of 4,194,304 B "
        "(weights 34,904 B, code 17,840 B)")
    line = mcu.cli.compile.summary_line("x", None, 1, 0, dataclasses.replace(size, flash_capacity=None))
    assert line.startswith("x: not run, arena 1 B (lower bound 0 B), flash 52,744 B (weights")


def test_progress_bar_counts_to_the_total_and_ends_its_line():
    stream = io.StringIO()
    bar = ProgressBar("calibrating", "batch", True, file=stream)
    for done in range(1, 201):
        bar(done, 200, done / 10)
    bar.close()  # closed already at 200/200: no second line
    final = stream.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert re.match(r"calibrating: 100%\|.*\| 200/200 \[", final), final
    assert stream.getvalue().endswith("\n") and stream.getvalue().count("\n") == 1
    unknown = io.StringIO()
    bar = ProgressBar("calibrating", "batch", True, file=unknown)
    for done in range(1, 8):
        bar(done, None, 0.0)
    bar.close()
    assert re.match(r"calibrating: 7batch \[", unknown.getvalue().replace("\r", "\n").strip().splitlines()[-1])


def test_progress_bar_off_writes_nothing_and_a_broken_run_ends_the_line():
    quiet = io.StringIO()
    bar = ProgressBar("calibrating", "batch", False, file=quiet)
    for done in range(1, 4):
        bar(done, 3, 0.0)
    bar.close()
    assert quiet.getvalue() == ""
    broken = io.StringIO()  # calibration failed half way: close() ends the line before the error message
    bar = ProgressBar("calibrating", "batch", True, file=broken)
    bar(1, 2, 1.0)
    bar.close()
    assert broken.getvalue().endswith("\n") and "1/2" in broken.getvalue()


@pytest.mark.parametrize("argv", [["--help"], ["boards"], ["compile", "--help"], ["bench", "--help"]])
def test_commands_that_need_no_model_import_no_torch(argv):
    """The parser and `mcu boards` stay quick: torch (seconds to import) is loaded only by a command that needs it."""
    code = ("import sys\nfrom mcu.cli import main\nmain(%r)\n"
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('mcu'))" % argv)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
