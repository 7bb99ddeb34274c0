"""Property-based fuzzing of every C kernel against its numpy twin, the C built with ASan + UBSan.

- Kernels are discovered from runtime_c/kernels/*/*.c; each is fuzzed when its twin is known: mcu.codegen.twins.<family>.<name
  without mcu_> for a portable kernel, the portable kernel's twin for a variant in the registry (codegen/kernels)
  (whose `prepare` turns the portable constants into the variant's, exactly as the code generator does).
- The C runs in a sanitized driver process (DRIVER below, generated from the header's prototypes): it reads one call
  at a time from stdin, copies every array into a heap buffer of exactly its size (so ASan flags any access past
  it), calls the kernel and writes back the status and every buffer. A sanitizer report kills the driver; the
  example fails with the report and hypothesis shrinks it like any other failure.
- Properties: when the twin accepts the arguments the C returns MCU_OK, its output equals the twin's bit for bit and
  it leaves its inputs alone; when the twin rejects them (ValueError) the C returns an error and leaves the output
  untouched. Draws cover the documented ranges and their ends: int8 data at -128/127, offsets at -127/128, shifts
  -31..30, multipliers 0, 2^30 and 2^31-1, biases up to what keeps the int32 accumulator exact.
- Budget: MCU_FUZZ_EXAMPLES examples per kernel (default 8), derandomized, so CI is repeatable and fast;
  scripts/fuzz_long.sh runs a long random campaign (MCU_FUZZ_RANDOM=1).
"""
from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import importlib
import math
import os
import pkgutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hostc
import mcu.codegen.twins
import mcu.codegen.twins.conv as conv_twins
from mcu.codegen.ir import Tensor
from mcu.codegen.twins.add16 import h16_params, m16_params
from mcu.codegen.twins.mul16 import offset_reach
import calls
from mcu.codegen.kernels import KERNELS as REGISTRY
from mcu.build.host import SANITIZER_ENV, compile_executable

pytestmark = pytest.mark.host_c

EXAMPLES = int(os.environ.get("MCU_FUZZ_EXAMPLES", "8"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=os.environ.get("MCU_FUZZ_RANDOM") != "1", deadline=None,
                database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
# The kernels every build must fuzz (the list and the op-breadth kernels present when this was written).
REQUIRED = {"mcu_conv2d_s8", "mcu_dwconv2d_s8", "mcu_fully_connected_s8", "mcu_maxpool2d_s8", "mcu_avgpool2d_s8",
            "mcu_add_s8", "mcu_softmax_s8", "mcu_transpose_s8", "mcu_add_broadcast_s8", "mcu_mul_s8", "mcu_lut_s8",
            "mcu_concat_s8", "mcu_upsample_nearest_s8", "mcu_reduce_sum_s8", "mcu_conv2d_grouped_s8",
            "mcu_matmul_s8", "mcu_dequantize_s8_f32", "mcu_quantize_f32_s8", "mcu_layer_norm_f32",
            "mcu_dwconv2d_s8_inplace", "mcu_conv2d_1x1_s8_inplace"}
# Variants that only compute on the target: a _mve kernel built without Helium returns MCU_ERR_ARG (mcu_kernels.h);
# _dsp kernels have C stand-ins, so they run on the host.
HOST_FEATURES = frozenset({"dsp", "int4"})
Q30, Q31_MAX = 1 << 30, (1 << 31) - 1
PTR = ctypes.sizeof(ctypes.c_void_p)


# ---- Discovery --------------------------------------------------------------------------------------------------

def _twin_functions() -> dict[str, object]:
    """mcu_<name> -> the twin function <name> in any mcu.codegen.twins module."""
    twins = {}
    for mod in pkgutil.iter_modules(mcu.codegen.twins.__path__):
        module = importlib.import_module(f"mcu.codegen.twins.{mod.name}")
        for name, fn in vars(module).items():
            if callable(fn) and getattr(fn, "__module__", "") == module.__name__ and not name.startswith("_"):
                twins.setdefault(f"mcu_{name}", fn)
    return twins


TWINS = _twin_functions()
VARIANT_OF = {v.name: (v.portable, v) for v in REGISTRY.values() if v.portable and v.mode == "speed"}
KERNELS = [src.stem for src in hostc.kernel_sources() if src.stem in hostc.PROTOTYPES]


# ---- The sanitized driver --------------------------------------------------------------------------------------

def _driver_source(kernels: list[str]) -> str:
    cases = []
    for i, name in enumerate(kernels):
        proto = hostc.PROTOTYPES[name]
        args = []
        for j, (ctype, _) in enumerate(proto):
            if j == len(proto) - 1:
                args.append(f"({ctype} *)a[{j}]")
            elif ctype.endswith("[]"):
                args.append(f"(const {ctype[:-2]} *const *)a[{j}]")
            else:  # void * converts to the parameter's type, const (inputs) or not (scratch)
                args.append(f"a[{j}]")
        cases.append(f"    case {i}:\n        if (!{name}) {{\n            return 98;\n        }}\n"
                     f"        return (int)({name}({', '.join(args)}));")
    weak = "".join(f"#pragma weak {k}\n" for k in kernels)
    return DRIVER.replace("/*WEAK*/\n", weak).replace("/*CASES*/", "\n".join(cases))


DRIVER = r"""/* Kernel fuzz driver (generated by tests/test_fuzz_kernels.py): calls from stdin on exactly-sized heap buffers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcu/mcu_kernels.h"

/*WEAK*/

static uint32_t get_u32(void)
{
    uint32_t v;
    if (fread(&v, sizeof v, 1, stdin) != 1) {
        exit(0); /* the fuzzer closed the pipe */
    }
    return v;
}

static int call(uint32_t kernel, void *const a[])
{
    switch (kernel) {
/*CASES*/
    default:
        return 99;
    }
}

int main(void)
{
    for (;;) {
        const uint32_t kernel = get_u32();
        const uint32_t nblobs = get_u32();
        uint8_t **blob = calloc(nblobs + 1u, sizeof *blob);
        uint32_t *size = calloc(nblobs + 1u, sizeof *size);
        for (uint32_t i = 0; i < nblobs; ++i) {
            size[i] = get_u32();
            blob[i] = malloc(size[i]);
            if (size[i] > 0 && fread(blob[i], 1, size[i], stdin) != size[i]) {
                return 2;
            }
        }
        const uint32_t nfix = get_u32();
        for (uint32_t i = 0; i < nfix; ++i) {
            const uint32_t b = get_u32(), offset = get_u32(), target = get_u32();
            void *ptr = blob[target];
            memcpy(blob[b] + offset, &ptr, sizeof ptr);
        }
        const uint32_t nargs = get_u32();
        void *args[16] = {0};
        for (uint32_t i = 0; i < nargs && i < 16u; ++i) {
            const uint32_t b = get_u32();
            args[i] = b == UINT32_MAX ? NULL : blob[b];
        }
        const int32_t status = call(kernel, args);
        fwrite(&status, sizeof status, 1, stdout);
        for (uint32_t i = 0; i < nblobs; ++i) {
            fwrite(blob[i], 1, size[i], stdout);
            free(blob[i]);
        }
        fflush(stdout);
        free(blob);
        free(size);
    }
}
"""


class SanitizerReport(AssertionError):
    pass


@dataclass
class Call:
    """One kernel call in driver form: byte blobs, pointer fixups (blob, offset, target) and args (blob or None)."""
    blobs: list[bytes] = field(default_factory=list)
    fixups: list[tuple[int, int, int]] = field(default_factory=list)
    args: list[int | None] = field(default_factory=list)

    def blob(self, data: bytes) -> int:
        self.blobs.append(bytes(data))
        return len(self.blobs) - 1


def marshal(kernel: str, twin_args: tuple, out: np.ndarray, alias: int | None) -> tuple[Call, dict[int, int]]:
    """The driver call for C `kernel` on the arguments its twin takes (as hostc.call does); the output is `out`,
    or the blob of twin argument `alias`. Returns the call and twin-argument index -> blob index."""
    call, where, it = Call(), {}, iter(enumerate(twin_args))
    for ctype, _ in hostc.PROTOTYPES[kernel][:-1]:
        if ctype.endswith("[]"):
            rest = list(it)
            pointers = call.blob(bytes(PTR * len(rest)))
            for j, (k, v) in enumerate(rest):
                if v is not None:
                    where[k] = call.blob(hostc._array(v, hostc._SCALARS[ctype[:-2]]).tobytes())
                    call.fixups.append((pointers, PTR * j, where[k]))
            call.args.append(pointers)
            continue
        k, value = next(it)
        if ctype == "mcu_per_channel_quant_t":
            _, shift = next(it)
            value = None if value is None and shift is None else {"multiplier": value, "shift": shift}
        if value is None:
            call.args.append(None)
        elif ctype in hostc.STRUCTS:
            call.args.append(_struct_blob(call, ctype, value))
        else:
            where[k] = call.blob(hostc._array(value, hostc._SCALARS[ctype]).tobytes())
            call.args.append(where[k])
    if next(it, None) is not None:
        raise TypeError(f"{kernel}: too many arguments")
    call.args.append(where[alias] if alias is not None else call.blob(out.tobytes()))
    return call, where


def _struct_blob(call: Call, name: str, value: dict) -> int:
    cls = hostc.STRUCTS[name]
    raw = bytearray(bytes(hostc.struct(name, value)))
    fixups = []
    for fname, ctype in cls._fields_:
        if isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer):
            offset = getattr(cls, fname).offset
            raw[offset:offset + PTR] = bytes(PTR)
            if value[fname] is not None:
                fixups.append((offset, call.blob(hostc._array(value[fname], ctype._type_).tobytes())))
    index = call.blob(raw)
    call.fixups += [(index, offset, target) for offset, target in fixups]
    return index


class Driver:
    """The sanitized driver process, restarted after a crash."""

    def __init__(self, exe: Path):
        self.exe, self.proc, self.log = exe, None, None

    def run(self, kernel: str, call: Call) -> tuple[int, list[bytes]]:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        msg = [struct.pack("<II", KERNELS.index(kernel), len(call.blobs))]
        msg += [struct.pack("<I", len(b)) + b for b in call.blobs]
        msg.append(struct.pack("<I", len(call.fixups)) + b"".join(struct.pack("<III", *f) for f in call.fixups))
        msg.append(struct.pack(f"<I{len(call.args)}I", len(call.args),
                               *[0xFFFFFFFF if a is None else a for a in call.args]))
        want = 4 + sum(len(b) for b in call.blobs)
        try:
            self.proc.stdin.write(b"".join(msg))
            self.proc.stdin.flush()
            reply = self.proc.stdout.read(want)
        except BrokenPipeError:
            reply = b""
        if len(reply) != want:
            code = self.proc.wait(timeout=30)
            self.log.seek(0)
            report = self.log.read().decode("utf-8", "replace")
            self.proc = None
            raise SanitizerReport(f"{kernel} crashed the sanitized driver (exit {code}):\n{report}")
        status = struct.unpack("<i", reply[:4])[0]
        out, pos = [], 4
        for b in call.blobs:
            out.append(reply[pos:pos + len(b)])
            pos += len(b)
        return status, out

    def _start(self):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([str(self.exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env={**os.environ, **SANITIZER_ENV})

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def driver():
    work = Path(tempfile.gettempdir()) / f"mcu-fuzz-{os.getuid()}"
    work.mkdir(parents=True, exist_ok=True)
    code = _driver_source(KERNELS)
    src = work / f"driver_{hashlib.sha256(code.encode()).hexdigest()[:16]}.c"
    if not src.is_file() or src.read_text() != code:
        tmp = src.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(code)
        os.replace(tmp, src)
    exe = compile_executable([src, *hostc.kernel_sources()], work / "driver", include_dirs=[hostc.INCLUDE])
    d = Driver(exe)
    yield d
    d.close()


# ---- Strategies: twin arguments within the documented ranges --------------------------------------------------

@dataclass
class Case:
    args: tuple             # exactly the twin's arguments
    out_size: int           # output elements when the twin rejects the case (else the twin's result decides)
    alias: int | None = None  # twin argument the output aliases (in-place kernels)
    scratch: tuple[int, ...] = ()  # twin arguments the kernel may write (its scratch)
    lowered: bool = True      # shaped as the code generator shapes it (output size from the geometry)


IN_OFFSET = st.one_of(st.sampled_from([-127, 128, 0]), st.integers(-127, 128))
OUT_OFFSET = st.one_of(st.sampled_from([-128, 127, 0]), st.integers(-128, 127))
MULT = st.one_of(st.sampled_from([0, Q30, Q31_MAX]), st.integers(Q30, Q31_MAX))


def _fill(mode: str, seed: int, shape, dtype=np.int8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    if mode == "min":
        return np.full(shape, lo, dtype)
    if mode == "max":
        return np.full(shape, hi, dtype)
    if mode == "extremes":
        return rng.choice(np.array([lo, hi], dtype), size=shape)
    return rng.integers(lo, int(hi) + 1, size=shape, dtype=dtype)


@st.composite
def ints(draw, shape, dtype=np.int8):
    """Integer data: random, all minimum, all maximum, or only the two extremes."""
    mode = draw(st.sampled_from(["random", "random", "random", "min", "max", "extremes"]))
    return _fill(mode, draw(st.integers(0, 2**32 - 1)), shape, dtype)


@st.composite
def act_range(draw, zero_point: int):
    kind = draw(st.sampled_from(["full", "relu", "band", "any"]))
    if kind == "full":
        return -128, 127
    if kind == "relu":
        return zero_point, 127
    if kind == "band":
        return max(zero_point - draw(st.integers(0, 40)), -128), min(zero_point + draw(st.integers(0, 40)), 127)
    lo, hi = sorted((draw(st.integers(-128, 127)), draw(st.integers(-128, 127))))
    return lo, hi


def _typical_shift(acc_std: float) -> int:
    """The shift that maps an accumulator of this spread to a few tens of int8 steps."""
    return int(np.clip(round(math.log2(40.0 / max(acc_std, 1.0))), -31, 30))


@st.composite
def shift_for(draw, acc_std: float):
    base = _typical_shift(acc_std)
    return draw(st.one_of(st.integers(max(base - 2, -31), min(base + 2, 30)), st.sampled_from([-31, 30, 0, 1]),
                          st.integers(-31, 30)))


@st.composite
def per_channel(draw, channels: int, acc_std: float):
    mult = np.array([draw(MULT) for _ in range(channels)], np.int32)
    shift = np.array([draw(shift_for(acc_std)) for _ in range(channels)], np.int32)
    return mult, shift


@st.composite
def bias_for(draw, channels: int, acc_std: float, max_acc: int):
    """None, accumulator-sized, large, or as large as the int32 accumulator allows (the documented limit)."""
    kind = draw(st.sampled_from(["none", "typical", "typical", "large", "limit"]))
    if kind == "none":
        return None
    limit = (1 << 31) - 1 - max_acc
    scale = {"typical": max(int(acc_std), 1), "large": 1 << 24, "limit": limit}[kind]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    bias = rng.integers(-scale, scale + 1, size=channels)
    if kind == "limit":
        bias = np.where(rng.random(channels) < 0.5, np.sign(bias) * limit, bias)
    return bias.astype(np.int32)


def _acc_std(taps: int, input_offset: int) -> float:
    return math.sqrt(taps * (input_offset**2 + 5500) * 5500)


@st.composite
def conv_case(draw, kind: str):
    """conv2d / dwconv2d / conv2d_grouped arguments; 1x1 and 3x3 filters (the specialized variants) often."""
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 8)), draw(st.integers(1, 8))
    kh, kw = draw(st.one_of(st.sampled_from([(1, 1), (3, 3)]), st.tuples(st.integers(1, 5), st.integers(1, 5))))
    sh, sw, dh, dw = (draw(st.integers(1, 3)) for _ in range(4))
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    pt, pb, pl, pr = (draw(st.integers(0, e - 1)) for e in (eh, eh, ew, ew))
    oh, ow = (h + pt + pb - eh) // sh + 1, (w + pl + pr - ew) // sw + 1
    lowered = oh >= 1 and ow >= 1 and draw(st.integers(0, 9)) > 0
    if not lowered:  # any output size: windows past the input see only the bias
        oh, ow = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    if kind == "conv":
        c_in, c_out = draw(st.integers(1, 8)), draw(st.integers(1, 9))
        filt, taps = (c_out, kh, kw, c_in), kh * kw * c_in
    elif kind == "dwconv":
        c_in = draw(st.integers(1, 9))
        c_out = c_in * draw(st.sampled_from([1, 1, 2, 3]))
        filt, taps = (1, kh, kw, c_out), kh * kw
    else:
        groups, c_group = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        c_in, c_out = groups * c_group, groups * draw(st.integers(1, 3))
        filt, taps = (c_out, kh, kw, c_group), kh * kw * c_group
    in_off, out_off = draw(IN_OFFSET), draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    params = {"input": (n, h, w, c_in), "filter": filt, "output": (n, oh, ow, c_out), "stride_h": sh,
              "stride_w": sw, "pad_top": pt, "pad_left": pl, "dilation_h": dh, "dilation_w": dw,
              "input_offset": in_off, "output_offset": out_off, "act_min": lo, "act_max": hi}
    std = _acc_std(taps, in_off)
    mult, shift = draw(per_channel(c_out, std))
    return Case((params, mult, shift, draw(ints((n, h, w, c_in))), draw(ints(filt)),
                 draw(bias_for(c_out, std, taps * 255 * 128))), n * oh * ow * c_out, lowered=lowered)


@st.composite
def dwk_line_case(draw):
    """dwconv2d arguments on the geometry mcu_dwconv2d_s8_dsp_line's assembly takes (a 5x5 or 7x7 window, stride_w 1
    or 2, dilation_w 1, 'same' or 'valid' columns), which conv_case rarely draws; any rows."""
    k = draw(st.sampled_from([5, 7]))
    m = k // 2
    n, h, w, c = draw(st.integers(1, 2)), draw(st.integers(1, 8)), draw(st.integers(k - 1, 14)), draw(st.integers(1, 9))
    sh, sw, dh = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    eh = (k - 1) * dh + 1
    pt, pb = draw(st.integers(0, eh - 1)), draw(st.integers(0, eh - 1))
    pl = draw(st.sampled_from([0, m]))
    pr = draw(st.integers(0, k - 1))
    oh, ow = (h + pt + pb - eh) // sh + 1, (w + pl + pr - k) // sw + 1
    assume(oh >= 1 and ow >= 1)
    in_off, out_off = draw(IN_OFFSET), draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    params = {"input": (n, h, w, c), "filter": (1, k, k, c), "output": (n, oh, ow, c), "stride_h": sh,
              "stride_w": sw, "pad_top": pt, "pad_left": pl, "dilation_h": dh, "dilation_w": 1,
              "input_offset": in_off, "output_offset": out_off, "act_min": lo, "act_max": hi}
    std = _acc_std(k * k, in_off)
    mult, shift = draw(per_channel(c, std))
    return Case((params, mult, shift, draw(ints((n, h, w, c))), draw(ints((1, k, k, c))),
                 draw(bias_for(c, std, k * k * 255 * 128))), n * oh * ow * c, lowered=True)


@st.composite
def dw_ring_case(draw):
    """dwconv2d arguments on mcu_dwconv2d_s8_dsp_ring's geometry (3x3, stride 1, dilation 1, padding 0..2 on each
    side), which conv_case rarely draws: lines along rows or columns, odd and even lengths, channel pairs."""
    n, h, w, c = draw(st.integers(1, 2)), draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.integers(1, 9))
    pt, pb, pl, pr = (draw(st.integers(0, 2)) for _ in range(4))
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    assume(oh >= 1 and ow >= 1)
    in_off, out_off = draw(IN_OFFSET), draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    params = {"input": (n, h, w, c), "filter": (1, 3, 3, c), "output": (n, oh, ow, c), "stride_h": 1,
              "stride_w": 1, "pad_top": pt, "pad_left": pl, "dilation_h": 1, "dilation_w": 1,
              "input_offset": in_off, "output_offset": out_off, "act_min": lo, "act_max": hi}
    std = _acc_std(9, in_off)
    mult, shift = draw(per_channel(c, std))
    return Case((params, mult, shift, draw(ints((n, h, w, c))), draw(ints((1, 3, 3, c))),
                 draw(bias_for(c, std, 9 * 255 * 128))), n * oh * ow * c, lowered=True)


# Variants whose geometry the portable kernel's strategy rarely draws.
VARIANT_STRATEGIES = {"mcu_dwconv2d_s8_dsp_line": dwk_line_case(), "mcu_dwconv2d_s8_dsp_ring": dw_ring_case()}


@st.composite
def inplace_conv_case(draw, kind: str):
    """mcu_dwconv2d_s8_inplace ("dw": 'same' geometry, stride 1) or mcu_conv2d_1x1_s8_inplace ("1x1": C_out <= C_in,
    any stride) arguments plus an exactly-sized scratch; run in place (the output is the input's buffer) mostly."""
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 8)), draw(st.integers(1, 8))
    if kind == "dw":
        c_in = c_out = draw(st.integers(1, 9))
        kh, kw = draw(st.one_of(st.just((3, 3)), st.tuples(st.integers(1, 5), st.integers(1, 5))))
        dh, dw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        pt, pl = draw(st.integers(0, (kh - 1) * dh)), draw(st.integers(0, (kw - 1) * dw))
        sh = sw = 1
        filt, taps, out = (1, kh, kw, c_out), kh * kw, (n, h, w, c_out)
    else:
        c_in = draw(st.integers(1, 9))
        c_out = draw(st.integers(1, c_in))
        sh, sw, dh, dw, pt, pl = draw(st.integers(1, 3)), draw(st.integers(1, 3)), 1, 1, 0, 0
        filt, taps, out = (c_out, 1, 1, c_in), c_in, (n, (h - 1) // sh + 1, (w - 1) // sw + 1, c_out)
    in_off, out_off = draw(IN_OFFSET), draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    params = {"input": (n, h, w, c_in), "filter": filt, "output": out, "stride_h": sh, "stride_w": sw,
              "pad_top": pt, "pad_left": pl, "dilation_h": dh, "dilation_w": dw, "input_offset": in_off,
              "output_offset": out_off, "act_min": lo, "act_max": hi}
    std = _acc_std(taps, in_off)
    mult, shift = draw(per_channel(c_out, std))
    scratch_bytes = getattr(conv_twins, "dwconv2d_s8_inplace_scratch_bytes" if kind == "dw"
                            else "conv2d_1x1_s8_inplace_scratch_bytes")(params)
    args = (params, mult, shift, draw(ints((n, h, w, c_in))), draw(ints(filt)),
            draw(bias_for(c_out, std, taps * 255 * 128)), np.zeros(scratch_bytes, np.int8))
    return Case(args, int(np.prod(out)), alias=draw(st.sampled_from([3, 3, None])), scratch=(6,))


@st.composite
def fc_case(draw):
    b, k, n = draw(st.integers(1, 4)), draw(st.one_of(st.integers(1, 80), st.integers(1000, 1100))), \
        draw(st.integers(1, 17))
    in_off, out_off = draw(IN_OFFSET), draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    params = {"batches": b, "in_features": k, "out_features": n, "input_offset": in_off, "output_offset": out_off,
              "act_min": lo, "act_max": hi}
    std = _acc_std(k, in_off)
    mult, shift = draw(per_channel(n, std))
    return Case((params, mult, shift, draw(ints((b, k))), draw(ints((n, k))), draw(bias_for(n, std, k * 255 * 128))),
                b * n)


@st.composite
def matmul_case(draw):
    b = draw(st.integers(1, 3))
    lb, rb = draw(st.sampled_from([1, b])), draw(st.sampled_from([1, b]))
    m, k, n = draw(st.integers(1, 8)), draw(st.one_of(st.integers(1, 40), st.just(32767))), draw(st.integers(1, 11))
    group, transposed = draw(st.sampled_from([1, 1, 2, 3])), draw(st.integers(0, 1))
    if group > 1:  # grouped-query attention: rhs batch r serves output batches r * g .. r * g + g - 1
        rb, b = b, b * group
        lb = draw(st.sampled_from([1, b]))
    if k == 32767:
        b = lb = rb = m = n = group = 1
    out_off = draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    params = {"batches": b, "lhs_batches": lb, "rhs_batches": rb, "m": m, "k": k, "n": n,
              "lhs_offset": draw(IN_OFFSET), "rhs_offset": draw(IN_OFFSET), "output_offset": out_off,
              "output_multiplier": draw(MULT), "output_shift": draw(shift_for(_acc_std(k, 0) * 4)),
              "act_min": lo, "act_max": hi, "rhs_group": group, "rhs_transposed": transposed}
    return Case((params, draw(ints((lb, m, k))), draw(ints((rb, n, k) if transposed else (rb, k, n)))), b * m * n)


@st.composite
def pool_case(draw, avg: bool):
    n, h, w, c = draw(st.integers(1, 2)), draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.integers(1, 5))
    kh, kw, sh, sw = (draw(st.integers(1, 4)) for _ in range(4))
    pt, pb, pl, pr = (draw(st.integers(0, k - 1)) for k in (kh, kh, kw, kw))
    oh, ow = max((h + pt + pb - kh) // sh + 1, 1), max((w + pl + pr - kw) // sw + 1, 1)
    if draw(st.integers(0, 9)) == 0:  # any output size: a window entirely in the padding must be refused
        oh, ow = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    zp = draw(OUT_OFFSET) if avg else 0
    divisor = draw(st.sampled_from([0, 0, kh * kw, 1])) if avg else 0
    if avg and draw(st.booleans()):
        divisor = draw(st.integers(1, 40))
    lo, hi = draw(act_range(zp))
    params = {"input": (n, h, w, c), "output": (n, oh, ow, c), "kernel_h": kh, "kernel_w": kw, "stride_h": sh,
              "stride_w": sw, "pad_top": pt, "pad_left": pl, "zero_point": zp, "divisor": divisor,
              "act_min": lo, "act_max": hi}
    return Case((params, draw(ints((n, h, w, c)))), n * oh * ow * c)


@st.composite
def add_requant(draw):
    """(left_shift, (m1, s1), (m2, s2), (mo, so)): TFLite's encoding of random scales, or raw extremes."""
    if draw(st.booleans()):
        s1, s2 = (math.exp(draw(st.floats(-8, 0))) for _ in range(2))
        so = max(s1, s2) * math.exp(draw(st.floats(-1, 3)))
        twice = 2 * max(s1, s2)
        from mcu.codegen.twins.quant import quantize_multiplier
        return 20, quantize_multiplier(s1 / twice), quantize_multiplier(s2 / twice), \
            quantize_multiplier(twice / ((1 << 20) * so))
    pair = st.tuples(MULT, st.integers(-31, 30))
    return draw(st.integers(0, 23)), draw(pair), draw(pair), draw(pair)


def _add_fields(draw, requant) -> dict:
    left, (m1, s1), (m2, s2), (mo, so) = requant
    out_off = draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    return {"left_shift": left, "input1_offset": draw(IN_OFFSET), "input1_multiplier": m1, "input1_shift": s1,
            "input2_offset": draw(IN_OFFSET), "input2_multiplier": m2, "input2_shift": s2,
            "output_offset": out_off, "output_multiplier": mo, "output_shift": so, "act_min": lo, "act_max": hi}


@st.composite
def add_case(draw):
    size = draw(st.integers(1, 300))
    params = {"size": size, **_add_fields(draw, draw(add_requant()))}
    return Case((params, draw(ints(size)), draw(ints(size))), size, alias=draw(st.sampled_from([None, 1, 2])))


@st.composite
def broadcast_dims(draw):
    out = tuple(draw(st.integers(1, 4)) for _ in range(4))
    in1 = tuple(d if draw(st.booleans()) else 1 for d in out)
    in2 = tuple(d if draw(st.booleans()) else 1 for d in out)
    return in1, in2, out


@st.composite
def add_broadcast_case(draw):
    in1, in2, out = draw(broadcast_dims())
    params = {"input1": in1, "input2": in2, "output": out, "subtract": draw(st.integers(0, 1)),
              **_add_fields(draw, draw(add_requant()))}
    return Case((params, draw(ints(in1)), draw(ints(in2))), int(np.prod(out)))


@st.composite
def mul_case(draw):
    in1, in2, out = draw(broadcast_dims())
    out_off = draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    params = {"input1": in1, "input2": in2, "output": out, "input1_offset": draw(IN_OFFSET),
              "input2_offset": draw(IN_OFFSET), "output_offset": out_off, "output_multiplier": draw(MULT),
              "output_shift": draw(shift_for(128 * 128)), "act_min": lo, "act_max": hi}
    return Case((params, draw(ints(in1)), draw(ints(in2))), int(np.prod(out)))


@st.composite
def softmax_case(draw):
    from mcu.codegen.twins.activation import softmax_exp_table
    rows, cols = draw(st.integers(1, 4)), draw(st.one_of(st.integers(1, 300), st.sampled_from([1, 2, 65535])))
    if cols == 65535:
        rows = 1
    kind = draw(st.sampled_from(["scale", "scale", "random", "flat"]))
    if kind == "scale":
        table = softmax_exp_table(math.exp(draw(st.floats(math.log(1e-4), math.log(4.0)))))
    elif kind == "random":
        table = _fill("random", draw(st.integers(0, 2**32 - 1)), 256, np.uint16)
        table[0] = max(int(table[0]), 1)
    else:
        table = np.full(256, 65535, np.uint16)
    x = draw(ints((rows, cols)))
    if draw(st.booleans()):  # narrow bands and equal rows
        x = np.clip(x // 64 + np.int8(draw(st.integers(-100, 100))), -128, 127).astype(np.int8)
    return Case(({"rows": rows, "cols": cols}, table, x), rows * cols)


@st.composite
def lut_case(draw):
    size = draw(st.integers(1, 400))
    return Case(({"size": size}, draw(ints(256)), draw(ints(size))), size, alias=draw(st.sampled_from([None, 2])))


@st.composite
def transpose_case(draw):
    dims = tuple(draw(st.integers(1, 5)) for _ in range(4))
    perm = tuple(draw(st.permutations(range(4))))
    return Case(({"in_dims": dims, "perm": perm}, draw(ints(dims))), int(np.prod(dims)))


@st.composite
def pad_case(draw, dtype=np.int8):
    outer, in_len, inner = (draw(st.integers(1, 5)) for _ in range(3))
    before, after = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    info = np.iinfo(dtype)
    params = {"outer": outer, "in_len": in_len, "before": before, "after": after, "inner": inner,
              "value": draw(st.integers(int(info.min), int(info.max))), "value_f32": 0.0}
    return Case((params, draw(ints((outer, in_len, inner), dtype))), outer * (before + in_len + after) * inner)


@st.composite
def slice_case(draw, dtype=np.int8):
    outer, in_len, inner = draw(st.integers(1, 4)), draw(st.integers(1, 9)), draw(st.integers(1, 4))
    start, step = draw(st.integers(0, in_len - 1)), draw(st.integers(1, 3))
    out_len = draw(st.integers(1, (in_len - 1 - start) // step + 1))
    params = {"outer": outer, "in_len": in_len, "out_len": out_len, "start": start, "step": step, "inner": inner}
    data = draw(ints((outer, in_len, inner), dtype)) if dtype != np.float32 else \
        draw(floats_data((outer, in_len, inner), specials=True))
    return Case((params, data), outer * out_len * inner)


@st.composite
def concat_case(draw):
    k, outer = draw(st.integers(1, 8)), draw(st.integers(1, 4))
    out_off = draw(OUT_OFFSET)
    sizes, offsets, mults, shifts, inputs = [], [], [], [], []
    for _ in range(k):
        sizes.append(draw(st.integers(1, 12)))
        if draw(st.booleans()):  # the output's qparams: a plain copy
            offsets.append(-out_off)
            mults.append(Q30)
            shifts.append(1)
        else:
            offsets.append(draw(IN_OFFSET))
            mults.append(draw(MULT))
            shifts.append(draw(shift_for(128)))
        inputs.append(draw(ints((outer, sizes[-1]))))
    pad = [0] * (8 - k)
    params = {"num_inputs": k, "outer": outer, "sizes": sizes + pad, "input_offset": offsets + pad,
              "multiplier": mults + pad, "shift": shifts + pad, "output_offset": out_off}
    return Case((params, *inputs), outer * sum(sizes))


@st.composite
def upsample_case(draw):
    dims = (draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 4)))
    sh, sw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return Case(({"input": dims, "scale_h": sh, "scale_w": sw}, draw(ints(dims))), int(np.prod(dims)) * sh * sw)


@st.composite
def conv_transpose_case(draw):
    """mcu_conv_transpose2d_s8 arguments: windows 1..5, strides 1..3, padding < window, output_padding < stride
    (rarely any output size: rows past the full result see only the bias)."""
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    kh, kw, sh, sw = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    pt, pl = draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1))
    oh = (h - 1) * sh - 2 * pt + kh + draw(st.integers(0, sh - 1))
    ow = (w - 1) * sw - 2 * pl + kw + draw(st.integers(0, sw - 1))
    lowered = oh >= 1 and ow >= 1 and draw(st.integers(0, 9)) > 0
    if not lowered:
        oh, ow = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    c_in, c_out = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    in_off, out_off = draw(IN_OFFSET), draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    params = {"input": (n, h, w, c_in), "filter": (c_out, kh, kw, c_in), "output": (n, oh, ow, c_out),
              "stride_h": sh, "stride_w": sw, "pad_top": pt, "pad_left": pl, "dilation_h": 1, "dilation_w": 1,
              "input_offset": in_off, "output_offset": out_off, "act_min": lo, "act_max": hi}
    taps = -(-kh // sh) * -(-kw // sw) * c_in
    std = _acc_std(taps, in_off)
    mult, shift = draw(per_channel(c_out, std))
    return Case((params, mult, shift, draw(ints((n, h, w, c_in))), draw(ints((c_out, kh, kw, c_in))),
                 draw(bias_for(c_out, std, taps * 255 * 128))), n * oh * ow * c_out, lowered=lowered)


@st.composite
def bilinear_case(draw):
    """mcu_upsample_bilinear_s8 arguments: any sizes (down too), align_corners either way, equal scales (the DSP
    variant's) or any requantization."""
    from mcu.codegen.twins.shape import BILINEAR_BITS, bilinear_taps
    n, h, w, c = draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7)), draw(st.integers(1, 9))
    oh, ow, align = draw(st.integers(1, 11)), draw(st.integers(1, 11)), draw(st.booleans())
    in_off, out_off = draw(IN_OFFSET), draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    equal = draw(st.booleans())
    mult = 1 << 30 if equal else draw(MULT)
    shift = 1 - 2 * BILINEAR_BITS if equal else draw(shift_for(128 * 2.0 ** (2 * BILINEAR_BITS)))
    params = {"input": (n, h, w, c), "output": (n, oh, ow, c), "input_offset": in_off, "output_offset": out_off,
              "multiplier": mult, "shift": shift, "act_min": lo, "act_max": hi}
    return Case((params, bilinear_taps(h, oh, align, None).reshape(-1), bilinear_taps(w, ow, align, None).reshape(-1),
                 draw(ints((n, h, w, c)))), n * oh * ow * c)


@st.composite
def reduce_case(draw):
    dims = tuple(draw(st.integers(1, 6)) for _ in range(4))
    out = tuple(d if draw(st.booleans()) else 1 for d in dims)
    count = int(np.prod(dims)) // int(np.prod(out))
    params = {"input": dims, "output": out, "input_offset": draw(IN_OFFSET), "output_offset": draw(OUT_OFFSET),
              "multiplier": draw(MULT), "shift": draw(shift_for(128 * count))}
    return Case((params, draw(ints(dims))), int(np.prod(out)))


SPECIAL_FLOATS = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e30, -1e30,
                           1e-45, 3.4e38], np.float32)


@st.composite
def floats_data(draw, shape, specials: bool):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = math.exp(draw(st.floats(math.log(1e-3), math.log(1e3))))
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    if specials and draw(st.booleans()):
        mask = rng.random(shape) < 0.3
        x[mask] = rng.choice(SPECIAL_FLOATS, size=int(mask.sum()))
    return x


def _f32(x: float) -> float:
    return float(np.float32(x))


POSITIVE_SCALE = st.one_of(st.floats(_f32(1e-6), _f32(1e3), width=32),
                           st.sampled_from([_f32(v) for v in (1e-45, 1e-38, 1.0, 3.4e38)]))


@st.composite
def dequantize_case(draw):
    size = draw(st.integers(1, 300))
    params = {"size": size, "scale": draw(POSITIVE_SCALE), "zero_point": draw(OUT_OFFSET)}
    return Case((params, draw(ints(size))), size)


@st.composite
def quantize_case(draw):
    size = draw(st.integers(1, 300))
    params = {"size": size, "inv_scale": draw(POSITIVE_SCALE), "zero_point": draw(OUT_OFFSET)}
    return Case((params, draw(floats_data(size, specials=True))), size)


@st.composite
def layer_norm_case(draw):
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 64))
    params = {"rows": rows, "cols": cols, "eps": draw(st.floats(_f32(1e-12), 1.0, width=32)), "rms": draw(st.sampled_from([0, 1]))}
    weight = draw(st.one_of(st.none(), floats_data(cols, specials=False)))
    bias = draw(st.one_of(st.none(), floats_data(cols, specials=False)))
    return Case((params, draw(floats_data((rows, cols), specials=False)), weight, bias), rows * cols,
                alias=draw(st.sampled_from([None, 1])))


STRATEGIES = {
    "mcu_conv2d_s8": conv_case("conv"), "mcu_dwconv2d_s8": conv_case("dwconv"),
    "mcu_conv2d_grouped_s8": conv_case("grouped"), "mcu_fully_connected_s8": fc_case(),
    "mcu_matmul_s8": matmul_case(), "mcu_maxpool2d_s8": pool_case(False), "mcu_avgpool2d_s8": pool_case(True),
    "mcu_add_s8": add_case(), "mcu_add_broadcast_s8": add_broadcast_case(), "mcu_mul_s8": mul_case(),
    "mcu_softmax_s8": softmax_case(), "mcu_lut_s8": lut_case(), "mcu_transpose_s8": transpose_case(),
    "mcu_concat_s8": concat_case(), "mcu_upsample_nearest_s8": upsample_case(), "mcu_pad_s8": pad_case(),
    "mcu_slice_s8": slice_case(), "mcu_slice_s16": slice_case(np.int16), "mcu_slice_f32": slice_case(np.float32),
    "mcu_pad_s16": pad_case(np.int16), "mcu_reduce_sum_s8": reduce_case(),
    "mcu_dequantize_s8_f32": dequantize_case(), "mcu_quantize_f32_s8": quantize_case(),
    "mcu_layer_norm_f32": layer_norm_case(),
    "mcu_dwconv2d_s8_inplace": inplace_conv_case("dw"), "mcu_conv2d_1x1_s8_inplace": inplace_conv_case("1x1"),
    "mcu_conv_transpose2d_s8": conv_transpose_case(), "mcu_upsample_bilinear_s8": bilinear_case(),
}


def _float32_strategies() -> dict:
    """The float32 kernels (quantize="none"): tests/test_float32.py's seeded cases (every geometry option, with
    and without bias and activation)."""
    from test_float32 import CASES as FLOAT32_CASES
    return {k: st.integers(0, 2**20).map(lambda seed, make=make: Case(make(seed)[0], 0))
            for k, (_, make) in FLOAT32_CASES.items()}


STRATEGIES.update(_float32_strategies())


def _add16_strategy(build):
    """add_broadcast_case through an add16 params builder (codegen/twins/add16.py), where it accepts the case."""
    return add_broadcast_case().map(lambda c: dataclasses.replace(c, args=(build(c.args[0]), *c.args[1:]))).filter(
        lambda c: c.args[0] is not None)


STRATEGIES.update({"mcu_add_m16_s8": _add16_strategy(m16_params), "mcu_add_h16_s8": _add16_strategy(h16_params)})


@st.composite
def mul_h16_case(draw):
    """mcu_mul_h16_s8's params drawn directly (any valid shifts, multiplier, rounding shift), not only the
    builder's picks."""
    in1, in2, out = draw(broadcast_dims())
    out_off = draw(OUT_OFFSET)
    lo, hi = draw(act_range(out_off))
    o1, o2 = draw(IN_OFFSET), draw(IN_OFFSET)
    j1, j2 = (max(j for j in range(16) if offset_reach(o) << j <= 32767) for o in (o1, o2))
    params = {"input1": in1, "input2": in2, "output": out, "input1_offset": o1, "input2_offset": o2,
              "shift1": draw(st.integers(0, j1)), "shift2": draw(st.integers(0, j2)),
              "multiplier": draw(st.sampled_from([1, 32767]) | st.integers(1, 32767)),
              "shift": draw(st.integers(0, 15)), "output_offset": out_off, "act_min": lo, "act_max": hi}
    return Case((params, draw(ints(in1)), draw(ints(in2))), int(np.prod(out)))


STRATEGIES["mcu_mul_h16_s8"] = mul_h16_case()


# ---- Variants: the portable case, prepared as the code generator prepares it -----------------------------------

def _prepare_variant(variant, case: Case) -> tuple:
    """The variant's C arguments for a portable (params, mult, shift, input, weights, bias) case; a variant that
    takes scratch gets it last, exactly as many bytes as its `scratch` size (at least one, as with_scratch plans
    it), filled with garbage."""
    params, mult, shift, x, w, bias = case.args
    tensors = {"w": Tensor("w", tuple(w.shape), "int8", data=w),
               "m": Tensor("m", tuple(mult.shape), "int32", data=mult),
               "s": Tensor("s", tuple(shift.shape), "int32", data=shift)}
    if bias is not None:
        tensors["b"] = Tensor("b", tuple(bias.shape), "int32", data=bias)
    node = calls.call("n0", variant.name, ("x", "w", "b" if bias is not None else None), "y", params, ("m", "s"))
    prepared = variant.prepare(node, tensors)
    assume(prepared is not None)  # the variant declines these constants; the code generator keeps another kernel
    node, new = prepared
    tensors.update(new)
    q = node.call.quant
    data = [None if t is None else tensors[t].data for t in node.inputs[1:]]
    if variant.scratch is not None:
        size = max(1, variant.scratch(params))
        data.append(np.random.default_rng(size).integers(-128, 128, size, dtype=np.int8))
    return (node.call.params, tensors[q[0]].data, tensors[q[1]].data, x, *data)


def _rewritten(variant, args: tuple) -> tuple | None:
    """(params, inputs...) of a variant in another arithmetic for a portable case, or None where it declines."""
    prepared = variant.prepare(calls.call("n0", variant.name, ("a", "b"), "y", args[0]), {})
    return None if prepared is None else (prepared[0].call.params, *args[1:])


def _garbage(size: int) -> np.ndarray:
    """Scratch of `size` bytes (at least one, as with_scratch plans it) filled with garbage."""
    return np.random.default_rng(size).integers(-128, 128, max(1, size), dtype=np.int8)


def fuzz_target(kernel: str):
    """(twin, strategy, how to turn twin args into C args) for a kernel, or a reason it is not fuzzed."""
    if kernel in VARIANT_OF:
        base, variant = VARIANT_OF[kernel]
        if not variant.requires <= HOST_FEATURES:
            return f"{kernel} needs {sorted(variant.requires)}, which the host build does not emulate"
        if base not in STRATEGIES or base not in TWINS:
            return f"no strategy for {base}, the portable kernel of {kernel}"
        # Variants check the geometry the code generator produces (MCU_ERR_SHAPE otherwise), so only those cases.
        # Weights span all of int8, -128 included; where a variant's prepare declines them, the case is skipped.
        strategy = VARIANT_STRATEGIES.get(kernel, STRATEGIES[base]).filter(
            lambda c: c.lowered and variant.applies(c.args[0]))
        if "int4" in variant.requires:  # int4 weights: the drawn int8 weights >> 4, so -8 and 7 both occur
            strategy = strategy.map(lambda c: dataclasses.replace(
                c, args=(*c.args[:4], (c.args[4].astype(np.int8) >> 4).astype(np.int8), *c.args[5:])))
        if variant.arithmetic:  # another arithmetic: C and its twin on the params the variant's prepare builds
            strategy = strategy.filter(lambda c: _rewritten(variant, c.args) is not None)
            return (lambda *args: variant.twin(*_rewritten(variant, args)), strategy,
                    lambda c: _rewritten(variant, c.args))
        to_c = (lambda c: _prepare_variant(variant, c)) if variant.prepare else (lambda c: c.args)
        if variant.scratch is not None and not variant.prepare:  # scratch sized from the params, filled with garbage
            to_c = (lambda c: (*c.args, _garbage(variant.scratch(c.args[0]))))
        return TWINS[base], strategy, to_c
    if kernel not in TWINS:
        return f"{kernel} has no numpy twin in mcu.codegen.twins"
    if kernel not in STRATEGIES:
        return f"no hypothesis strategy for {kernel}: add one to STRATEGIES in tests/test_fuzz_kernels.py"
    return TWINS[kernel], STRATEGIES[kernel], lambda c: c.args


# ---- The properties --------------------------------------------------------------------------------------------

def _same(actual: np.ndarray, expected: np.ndarray) -> str | None:
    """None if equal (floats bit for bit, any NaN equal to any NaN), else the first mismatch."""
    if actual.dtype.kind == "f":
        both_nan = np.isnan(actual) & np.isnan(expected)
        bad = np.argwhere((actual.view(np.uint32) != expected.view(np.uint32)) & ~both_nan)
    else:
        bad = np.argwhere(actual != expected)
    if not len(bad):
        return None
    i = tuple(int(v) for v in bad[0])
    return f"{len(bad)} of {actual.size} differ; first at {i}: C {actual[i]!r}, twin {expected[i]!r}"


def check(driver: Driver, kernel: str, twin, to_c, case: Case) -> None:
    out_type = hostc._DTYPES[hostc.PROTOTYPES[kernel][-1][0]]
    try:
        with np.errstate(all="ignore"):  # the float kernels' extremes overflow to inf on purpose
            expected = np.asarray(twin(*case.args))
        size = expected.size
    except ValueError:
        expected, size = None, case.out_size
    c_args = to_c(case)
    out = np.frombuffer(np.random.default_rng(size).bytes(size * np.dtype(out_type).itemsize), out_type)
    call, where = marshal(kernel, c_args, out, case.alias)
    status, blobs = driver.run(kernel, call)
    result = np.frombuffer(blobs[call.args[-1]], out_type)[:size]  # an aliased input may be the larger
    scratch = case.scratch
    if kernel in VARIANT_OF and VARIANT_OF[kernel][1].scratch is not None:
        scratch = (len(c_args) - 1,)  # appended by _prepare_variant
    if expected is None:
        assert status != hostc.MCU_OK, f"{kernel}: the twin rejects the case but the C returned MCU_OK"
        assert blobs[call.args[-1]] == call.blobs[call.args[-1]], f"{kernel}: wrote its output, then failed"
        return
    assert status == hostc.MCU_OK, f"{kernel} returned {status} on a case the twin accepts"
    mismatch = _same(result.reshape(expected.shape), expected.astype(out_type))
    assert mismatch is None, f"{kernel}: {mismatch}"
    for k, b in where.items():
        if k != case.alias and k not in scratch:
            assert blobs[b] == call.blobs[b], f"{kernel} wrote into its input argument {k}"


@pytest.mark.parametrize("kernel", KERNELS)
@FUZZ
@given(data=st.data())
def test_kernel_matches_twin_under_sanitizers(driver, kernel, data):
    target = fuzz_target(kernel)
    if isinstance(target, str):
        pytest.skip(target)
    twin, strategy, to_c = target
    check(driver, kernel, twin, to_c, data.draw(strategy, label="case"))


def test_required_kernels_are_fuzzed():
    """The kernels the issue names (and the op-breadth ones) all have a twin and a strategy; new kernels that have
    a twin are picked up automatically (variants through the registry)."""
    missing = sorted(k for k in REQUIRED if isinstance(fuzz_target(k), str) or k not in KERNELS)
    assert not missing, {k: fuzz_target(k) for k in missing}


def test_driver_catches_an_overrun(driver):
    """The harness itself: a kernel told the input is one element longer than its buffer is an ASan report."""
    params = {"size": 9}
    call, _ = marshal("mcu_lut_s8", (params, np.zeros(256, np.int8), np.zeros(8, np.int8)), np.zeros(9, np.int8),
                      None)
    with pytest.raises(SanitizerReport, match="heap-buffer-overflow"):
        driver.run("mcu_lut_s8", call)
