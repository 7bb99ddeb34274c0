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

    sample = first_sample(info)
    if sample is None:
        return False, "no float32 tensor sample"
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
    calib = None if mode == "float32" else [xs] + [tuple(x * (1 + 0.1 * torch.randn(x.shape, generator=g)) for x in xs)
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


def main(argv=None) -> int:
    from torch.testing._internal.common_methods_invocations import op_db

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", help="also run each package on this QEMU board (default: reference only)")
    ap.add_argument("--ops", help="comma-separated subset of the edge set")
    ap.add_argument("--modes", default="float32,int8")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    infos = {}
    for info in op_db:
        infos.setdefault(info.name, info)
    ops = args.ops.split(",") if args.ops else EDGE_OPS
    results, start = {}, time.time()
    for name in ops:
        info = infos.get(name)
        for mode in args.modes.split(","):
            with tempfile.TemporaryDirectory() as d:
                ok, why = (False, "no OpInfo of this name") if info is None else check(info, mode, args.board, d)
            results.setdefault(name, {})[mode] = {"pass": ok, "why": why}
            print(f"{name:42s} {mode:8s} {'pass' if ok else 'FAIL ' + why}", flush=True)
    for mode in args.modes.split(","):
        n = sum(r[mode]["pass"] for r in results.values())
        print(f"{mode}: {n} of {len(results)} pass ({100 * n / len(results):.0f} %)")
    print(f"{time.time() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
