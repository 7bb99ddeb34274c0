"""State kept between calls: a buffer the model writes (`self.h.copy_(h)`, `self.h = ...`) becomes the state region,
outside the arena. Device == reference bit for bit call after call, in one firmware run for a sequence too; two
regions are two independent streams in C; the region's layout, reset and errors are as documented."""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.build.host import SANITIZER_ENV, compile_executable, package_sources
from mcu.errors import ExportError, McuError
from mcu.metrics import sqnr_db
from mcu.paths import package_root


class StreamingGRU(nn.Module):
    """One 10-feature frame per call; the GRU's hidden state kept in a buffer."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(10, 16)
        self.fc = nn.Linear(16, 3)
        self.register_buffer("h", torch.zeros(1, 16))

    def forward(self, x):
        h = self.cell(x, self.h)
        self.h.copy_(h)
        return self.fc(h)


def frames(n: int, seed: int = 0) -> list[tuple[torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 10, generator=g),) for _ in range(n)]


@pytest.fixture(scope="module", params=["int8", "none"])
def stream(request, tmp_path_factory):
    torch.manual_seed(0)
    model = StreamingGRU().eval()
    calib = frames(24, seed=1)
    pkg = mcu.compile(model, calib[0], calibration=None if request.param == "none" else calib,
                      quantize=request.param, out_dir=tmp_path_factory.mktemp("state") / request.param)
    return model, pkg


def float_stream(model: nn.Module, xs) -> list[np.ndarray]:
    """The float model called frame by frame from its initial state (a copy: the user's buffers stay)."""
    m = StreamingGRU().eval()
    m.load_state_dict(model.state_dict())
    with torch.no_grad():
        return [m(*x).numpy() for x in xs]


def test_state_region_is_planned_outside_the_arena(stream):
    model, pkg = stream
    quantized = pkg.manifest["outputs"][0]["scale"] is not None
    [st] = pkg.manifest["state"]
    assert (st["name"], st["offset"], st["shape"]) == ("h", 0, [1, 16])
    assert pkg.state_bytes == st["bytes"] == (16 if quantized else 64)
    assert "test_state.py" in st["source"] and "self.cell(x, self.h)" in st["source"]
    assert [i["shape"] for i in pkg.manifest["inputs"]] == [[1, 10]]  # the state is not the caller's input
    header = (pkg.out_dir / "model.h").read_text()
    assert f"#define MODEL_STATE_BYTES {pkg.state_bytes}u" in header
    assert "void model_reset(void *state);" in header
    assert re.search(r"mcu_status_t model_run\(const \w+ \*input0, \w+ \*output0, void \*arena, void \*state\);",
                     header)
    assert pkg.memory.locations[pkg.graph.inputs[-1]].kind == "state"


@pytest.mark.qemu
def test_device_stream_equals_the_reference_call_after_call(stream):
    model, pkg = stream
    xs = frames(6, seed=7)
    dev, ref = mcu.session(pkg), mcu.session(pkg, "reference")
    for x in xs:
        d, r = dev.run(x), ref.run(x)
        np.testing.assert_array_equal(d.raw_outputs[0], r.raw_outputs[0])
        assert dev.state == ref.state
    want = float_stream(model, xs)
    got = ref.__class__(pkg, "reference").run_sequence(xs)
    quantized = pkg.manifest["outputs"][0]["scale"] is not None
    db = sqnr_db(np.concatenate(want), np.concatenate([g.outputs[0] for g in got]))
    assert db > (18 if quantized else 100), db  # int8: 22 dB over these 6 frames (calibrated on others)


@pytest.mark.qemu
def test_a_sequence_runs_in_one_firmware_run_and_reset_restarts(stream):
    _, pkg = stream
    xs = frames(8, seed=3)
    ref = mcu.session(pkg, "reference")
    want = ref.run_sequence(xs)
    dev = mcu.session(pkg)
    dev.run(frames(1, seed=99)[0])  # some history, then reset: the stream starts over
    dev.reset()
    got = dev.run_sequence(xs)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g.raw_outputs[0], w.raw_outputs[0])
    assert dev.state == ref.state and got[0].instructions > 0
    first = mcu.run(pkg, xs[0])  # mcu.run starts from the initial state
    np.testing.assert_array_equal(first.raw_outputs[0], want[0].raw_outputs[0])


def test_two_sessions_are_two_independent_streams(stream):
    _, pkg = stream
    a_x, b_x = frames(4, seed=11), frames(4, seed=12)
    alone_a = mcu.session(pkg, "reference").run_sequence(a_x)
    alone_b = mcu.session(pkg, "reference").run_sequence(b_x)
    a, b = mcu.session(pkg, "reference"), mcu.session(pkg, "reference")
    for k in range(4):
        np.testing.assert_array_equal(a.run(a_x[k]).raw_outputs[0], alone_a[k].raw_outputs[0])
        np.testing.assert_array_equal(b.run(b_x[k]).raw_outputs[0], alone_b[k].raw_outputs[0])


DRIVER = r"""/* Two state regions of one model, interleaved: prints each call's output bytes as hex. */
#include <stdint.h>
#include <stdio.h>

#include "model.h"

static uint8_t arena[MODEL_ARENA_BYTES + 16] __attribute__((aligned(MODEL_ARENA_ALIGN)));
static uint8_t state_a[MODEL_STATE_BYTES] __attribute__((aligned(MODEL_STATE_ALIGN)));
static uint8_t state_b[MODEL_STATE_BYTES] __attribute__((aligned(MODEL_STATE_ALIGN)));
static const uint8_t inputs[%(calls)d][MODEL_INPUT0_BYTES] = { %(inputs)s };

int main(void)
{
    uint8_t out[MODEL_OUTPUT0_BYTES];
    model_reset(state_a);
    model_reset(state_b);
    for (int k = 0; k < %(calls)d; ++k) {
        void *state = (k %% 2 == 0) ? state_a : state_b;
        int status = (int)model_run((const void *)inputs[k], (void *)out, arena, state);
        printf("%%d:", status);
        for (unsigned i = 0; i < MODEL_OUTPUT0_BYTES; ++i) {
            printf("%%02x", out[i]);
        }
        printf("\n");
    }
    return 0;
}
"""


@pytest.mark.host_c
def test_two_regions_in_c_are_two_streams(stream, tmp_path):
    _, pkg = stream
    a_x, b_x = frames(3, seed=21), frames(3, seed=22)
    calls = [x for pair in zip(a_x, b_x) for x in pair]  # a, b, a, b, ...
    raw = [pkg.quantize_inputs(x)[0].tobytes() for x in calls]
    body = ", ".join("{" + ", ".join(str(b) for b in r) + "}" for r in raw)
    (tmp_path / "driver.c").write_text(DRIVER % {"calls": len(calls), "inputs": body})
    exe = compile_executable([tmp_path / "driver.c", *package_sources(pkg)], tmp_path / "driver",
                             include_dirs=[package_root("mcu.runtime_c") / "include", pkg.out_dir])
    lines = subprocess.run([str(exe)], capture_output=True, text=True, env=SANITIZER_ENV, check=True,
                           timeout=60).stdout.split()
    want_a = mcu.session(pkg, "reference").run_sequence(a_x)
    want_b = mcu.session(pkg, "reference").run_sequence(b_x)
    want = [w for pair in zip(want_a, want_b) for w in pair]
    for line, w in zip(lines, want, strict=True):
        status, data = line.split(":")
        assert status == "0" and bytes.fromhex(data) == w.raw_outputs[0].tobytes()


class Growing(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("history", torch.zeros(1, 4))

    def forward(self, x):
        self.history = torch.cat([self.history, x], 1)
        return self.history.sum(1, keepdim=True)


class ReassignedTanh(nn.Module):
    """`self.h = tanh(...)`: the state takes tanh's fixed int8 qparams."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("h", torch.zeros(1, 4))

    def forward(self, x):
        self.h = torch.tanh(self.fc(x) + self.h)
        return self.h * 2


def test_a_buffer_that_changes_shape_is_refused_naming_it(tmp_path):
    with pytest.raises(ExportError, match=r"buffer 'history' is written at .*test_state.py.*shape \[1, 8\] but "
                                          r"holds \[1, 4\]"):
        mcu.compile(Growing().eval(), (torch.randn(1, 4),), out_dir=tmp_path / "g")


def test_reassigned_buffer_is_state_on_its_writers_qparams(tmp_path):
    torch.manual_seed(0)
    pkg = mcu.compile(ReassignedTanh().eval(), (torch.randn(1, 4),), out_dir=tmp_path / "t")
    [st] = pkg.manifest["state"]
    assert (st["scale"], st["zero_point"]) == (1 / 128, 0)  # tanh's fixed qparams, shared by the state
    with pytest.raises(McuError, match="keeps no state"):
        mcu.session(mcu.compile(nn.Linear(4, 2).eval(), (torch.randn(1, 4),), out_dir=tmp_path / "l"))


@pytest.mark.qemu
def test_eval_runs_the_inputs_as_one_sequence(stream):
    model, pkg = stream
    xs = frames(10, seed=31)
    data = np.concatenate([x[0].numpy() for x in xs])
    result = mcu.eval(pkg, data, float_model=model)
    want = mcu.session(pkg, "reference").run_sequence(xs)
    assert result.device_equals_reference
    assert result.predictions["reference"] == [int(w.raw_outputs[0].argmax()) for w in want]
    assert torch.equal(model.h, torch.zeros(1, 16))  # the user's model is not advanced by the evaluation


class DataDependentLoop(nn.Module):
    def forward(self, x):
        while x.sum() > 0:
            x = x - 1
        return x


def test_a_data_dependent_loop_is_one_clear_error(tmp_path):
    with pytest.raises(ExportError, match=r"test_state.py.*while x.sum\(\) > 0.*depends on a tensor's values"):
        mcu.compile(DataDependentLoop(), (torch.randn(1, 4),), out_dir=tmp_path / "loop")


def test_target_sqnr_measures_a_stream_with_its_state_carried(tmp_path):
    """target_sqnr runs the float model, each candidate and the integer reference over the calibration stream in
    order, the state carried from call to call (as the device does), and reaches the target on that stream."""
    torch.manual_seed(0)
    model = StreamingGRU().eval()
    calib = frames(24, seed=1)
    want = float_stream(model, calib[:16])
    base = mcu.compile(model, calib[0], calibration=calib, out_dir=tmp_path / "int8")
    base_db = sqnr_db(want, [base.dequantize_outputs(r)[0] for r in base.reference_sequence(calib[:16])])
    pkg = mcu.compile(model, calib[0], calibration=calib, target_sqnr=base_db + 6, out_dir=tmp_path / "auto")
    got = sqnr_db(want, [pkg.dequantize_outputs(r)[0] for r in pkg.reference_sequence(calib[:16])])
    assert got == pytest.approx(pkg.precision.sqnr_db, abs=1e-3) and got >= base_db + 6
    assert pkg.precision.base_db == pytest.approx(base_db, abs=1e-3)
    # one call from the initial state is the first call of the stream; the device runs the chosen mix call by call
    assert np.array_equal(pkg.reference(calib[0])[0], pkg.reference_sequence(calib[:2])[0][0])
    dev = mcu.session(pkg).run_sequence(calib[:6])
    for k, (d, r) in enumerate(zip(dev, pkg.reference_sequence(calib[:6]))):
        np.testing.assert_array_equal(d.raw_outputs[0].reshape(-1), r[0].reshape(-1), err_msg=f"call {k}")
