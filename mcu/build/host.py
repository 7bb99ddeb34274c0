"""Host builds of a compiled package under AddressSanitizer + UndefinedBehaviorSanitizer: the model's C run on the PC.

- build_host(pkg) compiles model.c, weights.c, the kernels in manifest["kernels"] (and runtime_c/core) with a small
  harness (HARNESS) using the host gcc, the project's warning flags with -Werror, and
  -fsanitize=address,undefined -fno-sanitize-recover=all. Builds are cached by content under
  <package>/.mcu-build/host-asan/ (host-plain without sanitizers).
- The harness mallocs every input, every output and the arena with exactly its size (the arena: MODEL_ARENA_BYTES
  + MODEL_ARENA_GUARD_BYTES, which only -DMCU_DEBUG makes non-zero), so ASan flags any access past one of them. It
  runs the model twice, with the arena and outputs pre-filled with different patterns: different outputs mean the
  model read memory it had not written. It also checks the inputs are intact.
- run_host(pkg, inputs) runs one inference and returns the outputs like mcu.run; any sanitizer report, status or
  harness check failure raises SanitizerError with the report.
- compile_executable() is the shared compile step (tests build their own sanitized drivers with it).
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mcu.build.firmware import harness_defines
from mcu.errors import BuildError, McuError, status_name
from mcu.paths import BUILD_DIR, package_root

CC = os.environ.get("CC", "gcc")
WARNINGS = ("-Wall", "-Wextra", "-Wshadow", "-Wdouble-promotion", "-Wcast-align", "-Werror")
SANITIZE = ("-fsanitize=address,undefined", "-fsanitize=float-cast-overflow", "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer")
CFLAGS = ("-std=c99", "-O1", "-g", *WARNINGS)
# Leak checking needs ptrace, which containers often forbid; the C under test never allocates anyway.
SANITIZER_ENV = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=86",
                 "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87"}
HARNESS_NAME = "mcu_host_main.c"

HARNESS = r"""/* Host harness of a generated model (written by mcu.build.host): inputs file -> model_run_v -> outputs file. */
#define _POSIX_C_SOURCE 200112L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_model.h"

static void fail(const char *what)
{
    fprintf(stderr, "MCU_HOST_ERROR %s\n", what);
    exit(3);
}

/* Exactly n bytes (ASan puts its redzone right after them), aligned like the firmware's buffers. */
static void *alloc_exact(size_t n, size_t align)
{
    void *p = NULL;
    if (posix_memalign(&p, align, n > 0 ? n : 1) != 0) {
        fail("out of memory");
    }
    return p;
}

int main(int argc, char **argv)
{
    const void *inputs[MODEL_NUM_INPUTS];
    void *outputs[MODEL_NUM_OUTPUTS];
    uint8_t *kept[MODEL_NUM_INPUTS];
    uint8_t *first[MODEL_NUM_OUTPUTS];
    if (argc != 3) {
        fail("usage: model_host INPUT_FILE OUTPUT_FILE");
    }
    FILE *in = fopen(argv[1], "rb");
    if (in == NULL) {
        fail("cannot open the input file");
    }
#if MODEL_STATE_BYTES > 0
    /* the state region: read before the inputs, the same bytes at the start of both runs, written after the outputs */
    uint8_t *state = alloc_exact(MODEL_STATE_BYTES, 16);
    uint8_t *state_in = alloc_exact(MODEL_STATE_BYTES, 16);
    uint8_t *state_first = alloc_exact(MODEL_STATE_BYTES, 16);
    if (fread(state_in, 1, MODEL_STATE_BYTES, in) != MODEL_STATE_BYTES) {
        fail("the input file is shorter than MODEL_STATE_BYTES");
    }
#define STATE_START() memcpy(state, state_in, MODEL_STATE_BYTES)
#define STATE_KEEP() memcpy(state_first, state, MODEL_STATE_BYTES)
#define STATE_SAME() (memcmp(state_first, state, MODEL_STATE_BYTES) == 0)
#else
    void *state = NULL;
    (void)state;
#define STATE_START() ((void)0)
#define STATE_KEEP() ((void)0)
#define STATE_SAME() 1
#endif
    for (uint32_t i = 0; i < MODEL_NUM_INPUTS; ++i) {
        uint8_t *buf = alloc_exact(model_input_bytes[i], 16);
        if (fread(buf, 1, model_input_bytes[i], in) != model_input_bytes[i]) {
            fail("the input file is shorter than MODEL_INPUTS_BYTES");
        }
        kept[i] = alloc_exact(model_input_bytes[i], 16);
        memcpy(kept[i], buf, model_input_bytes[i]);
        inputs[i] = buf;
    }
    if (fgetc(in) != EOF) {
        fail("the input file is longer than MODEL_INPUTS_BYTES");
    }
    fclose(in);
    for (uint32_t i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        outputs[i] = alloc_exact(model_output_bytes[i], 16);
        first[i] = alloc_exact(model_output_bytes[i], 16);
    }
#if MODEL_ARENA_BYTES > 0
    void *arena = alloc_exact(MODEL_ARENA_BYTES + MODEL_ARENA_GUARD_BYTES, MODEL_ARENA_ALIGN);
#define FILL_ARENA(v) memset(arena, (v), MODEL_ARENA_BYTES)
#else
    void *arena = NULL;
#define FILL_ARENA(v) ((void)(v))
#endif

    static const int fill[2] = {0xA5, 0x5A};
    mcu_status_t status = MCU_OK;
    for (int run = 0; run < 2; ++run) {
        FILL_ARENA(fill[run]);
        for (uint32_t i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
            memset(outputs[i], fill[1 - run], model_output_bytes[i]);
        }
        STATE_START();
        status = MODEL_RUN_V(inputs, outputs, arena, state);
        if (status != MCU_OK) {
            break;
        }
        if (run == 0) {
            STATE_KEEP();
        } else if (!STATE_SAME()) {
            fail("two runs with differently filled arenas left different states: the model reads memory it has "
                 "not written");
        }
        for (uint32_t i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
            if (run == 0) {
                memcpy(first[i], outputs[i], model_output_bytes[i]);
            } else if (memcmp(first[i], outputs[i], model_output_bytes[i]) != 0) {
                fail("two runs with differently filled arenas gave different outputs: the model reads memory "
                     "it has not written");
            }
        }
    }
    for (uint32_t i = 0; i < MODEL_NUM_INPUTS; ++i) {
        if (memcmp(kept[i], inputs[i], model_input_bytes[i]) != 0) {
            fail("the model wrote into an input buffer");
        }
    }
    FILE *out = fopen(argv[2], "wb");
    if (out == NULL) {
        fail("cannot create the output file");
    }
    for (uint32_t i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        if (fwrite(outputs[i], 1, model_output_bytes[i], out) != model_output_bytes[i]) {
            fail("short write to the output file");
        }
    }
#if MODEL_STATE_BYTES > 0
    if (fwrite(state, 1, MODEL_STATE_BYTES, out) != MODEL_STATE_BYTES) {
        fail("short write to the output file");
    }
    free(state);
    free(state_in);
    free(state_first);
#endif
    fclose(out);
    printf("MCU_HOST_DONE status=%d\n", (int)status);
    for (uint32_t i = 0; i < MODEL_NUM_INPUTS; ++i) {
        free((void *)(uintptr_t)inputs[i]);
        free(kept[i]);
    }
    for (uint32_t i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        free(outputs[i]);
        free(first[i]);
    }
    free(arena);
    return 0;
}
"""


class HostBuildError(BuildError):
    """The host compiler rejected the package (a warning counts: -Werror); the message holds its output."""


class SanitizerError(McuError):
    """The host build of a package reported a sanitizer error, a failed harness check or a bad status."""


@dataclass(frozen=True)
class HostRun:
    outputs: list[np.ndarray]      # dequantized float32, torch order
    raw_outputs: list[np.ndarray]  # integer outputs, torch order
    status: int                    # model_run_v's mcu_status_t
    stdout: str
    stderr: str


def _compiler_id(cc: str) -> str:
    if shutil.which(cc) is None:
        raise HostBuildError(f"the host C compiler {cc!r} is not installed; install gcc (apt-get install gcc) "
                             f"or set CC")
    return subprocess.run([cc, "--version"], capture_output=True, text=True, check=True).stdout


def compile_executable(sources, out: str | os.PathLike, *, include_dirs=(), sanitize: bool = True,
                       extra_flags=(), cc: str = CC) -> Path:
    """Compile and link C `sources` into the executable `out`, unless `out` was built from the same inputs.

    The inputs (compiler, flags, every source and every header under include_dirs) are hashed into
    `out`.key; concurrent builders of the same output take turns (a lock file beside it).
    """
    out = Path(out)
    sources = [Path(s).resolve() for s in sources]
    flags = [*CFLAGS, *(SANITIZE if sanitize else ()), *extra_flags, *(f"-I{d}" for d in include_dirs)]
    key = hashlib.sha256(_compiler_id(cc).encode())
    for part in flags:
        key.update(part.encode() + b"\0")
    headers = sorted(h for d in include_dirs for h in Path(d).rglob("*.h"))
    for path in [*sources, *headers]:
        key.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    digest = key.hexdigest()
    key_file = out.with_name(out.name + ".key")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others then find its result
        if out.is_file() and key_file.is_file() and key_file.read_text() == digest:
            return out
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        cmd = [cc, *flags, *map(str, sources), "-o", str(tmp)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise HostBuildError(f"host build failed (exit {res.returncode}):\n$ {shlex.join(cmd)}\n{res.stderr}")
        os.replace(tmp, out)
        key_file.write_text(digest)
    return out


def package_sources(pkg) -> list[Path]:
    """The model's C files (model.c, weights.c for the default name), runtime_c/core/*.c and the kernels the manifest
    names."""
    runtime = package_root("mcu.runtime_c")
    kernels = [runtime / "kernels" / f"{k}.c" for k in sorted(set(pkg.manifest["kernels"]))]
    missing = [str(k) for k in kernels if not k.is_file()]
    if missing:
        raise HostBuildError(f"{pkg.out_dir / 'manifest.json'} names kernels that do not exist: {', '.join(missing)}; "
                             f"recompile the package with this mcu")
    model = [Path(pkg.out_dir) / name for name in pkg.c_files]
    return [*model, *sorted((runtime / "core").glob("*.c")), *kernels]


def build_host(pkg, *, sanitize: bool = True) -> Path:
    """The host executable of pkg (model + kernels + harness), built if needed."""
    build_dir = Path(pkg.out_dir) / BUILD_DIR / ("host-asan" if sanitize else "host-plain")
    build_dir.mkdir(parents=True, exist_ok=True)
    harness = build_dir / HARNESS_NAME
    if not harness.is_file() or harness.read_text() != HARNESS:
        tmp = harness.with_name(f"{harness.name}.{os.getpid()}.tmp")
        tmp.write_text(HARNESS)
        os.replace(tmp, harness)
    include = [package_root("mcu.runtime_c") / "include", Path(pkg.out_dir).resolve(),
               package_root("mcu.boards") / "common"]  # harness_model.h: the model's names as the harness uses them
    defines = [f"-D{k}={v}" for k, v in harness_defines(pkg.name, bool(pkg.manifest.get("state")))]
    return compile_executable([harness, *package_sources(pkg)], build_dir / "model_host", include_dirs=include,
                              sanitize=sanitize, extra_flags=defines)


def run_host(pkg, inputs, *, sanitize: bool = True, timeout: float = 120.0) -> HostRun:
    """Run one inference of pkg's host build on float `inputs` (torch order, like mcu.run)."""
    raw_in = pkg.quantize_inputs(inputs)
    exe = build_host(pkg, sanitize=sanitize)
    with tempfile.TemporaryDirectory(prefix="mcu-host-") as tmp:
        in_path, out_path = Path(tmp) / "input.bin", Path(tmp) / "output.bin"
        in_path.write_bytes(b"".join(x.tobytes() for x in raw_in))
        try:
            proc = subprocess.run([str(exe), str(in_path), str(out_path)], capture_output=True, text=True,
                                  timeout=timeout, env={**os.environ, **SANITIZER_ENV})
        except subprocess.TimeoutExpired:
            raise SanitizerError(f"{exe} did not finish within {timeout} s: the model hangs on the host too, "
                                 f"or it is slower than that; pass a larger timeout=") from None
        data = out_path.read_bytes() if out_path.is_file() else b""
    done = [line for line in proc.stdout.splitlines() if line.startswith("MCU_HOST_DONE status=")]
    if proc.returncode != 0 or not done:
        raise SanitizerError(f"{exe} failed (exit {proc.returncode}) on {pkg.out_dir}:\n{_report(proc.stderr)}")
    status = int(done[-1].split("=", 1)[1])
    raw = pkg.raw_outputs(data)
    if status != 0:
        raise SanitizerError(f"the model returned {status_name(status)} on the host: a code generator bug; "
                             f"please report it")
    return HostRun(pkg.dequantize_outputs(raw), raw, status, proc.stdout, proc.stderr)


def _report(stderr: str, keep: int = 60) -> str:
    lines = stderr.rstrip().splitlines()
    if len(lines) > keep:
        lines = lines[:keep] + [f"... ({len(lines) - keep} more lines)"]
    return "\n".join("  | " + line for line in lines) or "  | (no output)"
