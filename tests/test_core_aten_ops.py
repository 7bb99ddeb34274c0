"""Core ATen ops that run as composites (mcu.importer.composites): 3-d average pools, embedding_bag, index_put with
constant indices, masked_scatter, scatter_reduce, as_strided, grid_sampler_2d, sort and topk; and int8 tables of ops whose input
steps reach outside their domain (asin, atanh).

- float32: the numpy reference within 1e-5 relative of torch on hand-picked values;
- int8: >= 25 dB SQNR against torch (asin >= 35 dB);
- one QEMU run (mps2-an386): device == reference bit for bit;
- an unsupported form is refused naming the op and what to change.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import mcu
from codegen.twins.activation import lut_table, unary_function
from mcu.errors import UnsupportedOpError
from mcu.metrics import relative_error, sqnr_db


class Fn(nn.Module):
    """f(x, *buffers): the op applied to the input with constant tensors."""

    def __init__(self, f, *consts):
        super().__init__()
        self.f = f
        for i, c in enumerate(consts):
            self.register_buffer(f"c{i}", c)
        self.n = len(consts)

    def forward(self, x):
        return self.f(x, *[getattr(self, f"c{i}") for i in range(self.n)])


def _grid():
    g = torch.Generator().manual_seed(1)
    return torch.rand(2, 3, 4, 2, generator=g) * 2.4 - 1.2  # some points outside the image (zeros padding)


CASES = {
    "avg_pool3d": (lambda: Fn(lambda x: F.avg_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), count_include_pad=False)),
                   (1, 2, 4, 5, 4)),
    "avg_pool3d_ceil": (lambda: Fn(lambda x: F.avg_pool3d(x, 2, ceil_mode=True)), (2, 3, 3, 5, 5)),
    "adaptive_avg_pool3d": (lambda: Fn(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 1))), (1, 3, 5, 7, 4)),
    "embedding_bag_sum": (lambda: Fn(lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
                                     torch.tensor([1, 3, 3, 0, 9]), torch.tensor([0, 3]),
                                     torch.tensor([0.5, -1.0, 2.0, 1.5, 1.0])), (10, 4)),
    "embedding_bag_mean": (lambda: Fn(lambda w, i: F.embedding_bag(i, w, mode="mean"),
                                      torch.tensor([[1, 2, 5], [7, 7, 0]])), (10, 4)),
    "embedding_bag_max": (lambda: Fn(lambda w, i, o: F.embedding_bag(i, w, o, mode="max"),
                                     torch.tensor([4, 2, 8, 8, 1]), torch.tensor([0, 2, 4])), (10, 4)),
    "index_put": (lambda: Fn(lambda x, v: torch.index_put(x, (torch.tensor([2, 0]),), v), torch.randn(1, 5)), (4, 5)),
    "index_put_accumulate": (lambda: Fn(lambda x, v: torch.index_put(x, (torch.tensor([1, 1, 3]),), v, True),
                                        torch.randn(3, 5)), (4, 5)),
    "masked_scatter": (lambda: Fn(lambda x, m, s: x.masked_scatter(m, s), torch.rand(3, 5) > 0.5,
                                  torch.randn(3, 5)), (3, 5)),
    "scatter_reduce_mean": (lambda: Fn(lambda x, s: x.scatter_reduce(0, torch.tensor([[0, 1, 2], [0, 0, 2]]), s,
                                                                     "mean", include_self=True), torch.randn(2, 3)),
                            (4, 3)),
    "scatter_reduce_sum": (lambda: Fn(lambda x, s: x.scatter_reduce(1, torch.tensor([[2, 2], [0, 1]]), s, "sum",
                                                                    include_self=False), torch.randn(2, 2)), (2, 4)),
    "as_strided": (lambda: Fn(lambda x: torch.as_strided(x, (3, 3), (2, 1), 1)), (4, 3)),
    "grid_sampler_2d": (lambda: Fn(lambda x, g: F.grid_sample(x, g, align_corners=False), _grid()), (2, 3, 5, 6)),
}


def _compile(name, quantize, tmp_path, board="mps2-an386"):
    torch.manual_seed(0)
    factory, shape = CASES[name]
    model, x = factory().eval(), torch.randn(shape)
    calib = None if quantize == "none" else [(x,)] + [(torch.randn(shape),) for _ in range(8)]
    pkg = mcu.compile(model, (x,), quantize=quantize, calibration=calib, out_dir=tmp_path / "p", board=board)
    with torch.no_grad():
        want = model(x).numpy()
    return pkg, x, want


@pytest.mark.parametrize("name", CASES)
def test_float32_equals_torch(name, tmp_path):
    pkg, x, want = _compile(name, "none", tmp_path)
    got = pkg.reference((x,))[0].reshape(want.shape)
    assert relative_error(got, want) <= 1e-5, name


@pytest.mark.parametrize("name", ["avg_pool3d", "adaptive_avg_pool3d", "embedding_bag_sum", "embedding_bag_max",
                                  "index_put", "masked_scatter", "scatter_reduce_mean", "grid_sampler_2d"])
def test_int8_within_25_db(name, tmp_path):
    pkg, x, want = _compile(name, "int8", tmp_path)
    got = np.asarray(pkg.dequantize_outputs(pkg.reference((x,)))[0], np.float32).reshape(want.shape)
    assert sqnr_db(want, got) >= 25, name


@pytest.mark.qemu
@pytest.mark.parametrize("name,quantize", [("avg_pool3d", "int8"), ("grid_sampler_2d", "none")])
def test_device_equals_reference(name, quantize, tmp_path):
    pkg, x, _ = _compile(name, quantize, tmp_path)
    assert np.array_equal(mcu.run(pkg, (x,)).raw_outputs[0], pkg.reference((x,))[0])


def test_lut_step_outside_the_domain_takes_the_nearest_inside():
    """asin's table over inputs [-1.004, 1.0]: the step below -1 (NaN in torch) equals the step at -0.996."""
    scale, zp = 2.004 / 255, 127 - round(1.0 / (2.004 / 255))
    table = lut_table(unary_function(("asin.default", (...,), ())), scale, zp, np.pi / 255, 0)
    assert (-128 - zp) * scale < -1 < (-127 - zp) * scale
    assert table[0] == table[1] == round(np.arcsin((-127 - zp) * scale) / (np.pi / 255))


def test_asin_int8_reaching_the_domain_edge(tmp_path):
    x = torch.linspace(-0.9987, 0.996, 64).reshape(1, 64)
    pkg = mcu.compile(Fn(torch.asin).eval(), (x,), quantize="int8", calibration=[(x,)], out_dir=tmp_path / "p")
    got = np.asarray(pkg.dequantize_outputs(pkg.reference((x,)))[0], np.float32).reshape(1, 64)
    assert sqnr_db(torch.asin(x).numpy(), got) >= 35


def test_run_time_indices_are_refused_naming_the_op(tmp_path):
    class Bag(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(10, 4))

        def forward(self, x):
            return F.embedding_bag(x, self.weight, torch.tensor([0, 2]))

    with pytest.raises(UnsupportedOpError, match="embedding_bag.*make indices and offsets constants"):
        mcu.compile(Bag().eval(), (torch.tensor([1, 2, 3, 4]),), quantize="none", out_dir=tmp_path / "p")


class SortTopk(nn.Module):
    def forward(self, x):
        values, index = torch.sort(x, dim=0, descending=True, stable=True)
        top, where = torch.topk(x, 2, dim=-1, largest=False)
        return values, index, top, where


def test_sort_and_topk_values_and_indices_equal_torch(tmp_path):
    """Ties (the 1.0s, the 0.0s) keep index order as torch's stable sort; topk of the smallest along the last dim."""
    x = torch.tensor([[1.0, -2.0, 0.0, 3.5], [1.0, 4.0, 0.0, -1.0], [-3.0, 4.5, 2.0, 0.25]])
    pkg = mcu.compile(SortTopk().eval(), (x,), quantize="none", out_dir=tmp_path / "p")
    for got, want in zip(pkg.reference((x,)), SortTopk()(x)):
        assert np.array_equal(np.asarray(got).reshape(want.shape), want.float().numpy())


def test_sort_of_a_long_dim_of_a_matrix_is_refused_naming_the_limit(tmp_path):
    model = Fn(lambda x: torch.sort(x)[0])
    with pytest.raises(UnsupportedOpError, match="sort.*300 elements.*sort a shorter dim"):
        mcu.compile(model.eval(), (torch.randn(2, 300),), quantize="none", out_dir=tmp_path / "p")


@pytest.mark.qemu
def test_long_sort_runs_the_argsort_kernel_on_the_device(tmp_path):
    """A 1-d sort past the pairwise limit: mcu_argsort_f32 and a gather; ties (rounded values) in index order and a
    NaN first, as torch's stable descending sort; the device equals the reference."""
    x = torch.round(torch.randn(1, 400, generator=torch.Generator().manual_seed(3)) * 4)
    x[0, 17] = float("nan")
    model = Fn(lambda v: tuple(torch.sort(v, dim=-1, descending=True, stable=True))).eval()
    pkg = mcu.compile(model, (x,), quantize="none", out_dir=tmp_path / "p")
    ref = pkg.reference((x,))
    assert "mcu_argsort_f32" in {n.call.kernel for n in pkg.graph.nodes if n.call is not None}
    for got, want in zip(ref, model(x)):
        assert np.array_equal(np.asarray(got).reshape(want.shape), want.float().numpy(), equal_nan=True)
    dev = mcu.run(pkg, (x,)).raw_outputs
    assert all(np.array_equal(d, r, equal_nan=True) for d, r in zip(dev, ref))


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_constant_output_is_copied_from_the_weights(quantize, tmp_path):
    """slice_scatter over all of its input returns the scattered constant: the output is that constant (float32,
    also in int8), the unread input stays the model's input, and the device equals the reference."""
    src = torch.randn(4, 3)
    model = Fn(lambda x, s: torch.slice_scatter(x, s, 0, 0, 4), src).eval()
    x = torch.randn(4, 3)
    pkg = mcu.compile(model, (x,), quantize=quantize, calibration=None if quantize == "none" else [(x,)],
                      out_dir=tmp_path / "p")
    ref = pkg.reference((x,))
    assert np.array_equal(np.asarray(ref[0], np.float32).reshape(4, 3), src.numpy())
    assert np.array_equal(mcu.run(pkg, (x,)).raw_outputs[0], ref[0])
