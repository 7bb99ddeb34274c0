"""A firmware of a bundle built outside the tree, as a user builds it: its own main.c over the bundle's make fragment
or CMake target, the shared board harness without mcu's main.c, and the board's linker script.

main.c runs the bundle's models in turn (each one input, one output), then the first again, over ONE arena of
MCU_BUNDLE_ARENA_BYTES: input.bin holds each model's input in order, output.bin receives each output in order and
the first model's again.
"""
from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from mcu.boards import load_board
from mcu.paths import package_root

STRICT = "-Wall -Wextra -Werror"

MAIN = r"""/* Runs {names}, then {first} again over ONE arena of MCU_BUNDLE_ARENA_BYTES; input.bin -> output.bin. */
#include <stdint.h>

#include "mcu_bundle.h"
#include "semihost.h"

static uint8_t arena[MCU_BUNDLE_ARENA_BYTES] __attribute__((aligned(MCU_BUNDLE_ARENA_ALIGN))) MCU_BUNDLE_ARENA_PLACE;
{buffers}static int8_t again[{FIRST}_OUTPUT0_BYTES];

int main(void)
{{
    int32_t in = mcu_sh_open("input.bin", MCU_SH_MODE_RB);
    if (in < 0{reads}) {{
        mcu_sh_puts("MCU_ERROR input.bin\n");
        mcu_sh_exit(0);
    }}
    mcu_sh_close(in);
    mcu_status_t status = MCU_OK;
{runs}    if (status == MCU_OK) {{
        status = {first}_run({first}_in, again, arena);
    }}
    int32_t out = mcu_sh_open("output.bin", MCU_SH_MODE_WB);
{writes}    (void)mcu_sh_write(out, again, sizeof again);
    mcu_sh_close(out);
    char line[96];
    char *p = mcu_fmt_str(line, "MCU_DONE status=");
    p = mcu_fmt_i32(p, (int32_t)status);
    mcu_fmt_str(p, " ticks=0 overhead=0 stack=0\n");
    mcu_sh_puts(line);
    mcu_sh_exit(1);
}}
"""


def main_c(names: list[str]) -> str:
    """MAIN for the models `names`, in that order."""
    return MAIN.format(
        names=", ".join(names), first=names[0], FIRST=names[0].upper(),
        buffers="".join(f"static int8_t {n}_in[{n.upper()}_INPUT0_BYTES], {n}_out[{n.upper()}_OUTPUT0_BYTES];\n"
                        for n in names),
        reads="".join(f" ||\n        mcu_sh_read(in, {n}_in, sizeof {n}_in) != sizeof {n}_in" for n in names),
        runs="".join(f"    if (status == MCU_OK) {{\n        status = {n}_run_sized({n}_in, {n}_out, arena, "
                     f"sizeof arena);\n    }}\n" for n in names),
        writes="".join(f"    (void)mcu_sh_write(out, {n}_out, sizeof {n}_out);\n" for n in names))


def sh(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"$ {shlex.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def harness(board: str) -> tuple[Path, list[str], list[str]]:
    """boards/common without its main.c (the test brings its own), and the board's link flags."""
    common = package_root("mcu.boards") / "common"
    return common, sorted(str(p) for p in common.glob("*.c") if p.name != "main.c"), load_board(board).ldflags()


def build_make(b, board: str, app: Path) -> Path:
    """fw.elf of bundle b built with plain make and its mcu_bundle.mk."""
    common, common_c, ldflags = harness(board)
    (app / "main.c").write_text(main_c(b.names))
    (app / "Makefile").write_text(
        "include $(BUNDLE)/mcu_bundle.mk\n"
        "CC := arm-none-eabi-gcc\n"
        f"CFLAGS := $(MCU_BUNDLE_TARGET_FLAGS) $(MCU_BUNDLE_CFLAGS) {STRICT} $(MCU_BUNDLE_INCLUDES) -I{common}\n"
        f"fw.elf: main.c $(MCU_BUNDLE_SRCS) {' '.join(common_c)}\n"
        f"\t$(CC) $(CFLAGS) $^ $(MCU_BUNDLE_LDFLAGS) {shlex.join(ldflags)} $(MCU_BUNDLE_LDLIBS) -o $@\n")
    sh(["make", f"BUNDLE={b.out_dir}"], app)
    return app / "fw.elf"


CMAKE_APP = """cmake_minimum_required(VERSION 3.13)
project(app C)
add_subdirectory({bundle} mcu_bundle)
add_executable(fw.elf main.c {sources})
target_include_directories(fw.elf PRIVATE {common})
target_link_libraries(fw.elf PRIVATE mcu_bundle)
target_link_options(fw.elf PRIVATE {link})
"""


def build_cmake(b, board: str, app: Path) -> Path:
    """fw.elf of bundle b built with plain CMake and its target mcu_bundle."""
    common, common_c, ldflags = harness(board)
    (app / "main.c").write_text(main_c(b.names))
    (app / "CMakeLists.txt").write_text(CMAKE_APP.format(bundle=b.out_dir, sources=" ".join(common_c), common=common,
                                                         link=" ".join(f'"{f}"' for f in ldflags)))
    flags = " ".join(load_board(board).target_flags())
    sh(["cmake", "-S", ".", "-B", "build", "-DCMAKE_SYSTEM_NAME=Generic", "-DCMAKE_C_COMPILER=arm-none-eabi-gcc",
        "-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY", f"-DCMAKE_C_FLAGS={flags} -O2 {STRICT}"], app)
    sh(["cmake", "--build", "build"], app)
    return app / "build" / "fw.elf"
