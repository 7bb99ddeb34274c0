"""Float in, float out, in C: the generated <prefix>_quantize_input<k> and <prefix>_dequantize_output<k> (model.h)
equal the host's Package.quantize_inputs and Package.dequantize_outputs bit for bit, on exact ties (rounded half to
even), values far beyond the integer range, overflow to infinity, negative zero and denormals, for int8 and a16w8
(int16) packages; the data is in the stored order (NHWC for a 4-d input). A float32 package gets no helper."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.build.host import package_sources
from mcu.package import to_stored, to_torch, torch_shape
from tests.hostc import build

pytestmark = pytest.mark.host_c


class TwoInputs(nn.Module):
    """A 4-d (NHWC-stored) input and a 2-d one; a 4-d output and a 2-d one."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(6, 5)

    def forward(self, img, vec):
        return torch.relu(self.conv(img)), self.fc(vec)


def compile_pkg(root, quantize: str, name: str = "model"):
    torch.manual_seed(0)
    model = TwoInputs().eval()
    gen = torch.Generator().manual_seed(1)
    calib = [(torch.randn(1, 3, 5, 5, generator=gen), torch.randn(1, 6, generator=gen)) for _ in range(4)]
    return mcu.compile(model, calib[0], calibration=calib, quantize=quantize, name=name, out_dir=root / quantize)


@pytest.fixture(scope="module", params=[("int8", "model"), ("a16w8", "kws")], ids=["int8", "a16w8"])
def pkg_lib(request, tmp_path_factory):
    quantize, name = request.param
    pkg = compile_pkg(tmp_path_factory.mktemp("floatio"), quantize, name)
    return pkg, build(package_sources(pkg))


def awkward_values(spec, seed: int) -> np.ndarray:
    """float32 values for input `spec`: exact ties of x * float32(1 / scale), (k + 0.5) * scale, values beyond the
    range and overflowing the product, signed zeros, denormals, then random ones."""
    scale, inv = np.float32(spec["scale"]), np.float32(1.0 / spec["scale"])
    ks = np.arange(-300, 300, dtype=np.float32) + np.float32(0.5)
    ties = (ks / inv).astype(np.float32)
    ties = ties[ties * inv == ks]  # those whose product is exactly k + 0.5
    assert len(ties) > 100
    special = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1e6, -1e6, 1e30, -1e30, 3.4e38, -3.4e38,
                        8388607.5, -8388607.5, 8388609.0, -8388609.0, 16777216.0, -16777216.0], np.float32)
    rand = np.random.default_rng(seed).normal(0, 200 * scale, 500).astype(np.float32)
    return np.concatenate([ties, ks * scale, special, special * scale, rand])


def c_quantize(lib, name: str, k: int, stored: np.ndarray, ctype) -> np.ndarray:
    x = np.ascontiguousarray(stored, np.float32)
    q = np.zeros(x.shape, ctype)
    getattr(lib, f"{name}_quantize_input{k}")(x.ctypes.data_as(ctypes.c_void_p), q.ctypes.data_as(ctypes.c_void_p))
    return q


def test_quantize_equals_the_host_bit_for_bit(pkg_lib):
    """Every value goes through each input, a buffer at a time, against Package.quantize_inputs."""
    pkg, lib = pkg_lib
    name, specs = pkg.manifest["name"], pkg.manifest["inputs"]
    assert {s["dtype"] for s in specs} == {"int8" if name == "model" else "int16"}
    for k, spec in enumerate(specs):
        shape = torch_shape(spec)
        n = int(np.prod(shape))
        values = np.random.default_rng(k).permutation(awkward_values(spec, seed=k))
        values = np.resize(values, -(-len(values) // n) * n)  # whole buffers (wraps around)
        for start in range(0, len(values), n):
            xs = [np.zeros(torch_shape(s), np.float32) for s in specs]
            xs[k] = values[start:start + n].reshape(shape)
            want = pkg.quantize_inputs([torch.from_numpy(x) for x in xs])[k]  # stored order
            got = c_quantize(lib, name, k, to_stored(xs[k], spec), want.dtype)
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want, err_msg=f"input{k} at {start}")


def test_ties_round_half_to_even(pkg_lib):
    pkg, lib = pkg_lib
    name, spec = pkg.manifest["name"], pkg.manifest["inputs"][1]  # the 2-d input: 6 elements
    inv = np.float32(1.0 / spec["scale"])
    ks = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5], np.float32)
    x = (ks / inv).astype(np.float32)
    exact = x * inv == ks
    q = c_quantize(lib, name, 1, x.reshape(1, 6), np.int8 if spec["dtype"] == "int8" else np.int16)
    want = np.array([0, 2, 2, 0, -2, -2]) + spec["zero_point"]
    assert exact.any()
    np.testing.assert_array_equal(q.reshape(-1)[exact], want[exact])


def test_nan_gives_the_zero_point(pkg_lib):
    pkg, lib = pkg_lib
    name, spec = pkg.manifest["name"], pkg.manifest["inputs"][1]
    x = np.array([[np.nan, -np.nan, np.inf, -np.inf, 0.0, 1.0]], np.float32)
    q = c_quantize(lib, name, 1, x, np.int8 if spec["dtype"] == "int8" else np.int16)
    info = np.iinfo(q.dtype)
    assert q.reshape(-1)[:4].tolist() == [spec["zero_point"], spec["zero_point"], info.max, info.min]


def test_dequantize_equals_the_host_exactly(pkg_lib):
    pkg, lib = pkg_lib
    name, specs = pkg.manifest["name"], pkg.manifest["outputs"]
    raws = []
    for k, spec in enumerate(specs):
        info = np.iinfo(np.dtype(spec["dtype"]))
        n = int(np.prod(spec["shape"]))
        raw = np.resize(np.concatenate([[info.min, info.max, 0, -1, 1],
                                        np.random.default_rng(k).integers(info.min, info.max + 1, n)]), n)
        raws.append(raw.astype(spec["dtype"]).reshape(spec["shape"]))  # stored order
    want = pkg.dequantize_outputs(raws)
    for k, (raw, w) in enumerate(zip(raws, want)):
        y = np.zeros(raw.shape, np.float32)
        r = np.ascontiguousarray(raw)
        getattr(lib, f"{name}_dequantize_output{k}")(r.ctypes.data_as(ctypes.c_void_p),
                                                     y.ctypes.data_as(ctypes.c_void_p))
        assert y.tobytes() == w.astype(np.float32).tobytes(), f"output{k}"


def test_the_helpers_feed_the_run(pkg_lib):
    """Quantizing in C, running and dequantizing in C gives the host's pipeline (reference) output."""
    pkg, lib = pkg_lib
    name = pkg.manifest["name"]
    gen = torch.Generator().manual_seed(7)
    xs = [torch.randn(torch_shape(s), generator=gen) for s in pkg.manifest["inputs"]]
    want = pkg.dequantize_outputs(pkg.reference(xs))  # torch order
    qs = [c_quantize(lib, name, k, to_stored(x.numpy(), s), np.dtype(s["dtype"]))
          for k, (x, s) in enumerate(zip(xs, pkg.manifest["inputs"]))]
    outs = [np.zeros(s["shape"], np.dtype(s["dtype"])) for s in pkg.manifest["outputs"]]
    arena = np.zeros(pkg.manifest["arena_bytes"] + 64, np.uint8)
    base = arena.ctypes.data
    aligned = base + (-base) % 16
    args = [ctypes.c_void_p(a.ctypes.data) for a in qs + outs] + [ctypes.c_void_p(aligned)]
    assert getattr(lib, f"{name}_run")(*args) == 0
    for k, (o, w) in enumerate(zip(outs, want)):
        y = np.zeros(o.shape, np.float32)
        getattr(lib, f"{name}_dequantize_output{k}")(ctypes.c_void_p(o.ctypes.data), ctypes.c_void_p(y.ctypes.data))
        np.testing.assert_array_equal(to_torch(y, pkg.manifest["outputs"][k]), w)


def test_float32_package_has_no_helpers(tmp_path):
    pkg = compile_pkg(tmp_path, "none")
    text = (pkg.out_dir / "model.h").read_text() + (pkg.out_dir / "model.c").read_text()
    assert "_quantize_input" not in text and "_dequantize_output" not in text


def test_the_header_declares_them_with_the_prefix(pkg_lib):
    pkg, _ = pkg_lib
    name = pkg.manifest["name"]
    header = (pkg.out_dir / f"{name}.h").read_text()
    ctype = "int8_t" if pkg.manifest["inputs"][0]["dtype"] == "int8" else "int16_t"
    assert f"void {name}_quantize_input0(const float *x, {ctype} *q); /* 75 elements, NHWC */" in header
    assert f"void {name}_quantize_input1(const float *x, {ctype} *q); /* 6 elements, torch order */" in header
    assert f"void {name}_dequantize_output0(const {ctype} *q, float *y);" in header
    assert f"void {name}_dequantize_output1(const {ctype} *q, float *y);" in header
