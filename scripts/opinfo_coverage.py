"""How much of the edge op set compiles and runs: PyTorch's own OpInfo samples through mcu.compile.

For each op of EDGE_OPS, the first float32 sample of its OpInfo (torch.testing's op_db) becomes a one-op
module: the sample's input is the model input, its other tensor arguments constants. Then:
- float32 (quantize="none"): compile, run the numpy reference (and the device with --board), pass when the
  relative error max|mcu - torch| / max|torch| <= 1e-4;
- int8: compile with calibration drawn like the input, pass when the reference's SQNR vs float >= 20 dB.
A sample whose input is a list of tensors (cat, stack) takes each as a model input. A bool output (a comparison,
0/1 floats in mcu) and an integer one (indices, int32 in mcu) must be equal.
An op passes only when every output is compared. The reason of each failure is printed, first line only.

    python scripts/opinfo_coverage.py [--board mps2-an386] [--ops abs,exp] [--json out.json]
Needs `expecttest` (the test extras). Prints one row per op and the pass counts.

With --core the ops are not our list but every ATen op tagged torch.Tag.core (its overloads grouped under one name)
that has an OpInfo (matched by its name, then nn.functional.<name>, then aten_name, then an alias; a leading
underscore dropped): each runs its OpInfo's first float32 sample as above, or sits in CORE_EXCLUDED with its reason.
The OpInfo calls the op's public form (nn.functional.max_pool2d for max_pool2d_with_indices, softmax for _softmax),
which exports to the core op or to its neighbours. Core ops without an OpInfo are listed apart.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time

import numpy as np
import torch

EDGE_OPS = [
    # elementwise
    "abs", "neg", "exp", "log", "sqrt", "rsqrt", "reciprocal", "pow", "square", "div", "clamp", "clamp_min",
    "clamp_max", "minimum", "maximum", "round", "floor", "ceil", "sign", "eq", "ne", "lt", "le", "gt", "ge", "where",
    "sin", "cos", "add", "sub", "mul",
    # activations
    "nn.functional.relu", "nn.functional.relu6", "nn.functional.hardtanh", "nn.functional.leaky_relu",
    "sigmoid", "tanh", "nn.functional.hardswish", "nn.functional.hardsigmoid", "nn.functional.gelu",
    "nn.functional.silu", "nn.functional.mish", "nn.functional.prelu", "nn.functional.elu", "nn.functional.selu",
    "nn.functional.celu", "nn.functional.glu", "nn.functional.softsign", "nn.functional.logsigmoid",
    "nn.functional.hardshrink", "nn.functional.softshrink", "nn.functional.threshold", "nn.functional.softplus",
    "nn.functional.tanhshrink", "nn.functional.rrelu",
    # norms
    "nn.functional.batch_norm", "nn.functional.layer_norm", "nn.functional.group_norm",
    "nn.functional.instance_norm", "nn.functional.rms_norm", "nn.functional.normalize",
    "nn.functional.local_response_norm",
    # pools
    "nn.functional.max_pool1d", "nn.functional.max_pool2d", "nn.functional.avg_pool1d", "nn.functional.avg_pool2d",
    "nn.functional.adaptive_avg_pool1d", "nn.functional.adaptive_avg_pool2d", "nn.functional.adaptive_max_pool1d",
    "nn.functional.adaptive_max_pool2d",
    # convs
    "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv_transpose1d",
    "nn.functional.conv_transpose2d",
    # matmuls
    "nn.functional.linear", "matmul", "mm", "bmm", "addmm", "mv", "baddbmm", "nn.functional.bilinear",
    # softmax family
    "softmax", "log_softmax", "nn.functional.softmin",
    # reductions
    "sum", "mean", "amax", "amin", "prod", "var", "std", "logsumexp", "cumsum", "max", "min", "argmax", "argmin",
    "norm",
    # shape
    "flatten", "unflatten", "permute", "transpose", "expand", "repeat", "tile", "flip", "roll",
    "nn.functional.pad", "nn.functional.pixel_shuffle", "nn.functional.pixel_unshuffle",
    "nn.functional.channel_shuffle", "cat", "stack", "split", "chunk", "unbind", "narrow", "select", "squeeze",
    "unsqueeze", "reshape", "view", "t", "movedim", "split_with_sizes", "hstack", "vstack",
    # resampling
    "nn.functional.interpolate", "nn.functional.upsample_nearest", "nn.functional.upsample_bilinear",
    # attention
    "nn.functional.scaled_dot_product_attention",
    # misc
    "nn.functional.dropout", "nn.functional.embedding", "nn.functional.one_hot", "nn.functional.cosine_similarity",
    "nn.functional.pairwise_distance",
]

RANDOM, BACKWARD, UNINITIALIZED = "random values", "a backward (training) op", "uninitialized memory"
BITWISE = ("integer and bool tensors only: torch itself refuses the float32 sample (NotImplementedError); mcu's "
           "tensors are float or quantized, and on bool masks (comparisons) bitwise and/or/not compile as logical ops")
# Core ATen ops with an OpInfo that no inference model compiled for a microcontroller can hold, each with its reason.
CORE_EXCLUDED = {
    "randn": RANDOM, "rand": RANDOM, "randperm": RANDOM, "native_dropout": RANDOM,
    "max_pool2d_with_indices_backward": BACKWARD, "avg_pool2d_backward": BACKWARD,
    "_native_batch_norm_legit": "training-mode batch norm (batch statistics; eval mode is _no_training)",
    "empty": UNINITIALIZED, "empty_strided": UNINITIALIZED,
    "nonzero": "an output size that depends on the values (torch.export needs it bounded, mcu static shapes)",
    **dict.fromkeys(("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"), BITWISE),
    "_fft_r2c": "FFT", "_fft_c2r": "FFT", "_local_scalar_dense": "a Python scalar out of a tensor (.item())",
}


def core_ops() -> dict[str, list[str]]:
    """Every ATen op tagged torch.Tag.core: name -> its core overloads."""
    ops: dict[str, list[str]] = {}
    for name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, name, None)
        for overload in packet.overloads() if hasattr(packet, "overloads") else ():
            if torch.Tag.core in getattr(packet, overload).tags:
                ops.setdefault(name, []).append(overload)
    return ops


def opinfo_of(name: str, op_db) -> object | None:
    """The OpInfo of a core op: by name, nn.functional.<name>, aten_name, then alias (leading underscore dropped)."""
    for key in dict.fromkeys((name, name.lstrip("_"))):
        for match in (lambda i: i.name == key, lambda i: i.name == f"nn.functional.{key}",
                      lambda i: i.aten_name == key, lambda i: key in {a.name for a in i.aliases}):
            found = [i for i in op_db if match(i) and not i.name.startswith(("sparse.", "masked.", "_refs."))]
            if found:
                return found[0]
    return None


class OneOp(torch.nn.Module):
    """The op applied to the model input, with the sample's other tensors as constants (buffers)."""

    def __init__(self, op, sample):
        super().__init__()
        self.op = op
        self.args, self.kwargs, self.consts = [], {}, 0
        self.list_input = isinstance(sample.input, (list, tuple))  # cat, stack: each tensor a model input
        for a in sample.args:
            self.args.append(self._keep(a))
        for k, v in sample.kwargs.items():
            self.kwargs[k] = self._keep(v)

    def _keep(self, v):
        if isinstance(v, torch.Tensor):
            name = f"c{self.consts}"
            self.consts += 1
            self.register_buffer(name, v.detach().clone())
            return ("buffer", name)
        if isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
            return type(v)(self._keep(x) for x in v)
        return v

    def _get(self, v):
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "buffer":
            return getattr(self, v[1])
        if isinstance(v, (list, tuple)):
            return type(v)(self._get(x) for x in v)
        return v

    def forward(self, *xs):
        x = list(xs) if self.list_input else xs[0]
        out = self.op(x, *[self._get(a) for a in self.args], **{k: self._get(v) for k, v in self.kwargs.items()})
        return tuple(o for o in out if isinstance(o, torch.Tensor)) if isinstance(out, (tuple, list)) else out


class ConstantPlusInput(torch.nn.Module):
    """An op whose value depends on no tensor's values (arange, full, full_like, fill, scalar_tensor): its result
    added to a model input of its shape, as a model uses it (mcu folds the op at compile time)."""

    def __init__(self, op, sample):
        super().__init__()
        self.op, self.sample = op, sample

    def forward(self, x):
        s = self.sample
        return self.op(s.input, *s.args, **s.kwargs).float() + x


CONSTANT_RESULT = {"arange", "full", "scalar_tensor", "full_like", "fill", "zeros_like", "ones_like", "empty_like"}


def _constant_case(info) -> tuple[torch.nn.Module, tuple] | None:
    """(model, inputs) for an op of CONSTANT_RESULT: its first sample with a float result plus an input."""
    if info.name.split(".")[-1] not in CONSTANT_RESULT:
        return None
    for s in info.sample_inputs("cpu", torch.float32, requires_grad=False):
        out = info.op(s.input, *s.args, **s.kwargs)
        if isinstance(out, torch.Tensor) and out.numel() > 0:
            x = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
            return ConstantPlusInput(info.op, s).eval(), (x,)
    return None


def _float_tensor(t) -> bool:
    return isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.numel() > 0


def first_sample(info):
    for s in info.sample_inputs("cpu", torch.float32, requires_grad=False):
        if _float_tensor(s.input) or (isinstance(s.input, (list, tuple)) and s.input
                                      and all(_float_tensor(t) for t in s.input)):
            return s
    return None


def _outputs(out) -> list[np.ndarray]:
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().numpy() for o in out]


def check(info, mode: str, board: str | None, out_dir: str) -> tuple[bool, str]:
    import mcu
    from mcu.metrics import relative_error, sqnr_db

    constant = _constant_case(info)
    sample = first_sample(info)
    if constant is not None:
        model, xs = constant
    elif sample is None:
        return False, "no float32 tensor sample"
    else:
        model = OneOp(info.op, sample).eval()
        xs = tuple(t.detach().clone() for t in sample.input) if model.list_input else (sample.input.detach().clone(),)
    with torch.no_grad():
        try:
            want = _outputs(model(*xs))
        except Exception as exc:  # noqa: BLE001  (the sample itself fails outside mcu)
            return False, f"torch: {type(exc).__name__}"
    exact = [w.dtype.kind in "biu" for w in want]  # bool (mcu's 0/1 floats) and indices (int32): equal
    want = [w.astype(np.float32) if k else w for w, k in zip(want, exact)]
    if any(w.dtype != np.float32 for w in want):
        return False, f"output dtype {[str(w.dtype) for w in want]} (not float32)"
    g = torch.Generator().manual_seed(0)
    calib = None if mode == "float32" else [xs] + [tuple(  # like the sample, within its range (an op's domain)
        torch.clamp(x * (1 + 0.1 * torch.randn(x.shape, generator=g)), x.min(), x.max()) for x in xs)
        for _ in range(3)]
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            pkg = mcu.compile(model, xs, board=board or "mps2-an386", calibration=calib,
                              quantize="none" if mode == "float32" else "int8", out_dir=out_dir, force=True)
            got = [np.asarray(r, np.float32) for r in pkg.dequantize_outputs(pkg.reference(xs))] \
                if mode != "float32" else pkg.reference(xs)
            if board:
                dev = mcu.run(pkg, xs).outputs
                if any(not np.array_equal(d, r) for d, r in zip(dev, got)):
                    return False, "device != reference"
    except Exception as exc:  # noqa: BLE001  (the report lists every failure's cause)
        return False, f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:150]}"
    if len(got) != len(want):
        return False, f"{len(got)} outputs vs torch's {len(want)}"
    for g_, w, k in zip(got, want, exact):
        g_ = np.asarray(g_, np.float32).reshape(w.shape)
        if k:
            if not np.array_equal(g_, w):
                return False, "integer or bool output differs"
        elif mode == "float32":
            err = relative_error(g_, w)
            if not err <= 1e-4:
                return False, f"relative error {err:.2e}"
        else:
            s = sqnr_db(w, g_) if np.abs(w).max() > 0 else (np.inf if np.array_equal(g_, w) else -np.inf)
            if not s >= 20:
                return False, f"SQNR {s:.1f} dB"
    return True, ""


def _core_infos(op_db, only: list[str] | None) -> tuple[dict, dict, list]:
    """--core: {core op: its OpInfo} to run, {core op: reason} excluded, [core ops without an OpInfo]."""
    infos, excluded, missing = {}, {}, []
    for name in core_ops():
        if only and name not in only:
            continue
        info = opinfo_of(name, op_db)
        if name in CORE_EXCLUDED:
            excluded[name] = CORE_EXCLUDED[name]
        elif info is None:
            missing.append(name)
        else:
            infos[name] = info
    return infos, excluded, missing


def main(argv=None) -> int:
    from torch.testing._internal.common_methods_invocations import op_db

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", help="also run each package on this QEMU board (default: reference only)")
    ap.add_argument("--ops", help="comma-separated subset of the edge set (with --core: of the core ops)")
    ap.add_argument("--core", action="store_true", help="every ATen op tagged torch.Tag.core with an OpInfo")
    ap.add_argument("--modes", default="float32,int8")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    only = args.ops.split(",") if args.ops else None
    excluded, missing = {}, []
    if args.core:
        infos, excluded, missing = _core_infos(op_db, only)
    else:
        first = {}
        for info in op_db:
            first.setdefault(info.name, info)
        infos = {name: first.get(name) for name in only or EDGE_OPS}
    results, start = {}, time.time()
    for name, info in infos.items():
        for mode in args.modes.split(","):
            with tempfile.TemporaryDirectory() as d:
                ok, why = (False, "no OpInfo of this name") if info is None else check(info, mode, args.board, d)
            results.setdefault(name, {"opinfo": getattr(info, "name", None)})[mode] = {"pass": ok, "why": why}
            print(f"{name:42s} {mode:8s} {'pass' if ok else 'FAIL ' + why}", flush=True)
    _report(results, excluded, missing, args.modes.split(","), time.time() - start, args.json)
    return 0


def _report(results: dict, excluded: dict, missing: list, modes: list[str], seconds: float, path: str | None):
    for name, why in excluded.items():
        print(f"{name:42s} excluded: {why}")
    if missing:
        print(f"core ops without an OpInfo ({len(missing)}): {', '.join(missing)}")
    counts = {}
    for mode in modes:
        n = sum(r[mode]["pass"] for r in results.values())
        counts[mode] = n
        print(f"{mode}: {n} of {len(results)} pass ({100 * n / max(len(results), 1):.0f} %)"
              + (f"; {len(excluded)} excluded, {len(missing)} without an OpInfo" if excluded or missing else ""))
    print(f"{seconds:.0f} s")
    if path:
        with open(path, "w") as f:
            json.dump({"passed": counts, "tested": len(results), "excluded": excluded, "no_opinfo": missing,
                       "results": results} if excluded or missing else results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
