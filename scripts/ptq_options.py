"""Issue 16 item 3: what each post-training quantization option buys, on the zoo and the deep depthwise networks.

SQNR vs float (torchao's converted model, which the integer reference follows op by op) on 10 held-out inputs,
per model, for: the default (minmax observer, bias correction), the percentile and mse observers, no bias
correction, cross-layer equalization into depthwise convs (below), and int16 activations (a16w8: what is left is
the weights' share of the error).

Cross-layer equalization, the exact form for per-channel weights: for a conv whose only user is a ReLU (or
nothing) feeding a depthwise conv, output channel i of the first conv is scaled by 1 / s_i and channel i of the
depthwise filter by s_i, with s_i = a_i / max(a) from the calibrated per-channel maxima a of the tensor between.
Per-channel weight quantization absorbs both scales exactly, so the only change is that every channel of the
tensor between spans the full per-tensor activation range. It is measured here, not adopted: it does not win on
both the zoo and the deep networks (see the note of issue 16). ReLU6 blocks it (clamp(x / s, 0, 6 / s) is a
per-channel clip), so MobileNetV2 has no such pair.

    python scripts/ptq_options.py [--models kws vww ic ad mobilenet_v2 mnasnet_se]
"""
from __future__ import annotations

import argparse
import sys

import torch
from torch.fx import Interpreter, Node

import mcu.quantization.quantizer as Q
from mcu.importer.export import export
from mcu.metrics import sqnr_db
from mcu.zoo import deep
from mcu.zoo.mlperf_tiny import MODELS, calibration_set

aten = torch.ops.aten
ALL = {**MODELS, **deep.DEEP}


def _owner(gm, node: Node):
    *path, name = node.target.split(".")
    owner = gm
    for p in path:
        owner = getattr(owner, p)
    return owner, name


def _scale(gm, node: Node, s: torch.Tensor) -> None:
    owner, name = _owner(gm, node)
    old = getattr(owner, name)
    new = (old.detach().double() * s.reshape(-1, *([1] * (old.dim() - 1)))).to(old.dtype)
    setattr(owner, name, torch.nn.Parameter(new, requires_grad=False) if isinstance(old, torch.nn.Parameter) else new)


def depthwise_pairs(gm) -> list[tuple[Node, Node, Node]]:
    """(conv, the tensor between, depthwise conv) for conv -> [ReLU] -> depthwise conv chains of sole users."""
    found = []
    for c1 in gm.graph.nodes:
        if c1.target != aten.conv2d.default or len(c1.users) != 1 or c1.args[1].op != "get_attr":
            continue
        user = next(iter(c1.users))
        if user.target in (aten.relu.default, aten.relu_.default):
            if len(user.users) != 1:
                continue
            mid, c2 = user, next(iter(user.users))
        else:
            mid, c2 = c1, user
        channels = c1.meta["val"].shape[1]
        if c2.target == aten.conv2d.default and c2.args[1].op == "get_attr" and \
                (c2.args[6] if len(c2.args) > 6 else 1) == channels and c2.meta["val"].shape[1] == channels:
            found.append((c1, mid, c2))
    return found


class _Maxima(Interpreter):
    def __init__(self, gm, watch):
        super().__init__(gm)
        self.watch, self.maxima = watch, {}

    def run_node(self, n):
        out = super().run_node(n)
        if n in self.watch:
            m = out.detach().abs().amax(dim=(0, 2, 3)).double()
            self.maxima[n] = torch.maximum(self.maxima[n], m) if n in self.maxima else m
        return out


def equalizing_quantizer(batches):
    class Equalizing(Q.McuQuantizer):
        def transform_for_annotation(self, model):
            gm = super().transform_for_annotation(model)
            pairs = depthwise_pairs(gm)
            rec = _Maxima(gm, {m for _, m, _ in pairs})
            with torch.no_grad():
                for b in batches:
                    rec.run(*b)
            for c1, mid, c2 in pairs:
                a = rec.maxima[mid]
                s = torch.where(a > 0, a / a.max(), torch.ones_like(a)).clamp(min=1e-2)
                _scale(gm, c1.args[1], 1 / s)
                if len(c1.args) > 2 and c1.args[2] is not None:
                    _scale(gm, c1.args[2], 1 / s)
                _scale(gm, c2.args[1], s)
            return gm
    return Equalizing


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(ALL), choices=list(ALL))
    args = ap.parse_args(argv)
    cols = {"default": {}, "percentile": {"observer": "percentile"}, "mse": {"observer": "mse"},
            "no bias corr.": {"bias_correction": False}, "CLE into dw": "cle", "a16w8": {"precision": "a16w8"}}
    lines = ["| model | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name in args.models:
        model, example = ALL[name]()
        if name in deep.DEEP:
            calib, xs = deep.calibration_set(16), deep.calibration_set(10, seed=50)
        else:
            calib, xs = calibration_set(name), [calibration_set(name, 1, seed=50 + s)[0] for s in range(10)]
        ep = export(model, example)
        with torch.no_grad():
            want = [model(*x).numpy() for x in xs]
        row = []
        for col, opts in cols.items():
            saved = Q.McuQuantizer
            try:
                if opts == "cle":
                    Q.McuQuantizer, opts = equalizing_quantizer(calib), {}
                q = Q.quantize(ep, example, calib, **opts)
            finally:
                Q.McuQuantizer = saved
            with torch.no_grad():
                row.append(sqnr_db(want, [q(*x).numpy() for x in xs]))
        lines.append(f"| {name} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
        print(lines[-1], flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
