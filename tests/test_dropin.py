"""The compiled folder is a drop-in package: it builds without SCons (make and CMake, host gcc and arm-none-eabi),
the firmware built from it runs on QEMU and equals the numpy reference, and a non-editable install of mcu works.

The host programs call model_run (the typed API a firmware engineer uses); the firmware links the folder
with the shared board harness (boards/common: startup, semihosting, main.c) and a board's linker script.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.api import OUR_FILES
from mcu.writer import write_package
from mcu.boards import load_board
from mcu.build.dropin import RUNTIME_DIR
from mcu.paths import package_root
from mcu.qemu.runner import run_firmware

ROOT = Path(__file__).resolve().parents[1]
BOARD = "mps2-an386"
HAVE = {tool: shutil.which(tool) is not None
        for tool in ("gcc", "make", "cmake", "arm-none-eabi-gcc", "qemu-system-arm")}


def needs(*tools):
    missing = [t for t in tools if not HAVE[t]]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)} (./dev setup)")


def emulated(test):
    return pytest.mark.qemu(needs("arm-none-eabi-gcc", "qemu-system-arm")(test))


class SmallCnn(nn.Module):
    """conv 3x3 + ReLU, max pool, linear: three kernel families."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        return self.fc(self.pool(torch.relu(self.conv(x))).flatten(1))


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    torch.manual_seed(0)
    model = SmallCnn().eval()
    calib = [(torch.randn(1, 2, 8, 8),) for _ in range(8)]
    return mcu.compile(model, calib[0], board=BOARD, calibration=calib, out_dir=tmp_path_factory.mktemp("dropin") / "m")


@pytest.fixture(scope="module")
def sample(pkg):
    """(float input, int8 input bytes as stored, the reference's output bytes)."""
    x = (torch.randn(1, 2, 8, 8, generator=torch.Generator().manual_seed(7)) * 1.5,)
    stored = pkg.quantize_inputs(x)[0]
    want = pkg.reference(x)[0]
    return x, stored.tobytes(), want


def assert_output(pkg, got: bytes, want: np.ndarray) -> None:
    spec = pkg.manifest["outputs"][0]
    assert len(got) == spec["bytes"], f"got {len(got)} bytes, want {spec['bytes']}"
    got = np.frombuffer(got, dtype=np.int8).reshape(want.shape)  # a 2-d output: torch order = stored order
    bad = np.argwhere(got != want)
    assert not len(bad), f"{len(bad)} mismatches; first at {tuple(bad[0])}: built {got[tuple(bad[0])]} vs " \
                         f"reference {want[tuple(bad[0])]}"


HOST_MAIN = r"""/* Host test program: input.bin -> model_run -> output.bin (paths from argv). */
#include <stdint.h>
#include <stdio.h>

#include "model.h"

static uint8_t arena[MODEL_ARENA_BYTES + 1u] __attribute__((aligned(MODEL_ARENA_ALIGN)));
static int8_t input[MODEL_INPUT0_BYTES];
static int8_t output[MODEL_OUTPUT0_BYTES];

int main(int argc, char **argv)
{
    FILE *f;
    if (argc != 3 || (f = fopen(argv[1], "rb")) == NULL || fread(input, 1, sizeof input, f) != sizeof input) {
        return 10;
    }
    fclose(f);
    mcu_status_t status = model_run(input, output, arena);
    if ((f = fopen(argv[2], "wb")) == NULL || fwrite(output, 1, sizeof output, f) != sizeof output) {
        return 11;
    }
    fclose(f);
    return (int)status;
}
"""

STRICT = "-Wall -Wextra -Werror"


def run_host(exe: Path, stored: bytes, tmp: Path) -> bytes:
    (tmp / "input.bin").write_bytes(stored)
    proc = subprocess.run([str(exe), str(tmp / "input.bin"), str(tmp / "output.bin")], capture_output=True, text=True)
    assert proc.returncode == 0, f"{exe} exited with {proc.returncode}: {proc.stderr}"
    return (tmp / "output.bin").read_bytes()


def firmware_parts(board: str) -> tuple[Path, list[str], list[str]]:
    """(boards/common, its .c files, the link flags) for a firmware of board."""
    b = load_board(board)
    common = package_root("mcu.boards") / "common"
    return common, sorted(map(str, common.glob("*.c"))), b.ldflags()


def sh(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"$ {shlex.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


# ---- the folder ---------------------------------------------------------------------------------------


def test_folder_holds_only_what_the_model_needs(pkg):
    out = pkg.out_dir
    kernels = pkg.manifest["kernels"]
    copied = sorted(p.relative_to(out / RUNTIME_DIR / "kernels").with_suffix("").as_posix()
                    for p in (out / RUNTIME_DIR / "kernels").rglob("*.c"))
    assert copied == sorted(kernels)
    assert len(kernels) < len(list((package_root("mcu.runtime_c") / "kernels").glob("*/*.c")))
    headers = {p.name for p in (out / RUNTIME_DIR / "include").rglob("*.h")}
    assert {"mcu_types.h", "mcu_kernels.h"} <= headers
    for name in ("model.h", "model.c", "weights.c", "mcu_model.mk", "CMakeLists.txt", "README.md"):
        assert (out / name).is_file(), name
    mk = (out / "mcu_model.mk").read_text()
    assigned = [line.split(":=")[0].strip() for line in mk.splitlines() if ":=" in line]
    assert assigned and all(v.startswith("MCU_MODEL_") for v in assigned), assigned
    assert "add_library(mcu_model STATIC" in (out / "CMakeLists.txt").read_text()
    readme = (out / "README.md").read_text()
    steps = [line for line in readme.splitlines() if line[:2] in {f"{i}." for i in range(1, 10)}]
    assert len(steps) == 6 and "model_run(input0, output0, arena)" in steps[4] and "Memory placement" in steps[5]
    assert "-DMCU_WEIGHTS_SECTION=" in readme and "-DMODEL_STATIC_ARENA" in readme and "MCU_ARENA_SECTION" in readme
    assert f"{pkg.arena_bytes} bytes" in readme


def test_recompiling_replaces_the_runtime_folder_whole(tmp_path):
    out = tmp_path / "m"
    write_package(out, {"model.h": b"1", f"{RUNTIME_DIR}/kernels/a/old.c": b"old"}, False, OUR_FILES)
    write_package(out, {"model.h": b"2", f"{RUNTIME_DIR}/kernels/b/new.c": b"new"}, False, OUR_FILES)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "mcu_runtime/kernels/b/new.c", "model.h"]
    assert [p.name for p in tmp_path.iterdir()] == ["m"]  # no temporary folder left behind


# ---- host builds ---------------------------------------------------------------------------------------


@pytest.mark.host_c
@needs("gcc", "make")
def test_make_host(pkg, sample, tmp_path):
    (tmp_path / "main.c").write_text(HOST_MAIN)
    (tmp_path / "Makefile").write_text(
        "include $(MODEL)/mcu_model.mk\n"
        "app: main.c $(MCU_MODEL_SRCS)\n"
        f"\t$(CC) $(MCU_MODEL_CFLAGS) {STRICT} $(MCU_MODEL_INCLUDES) $^ $(MCU_MODEL_LDFLAGS) $(MCU_MODEL_LDLIBS) -o $@\n")
    sh(["make", f"MODEL={os.path.relpath(pkg.out_dir, tmp_path)}", "CC=gcc"], tmp_path)
    assert_output(pkg, run_host(tmp_path / "app", sample[1], tmp_path), sample[2])


CMAKE_APP = """cmake_minimum_required(VERSION 3.13)
project(app C)
add_subdirectory({model} mcu_model)
add_executable({target} {sources})
target_include_directories({target} PRIVATE {includes})
target_link_libraries({target} PRIVATE mcu_model)
target_link_options({target} PRIVATE {link})
"""


@pytest.mark.host_c
@needs("gcc", "cmake")
def test_cmake_host(pkg, sample, tmp_path):
    (tmp_path / "main.c").write_text(HOST_MAIN)
    (tmp_path / "CMakeLists.txt").write_text(CMAKE_APP.format(model=pkg.out_dir, target="app", sources="main.c",
                                                              includes=".", link="-Wl,--gc-sections"))
    sh(["cmake", "-S", ".", "-B", "build", "-DCMAKE_C_COMPILER=gcc", f"-DCMAKE_C_FLAGS={STRICT}"], tmp_path)
    sh(["cmake", "--build", "build"], tmp_path)
    assert_output(pkg, run_host(tmp_path / "build" / "app", sample[1], tmp_path), sample[2])


# ---- firmware builds, run on QEMU --------------------------------------------------------------------


@emulated
@needs("make")
def test_make_firmware_runs_on_qemu(pkg, sample, tmp_path):
    common, common_c, ldflags = firmware_parts(BOARD)
    (tmp_path / "Makefile").write_text(
        "include $(MODEL)/mcu_model.mk\n"
        "CC := arm-none-eabi-gcc\n"
        f"CFLAGS := $(MCU_MODEL_TARGET_FLAGS) $(MCU_MODEL_CFLAGS) {STRICT} $(MCU_MODEL_INCLUDES) -I{common}\n"
        f"fw.elf: $(MCU_MODEL_SRCS) {' '.join(common_c)}\n"
        f"\t$(CC) $(CFLAGS) $^ $(MCU_MODEL_LDFLAGS) {shlex.join(ldflags)} $(MCU_MODEL_LDLIBS) -o $@\n")
    sh(["make", f"MODEL={pkg.out_dir}"], tmp_path)
    res = run_firmware(tmp_path / "fw.elf", BOARD, sample[1])
    assert res.status == 0
    assert_output(pkg, res.output_bytes, sample[2])


@emulated
@needs("cmake", "make")
def test_cmake_firmware_runs_on_qemu(pkg, sample, tmp_path):
    common, common_c, ldflags = firmware_parts(BOARD)
    (tmp_path / "CMakeLists.txt").write_text(CMAKE_APP.format(
        model=pkg.out_dir, target="fw.elf", sources=" ".join(common_c), includes=common,
        link=" ".join(f'"{f}"' for f in ldflags)))
    target_flags = " ".join(load_board(BOARD).target_flags())
    sh(["cmake", "-S", ".", "-B", "build", "-DCMAKE_SYSTEM_NAME=Generic", "-DCMAKE_C_COMPILER=arm-none-eabi-gcc",
        "-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY", f"-DCMAKE_C_FLAGS={target_flags} {STRICT}"], tmp_path)
    sh(["cmake", "--build", "build"], tmp_path)
    res = run_firmware(tmp_path / "build" / "fw.elf", BOARD, sample[1])
    assert res.status == 0
    assert_output(pkg, res.output_bytes, sample[2])


# ---- a non-editable install ------------------------------------------------------------------------


TINY_MODEL = '''"""A tiny model for the install test: module:function returning (model, example_inputs)."""
import torch
from torch import nn


def tiny():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    return model.eval(), (torch.randn(1, 1, 6, 6),)
'''
SOURCES = ("pyproject.toml", "setup.py", "README.md", "mcu", "codegen", "memory_planner", "qemu", "templates", "boards",
           "runtime_c")


def _fresh_venv(where: Path) -> Path:
    """A new virtual environment with no mcu in it: the dependencies (torch, torchao, ...) come from this test's
    environment through a .pth line (not reinstalled), whose editable mcu stays out (its .pth is never read)."""
    import site
    import venv
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


@emulated
def test_installed_wheel_compiles_and_runs(tmp_path):
    """pip wheel, installed into a fresh virtual environment (no source tree on its path, no editable finder); its
    `mcu` command, run from another folder, compiles and runs a model."""
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:  # a copy, so the build leaves no build/ or egg-info in the checkout
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    sh([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), "."], src)
    wheel, = (tmp_path / "dist").glob("mcu-*.whl")
    python = _fresh_venv(tmp_path / "venv")
    sh([*pip, "--python", str(python), "install", "--no-deps", str(wheel)], tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "tinymodel.py").write_text(TINY_MODEL)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(work)  # the user's model module, nothing of mcu's

    where = subprocess.run([str(python), "-c", "import mcu.codegen.kernels, mcu.cli, mcu.tools.bench, mcu.boards; "
                            "print(mcu.__file__); print(mcu.codegen.kernels.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr[-3000:]
    for line in where.stdout.split():
        assert Path(line).is_relative_to(tmp_path / "venv"), where.stdout
    site_mcu = Path(where.stdout.split()[0]).parent
    for data in ("build/firmware.scons", "templates/model.c.j2", "templates/dropin/CMakeLists.txt.j2",
                 "boards/microbit/board.toml", "boards/common/startup.c", "runtime_c/include/mcu/mcu_kernels.h"):
        assert (site_mcu / data).is_file(), f"the wheel lacks mcu/{data}"

    def cli(*args):
        proc = subprocess.run([str(python.parent / "mcu"), *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, f"mcu {' '.join(args)}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        return proc.stdout

    cli("compile", "tinymodel:tiny", "--board", "microbit", "-o", "out")
    assert (work / "out" / "mcu_model.mk").is_file() and (work / "out" / RUNTIME_DIR).is_dir()
    assert "device == numpy reference: yes" in cli("run", "out")
