"""Static checks of the C: generated models and the runtime compile warning-free under the strict warning set on
arm-none-eabi-gcc and the host gcc, cppcheck finds nothing, and every zoo model's worst-case stack (mcu.build.stack) is
under a stated bound and never below what the firmware harness measures."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import mcu
from mcu.boards import load_board
from mcu.paths import package_root
from mcu.build.stack import StackReport, _count_regs, _prologue_bytes, read_su, stack_depth
from mcu.zoo import MODELS, calibration_set
from tests.opmodels import make
from test_sanitized import locked, zoo_package

STRICT = ("-Wall", "-Wextra", "-Wshadow", "-Wdouble-promotion", "-Wcast-align", "-Werror")
RUNTIME = package_root("mcu.runtime_c")
COMMON = package_root("mcu.boards") / "common"
BOARDS = ["mps2-an385", "mps2-an386", "mps3-an547"]  # Cortex-M3, M4F (DSP), M55 (MVE)
# The worst model_run stack of the zoo on these boards: IC's, through mcu_add_s8_fast, whose two 256-entry int32
# rescale tables (2 KB, mcu_kernels.h) are the one large frame left (2,296 B in all), since the variants' pixel
# windows, widened rows and padding rows are scratch planned in the arena. Every other function keeps its frame
# under FRAME_BOUND (the next largest: mcu_avgpool2d_s8_fast's 512 B of lanes), so a layer-sized buffer back on the
# stack fails here in whichever model it lands; the portable kernels need under 200 bytes.
# Since the Helium depthwise driver (shared/mcu_dw_s8_mve.c), KWS on the M55 is worse: its `row` holds a 512-entry
# table of column pointers (2 KB) and its `pixels` a pixel's 16 pass records and tables (1.8 KB), 4,824 B on the
# path in all (3,168 B measured). Left to do: those tables into the planned scratch.
MODEL_STACK_BOUND = 4864
FRAME_BOUND = 640
# the add tables (and the 16-bit-multiplier DSP add's 512 bytes of a repeated row's copies); the Helium depthwise's
# row and pixels
TABLE_FRAMES = {"mcu_add_s8_fast", "mcu_add_s8_mve", "add16_dsp", "row", "pixels"}

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc not installed")


def compile_c(cc: list[str], source: Path, includes, out: Path) -> str:
    """Compiler diagnostics of compiling source to an object ('' when clean)."""
    res = subprocess.run([*cc, *(f"-I{i}" for i in includes), "-c", str(source), "-o", str(out)],
                         capture_output=True, text=True)
    return res.stderr if res.returncode else ""


def host_cc() -> list[str]:
    return ["gcc", "-std=c99", "-O2", *STRICT]


def arm_cc(board: str) -> list[str]:
    return ["arm-none-eabi-gcc", *load_board(board).cflags(), *STRICT]


# ---- warnings ----------------------------------------------------------------------------------------------------

@pytest.mark.host_c
@needs_arm
@pytest.mark.parametrize("name", sorted(MODELS))
def test_generated_zoo_model_is_warning_free(name, tmp_path):
    """model.c for the host and each core family; weights.c (const arrays, the same for every core) for the host and
    one core."""
    pkg = zoo_package(name)
    includes = [RUNTIME / "include", pkg.out_dir]
    compilers = [("host gcc", host_cc()), *((b, arm_cc(b)) for b in BOARDS)]
    jobs = [(c, "model.c") for c in compilers] + [(c, "weights.c") for c in compilers[:2]]
    errors = {f"{cc_name}: {src}": diag for (cc_name, cc), src in jobs
              if (diag := compile_c(cc, pkg.out_dir / src, includes, tmp_path / "x.o"))}
    assert not errors, errors


@pytest.mark.host_c
@needs_arm
@pytest.mark.parametrize("board", BOARDS)
def test_board_and_runtime_code_is_warning_free(board, tmp_path):
    """The harness, startup and semihosting code of every core family, and runtime_c/core, under the strict set
    (the kernels are checked per core by tests/test_kernels_host.py with the same flags)."""
    model_dir = zoo_package("ad").out_dir  # main.c includes a model.h
    includes = [RUNTIME / "include", COMMON, load_board(board).directory, model_dir]
    sources = sorted(COMMON.glob("*.c")) + sorted((RUNTIME / "core").glob("*.c"))
    errors = {s.name: d for s in sources if (d := compile_c(arm_cc(board), s, includes, tmp_path / "x.o"))}
    assert not errors, errors


@pytest.mark.host_c
@needs_arm
def test_float_fallback_model_is_cast_align_clean_on_arm(tmp_path):
    """float (and int32) arena tensors: model.c casts the arena's bytes through void *, which -Wcast-align accepts.
    A group norm's statistic is a float island (layer norm, the example before, is integer now)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.GroupNorm(2, 4)).eval()
    example = (torch.randn(1, 3, 6, 6),)
    pkg = mcu.compile(model, example, calibration=[(torch.randn(1, 3, 6, 6),) for _ in range(4)] + [example],
                      out_dir=tmp_path / "pkg")
    assert any(t.dtype == "float32" and not t.is_const for t in pkg.graph.tensors.values())
    assert not compile_c(arm_cc("mps2-an386"), pkg.out_dir / "model.c", [RUNTIME / "include", pkg.out_dir],
                         tmp_path / "x.o")


# ---- cppcheck ----------------------------------------------------------------------------------------------------

# A kernel file's file-scope names: static functions and tables, typedefs, and the functions a loop template
# (mcu_*_loop.h) defines under the name the file gives it. Two files sharing one cannot share a translation unit.
_FILE_SCOPE = re.compile(r"^(?:static\b[^;{(=]*?\b(\w+)\s*[(\[=]|typedef\b[^;]*?\b(\w+)\s*;"
                         r"|#define\s+MCU_\w*_LOOP\s+(\w+))", re.M)
_MACRO = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)


def unity_sources(sources: list[Path], out_dir: Path, most: int = 64) -> list[Path]:
    """The kernel files grouped into as few translation units (of at most `most` files: two large ones keep
    cppcheck's two jobs busy) as their file-scope names allow, each file's macros #undef'd after it, so cppcheck
    analyses the shared headers (mcu_util.h, mcu_opt.h: ~1 s a unit) once a group instead of once a file. The
    diagnostics still name the kernel file and line."""
    groups: list[tuple[set[str], list[Path]]] = []
    for src in sources:
        text = src.read_text()
        names = {n for m in _FILE_SCOPE.finditer(text) for n in m.groups() if n}
        group = next((g for g in groups if not g[0] & names and len(g[1]) < most), None)
        if group is None:
            group = (set(), [])
            groups.append(group)
        group[0].update(names)
        group[1].append(src)
    units = []
    for i, (_, files) in enumerate(groups):
        lines = []
        for src in files:
            lines.append(f'#include "{src}"')
            lines += [f"#undef {m}" for m in dict.fromkeys(_MACRO.findall(src.read_text()))]
        units.append(out_dir / f"kernels_{i}.c")
        units[-1].write_text("\n".join(lines) + "\n")
    return units


@pytest.mark.host_c
def test_cppcheck_is_clean(tmp_path):
    """cppcheck (warning, portability, performance) over the runtime, the board code and the generated zoo code.

    - The portable configuration only (-D__GNUC__): the DSP/Helium paths include arm_acle.h / arm_mve.h, which
      cppcheck does not have, and every extra #if configuration costs a full pass.
    - The kernels in a few unity translation units (unity_sources), not one unit a file.
    - weights.c is data only; a small model's stands for all (a zoo weights.c takes cppcheck a minute).
    - Suppressed: comparePointers in startup.c and main.c, which walk from one linker symbol to another
      (__data_start__ .. __data_end__, __stack_bottom .. __stack_top). ISO C leaves comparing pointers into
      different objects undefined; for linker-placed regions it is the standard embedded idiom and gcc defines it.
    """
    cppcheck = shutil.which("cppcheck")
    if cppcheck is None:
        pytest.skip("cppcheck not installed (./dev setup installs it)")
    small, example, calib = make("conv3x3_relu")
    small_pkg = mcu.compile(small, example, calibration=calib, out_dir=tmp_path / "small")
    models = [zoo_package(name).out_dir for name in sorted(MODELS)]
    kernels = unity_sources(sorted((RUNTIME / "kernels").glob("*/*.c")), tmp_path)
    assert len(kernels) <= 12, len(kernels)
    sources = [*kernels, *sorted((RUNTIME / "core").glob("*.c")), *sorted(COMMON.glob("*.c")),
               *(m / "model.c" for m in models), small_pkg.out_dir / "weights.c"]
    cmd = [cppcheck, "--error-exitcode=1", "--enable=warning,portability,performance", "--std=c99", "--quiet",
           "--inline-suppr", "-D__GNUC__", "-j", "2", f"-I{RUNTIME / 'include'}", f"-I{COMMON}", f"-I{models[0]}",
           f"--suppress=comparePointers:{COMMON / 'startup.c'}", f"--suppress=comparePointers:{COMMON / 'main.c'}",
           *map(str, sources)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


@pytest.mark.host_c
def test_unity_sources_keep_file_scope_names_apart_and_still_find_bugs(tmp_path):
    a, b, c = (tmp_path / f"{n}.c" for n in "abc")
    a.write_text("#define CHUNK 4\nstatic int row(int i) { return i * CHUNK; }\nint ka(int i) { return row(i); }\n")
    b.write_text("#define CHUNK 8\nstatic int row(int i) { return i + CHUNK; }\nint kb(int i) { return row(i); }\n")
    c.write_text("int kc(int i) { int a[4]; a[4] = i; return a[0]; }\n")
    units = unity_sources([a, b, c], tmp_path)
    assert [u.read_text().count("#include") for u in units] == [2, 1]
    assert "#undef CHUNK" in units[0].read_text()
    cppcheck = shutil.which("cppcheck")
    if cppcheck is None:
        pytest.skip("cppcheck not installed (./dev setup installs it)")
    res = subprocess.run([cppcheck, "--error-exitcode=1", "--quiet", *map(str, units)], capture_output=True, text=True)
    assert res.returncode == 1 and f"{c}:1:" in res.stderr and "arrayIndexOutOfBounds" in res.stderr, res.stderr


# ---- stack -------------------------------------------------------------------------------------------------------

def test_su_files_and_prologues_are_read(tmp_path):
    (tmp_path / "a.su").write_text("a.c:3:5:f\t24\tstatic\na.c:9:5:g\t8\tdynamic,bounded\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.su").write_text("b.c:1:1:f\t40\tstatic\nb.c:5:1:h\t16\tdynamic\n")
    assert read_su(tmp_path) == ({"f": 40, "g": 8, "h": 16}, {"h"})  # a name in two files: its largest frame
    assert _count_regs("r4, r5, r6, r7, lr") == 5 and _count_regs("r4-r11, lr") == 9 and _count_regs("d8-d15") == 8
    insns = [("push", "{r4, r5, r6, lr}"), ("vpush", "{d8-d9}"), ("sub", "sp, #40"), ("stmdb", "sp!, {r4, r5}"),
             ("sub.w", "sp, sp, #1024"), ("add", "sp, #40"), ("pop", "{r4, r5, r6, pc}")]
    assert _prologue_bytes(insns) == 16 + 16 + 40 + 8 + 1024


@pytest.mark.qemu
@needs_arm
@pytest.mark.parametrize("name, board", [(n, "mps2-an386") for n in sorted(MODELS)]
                         + [("kws", "mps2-an385"), ("kws", "mps3-an547")])
def test_zoo_stack_is_bounded_and_covers_the_measured_peak(name, board):
    pkg = zoo_package(name, board)
    with locked(pkg.out_dir):
        report: StackReport = stack_depth(pkg)
        res = mcu.run(pkg, calibration_set(name, 1, seed=77)[0], timeout=300)
    print(f"{name} on {board}: model {report.model} B, firmware {report.firmware} B, measured {res.stack_bytes} B; "
          f"{' -> '.join(report.path)}")
    assert report.bounded, report.format()
    assert report.model <= MODEL_STACK_BOUND, report.format()
    large = {f: b for f, b in report.frames.items() if b > FRAME_BOUND and f not in TABLE_FRAMES}
    assert not large, (large, report.format())
    assert res.stack_bytes <= report.firmware, (res.stack_bytes, report.format())
    # the static worst path is the one taken, bar the Helium depthwise driver's `pixels` (the 3x3 variant's pixel by
    # pixel branch) and the planar one's `planar_channel` (its per-channel bands: for a channel with a shift >= 0),
    # which KWS's layers do not take
    untaken = sum(report.frames.get(f, 0) for f in ("pixels", "planar_channel") if f in report.path)
    assert report.model - untaken <= res.stack_bytes, \
        (res.stack_bytes, report.format())
    assert report.firmware <= load_board(board).stack_bytes


def test_python_sources_have_no_undefined_or_unused_names():
    """pyflakes' rules (ruff --select F) over every Python source: an undefined name is a crash waiting for the
    one path no other test takes (a merge once left mcu bench --numerics calling a function that was gone)."""
    root = Path(__file__).resolve().parents[1]
    folders = ["mcu", "codegen", "memory_planner", "qemu", "boards", "scripts", "tests", "setup.py"]
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "F", "--output-format", "concise",
                           "--no-cache", *folders], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
