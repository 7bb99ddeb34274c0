"""Memory placement without editing generated files: a drop-in package built with plain make for mps2-an386 against a
test-local linker script (the board's memory map with the last MB of its flash as EXT_FLASH and of its RAM as TCM).

- -DMODEL_WEIGHTS_SECTION='".ext_weights"' (over -DMCU_WEIGHTS_SECTION, which names a section the script lacks) puts
  every weights array in .ext_weights, inside EXT_FLASH; -DMODEL_STATIC_ARENA -DMCU_ARENA_SECTION='".tcm_arena"'
  makes model.c define model_arena, inside TCM (NOLOAD: no bytes in the image). Checked with pyelftools.
- The same package bundled (mcu bundle): -DMCU_WEIGHTS_SECTION and -DMCU_ARENA_SECTION place its weights and the
  shared arena the application declares with MCU_BUNDLE_ARENA_PLACE.
- The firmware runs on QEMU and its output equals the numpy reference bit for bit.
"""
from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from elftools.elf.elffile import ELFFile
from torch import nn

import mcu
from mcu.boards import load_board
from mcu.paths import package_root
from mcu.qemu.runner import run_firmware

BOARD = "mps2-an386"
MB = 1 << 20
HAVE = all(shutil.which(t) for t in ("make", "arm-none-eabi-gcc", "qemu-system-arm"))

MAIN = r"""/* input.bin -> model_run over the model's own static arena (model_arena), or with -DBUNDLE over the arena declared
 * here with MCU_BUNDLE_ARENA_PLACE -> output.bin. */
#include <stdint.h>

#include "semihost.h"
#ifdef BUNDLE
#include "mcu_bundle.h"
static uint8_t arena[MCU_BUNDLE_ARENA_BYTES] __attribute__((aligned(MCU_BUNDLE_ARENA_ALIGN))) MCU_BUNDLE_ARENA_PLACE;
#define ARENA arena
#else
#include "model.h"
#define ARENA model_arena
#endif

static int8_t in[MODEL_INPUT0_BYTES], out[MODEL_OUTPUT0_BYTES];

int main(void)
{
    int32_t fd = mcu_sh_open("input.bin", MCU_SH_MODE_RB);
    if (fd < 0 || mcu_sh_read(fd, in, sizeof in) != sizeof in) {
        mcu_sh_puts("MCU_ERROR input.bin\n");
        mcu_sh_exit(0);
    }
    mcu_sh_close(fd);
    const mcu_status_t status = model_run_sized(in, out, ARENA, sizeof ARENA);
    fd = mcu_sh_open("output.bin", MCU_SH_MODE_WB);
    (void)mcu_sh_write(fd, out, sizeof out);
    mcu_sh_close(fd);
    char line[96];
    char *p = mcu_fmt_str(line, "MCU_DONE status=");
    p = mcu_fmt_i32(p, (int32_t)status);
    mcu_fmt_str(p, " ticks=0 overhead=0 stack=0\n");
    mcu_sh_puts(line);
    mcu_sh_exit(1);
}
"""


def linker_script(board) -> str:
    """The board's memory map with its last MB of flash as EXT_FLASH and of RAM as TCM, and the two sections."""
    return f"""/* {board.name}'s map (boards/{board.name}/linker.ld) with an external flash and a TCM carved out. */
MEMORY
{{
    FLASH     (rx)  : ORIGIN = {board.flash_origin:#x}, LENGTH = {board.flash_size - MB:#x}
    EXT_FLASH (r)   : ORIGIN = {board.flash_origin + board.flash_size - MB:#x}, LENGTH = {MB:#x}
    RAM       (rwx) : ORIGIN = {board.ram_origin:#x}, LENGTH = {board.ram_size - MB:#x}
    TCM       (rwx) : ORIGIN = {board.ram_origin + board.ram_size - MB:#x}, LENGTH = {MB:#x}
}}

INCLUDE sections.ld

SECTIONS
{{
    .ext_weights : ALIGN(4) {{ *(.ext_weights) }} > EXT_FLASH
    .tcm_arena (NOLOAD) : ALIGN(16) {{ *(.tcm_arena) }} > TCM
}}
"""


class Net(nn.Module):
    """conv, pool, linear: weights in three arrays or more, an arena of a few KB."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(self.pool(torch.relu(self.conv(x))).flatten(1))


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    torch.manual_seed(0)
    calib = [(torch.randn(1, 3, 16, 16),) for _ in range(4)]
    return mcu.compile(Net().eval(), calib[0], board=BOARD, calibration=calib,
                       out_dir=tmp_path_factory.mktemp("placement") / "m")


def build(folder: Path, app: Path, prefix: str, defines: list[str]) -> Path:
    """fw.elf from the drop-in folder (its make fragment's variables start with prefix), MAIN and the
    test-local linker script."""
    board = load_board(BOARD)
    common = package_root("mcu.boards") / "common"
    common_c = sorted(str(p) for p in common.glob("*.c") if p.name != "main.c")
    (app / "main.c").write_text(MAIN)
    (app / "placed.ld").write_text(linker_script(board))
    ldflags = [f for f in board.ldflags() if not f.startswith("-T")] + [f"-T{app / 'placed.ld'}"]
    p = prefix
    (app / "Makefile").write_text(
        f"include $(MODEL)/{p.lower()}.mk\n"
        "CC := arm-none-eabi-gcc\n"
        f"CFLAGS := $({p}_TARGET_FLAGS) $({p}_CFLAGS) -Wall -Wextra -Werror $({p}_INCLUDES) -I{common} "
        f"{' '.join(defines)}\n"
        f"fw.elf: main.c $({p}_SRCS) {' '.join(common_c)}\n"
        f"\t$(CC) $(CFLAGS) $^ $({p}_LDFLAGS) {shlex.join(ldflags)} $({p}_LDLIBS) -o $@\n")
    proc = subprocess.run(["make", f"MODEL={folder}"], cwd=app, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return app / "fw.elf"


def symbols(elf: Path) -> dict[str, tuple[int, int, str]]:
    """{name: (address, size, section)} of the ELF's sized objects."""
    with open(elf, "rb") as f:
        image = ELFFile(f)
        return {s.name: (s["st_value"], s["st_size"], image.get_section(s["st_shndx"]).name)
                for s in image.get_section_by_name(".symtab").iter_symbols()
                if s["st_info"]["type"] == "STT_OBJECT" and isinstance(s["st_shndx"], int) and s["st_size"]}


@pytest.mark.qemu
@pytest.mark.skipif(not HAVE, reason="needs make, arm-none-eabi-gcc and qemu-system-arm (./dev setup)")
def test_weights_and_static_arena_land_in_the_named_sections(pkg, tmp_path):
    defines = ["-DMCU_WEIGHTS_SECTION='\".nowhere\"'", "-DMODEL_WEIGHTS_SECTION='\".ext_weights\"'",
               "-DMODEL_STATIC_ARENA", "-DMCU_ARENA_SECTION='\".tcm_arena\"'"]
    check_placed(pkg, build(pkg.out_dir, tmp_path, "MCU_MODEL", defines), "model_arena")


@pytest.mark.qemu
@pytest.mark.skipif(not HAVE, reason="needs make, arm-none-eabi-gcc and qemu-system-arm (./dev setup)")
def test_a_bundles_weights_and_shared_arena_land_in_the_named_sections(pkg, tmp_path):
    b = mcu.bundle([pkg.out_dir], out_dir=tmp_path / "bundle")
    defines = ["-DBUNDLE", "-DMCU_WEIGHTS_SECTION='\".ext_weights\"'", "-DMCU_ARENA_SECTION='\".tcm_arena\"'"]
    (tmp_path / "app").mkdir()
    check_placed(pkg, build(b.out_dir, tmp_path / "app", "MCU_BUNDLE", defines), "arena")


def check_placed(pkg, elf: Path, arena: str) -> None:
    """The weights in .ext_weights (EXT_FLASH), the arena symbol in .tcm_arena (TCM), the output exact on QEMU."""
    board = load_board(BOARD)
    ext, tcm = board.flash_origin + board.flash_size - MB, board.ram_origin + board.ram_size - MB
    syms = symbols(elf)
    weights = {n: v for n, v in syms.items() if n.startswith("model_w_")}
    assert len(weights) >= 4 and sum(v[1] for v in weights.values()) == pkg.manifest["weights_bytes"]
    for n, (addr, size, section) in weights.items():
        assert section == ".ext_weights" and ext <= addr and addr + size <= ext + MB, (n, hex(addr), section)
    addr, size, section = syms[arena]
    assert section == ".tcm_arena" and addr == tcm and size == pkg.arena_bytes, (hex(addr), size, section)
    with open(elf, "rb") as f:
        image = ELFFile(f)
        assert image.get_section_by_name(".tcm_arena")["sh_type"] == "SHT_NOBITS"  # NOLOAD: not in the image
        assert image.get_section_by_name(".nowhere") is None  # the model's own macro wins over MCU_WEIGHTS_SECTION
        print(f"\n{BOARD}: weights {sum(v[1] for v in weights.values()):,} B at "
              f"{min(v[0] for v in weights.values()):#010x} (.ext_weights), arena {size:,} B at {addr:#010x} "
              f"(.tcm_arena)")

    x = (torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(3)),)
    res = run_firmware(elf, BOARD, pkg.quantize_inputs(x)[0].tobytes())
    assert res.status == 0
    want = pkg.reference(x)[0]
    got = np.frombuffer(res.output_bytes, np.int8).reshape(want.shape)
    bad = np.argwhere(got != want)
    assert not len(bad), f"first mismatch at {tuple(bad[0])}: {got[tuple(bad[0])]} vs {want[tuple(bad[0])]}"


def test_default_weights_file_names_no_section(pkg):
    """Without a macro the weights go where the compiler puts constants: the default expands to nothing."""
    text = (pkg.out_dir / "weights.c").read_text()
    assert "#define MODEL_WEIGHTS_PLACE\n" in text and "mcu_weights_large" not in text
    assert "extern uint8_t model_arena[MODEL_ARENA_BYTES + MODEL_ARENA_GUARD_BYTES];" in \
        (pkg.out_dir / "model.h").read_text()
