"""Every bad input gets a clear McuError (cause + fix), through the API and through the CLI (one line, no traceback
unless --verbose); an interrupted compile leaves the previous output intact."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import mcu
from mcu.boards import board_names, load_board, load_board_file
from mcu.cli import main as cli_main
from mcu.errors import BoardConfigError, HardFaultError, McuError, QemuNotFoundError, QemuTimeoutError, \
    UnknownBoardError
from mcu.errors import ExportError, UnsupportedOpError
from mcu.importer.export import export

MODELS = '''"""Models for tests/test_errors.py (written to a temporary folder, imported by the CLI as errmodels:<fn>)."""
import torch
from torch import nn


class Pool3d(nn.Module):
    def forward(self, x):
        return torch.nn.functional.max_pool3d(x, 2)


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return torch.relu(x)
        return x


class Masked(nn.Module):
    def forward(self, x):
        return x[x > 0]


class Log1p(nn.Module):
    def forward(self, x):
        return torch.log1p(x) * 2.0


def log1p_nan():
    return Log1p(), (torch.full((1, 8), -2.0),)


def linear():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 8), nn.ReLU()), (torch.randn(1, 20),)


def unsupported():
    return Pool3d(), (torch.randn(1, 1, 2, 4, 4),)


def branchy():
    return Branchy(), (torch.randn(1, 20),)


def masked():
    return Masked(), (torch.randn(1, 20),)
'''


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The errmodels module on sys.path: (module, path of its source)."""
    folder = tmp_path_factory.mktemp("errmodels")
    (folder / "errmodels.py").write_text(MODELS)
    sys.path.insert(0, str(folder))
    import errmodels
    yield errmodels, folder / "errmodels.py"
    sys.path.remove(str(folder))
    sys.modules.pop("errmodels", None)


def line_of(path: Path, code: str) -> str:
    """'path:line: code' for the line of path holding code, as the errors cite it."""
    lines = path.read_text().splitlines()
    return f"{path}:{next(i for i, t in enumerate(lines, 1) if code in t)}: {code}"


def cli(capsys, *argv) -> tuple[int, str]:
    """Run `mcu argv...` in this process; (exit status, stderr). Errors must be one line without a traceback."""
    rc = cli_main(list(map(str, argv)))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def one_error(err: str) -> str:
    """The message of the single `mcu: error:` line in err."""
    lines = [line for line in err.splitlines() if line.startswith("mcu: error: ")]
    assert len(lines) == 1, err
    return lines[0][len("mcu: error: "):]


def npy(folder: Path, name: str, array) -> Path:
    path = folder / name
    np.save(path, np.asarray(array))
    return path


# ---- the model: unsupported ops, data-dependent control flow and shapes, dynamic shapes --------------------------

def test_unsupported_op_names_op_line_and_alternative(models, capsys, tmp_path):
    mod, src = models
    want = (f"unsupported op 'max_pool3d' (aten.max_pool3d.default) at "
            f"{line_of(src, 'return torch.nn.functional.max_pool3d(x, 2)')}; use max_pool2d instead. Supported: ")
    with pytest.raises(UnsupportedOpError) as e:
        export(*mod.unsupported())
    assert str(e.value).startswith(want)
    rc, err = cli(capsys, "compile", "errmodels:unsupported", "-o", tmp_path / "o")
    assert rc == 1 and one_error(err).startswith(want)
    assert not (tmp_path / "o").exists()
    rc = cli_main(["--verbose", "compile", "errmodels:unsupported", "-o", str(tmp_path / "o")])  # + traceback
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("Traceback") and "UnsupportedOpError: unsupported op 'max_pool3d'" in err
    assert one_error(err).startswith(want)


def test_data_dependent_control_flow_names_the_line(models):
    mod, src = models
    with pytest.raises(ExportError) as e:
        export(*mod.branchy())
    msg = str(e.value)
    assert msg.startswith(f"torch.export cannot capture the model: at {line_of(src, 'if x.sum() > 0:')} the "
                          f"control flow depends on a tensor's values (GuardOnDataDependentSymNode: ")
    assert msg.endswith("). mcu compiles one static graph: compute both branches and pick with torch.where, "
                        "or make the decision outside forward()")


def test_data_dependent_shape_names_the_line(models):
    mod, src = models
    with pytest.raises(ExportError) as e:
        export(*mod.masked())
    assert str(e.value) == (f"'index' at {line_of(src, 'return x[x > 0]')} has an output whose size depends on "
                            f"tensor values (dim 0 = u0); mcu needs static shapes: avoid boolean-mask indexing, "
                            f"nonzero, unique and the like")


def test_dynamic_input_dim_says_what_to_make_static(models, capsys, tmp_path):
    model, _ = models[0].linear()
    example = (torch.randn(2, 20),)
    ep = torch.export.export(model, example, dynamic_shapes={"input": {0: torch.export.Dim("batch")}})
    pattern = (r"^input 'input' has a dynamic dim 0 \(s\d+\); mcu compiles one static shape: export without "
               r"dynamic_shapes for dim 0 \(the size you will run with\)$")
    with pytest.raises(ExportError, match=pattern):
        mcu.compile(ep, example, out_dir=tmp_path / "o")
    torch.export.save(ep, str(tmp_path / "dyn.pt2"))
    rc, err = cli(capsys, "compile", tmp_path / "dyn.pt2", "-o", tmp_path / "o")
    assert rc == 1 and re.match(pattern, one_error(err))


# ---- .pt2 files ------------------------------------------------------------------------------------------------

def _saved(models, tmp_path) -> Path:
    model, example = models[0].linear()
    path = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(model, example), str(path))
    return path


def _rewrite_model_json(src: Path, dst: Path, **fields) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("models/model.json"):
                data = json.dumps({**json.loads(data), **fields}).encode()
            zout.writestr(info, data)


def test_pt2_from_another_torch_version(models, capsys, tmp_path):
    old = tmp_path / "old.pt2"
    _rewrite_model_json(_saved(models, tmp_path), old, schema_version={"major": 3, "minor": 0}, torch_version="2.1.0")
    want = (f"{old} was saved by torch 2.1.0 (export schema 3.0); this is torch {torch.__version__} (schema 8.20), "
            f"which cannot load it: export the model again and save it with torch.export.save under "
            f"torch {torch.__version__}")
    with pytest.raises(ExportError) as e:
        mcu.compile(str(old), out_dir=tmp_path / "o")
    assert str(e.value) == want
    rc, err = cli(capsys, "compile", old, "-o", tmp_path / "o")
    assert rc == 1 and one_error(err) == want


def test_corrupt_pt2(models, capsys, tmp_path):
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(_saved(models, tmp_path).read_bytes()[:3000])  # truncated: no zip directory
    want = (f"{bad} is not a loadable .pt2 file (BadZipFile: File is not a zip file); re-save it with "
            f"torch.export.save under torch {torch.__version__}")
    with pytest.raises(ExportError) as e:
        mcu.compile(str(bad), out_dir=tmp_path / "o")
    assert str(e.value) == want
    rc, err = cli(capsys, "compile", bad, "-o", tmp_path / "o")
    assert rc == 1 and one_error(err) == want


# ---- calibration data ------------------------------------------------------------------------------------------

CALIBRATION_CASES = {  # name: (array written with np.save, exact message)
    "nan": (np.r_[np.zeros((2, 20)), np.full((1, 20), np.nan)],
            "calibration batch 2: input 0 contains NaN or Inf; clean the calibration data"),
    "inf": (np.full((1, 20), np.inf, np.float32),
            "calibration batch 0: input 0 contains NaN or Inf; clean the calibration data"),
    "shape": (np.zeros((3, 21), np.float32),
              "calibration batch 0: input 0 is (1, 21) torch.float32, expected (1, 20) torch.float32 like the "
              "example input"),
    "dtype": (np.zeros((3, 20), np.int64),
              "calibration batch 0: input 0 is (1, 20) torch.int64, expected (1, 20) torch.float32 like the "
              "example input"),
    "empty": (np.zeros((0, 20), np.float32),
              "the calibration set is empty; pass at least one input tuple (or calibration=None to calibrate on "
              "the example inputs)"),
}


@pytest.mark.parametrize("case", sorted(CALIBRATION_CASES))
def test_bad_calibration_file_through_the_cli(case, models, capsys, tmp_path):
    array, want = CALIBRATION_CASES[case]
    path = npy(tmp_path, f"{case}.npy", array)
    rc, err = cli(capsys, "compile", "errmodels:linear", "--calib", path, "-o", tmp_path / "o")
    assert rc == 1 and one_error(err) == want
    assert not (tmp_path / "o").exists()


def test_unreadable_or_missing_calibration_file(models, capsys, tmp_path):
    bad = tmp_path / "calib.npy"
    bad.write_bytes(b"not numpy")
    rc, err = cli(capsys, "compile", "errmodels:linear", "--calib", bad, "-o", tmp_path / "o")
    msg = one_error(err)
    assert rc == 1 and msg.startswith(f"cannot read calibration file {bad} (")
    assert msg.endswith("); save one array [B, ...] with np.save (.npy), several with np.savez (.npz), or a "
                        "list of input tuples with torch.save (.pt)")
    rc, err = cli(capsys, "compile", "errmodels:linear", "--calib", tmp_path / "nope.npy", "-o", tmp_path / "o")
    assert rc == 1 and one_error(err) == f"calibration file {tmp_path / 'nope.npy'} does not exist"


def test_float64_calibration_is_taken_as_float32(models, capsys, tmp_path):
    path = npy(tmp_path, "f64.npy", np.random.default_rng(0).standard_normal((4, 20)))
    rc, _ = cli(capsys, "compile", "errmodels:linear", "--calib", path, "-o", tmp_path / "o")
    assert rc == 0 and (tmp_path / "o" / "model.c").is_file()


def test_calibration_that_is_not_a_set(models, tmp_path):
    model, example = models[0].linear()
    with pytest.raises(McuError) as e:
        mcu.compile(model, example, calibration=5, out_dir=tmp_path / "o")
    assert str(e.value) == "calibration must be an iterable of input tuples (e.g. [(x,) for x in batches]), got a int"
    with pytest.raises(McuError) as e:
        mcu.compile(model, example, calibration=[(example[0],), 7], out_dir=tmp_path / "o")
    assert str(e.value) == "calibration batch 1 is a int; pass an iterable of input tuples"


# ---- boards ------------------------------------------------------------------------------------------------------

def test_unknown_board_suggests_close_names(capsys, tmp_path):
    known = f"known boards: {', '.join(board_names())}"
    with pytest.raises(UnknownBoardError) as e:
        mcu.compile(torch.nn.Linear(2, 2), (torch.randn(1, 2),), board="mps2-an368", out_dir=tmp_path / "o")
    msg = str(e.value)
    assert msg.startswith("unknown board 'mps2-an368'; did you mean mps2-an386") and msg.endswith(known)
    rc, err = cli(capsys, "compile", "mcu.zoo:example_cnn", "--board", "mps2-an368", "-o", tmp_path / "o")
    assert rc == 1 and one_error(err) == msg
    with pytest.raises(UnknownBoardError) as e:
        load_board("no-such-board-at-all")
    assert str(e.value) == f"unknown board 'no-such-board-at-all'; {known}"


BOARD_CASES = {  # name: (edit of mps2-an386's board.toml text, message after "<path>: ")
    "missing key": (lambda t: t.replace("stack_bytes = 16384\n", ""), "missing key stack_bytes (an integer); add it"),
    "missing table key": (lambda t: t.replace("size = 0x00400000\n", "", 1),
                          "missing key memory.flash.size (an integer); add it"),
    "wrong type": (lambda t: t.replace("systick_hz = 25_000_000", 'systick_hz = "25 MHz"'),
                   "systick_hz must be an integer, got '25 MHz'"),
    "bool as int": (lambda t: t.replace("stack_bytes = 16384", "stack_bytes = true"),
                    "stack_bytes must be an integer, got True"),
    "not a table": (lambda t: 'qemu = "mps2-an386"\n' + t.replace('[qemu]\nmachine = "mps2-an386"', ''),
                    "qemu must be a table, got 'mps2-an386'"),
    "float abi": (lambda t: t.replace('float_abi = "hard"', 'float_abi = "hardfp"'),
                  "float_abi must be one of ('soft', 'softfp', 'hard'), got 'hardfp'"),
    "name": (lambda t: t.replace('name = "mps2-an386"', 'name = "mps2-an999"'),
             "name = 'mps2-an999' but the folder is 'mps2-an386'"),
}


@pytest.mark.parametrize("case", sorted(BOARD_CASES))
def test_malformed_board_file_names_the_field(case, tmp_path):
    edit, message = BOARD_CASES[case]
    text = (load_board("mps2-an386").directory / "board.toml").read_text()
    path = tmp_path / "mps2-an386" / "board.toml"
    path.parent.mkdir()
    path.write_text(edit(text))
    assert path.read_text() != text, "the edit must apply"
    with pytest.raises(BoardConfigError) as e:
        load_board_file(path)
    assert str(e.value) == f"{path}: {message}"


def test_board_file_that_is_not_toml(tmp_path):
    path = tmp_path / "b" / "board.toml"
    path.parent.mkdir()
    path.write_text('name = "b"\ncpu = cortex-m4\n')
    with pytest.raises(BoardConfigError) as e:
        load_board_file(path)
    assert str(e.value) == f"{path}: not valid TOML (Invalid value (at line 2, column 7)); fix the syntax"
    assert load_board_file(load_board("mps2-an386").directory / "board.toml") == load_board("mps2-an386")


# ---- inputs to mcu.run -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def linear_pkg(models, tmp_path_factory):
    model, example = models[0].linear()
    return mcu.compile(model, example, calibration=[(torch.randn(1, 20),) for _ in range(4)],
                       out_dir=tmp_path_factory.mktemp("linear") / "pkg")


INPUT_CASES = {  # name: (inputs, exact message); all raise before anything is built or run
    "shape": (lambda: torch.zeros(1, 21), "input0 must be a float tensor of shape [1, 20] (torch order), got "
                                          "torch.float32 [1, 21]"),
    "dtype": (lambda: torch.zeros(1, 20, dtype=torch.int32),
              "input0 must be a float tensor of shape [1, 20] (torch order), got torch.int32 [1, 20]"),
    "count": (lambda: (torch.zeros(1, 20), torch.zeros(1, 20)), "the model takes 1 input(s), got 2"),
    "nan": (lambda: torch.full((1, 20), float("nan")),
            "input0 contains NaN or Inf, which int8 cannot represent; clean the input"),
    "not numbers": (lambda: (["a"] * 20,), None),
}


@pytest.mark.parametrize("case", sorted(INPUT_CASES))
def test_wrong_inputs_to_run(case, linear_pkg):
    make, want = INPUT_CASES[case]
    with pytest.raises(mcu.errors.InputError) as e:
        mcu.run(linear_pkg, make())
    if want is None:
        assert str(e.value).startswith("input0 must be a float tensor of shape [1, 20] (torch order), got a list "
                                       "that is not one (")
    else:
        assert str(e.value) == want


def test_wrong_input_file_through_the_cli(linear_pkg, capsys, tmp_path):
    path = npy(tmp_path, "x.npy", np.zeros((1, 21), np.float32))
    rc, err = cli(capsys, "run", linear_pkg.out_dir, "--input", path)
    assert rc == 1 and one_error(err) == INPUT_CASES["shape"][1]
    rc, err = cli(capsys, "run", linear_pkg.out_dir, "--input", tmp_path / "missing.npy")
    msg = one_error(err)
    assert rc == 1 and msg.startswith(f"cannot read input file {tmp_path / 'missing.npy'} (FileNotFoundError: ")
    assert msg.endswith("); pass .npy files saved with np.save, one per model input, in torch order")


def test_damaged_package(linear_pkg, capsys, tmp_path):
    pkg = tmp_path / "pkg"
    shutil.copytree(linear_pkg.out_dir, pkg, ignore=shutil.ignore_patterns(".mcu-build"))
    (pkg / "ir.json").write_bytes(b"garbage")
    with pytest.raises(McuError) as e:
        mcu.load(pkg)
    assert str(e.value) == (f"{pkg / 'ir.json'} was changed after mcu wrote it (its sha256 is not the one in "
                            f"manifest.json); compile the model again with `mcu compile`")
    rc, err = cli(capsys, "run", pkg)
    assert rc == 1 and one_error(err) == str(e.value)
    rc, err = cli(capsys, "size", tmp_path)
    assert rc == 1 and one_error(err) == f"{tmp_path} is not an mcu package (no manifest.json); run `mcu compile` first"


# ---- the device: QEMU missing or hanging, faults, error status (firmware tier) -----------------------------------

def _copy(pkg, folder: Path):
    shutil.copytree(pkg.out_dir, folder, ignore=shutil.ignore_patterns(".mcu-build"))
    return mcu.load(folder)


@pytest.mark.qemu
def test_qemu_missing_and_hanging(linear_pkg, monkeypatch):
    x = torch.zeros(1, 20)
    which = shutil.which
    monkeypatch.setattr("mcu.qemu.runner.shutil.which", lambda name: None if name == "qemu-system-arm" else which(name))
    with pytest.raises(QemuNotFoundError) as e:
        mcu.run(linear_pkg, x)
    assert str(e.value) == ("qemu-system-arm is not installed; install it with `apt-get install qemu-system-arm` "
                            "or run ./dev setup")
    monkeypatch.undo()
    with pytest.raises(QemuTimeoutError) as e:
        mcu.run(linear_pkg, x, timeout=0.001)
    assert str(e.value).startswith(f"{linear_pkg.build_dir.resolve() / 'fw.elf'} did not finish on mps2-an386 within "
                                   f"0.001 s (QEMU killed): the firmware hangs or the model is slower than that; pass "
                                   f"a larger timeout=")


@pytest.mark.qemu
def test_hard_fault_names_pc_and_function(linear_pkg, tmp_path):
    pkg = _copy(linear_pkg, tmp_path / "pkg")
    code = (pkg.out_dir / "model.c").read_text()
    fault = "    mcu_status_t status;\n    if (*(volatile const int8_t *)0xF0000000u == 42) {\n        return MCU_OK;\n    }\n"
    (pkg.out_dir / "model.c").write_text(code.replace("    mcu_status_t status;\n", fault, 1))
    with pytest.raises(HardFaultError) as e:
        mcu.run(pkg, torch.zeros(1, 20))
    err = e.value
    assert err.function.startswith("model_run") and err.cfsr & (1 << 9)  # PRECISERR: read of an unmapped address
    assert str(err).startswith(f"fw.elf hit a HardFault on mps2-an386 at pc=0x{err.pc:08x} in {err.function} (lr=0x")
    assert f"arm-none-eabi-addr2line -f -e {pkg.build_dir.resolve() / 'fw.elf'} 0x{err.pc:08x}" in str(err)


@pytest.mark.qemu
def test_error_status_from_the_device(linear_pkg, tmp_path):
    pkg = _copy(linear_pkg, tmp_path / "pkg")
    code = (pkg.out_dir / "model.c").read_text()
    assert ".act_max = 127" in code
    (pkg.out_dir / "model.c").write_text(code.replace(".act_max = 127", ".act_max = 300", 1))  # MCU_ERR_ARG
    with pytest.raises(McuError) as e:
        mcu.run(pkg, torch.zeros(1, 20))
    assert str(e.value) == ("the model returned status 1 (MCU_ERR_ARG) on the device: a code generator bug; "
                            "please report it")


# ---- the output folder -------------------------------------------------------------------------------------------

def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_foreign_files_are_refused_then_kept_with_force(models, capsys, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "build").mkdir()
    (out / "build" / "CMakeCache.txt").write_text("my cmake build")
    want = (f"{out} holds files mcu did not write (build, notes.txt); choose an empty or new folder, or pass "
            f"--force (force=True) to write beside them")
    rc, err = cli(capsys, "compile", "errmodels:linear", "-o", out)
    assert rc == 1 and one_error(err) == want
    assert sorted(p.name for p in out.iterdir()) == ["build", "notes.txt"]
    rc, _ = cli(capsys, "compile", "errmodels:linear", "-o", out, "--force")
    assert rc == 0 and (out / "model.c").is_file()
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "build" / "CMakeCache.txt").read_text() == "my cmake build"
    rc, _ = cli(capsys, "compile", "errmodels:linear", "-o", out, "--force")  # again: still only ours replaced
    assert rc == 0 and (out / "build" / "CMakeCache.txt").read_text() == "my cmake build"


def test_our_builds_stay_clear_of_a_users_cmake_build_folder(linear_pkg, tmp_path):
    pkg = _copy(linear_pkg, tmp_path / "pkg")
    (pkg.out_dir / "build").mkdir()  # the user's `cmake -B build` in the drop-in folder
    (pkg.out_dir / "build" / "CMakeCache.txt").write_text("my cmake build")
    elf = pkg.build()
    assert elf == pkg.out_dir / ".mcu-build" / pkg.board / "fw.elf" and elf.is_file()
    assert [p.name for p in (pkg.out_dir / "build").iterdir()] == ["CMakeCache.txt"]


def test_force_never_replaces_a_foreign_file(models, capsys, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "README.md").write_text("my project")
    rc, err = cli(capsys, "compile", "errmodels:linear", "-o", out, "--force")
    assert rc == 1 and one_error(err) == (
        f"{out} holds README.md, which mcu did not write and would replace; --force writes beside other files but "
        f"never replaces them: move them or choose another folder")
    assert [p.name for p in out.iterdir()] == ["README.md"] and (out / "README.md").read_text() == "my project"


def test_output_path_that_is_a_file(models, capsys, tmp_path):
    (tmp_path / "o").write_text("x")
    rc, err = cli(capsys, "compile", "errmodels:linear", "-o", tmp_path / "o")
    assert rc == 1 and one_error(err) == f"{tmp_path / 'o'} exists and is not a folder; choose another output path"


@pytest.mark.parametrize("when", ["writing", "swapping", "interrupt"])
def test_interrupted_compile_leaves_the_previous_output(when, models, tmp_path, monkeypatch):
    model, example = models[0].linear()
    out = tmp_path / "o"
    mcu.compile(model, example, out_dir=out)
    (out / ".mcu-build" / "mps2-an386").mkdir(parents=True)
    (out / ".mcu-build" / "mps2-an386" / ".sconsign.dblite").write_bytes(b"db")
    before = _tree(out)
    torch.nn.init.zeros_(model[0].bias)  # a different model: different bytes to write
    calls = {"n": 0}
    error = KeyboardInterrupt if when == "interrupt" else OSError

    def failing(real):
        def fn(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 3:
                raise error("simulated failure")
            return real(*args, **kwargs)
        return fn

    if when == "writing":
        monkeypatch.setattr(Path, "write_bytes", failing(Path.write_bytes))
    else:
        monkeypatch.setattr("mcu.writer.os.replace", failing(os.replace))
    with pytest.raises(error, match="simulated failure"):
        mcu.compile(model, example, out_dir=out)
    monkeypatch.undo()
    assert calls["n"] >= 3
    assert _tree(out) == before  # every file as it was, none added, none lost
    assert [p.name for p in tmp_path.iterdir()] == ["o"]  # no temporary folder left behind
    mcu.compile(model, example, out_dir=out)  # and the next compile goes through
    assert _tree(out) != before and not (out / ".mcu-build" / "mps2-an386").exists()


# ---- the CLI itself -----------------------------------------------------------------------------------------------

def test_cli_prints_one_line_and_a_traceback_only_with_verbose():
    cmd = [sys.executable, "-m", "mcu.cli", "compile", "no_such_module:model"]  # fails before torch is imported
    want = ("mcu: error: cannot load no_such_module:model: No module named 'no_such_module'; MODEL is module:function "
            "with the module importable from here (on PYTHONPATH), or a .pt2 file")
    quiet = subprocess.run(cmd, capture_output=True, text=True)
    assert quiet.returncode == 1 and quiet.stderr.strip() == want
    loud = subprocess.run(cmd[:3] + ["--verbose"] + cmd[3:], capture_output=True, text=True)
    assert loud.returncode != 0 and "Traceback" in loud.stderr and "McuError: cannot load" in loud.stderr


def test_model_factory_that_returns_the_wrong_thing(models, capsys):
    models[0].not_a_pair = lambda: torch.nn.Linear(2, 2)
    rc, err = cli(capsys, "compile", "errmodels:not_a_pair")
    assert rc == 1 and one_error(err) == "errmodels:not_a_pair returned a Linear; it must return (model, example_inputs)"


@pytest.mark.parametrize("target, says", [("1e9", "target_sqnr=1e+09 dB is out of reach: float32 arithmetic itself "
                                                 "stops near 144 dB"),
                                          ("nan", "target_sqnr=nan is not a number of dB"),
                                          ("inf", "target_sqnr=inf is not a number of dB")])
def test_a_target_sqnr_past_float32_or_not_a_number_is_one_error_line(models, capsys, tmp_path, target, says):  # noqa: F811
    rc, err = cli(capsys, "compile", "errmodels:linear", "--target-sqnr", target, "-o", tmp_path / "o")
    assert rc == 1 and one_error(err).startswith(says), err
    assert not (tmp_path / "o").exists()


def test_calibration_that_makes_an_op_nan_names_the_op_its_line_and_the_batch(models, capsys, tmp_path):  # noqa: F811
    mod, path = models
    rc, err = cli(capsys, "compile", "errmodels:log1p_nan", "-o", tmp_path / "o")
    assert rc == 1, err
    assert one_error(err) == (f"calibration batch 0 makes log1p at {line_of(path, 'return torch.log1p(x) * 2.0')} "
                              f"output NaN, which has no int8 range: keep that op's inputs in its domain (clamp them "
                              f"in the model, or fix the calibration data and example inputs)")
    assert not (tmp_path / "o").exists()
