"""Boards, firmware build, QEMU runs and the size report, on the hand-made echo fixture (tests/fixtures/echo_model).

The fixture computes out[i] = in[i] + weights[i] (int8, wrapping) on 64 bytes and spins a loop of exactly
2 instructions per iteration (subs; bne), so instruction counts have a known delta. Variants of it
(loop count, fault, hang) are copies with a different echo_config.h.
"""
from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from mcu.boards import WARNING_CFLAGS, board_names, list_boards, load_board
from mcu.build.firmware import build_firmware
from mcu.errors import (
    BuildError,
    FirmwareError,
    HardFaultError,
    NotEmulatedError,
    QemuNotFoundError,
    QemuTimeoutError,
    StackOverflowError,
    UnknownBoardError,
)
from mcu.paths import package_root
from mcu.qemu.runner import run_firmware
from mcu.build.elfsize import size_report

FIXTURE = Path(__file__).parent / "fixtures" / "echo_model"
EMULATED = ["mps2-an385", "mps2-an386", "mps3-an547"]
SPIN_SHORT, SPIN_LONG = 1_000, 1_001_000  # the long run is 2,000,000 instructions more

HAVE_GCC = shutil.which("arm-none-eabi-gcc") is not None
HAVE_QEMU = shutil.which("qemu-system-arm") is not None
needs_gcc = pytest.mark.skipif(not HAVE_GCC, reason="arm-none-eabi-gcc not installed (./dev setup)")
needs_qemu = pytest.mark.skipif(not HAVE_QEMU, reason="qemu-system-arm not installed (./dev setup)")


def firmware(test):
    """Builds firmware (marker qemu: the firmware tier)."""
    return pytest.mark.qemu(needs_gcc(test))


def emulated(test):
    """Builds firmware and runs it on QEMU."""
    return needs_qemu(firmware(test))


def echo_weights() -> np.ndarray:
    body = (FIXTURE / "weights.c").read_text().split("{", 1)[1].split("}", 1)[0]
    return np.array([int(v) for v in re.findall(r"-?\d+", body)], dtype=np.int8)


def echo_expected(x: np.ndarray) -> bytes:
    return ((x.astype(np.int32) + echo_weights()) & 0xFF).astype(np.uint8).tobytes()


def echo_input(seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).integers(-128, 128, size=64).astype(np.int8)
    x[:4] = [127, -128, 127, -128]  # wrap-around in both directions
    return x


def assert_bytes_equal(got: bytes, want: bytes) -> None:
    assert len(got) == len(want), f"got {len(got)} bytes, want {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"first mismatch at byte {i}: got {g}, want {w}"


_built: dict[tuple, Path] = {}


@pytest.fixture(scope="module")
def build_echo(tmp_path_factory):
    """build_echo(board, spin=..., mode=...) -> fw.elf of that fixture variant (built once per module)."""

    def build(board: str, spin: int = SPIN_SHORT, mode: str = "ECHO_MODE_NORMAL") -> Path:
        key = (board, spin, mode)
        if key not in _built:
            root = tmp_path_factory.mktemp(f"{board}-{mode.lower()}-{spin}")
            model = root / "model"
            shutil.copytree(FIXTURE, model)
            (model / "echo_config.h").write_text(f"#define ECHO_SPIN_LOOPS {spin}u\n#define ECHO_MODE {mode}\n")
            _built[key] = build_firmware(board, model, root / "build")
        return _built[key]

    return build


# ---- boards (host only) ------------------------------------------------------------------------------


def test_load_board_fields_and_flags():
    m4 = load_board("mps2-an386")
    assert (m4.cpu, m4.fpu, m4.float_abi, m4.dsp, m4.mve) == ("cortex-m4", "fpv4-sp-d16", "hard", True, False)
    assert (m4.flash_origin, m4.flash_size, m4.ram_origin, m4.ram_size) == (0, 4 << 20, 0x20000000, 4 << 20)
    assert m4.emulated and m4.qemu_machine == "mps2-an386" and m4.systick_hz == 25_000_000
    assert m4.cflags()[:4] == ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
    assert all(f in m4.cflags() for f in ("-O2", "-ffunction-sections", "-fdata-sections", *WARNING_CFLAGS))
    ld = m4.ldflags("out/fw.map")
    for flag in ("-nostartfiles", "--specs=nano.specs", "-Wl,--gc-sections", "-Wl,-Map=out/fw.map",
                 f"-T{m4.directory / 'linker.ld'}", "-Wl,--defsym=__stack_size=16384"):
        assert flag in ld
    m3 = load_board("mps2-an385")
    assert "-mfloat-abi=soft" in m3.cflags() and not any(f.startswith("-mfpu") for f in m3.cflags())
    with pytest.raises(dataclasses.FrozenInstanceError):
        m4.cpu = "cortex-m0"


def test_list_boards():
    names = [b.name for b in list_boards()]
    assert names == sorted(names) == board_names()
    assert set(EMULATED) <= set(names)


def test_unknown_board_suggests_close_name():
    with pytest.raises(UnknownBoardError, match=r"did you mean mps2-an386") as e:
        load_board("mps2-an368")
    assert "known boards:" in str(e.value)


@pytest.mark.parametrize("name", board_names())
def test_linker_memory_matches_board_toml(name):
    board = load_board(name)
    script = board.linker_script.read_text()
    units = {"K": 1 << 10, "M": 1 << 20, "": 1}
    for region, origin, size in (("FLASH", board.flash_origin, board.flash_size),
                                 ("RAM", board.ram_origin, board.ram_size)):
        m = re.search(rf"{region}\s*\(\w+\)\s*:\s*ORIGIN\s*=\s*(0x[0-9A-Fa-f]+),\s*LENGTH\s*=\s*(\d+)([KM]?)",
                      script)
        assert m, f"{board.linker_script}: no {region} line"
        assert (int(m.group(1), 16), int(m.group(2)) * units[m.group(3)]) == (origin, size), region
    assert "INCLUDE sections.ld" in script


@needs_gcc
@pytest.mark.parametrize("name", board_names())
def test_board_features_match_the_compiler(name):
    """dsp / mve / fpu in board.toml agree with what the compiler defines for the board's flags."""
    board = load_board(name)
    macros = subprocess.run(["arm-none-eabi-gcc", *board.target_flags(), "-dM", "-E", "-"], input="",
                            capture_output=True, text=True, check=True).stdout
    assert ("__ARM_FEATURE_DSP 1" in macros) == board.dsp
    assert ("__ARM_FEATURE_MVE" in macros) == board.mve
    assert ("__ARM_FP " in macros) == (board.float_abi != "soft")


def test_not_emulated_and_qemu_missing(monkeypatch, tmp_path):
    build_only = dataclasses.replace(load_board("mps2-an386"), qemu_machine=None)
    assert not build_only.emulated
    with pytest.raises(NotEmulatedError, match="no \\[qemu\\] section"):
        run_firmware(tmp_path / "fw.elf", build_only, b"")
    monkeypatch.setattr("mcu.qemu.runner.shutil.which", lambda name: None)
    with pytest.raises(QemuNotFoundError, match="apt-get install qemu-system-arm"):
        run_firmware(tmp_path / "fw.elf", "mps2-an386", b"")


# ---- firmware: build -----------------------------------------------------------------------------


@firmware
def test_startup_builds_and_runs_as_thumb1(tmp_path):
    """The shared board code builds warning-free for Cortex-M0 (ARMv6-M); its Thumb-1 code also runs on the M3."""
    board = dataclasses.replace(load_board("mps2-an385"), cpu="cortex-m0")
    common = package_root("mcu.boards") / "common"
    for mode, name in (("ECHO_MODE_NORMAL", "ok"), ("ECHO_MODE_FAULT", "fault")):
        model = tmp_path / name
        shutil.copytree(FIXTURE, model)
        (model / "echo_config.h").write_text(f"#define ECHO_SPIN_LOOPS 10u\n#define ECHO_MODE {mode}\n")
        elf = tmp_path / f"{name}.elf"
        subprocess.run(["arm-none-eabi-gcc", *board.cflags(), f"-I{package_root('mcu.runtime_c') / 'include'}",
                        f"-I{model}", f"-I{common}", *map(str, sorted(common.glob("*.c"))),
                        str(model / "model.c"), str(model / "weights.c"), *board.ldflags(), "-o", str(elf)],
                       check=True, capture_output=True, text=True)
        if not HAVE_QEMU:
            continue
        x = echo_input()
        if mode == "ECHO_MODE_NORMAL":
            assert_bytes_equal(run_firmware(elf, "mps2-an385", x.tobytes()).output_bytes, echo_expected(x))
        else:
            with pytest.raises(HardFaultError) as e:
                run_firmware(elf, "mps2-an385", x.tobytes())
            assert e.value.function == "echo_fault_read" and e.value.cfsr is None  # ARMv6-M: no CFSR


@firmware
def test_build_errors_carry_the_compiler_output(tmp_path):
    model = tmp_path / "model"
    shutil.copytree(FIXTURE, model)
    with (model / "echo_config.h").open("a") as f:
        f.write("static int echo_never_used;\n")  # -Wall -Werror: defined but not used
    with pytest.raises(BuildError, match="echo_never_used"):
        build_firmware("mps2-an386", model, tmp_path / "build")
    (model / "manifest.json").write_text('{"kernels": ["conv/mcu_no_such_kernel_s8"]}')
    with pytest.raises(BuildError, match="conv/mcu_no_such_kernel_s8"):
        build_firmware("mps2-an386", model, tmp_path / "build")


@firmware
def test_objects_that_do_not_see_the_model_come_from_the_build_cache(tmp_path, monkeypatch):
    """Kernels and board code (all but the harness's main.c) are the same objects for every model on a board:
    a second build in another folder takes them from MCU_BUILD_CACHE, each with its stack-usage file; the model's
    own files and main.c are compiled; "off" caches nothing."""
    model = tmp_path / "model"
    shutil.copytree(FIXTURE, model)
    (model / "manifest.json").write_text('{"kernels": ["elementwise/mcu_add_s8"]}')
    monkeypatch.setenv("MCU_BUILD_CACHE", str(tmp_path / "cache"))
    first, second = (build_firmware("mps2-an386", model, tmp_path / b).parent for b in ("b1", "b2"))
    cached = {p.name for p in (tmp_path / "cache").rglob("*") if re.fullmatch(r"[0-9a-f]{32}", p.name)}
    assert len(cached) == 2 * 4, cached  # mcu_add_s8, startup, semihost, systick: .o and .su each
    for obj in ("kernels/elementwise/mcu_add_s8", "board/startup", "board/main", "model/model"):
        assert (second / f"{obj}.su").is_file(), obj
    for obj in ("kernels/elementwise/mcu_add_s8", "board/startup"):  # the first build's (debug info names its folder)
        assert (first / f"{obj}.o").read_bytes() == (second / f"{obj}.o").read_bytes()
    assert (first / "board/main.o").read_bytes() != (second / "board/main.o").read_bytes()
    monkeypatch.setenv("MCU_BUILD_CACHE", "off")
    build_firmware("mps2-an386", model, tmp_path / "b3")
    assert (tmp_path / "b3" / "kernels" / "elementwise" / "mcu_add_s8.su").is_file()
    assert {p.name for p in (tmp_path / "cache").rglob("*") if re.fullmatch(r"[0-9a-f]{32}", p.name)} == cached


# ---- firmware: QEMU runs, per emulated board -------------------------------------------------------


@emulated
@pytest.mark.parametrize("board", EMULATED)
def test_echo_output_is_exact(board, build_echo):
    x = echo_input()
    res = run_firmware(build_echo(board), board, x.tobytes())
    assert res.status == 0
    assert_bytes_equal(res.output_bytes, echo_expected(x))
    # The spin loop is 2 * SPIN_SHORT instructions; the rest of model_run_v is a few hundred.
    assert 2 * SPIN_SHORT <= res.instructions <= 2 * SPIN_SHORT + 1_000, res.stdout
    assert 0 < res.stack_bytes < 1_024  # harness + model_run_v frames
    assert "MCU_DONE status=0" in res.stdout


@emulated
def test_wrong_input_size_is_a_firmware_error(build_echo):
    with pytest.raises(FirmwareError, match="input.bin has 10 bytes, expected 64"):
        run_firmware(build_echo("mps2-an386"), "mps2-an386", bytes(10))


@emulated
@pytest.mark.parametrize("board", EMULATED)
def test_instruction_count_delta_matches_the_loop(board, build_echo):
    """SysTick calibration: 1,000,000 more subs/bne iterations = 2,000,000 more instructions, to 2 ticks."""
    x = echo_input().tobytes()
    short = run_firmware(build_echo(board, SPIN_SHORT), board, x)
    long = run_firmware(build_echo(board, SPIN_LONG), board, x)
    tolerance = 2 * 10**9 / load_board(board).systick_hz  # two ticks: 80 instructions at 25 MHz
    delta = long.instructions - short.instructions
    assert abs(delta - 2 * (SPIN_LONG - SPIN_SHORT)) <= tolerance, (short.stdout, long.stdout)


@emulated
@pytest.mark.parametrize("board", EMULATED)
def test_hard_fault_names_the_function(board, build_echo):
    with pytest.raises(HardFaultError) as e:
        run_firmware(build_echo(board, mode="ECHO_MODE_FAULT"), board, echo_input().tobytes())
    err = e.value
    assert err.function == "echo_fault_read"
    assert err.cfsr is not None and err.cfsr & (1 << 9)  # PRECISERR: read of an unmapped address
    assert "echo_fault_read" in str(err) and "model_run_v" in str(err) and "PRECISERR" in str(err)


@emulated
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])  # below RAM: read-as-zero vs. bus fault
def test_stack_overflow_is_reported(board, build_echo):
    with pytest.raises(StackOverflowError, match=r"overflowed its stack .* the stack is 16384 bytes"):
        run_firmware(build_echo(board, mode="ECHO_MODE_STACK_OVERFLOW"), board, echo_input().tobytes())


@emulated
def test_hang_times_out(build_echo):
    elf = build_echo("mps2-an386", mode="ECHO_MODE_HANG")
    start = time.monotonic()
    with pytest.raises(QemuTimeoutError, match=r"within 1\.5 s") as e:
        run_firmware(elf, "mps2-an386", echo_input().tobytes(), timeout=1.5)
    assert time.monotonic() - start < 10
    assert str(elf) in str(e.value)


@emulated
def test_systick_wraps_are_counted(build_echo):
    """A run longer than one 2^24-tick SysTick period (524M instructions at 32 MHz) is still timed right."""
    spin = 270_001_000
    board = "mps3-an547"
    res = run_firmware(build_echo(board, spin), board, echo_input().tobytes())
    assert res.ticks > 1 << 24
    assert 2 * spin <= res.instructions <= 2 * spin + 1_000, res.stdout


@firmware
@pytest.mark.parametrize("board", EMULATED)
def test_size_report_adds_up(board, build_echo):
    elf = build_echo(board)
    b = load_board(board)
    report = size_report(elf, elf.parent, b)
    parts = (report.flash_weights, report.flash_generated, report.flash_kernels, report.flash_runtime,
             report.flash_other)
    assert sum(parts) == report.flash_total
    # Cross-check with binutils: flash = text (vectors, code, rodata) + data (its load image).
    text, data = subprocess.run(["arm-none-eabi-size", str(elf)], capture_output=True, text=True,
                                check=True).stdout.splitlines()[1].split()[:2]
    assert report.flash_total == int(text) + int(data)
    assert report.flash_weights >= echo_weights().size
    assert report.flash_generated > 0 and report.flash_kernels == 0 and report.flash_runtime == 0
    assert report.flash_other > 0
    assert (report.ram_arena, report.ram_stack) == (64, b.stack_bytes)
    assert report.ram_total == report.ram_arena + report.ram_static + report.ram_stack
    assert report.as_dict()["flash_total"] == report.flash_total
    assert "weights" in report.format() and f"% of {b.flash_size // 1024:,} KB" in report.format()
