"""quantize="none": the float model compiled as it is, float32 kernels end to end.

- Kernels: each float32 kernel built with the host gcc equals its numpy twin bit for bit (same float operations
  in the same order); the twins agree with torch's float ops within the stated tolerance, relative error
  max|ours - torch| / max|torch| <= mcu.metrics.FLOAT_TOLERANCE (1e-5).
- Compiler: the float import folds BatchNorm and fuses ReLU/ReLU6, plans float tensors in the one arena, and
  refuses ops without a float32 kernel with an UnsupportedOpError naming the op.
- Device (QEMU): the four zoo models on mps2-an386 (M4F, hard float) and small models on mps2-an385 (M3, soft
  float) and mps3-an547 (M55) against the twin and torch. The device has equalled the twin bit for bit on
  every board so far (no fused multiply-add under -std=c99; libgcc's soft float rounds as IEEE says); the
  zoo is held to the tolerance, the small models to the bits.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import hostc
import mcu
from mcu.importer.from_float import import_float
from mcu.errors import UnsupportedOpError
from mcu.importer.export import export
from mcu.metrics import FLOAT_TOLERANCE, relative_error
from mcu.codegen.twins import float32 as twins
from mcu.codegen.twins import fmath
from mcu.codegen.twins import shape as shape_twins
from mcu.zoo import MODELS, example_cnn

F32 = np.float32
FMAX = float(np.finfo(np.float32).max)
SEEDS = range(12)


def assert_same_bits(actual, expected, what: str = "") -> None:
    a, e = np.asarray(actual, F32), np.asarray(expected, F32)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    bad = np.argwhere(a.view(np.uint32) != e.view(np.uint32))
    if len(bad):
        i = tuple(int(v) for v in bad[0])
        raise AssertionError(f"{what}: {len(bad)} of {a.size} values differ; first at {i}: {a[i]!r} vs {e[i]!r}")


def assert_close(actual, reference, what: str = "", tol: float = FLOAT_TOLERANCE) -> float:
    err = relative_error(actual, reference)
    if not err <= tol:
        d = np.abs(np.asarray(actual, np.float64) - np.asarray(reference, np.float64))
        i = np.unravel_index(int(d.argmax()), d.shape)
        raise AssertionError(f"{what}: relative error {err:.3g} > {tol:g}; worst at {i}: "
                             f"{np.asarray(actual)[i]!r} vs {np.asarray(reference)[i]!r}")
    return err


def nchw(x):
    return torch.from_numpy(np.ascontiguousarray(x)).permute(0, 3, 1, 2)


def nhwc(t):
    return t.permute(0, 2, 3, 1).numpy()


def _act(rng) -> tuple[float, float]:
    return [(-FMAX, FMAX), (0.0, FMAX), (0.0, 6.0)][int(rng.integers(3))]


def _clamp(t, lo, hi):
    if lo == -FMAX and hi == FMAX:
        return t
    return torch.clamp(t, min=None if lo == -FMAX else lo, max=None if hi == FMAX else hi)


# ---- Kernel cases: (twin args, torch's result) ---------------------------------------------------------------

def conv_case(seed: int, depthwise: bool = False):
    rng = np.random.default_rng(seed)
    n, h, w = int(rng.integers(1, 3)), int(rng.integers(3, 10)), int(rng.integers(3, 10))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    sh, sw, dh, dw = (int(v) for v in rng.integers(1, 3, size=4))
    pt, pl = int(rng.integers(0, kh)), int(rng.integers(0, kw))
    if depthwise:
        c_in, mult = int(rng.integers(1, 6)), int(rng.integers(1, 3))
        groups, c_out, c_group = c_in, c_in * mult, 1
    else:
        groups = [1, 1, 2, 3][seed % 4]
        c_group, per = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        c_in, c_out = groups * c_group, groups * per
    h, w = max(h, (kh - 1) * dh + 1), max(w, (kw - 1) * dw + 1)
    oh, ow = (h + 2 * pt - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pl - dw * (kw - 1) - 1) // sw + 1
    x = rng.standard_normal((n, h, w, c_in)).astype(F32)
    wt = (rng.standard_normal((c_out, kh, kw, c_group)) / np.sqrt(kh * kw * c_group)).astype(F32)
    bias = None if seed % 3 == 0 else rng.standard_normal(c_out).astype(F32)
    lo, hi = _act(rng)
    p = {"input": (n, h, w, c_in), "filter": (1, kh, kw, c_out) if depthwise else (c_out, kh, kw, c_group),
         "output": (n, oh, ow, c_out), "stride_h": sh, "stride_w": sw, "pad_top": pt, "pad_left": pl,
         "dilation_h": dh, "dilation_w": dw, "act_min": lo, "act_max": hi}
    filt = np.ascontiguousarray(wt.transpose(3, 1, 2, 0)) if depthwise else wt  # depthwise: [1, KH, KW, C_out]
    # torch pads symmetrically; the kernel's bottom/right padding comes from the output size (as fold_pad's)
    xp = np.zeros((n, pt + max(h, (oh - 1) * sh + (kh - 1) * dh + 1 - pt), pl + max(w, (ow - 1) * sw + (kw - 1) * dw
                                                                                  + 1 - pl), c_in), F32)
    xp[:, pt:pt + h, pl:pl + w] = x
    ref = torch.nn.functional.conv2d(nchw(xp), torch.from_numpy(wt).permute(0, 3, 1, 2),
                                     None if bias is None else torch.from_numpy(bias), (sh, sw), 0, (dh, dw), groups)
    ref = nhwc(_clamp(ref, lo, hi))[:, :oh, :ow]
    return (p, x, filt, bias), ref


def fc_case(seed: int):
    rng = np.random.default_rng(seed)
    b, k, n = int(rng.integers(1, 4)), int(rng.integers(1, 300)), int(rng.integers(1, 20))
    x, w = rng.standard_normal((b, k)).astype(F32), (rng.standard_normal((n, k)) / np.sqrt(k)).astype(F32)
    bias = None if seed % 3 == 0 else rng.standard_normal(n).astype(F32)
    lo, hi = _act(rng)
    p = {"batches": b, "in_features": k, "out_features": n, "act_min": lo, "act_max": hi}
    ref = _clamp(torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(w),
                                            None if bias is None else torch.from_numpy(bias)), lo, hi)
    return (p, x, w, bias), ref.numpy()


def pool_case(seed: int, kind: str):
    rng = np.random.default_rng(seed)
    n, h, w, c = int(rng.integers(1, 3)), int(rng.integers(2, 10)), int(rng.integers(2, 10)), int(rng.integers(1, 6))
    kh, kw = int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    pt, pl = int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1))
    oh, ow = (h + 2 * pt - kh) // sh + 1, (w + 2 * pl - kw) // sw + 1
    include_pad = kind == "avg" and seed % 2 == 0
    x = rng.standard_normal((n, h, w, c)).astype(F32)
    p = {"input": (n, h, w, c), "output": (n, oh, ow, c), "kernel_h": kh, "kernel_w": kw, "stride_h": sh,
         "stride_w": sw, "pad_top": pt, "pad_left": pl, "divisor": kh * kw if include_pad else 0,
         "act_min": -FMAX, "act_max": FMAX}
    if kind == "max":
        ref = torch.nn.functional.max_pool2d(nchw(x), (kh, kw), (sh, sw), (pt, pl))
    else:
        ref = torch.nn.functional.avg_pool2d(nchw(x), (kh, kw), (sh, sw), (pt, pl), count_include_pad=include_pad)
    return (p, x), nhwc(ref)


def binary_case(seed: int, op: str):
    rng = np.random.default_rng(seed)
    out = tuple(int(v) for v in rng.integers(1, 5, size=4))
    shapes = [tuple(d if rng.random() < 0.6 else 1 for d in out) for _ in range(2)]
    shapes[seed % 2] = out
    a, b = (rng.standard_normal(s).astype(F32) for s in shapes)
    lo, hi = _act(rng)
    p = {"input1": shapes[0], "input2": shapes[1], "output": out, "subtract": int(op == "sub"),
         "act_min": lo, "act_max": hi}
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    ref = {"add": ta + tb, "sub": ta - tb, "mul": ta * tb}[op]
    return (p, a, b), _clamp(ref, lo, hi).numpy()


def softmax_case(seed: int):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 5)), int(rng.integers(1, 200))
    x = (rng.standard_normal((rows, cols)) * [0.1, 3.0, 30.0][seed % 3]).astype(F32)
    return ({"rows": rows, "cols": cols}, x), torch.softmax(torch.from_numpy(x), -1).numpy()


def reduce_case(seed: int):
    """Sum, mean, amax, amin and prod over random axes (the four MCU_REDUCE_* ops in turn, sum twice for mean)."""
    rng = np.random.default_rng(seed)
    dims = tuple(int(v) for v in rng.integers(1, 6, size=4))
    axes = [i for i in range(4) if rng.random() < 0.5] or [3]
    out = tuple(1 if i in axes else d for i, d in enumerate(dims))
    kind = ("mean", "sum", "amax", "amin", "prod")[seed % 5]
    x = rng.standard_normal(dims).astype(F32)
    count = int(np.prod([dims[i] for i in axes]))
    t = torch.from_numpy(x)
    ref = {"mean": lambda: t.mean(dim=axes, keepdim=True), "sum": lambda: t.sum(dim=axes, keepdim=True),
           "amax": lambda: t.amax(dim=axes, keepdim=True), "amin": lambda: t.amin(dim=axes, keepdim=True),
           "prod": lambda: t.reshape(-1).new_tensor(np.prod(x, axis=tuple(axes), keepdims=True))}[kind]()
    op = twins.REDUCE_OPS[{"mean": "sum", "amax": "max", "amin": "min"}.get(kind, kind)]
    return ({"input": dims, "output": out, "divisor": float(count) if kind == "mean" else 1.0, "op": op}, x), \
        ref.numpy()


def transpose_case(seed: int):
    rng = np.random.default_rng(seed)
    dims = tuple(int(v) for v in rng.integers(1, 6, size=4))
    perm = tuple(int(v) for v in rng.permutation(4))
    x = rng.standard_normal(dims).astype(F32)
    return ({"in_dims": dims, "perm": perm}, x), x.transpose(perm)


def clamp_case(seed: int):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(int(rng.integers(1, 100))) * 4).astype(F32)
    lo, hi = _act(rng)
    return ({"size": x.size, "act_min": lo, "act_max": hi}, x), _clamp(torch.from_numpy(x), lo, hi).numpy()


def upsample_case(seed: int):
    rng = np.random.default_rng(seed)
    dims = tuple(int(v) for v in rng.integers(1, 5, size=4))
    sh, sw = (int(v) for v in rng.integers(1, 4, size=2))
    x = rng.standard_normal(dims).astype(F32)  # NHWC
    want = torch.nn.functional.interpolate(torch.from_numpy(x).permute(0, 3, 1, 2), scale_factor=(sh, sw))
    return ({"input": dims, "scale_h": sh, "scale_w": sw}, x), want.permute(0, 2, 3, 1).numpy()


def pad_case(seed: int):
    rng = np.random.default_rng(seed)
    outer, in_len, inner = (int(v) for v in rng.integers(1, 5, size=3))
    before, after = (int(v) for v in rng.integers(0, 4, size=2))
    value = float(np.float32(rng.standard_normal()))
    x = rng.standard_normal((outer, in_len, inner)).astype(F32)
    want = torch.nn.functional.pad(torch.from_numpy(x).transpose(1, 2), (before, after), value=value).transpose(1, 2)
    return ({"outer": outer, "in_len": in_len, "before": before, "after": after, "inner": inner, "value": 0,
             "value_f32": value}, x), want.numpy()


def arg_case(seed: int):
    """argmax / argmin along a random dim, with ties (rounded values) and now and then a NaN (torch's rules)."""
    rng = np.random.default_rng(seed)
    outer, length, inner = (int(v) for v in rng.integers(1, 6, size=3))
    x = np.round(rng.standard_normal((outer, length, inner)) * 2).astype(F32)
    if seed % 3 == 0:
        x.reshape(-1)[int(rng.integers(x.size))] = np.nan
    op = seed % 2
    t = torch.from_numpy(x)
    want = (t.argmax(1) if op == 0 else t.argmin(1)).numpy().astype(np.int32)
    return ({"outer": outer, "len": length, "inner": inner, "op": op}, x), want


def argsort_case(seed: int):
    """argsort along a random dim, ascending or descending, with ties (rounded values) kept in index order and now
    and then a NaN (last ascending, first descending): torch's stable sort."""
    rng = np.random.default_rng(seed)
    outer, length, inner = (int(v) for v in rng.integers(1, 7, size=3))
    x = np.round(rng.standard_normal((outer, length, inner)) * 2).astype(F32)
    if seed % 3 == 0:
        x.reshape(-1)[int(rng.integers(x.size))] = np.nan
    descending = seed % 2
    want = torch.sort(torch.from_numpy(x), dim=1, descending=bool(descending), stable=True)[1].numpy().astype(np.int32)
    return ({"outer": outer, "len": length, "inner": inner, "descending": descending}, x), want


CASES = {
    "mcu_arg_f32": (twins.arg_f32, arg_case),
    "mcu_argsort_f32": (twins.argsort_f32, argsort_case),
    "mcu_pad_f32": (shape_twins.pad_f32, pad_case),
    "mcu_upsample_nearest_f32": (shape_twins.upsample_nearest_f32, upsample_case),
    "mcu_conv2d_f32": (twins.conv2d_f32, conv_case),
    "mcu_dwconv2d_f32": (twins.dwconv2d_f32, lambda s: conv_case(s, depthwise=True)),
    "mcu_fully_connected_f32": (twins.fully_connected_f32, fc_case),
    "mcu_maxpool2d_f32": (twins.maxpool2d_f32, lambda s: pool_case(s, "max")),
    "mcu_avgpool2d_f32": (twins.avgpool2d_f32, lambda s: pool_case(s, "avg")),
    "mcu_add_f32": (twins.add_f32, lambda s: binary_case(s, "add" if s % 2 else "sub")),
    "mcu_mul_f32": (twins.mul_f32, lambda s: binary_case(s, "mul")),
    "mcu_softmax_f32": (twins.softmax_f32, softmax_case),
    "mcu_reduce_f32": (twins.reduce_f32, reduce_case),
    "mcu_transpose_f32": (twins.transpose_f32, transpose_case),
    "mcu_clamp_f32": (twins.clamp_f32, clamp_case),
}


@pytest.fixture(scope="module")
def lib():
    return hostc.build(hostc.kernel_sources())


@pytest.mark.host_c
@pytest.mark.parametrize("kernel", sorted(CASES))
def test_float_kernel_equals_twin_bit_for_bit(lib, kernel):
    twin, make = CASES[kernel]
    for seed in SEEDS:
        args, _ = make(seed)
        expected = np.asarray(twin(*args))
        expected = expected if expected.dtype == np.int32 else expected.astype(F32)  # indices stay int32
        out = np.random.default_rng(seed).standard_normal(expected.shape).astype(expected.dtype)  # garbage
        assert hostc.call(lib, kernel, *args, out=out) == hostc.MCU_OK, f"{kernel} seed {seed}"
        assert_same_bits(out, expected, f"{kernel} seed {seed}")


@pytest.mark.parametrize("kernel", sorted(CASES))
def test_float_twin_agrees_with_torch(kernel):
    twin, make = CASES[kernel]
    for seed in SEEDS:
        args, ref = make(seed)
        assert_close(np.asarray(twin(*args)).reshape(ref.shape), ref, f"{kernel} seed {seed}")


@pytest.mark.host_c
def test_in_place_kernels(lib):
    """add, mul, clamp and softmax may write over an input of the output's size (the planner's in-place rule)."""
    for kernel in ("mcu_add_f32", "mcu_mul_f32", "mcu_clamp_f32", "mcu_softmax_f32"):
        twin, make = CASES[kernel]
        args, _ = make(3)
        expected = np.asarray(twin(*args), F32)
        i = next(j for j in (1, 2) if np.asarray(args[j]).size == expected.size)  # the input of the output's size
        buf = np.array(args[i], F32).reshape(expected.shape)
        args = (*args[:i], buf, *args[i + 1:])
        assert hostc.call(lib, kernel, *args, out=buf) == hostc.MCU_OK
        assert_same_bits(buf, expected, kernel)


def test_exp_is_within_one_ulp():
    x = np.linspace(-103.9, 88.7, 400_001).astype(F32)
    exact = np.exp(x.astype(np.float64))
    normal = exact > np.finfo(F32).tiny
    got = fmath.exp_f32(x)
    ulps = np.abs(got[normal] - exact[normal]) / np.spacing(exact[normal].astype(F32)).astype(np.float64)
    assert ulps.max() <= 1.0, f"{ulps.max():.2f} ulp at x = {x[normal][ulps.argmax()]}"
    ends = fmath.exp_f32(F32([-200, -104, 89, np.inf, -np.inf, np.nan, 0]))
    assert ends[:5].tolist() == [0.0, 0.0, np.inf, np.inf, 0.0] and np.isnan(ends[5]) and ends[6] == 1.0


@pytest.mark.host_c
def test_float_kernels_reject_bad_arguments(lib):
    args, _ = conv_case(1)
    bad = {**args[0], "act_min": 1.0, "act_max": 0.0}
    out = np.zeros(args[0]["output"], F32)
    assert hostc.call(lib, "mcu_conv2d_f32", bad, *args[1:], out=out) == hostc.MCU_ERR_ARG
    assert not out.any(), "wrote its output, then failed"
    shape = {**args[0], "output": (*args[0]["output"][:3], args[0]["output"][3] + 1)}
    assert hostc.call(lib, "mcu_conv2d_f32", shape, *args[1:], out=out) == hostc.MCU_ERR_SHAPE
    for p in ({"rows": 0, "cols": 3}, {"rows": 1, "cols": 0}):
        assert hostc.call(lib, "mcu_softmax_f32", p, np.zeros(3, F32), out=np.zeros(3, F32)) == hostc.MCU_ERR_ARG
    with pytest.raises(ValueError):
        twins.conv2d_f32(bad, *args[1:])


# ---- Compiler ------------------------------------------------------------------------------------------------

class FloatOps(nn.Module):
    """The float ops beyond the zoo: grouped and dilated conv, a 1-d conv, sub/mul with broadcasting, a ReLU that
    cannot fuse, a flatten of a 4-d tensor (transposes), a mean over channels (reduce), padded max pool, ReLU6."""

    def __init__(self):
        super().__init__()
        self.grouped = nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2)
        self.bn = nn.BatchNorm2d(6)
        self.conv1d = nn.Conv1d(6, 4, 3, padding=1)
        self.scale = nn.Parameter(torch.randn(1, 6, 1, 1))
        self.fc1 = nn.Linear(6 * 4 * 4, 5)
        self.fc2 = nn.Linear(4, 5)

    def forward(self, x):
        y = nn.functional.relu6(self.bn(self.grouped(x)))
        y = nn.functional.max_pool2d(y, 3, stride=2, padding=1)                 # [1, 6, 4, 4]
        y = (y - y.mean(dim=1, keepdim=True)) * self.scale
        z = self.conv1d(y.flatten(2)).relu().sum(dim=2)                          # [1, 4]
        y = torch.relu(y.reshape(1, -1))                                          # a ReLU after a reshape
        return torch.softmax(self.fc1(y) + self.fc2(z), dim=-1)


def float_ops():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = FloatOps().eval()
        with torch.no_grad():
            model.bn.running_mean.uniform_(-0.5, 0.5)
            model.bn.running_var.uniform_(0.5, 2.0)
        return model, (torch.randn(1, 4, 8, 8),)


def test_float_import_folds_batchnorm_and_keeps_float32():
    model, example = example_cnn()
    graph = import_float(export(model, example))
    assert {t.dtype for t in graph.tensors.values()} == {"float32"}
    assert "batch_norm" not in {n.op for n in graph.nodes}
    assert all(graph.tensors[n.inputs[1]].is_const for n in graph.nodes if n.op in ("conv2d", "linear"))


def test_float_package_is_all_float32(tmp_path):
    model, example = example_cnn()
    pkg = mcu.compile(model, example, quantize="none", out_dir=tmp_path / "pkg")
    kernels = pkg.manifest["kernels"]
    assert kernels and all(k.startswith("float/") for k in kernels), kernels
    calls = [n for n in pkg.graph.nodes if n.op == "call"]
    assert not [n for n in calls if n.call.kernel == "mcu_clamp_f32"], "ReLU / ReLU6 should fuse"
    assert pkg.manifest["inputs"][0]["dtype"] == "float32" and pkg.manifest["inputs"][0]["scale"] is None
    assert "_SCALE" not in (tmp_path / "pkg" / "model.h").read_text()
    assert pkg.arena_bytes >= pkg.manifest["arena_lower_bound"] > 0
    x = torch.randn(example[0].shape, generator=torch.Generator().manual_seed(1))
    assert_close(pkg.reference(x)[0], model(x).detach().numpy(), "example twin vs torch")
    mcu.compile(model, example, quantize="none", out_dir=tmp_path / "again")
    for name in ("model.c", "weights.c", "model.h"):
        assert (tmp_path / "pkg" / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name


def test_float_ops_model_twin_agrees_with_torch(tmp_path):
    model, example = float_ops()
    pkg = mcu.compile(model, example, quantize="none", out_dir=tmp_path / "pkg")
    kernels = {k.split("/")[-1] for k in pkg.manifest["kernels"]}
    assert {"mcu_conv2d_f32", "mcu_add_f32", "mcu_mul_f32", "mcu_reduce_f32", "mcu_clamp_f32",
            "mcu_transpose_f32", "mcu_maxpool2d_f32", "mcu_softmax_f32"} <= kernels, kernels
    for seed in range(3):
        x = torch.randn(example[0].shape, generator=torch.Generator().manual_seed(seed))
        assert_close(pkg.reference(x)[0], model(x).detach().numpy(), f"float ops seed {seed}")


@pytest.mark.parametrize("op", ["matmul", "upsample_nearest2d"])
def test_op_without_float_kernel_is_refused(op, tmp_path, monkeypatch):
    # The float op set grows; the refusal must not depend on which op happens to lack a kernel today.
    import mcu.importer.from_float as ff
    ir_op = {"upsample_nearest2d": "upsample_nearest"}.get(op, op)
    monkeypatch.setattr(ff, "FLOAT_OPS", tuple(o for o in ff.FLOAT_OPS if o != ir_op))

    class M(nn.Module):
        def forward(self, x):
            if op == "matmul":
                return x.reshape(1, 2, 4) @ x.reshape(1, 4, 2)
            return nn.functional.interpolate(x.reshape(1, 2, 2, 2), scale_factor=2)

    with pytest.raises(UnsupportedOpError, match=rf"op '{op}' at .*test_float32.py.* has no float32 kernel"):
        mcu.compile(M(), (torch.randn(1, 8),), quantize="none", out_dir=tmp_path / "pkg")


def test_unknown_quantize_mode_is_refused(tmp_path):
    model, example = example_cnn()
    with pytest.raises(mcu.McuError, match="quantize='int4'"):
        mcu.compile(model, example, quantize="int4", out_dir=tmp_path / "pkg")


def test_soft_float_is_reported_and_fitted(tmp_path, capsys):
    from mcu.boards import load_board
    from mcu.cli import main
    from mcu.build.fit import SOFT_FLOAT_FLASH_BYTES, estimate
    assert main(["compile", "mcu.zoo:example_cnn", "--quantize", "none", "--board", "mps2-an385",
                 "-o", str(tmp_path / "m3")]) == 0
    out = capsys.readouterr().out
    assert "soft float: Cortex-M3 has no FPU" in out and "instructions" in out, out
    assert main(["compile", "mcu.zoo:example_cnn", "--quantize", "none", "--board", "mps2-an386",
                 "-o", str(tmp_path / "m4")]) == 0
    assert "soft float" not in capsys.readouterr().out
    m3, m4 = mcu.load(tmp_path / "m3"), mcu.load(tmp_path / "m4")
    extra = (estimate(m3.graph, m3.manifest, load_board("mps2-an385")).flash_startup
             - estimate(m4.graph, m4.manifest, load_board("mps2-an386")).flash_startup)
    assert extra == SOFT_FLOAT_FLASH_BYTES


# ---- Device (QEMU) -------------------------------------------------------------------------------------------

def run_and_check(model, example, board, out_dir, *, bits: bool, seeds=(7,)) -> tuple[float, int]:
    """Device vs twin (bit for bit, or within a tenth of the tolerance) and vs torch; (worst error, instructions)."""
    pkg = mcu.compile(model, example, board=board, quantize="none", out_dir=out_dir)
    worst = 0.0
    for seed in seeds:
        g = torch.Generator().manual_seed(seed)
        x = tuple(torch.randn(e.shape, generator=g) for e in example)
        res = mcu.run(pkg, x)
        ref = pkg.reference(x)[0]
        if bits:
            assert_same_bits(res.outputs[0], ref, f"device vs twin on {board}")
        else:
            assert_close(res.outputs[0], ref, f"device vs twin on {board}", FLOAT_TOLERANCE / 10)
        worst = max(worst, assert_close(res.outputs[0], model(*x).detach().numpy(), f"device vs torch on {board}"))
    return worst, res.instructions


@pytest.mark.qemu
@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_float32_on_m4f(name, tmp_path):
    model, example = MODELS[name]()
    err, instructions = run_and_check(model, example, "mps2-an386", tmp_path / "pkg", bits=False)
    print(f"{name} float32 on mps2-an386: relative error {err:.2g}, {instructions:,} instructions")


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an385", "mps2-an386", "mps3-an547"])
def test_example_cnn_float32_is_bit_exact(board, tmp_path):
    model, example = example_cnn()
    run_and_check(model, example, board, tmp_path / "pkg", bits=True)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an385", "mps3-an547"])
def test_float_ops_on_device(board, tmp_path):
    model, example = float_ops()
    run_and_check(model, example, board, tmp_path / "pkg", bits=True, seeds=(1, 2))


@pytest.mark.qemu
def test_bench_float32_row(tmp_path):
    from mcu.tools.bench import bench
    rows = bench(["ad"], ["mps2-an386"], tmp_path, quantize="none")
    (row,) = rows
    assert row["quantize"] == "none" and row["exact"] and row["rel_error_device"] <= FLOAT_TOLERANCE
    assert row["flash_weights"] > 4 * 260_000 and row["instructions"] > 0 and row["arena_bytes"] > 0
    assert (tmp_path / "bench-float32.json").is_file()


class CatNorm(nn.Module):
    """A conv, a channel concat of it, its sigmoid and the input, a layer norm and a flat concat."""

    def __init__(self):
        super().__init__()
        self.conv, self.norm = nn.Conv2d(3, 4, 3, padding=1), nn.LayerNorm(8)

    def forward(self, x):
        y = self.conv(x)
        z = torch.cat([y, torch.sigmoid(y), x], dim=1)
        return self.norm(z), torch.cat([z.flatten(1), x.flatten(1)], 1)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385"])
def test_concat_and_layer_norm_run_in_float32(board, tmp_path):
    torch.manual_seed(5)
    model, x = CatNorm().eval(), torch.randn(1, 3, 8, 8)
    pkg = mcu.compile(model, (x,), quantize="none", board=board, out_dir=tmp_path / "p")
    assert {"mcu_concat_f32", "mcu_layer_norm_f32", "mcu_unary_f32"} <= {op["kernel"] for op in pkg.manifest["ops"]}
    res = mcu.run(pkg, (x,))
    with torch.no_grad():
        want = [w.numpy() for w in model(x)]
    for got, ref, w in zip(res.raw_outputs, pkg.reference((x,)), want):
        assert np.array_equal(got, ref)
        assert relative_error(got.reshape(w.shape), w) <= FLOAT_TOLERANCE


@pytest.mark.host_c
def test_concat_f32_c_equals_twin():
    lib = hostc.build([hostc.KERNELS / "float" / "mcu_concat_f32.c"])
    rng = np.random.default_rng(2)
    xs = [rng.normal(size=3 * s).astype(np.float32) for s in (2, 5, 1)]
    p = {"num_inputs": 3, "outer": 3, "sizes": (2, 5, 1, 0, 0, 0, 0, 0)}
    out = np.zeros(24, np.float32)
    assert hostc.call(lib, "mcu_concat_f32", p, *xs, out=out) == hostc.MCU_OK
    assert np.array_equal(out, twins.concat_f32(p, *xs).reshape(-1))
    assert hostc.call(lib, "mcu_concat_f32", {**p, "num_inputs": 9}, *xs, out=out) == hostc.MCU_ERR_ARG
