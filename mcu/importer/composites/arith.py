"""Elementwise composites as ops that run: fmax / fmin as maximum / minimum, log2 and exp2 through log and exp,
lerp with a scalar weight as x + w * (y - x)."""
from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def _fmax_fmin(b, n):
    """fmax / fmin: maximum / minimum (they differ only on NaN, which a quantized or finite model never holds)."""
    target = aten.maximum.default if n.target == aten.fmax.default else aten.minimum.default
    return b(target, n.args[0], n.args[1])


def _log2(b, n):
    return b(aten.mul.Tensor, b(aten.log.default, n.args[0]), 1.0 / math.log(2.0))


def _exp2(b, n):
    return b(aten.exp.default, b(aten.mul.Tensor, n.args[0], math.log(2.0)))


def _lerp(b, n):
    x, y, w = n.args[0], n.args[1], float(b.arg(2, "weight"))
    return b(aten.add.Tensor, x, b(aten.mul.Tensor, b(aten.sub.Tensor, y, x), w))


DECOMPOSITIONS = {
    aten.fmax.default: _fmax_fmin, aten.fmin.default: _fmax_fmin,
    aten.log2.default: _log2, aten.exp2.default: _exp2,
    aten.lerp.Scalar: _lerp,
}
