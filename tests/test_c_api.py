"""The generated run function's guards (model.h): NULL pointers, arena alignment and size fail with their documented
status codes before any op runs, and a debug build (-DMCU_DEBUG) catches an op that writes past the arena through
the guard bytes after it. Host builds under ASan + UBSan of a small model with a driver that prints each status."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import torch
from torch import nn

import mcu
from mcu.tools.debug import MCU_ERR_ARENA_GUARD
from mcu.errors import MCU_STATUS
from mcu.build.host import SANITIZER_ENV, compile_executable, package_sources
from mcu.paths import package_root
from tests.hostc import STATUS

pytestmark = pytest.mark.host_c

DRIVER = r"""/* Calls model_run / model_run_sized / model_run_v with good and bad arguments; prints "case=status". */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"

#define SLACK 16u
static uint8_t arena[MODEL_ARENA_BYTES + MODEL_ARENA_GUARD_BYTES + SLACK] __attribute__((aligned(MODEL_ARENA_ALIGN)));
static int8_t input[MODEL_INPUT0_BYTES];
static int8_t output[MODEL_OUTPUT0_BYTES];
static int32_t last_op = -1;

/* Overrides model.c's weak hook in debug builds: the last op whose output was handed over. */
void mcu_pal_debug_tensor(uint32_t op, const void *data, uint32_t bytes);
void mcu_pal_debug_tensor(uint32_t op, const void *data, uint32_t bytes)
{
    (void)data;
    (void)bytes;
    last_op = (int32_t)op;
}

int main(void)
{
    const void *inputs[1] = {input};
    void *outputs[1] = {output};
    printf("null_input=%d\n", (int)model_run(NULL, output, arena));
    printf("null_output=%d\n", (int)model_run(input, NULL, arena));
    printf("null_arena=%d\n", (int)model_run(input, output, NULL));
    printf("null_arrays=%d\n", (int)model_run_v(NULL, outputs, arena));
    printf("misaligned=%d\n", (int)model_run(input, output, arena + 4));
    printf("short=%d\n", (int)model_run_sized(input, output, arena, MODEL_ARENA_BYTES + MODEL_ARENA_GUARD_BYTES - 1u));
    printf("op_after_bad_calls=%d\n", (int)last_op); /* -1: no op ran */
    printf("exact=%d\n", (int)model_run_sized(input, output, arena, MODEL_ARENA_BYTES + MODEL_ARENA_GUARD_BYTES));
    printf("run_v=%d\n", (int)model_run_v(inputs, outputs, arena));
    printf("guard_bytes=%u\n", (unsigned)MODEL_ARENA_GUARD_BYTES);
    printf("last_op=%d\n", (int)last_op);
    return 0;
}
"""


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1, groups=4),
                          nn.Flatten(), nn.Linear(4 * 25, 5)).eval()
    calib = [(torch.randn(1, 3, 5, 5, generator=torch.Generator().manual_seed(i)),) for i in range(4)]
    return mcu.compile(model, calib[0], calibration=calib, out_dir=tmp_path_factory.mktemp("capi") / "pkg")


def run_driver(pkg, folder: Path, *, debug: bool, plant_after: int | None = None) -> dict[str, int]:
    """Build the package's C with DRIVER (optionally -DMCU_DEBUG, and a write one byte past the arena after call
    plant_after) and run it: {case: printed value}."""
    folder.mkdir(parents=True)
    model_c = (pkg.out_dir / "model.c").read_text()
    if plant_after is not None:
        lines = model_c.splitlines()
        at = [i for i, line in enumerate(lines) if line.strip().startswith("status = ")][plant_after]
        lines.insert(at + 1, "    a[MODEL_ARENA_BYTES] = (uint8_t)(a[MODEL_ARENA_BYTES] + 1u);")
        model_c = "\n".join(lines) + "\n"
    (folder / "model.c").write_text(model_c)
    (folder / "model.h").write_text((pkg.out_dir / "model.h").read_text())
    (folder / "driver.c").write_text(DRIVER)
    sources = [folder / "driver.c", folder / "model.c",
               *(s for s in package_sources(pkg) if s.name != "model.c")]
    exe = compile_executable(sources, folder / "driver", include_dirs=[package_root("mcu.runtime_c") / "include", folder],
                             extra_flags=("-DMCU_DEBUG",) if debug else ())
    proc = subprocess.run([str(exe)], capture_output=True, text=True, env=SANITIZER_ENV, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return {key: int(value) for key, value in re.findall(r"^(\w+)=(-?\d+)$", proc.stdout, re.MULTILINE)}


@pytest.mark.parametrize("debug", [False, True], ids=["release", "debug"])
def test_bad_arguments_get_their_status_codes(pkg, tmp_path, debug):
    got = run_driver(pkg, tmp_path / "b", debug=debug)
    ok, arg = STATUS["MCU_OK"], STATUS["MCU_ERR_ARG"]
    assert got == {"null_input": arg, "null_output": arg, "null_arena": arg, "null_arrays": arg,
                   "misaligned": STATUS["MCU_ERR_ARENA_ALIGN"], "short": STATUS["MCU_ERR_ARENA_SIZE"],
                   "op_after_bad_calls": -1, "exact": ok, "run_v": ok, "guard_bytes": 16 if debug else 0,
                   "last_op": len([n for n in pkg.graph.nodes if n.op == "call"]) - 1 if debug else -1}


def test_debug_build_catches_an_op_writing_past_the_arena(pkg, tmp_path):
    got = run_driver(pkg, tmp_path / "p", debug=True, plant_after=1)
    assert {name: code for code, name in MCU_STATUS.items()} == STATUS  # mcu.errors' copy of the enum
    assert got["exact"] == got["run_v"] == MCU_ERR_ARENA_GUARD
    assert got["last_op"] == 1  # stopped right after the planted op
