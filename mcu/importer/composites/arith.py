"""Elementwise composites as ops that run: fmax / fmin as maximum / minimum; log2, log10, exp2 through log and exp;
sinh, cosh, asinh, acosh, atanh through exp, log and sqrt, tan as sin / cos; atan2 through atan and where; fmod and remainder as x - trunc (floor)
of x / y times y; lerp with a scalar weight as x + w * (y - x); isnan, isinf as comparisons."""
from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def _fmax_fmin(b, n):
    """fmax / fmin: maximum / minimum (they differ only on NaN, which a quantized or finite model never holds)."""
    target = aten.maximum.default if n.target == aten.fmax.default else aten.minimum.default
    return b(target, n.args[0], n.args[1])


def _log2(b, n):
    base = 2.0 if n.target == aten.log2.default else 10.0
    return b(aten.mul.Tensor, b(aten.log.default, n.args[0]), 1.0 / math.log(base))


def _exp2(b, n):
    return b(aten.exp.default, b(aten.mul.Tensor, n.args[0], math.log(2.0)))


def _hyperbolic(b, n):
    """sinh, cosh: (exp(x) -+ exp(-x)) / 2."""
    x = n.args[0]
    up, down = b(aten.exp.default, x), b(aten.exp.default, b(aten.neg.default, x))
    return b(aten.mul.Tensor, b(aten.sub.Tensor if n.target == aten.sinh.default else aten.add.Tensor, up, down), 0.5)


def _inverse_hyperbolic(b, n):
    """asinh = log(x + sqrt(x^2 + 1)), acosh = log(x + sqrt(x^2 - 1)), atanh = log((1 + x) / (1 - x)) / 2."""
    x = n.args[0]
    if n.target == aten.atanh.default:
        ratio = b(aten.div.Tensor, b(aten.add.Tensor, x, 1.0), b(aten.rsub.Scalar, x, 1.0))
        return b(aten.mul.Tensor, b(aten.log.default, ratio), 0.5)
    root = b(aten.sqrt.default, b(aten.add.Tensor, b(aten.mul.Tensor, x, x), 1.0 if n.target == aten.asinh.default
                                   else -1.0))
    return b(aten.log.default, b(aten.add.Tensor, x, root))


def _tan(b, n):
    return b(aten.div.Tensor, b(aten.sin.default, n.args[0]), b(aten.cos.default, n.args[0]))


def _modulo(b, n):
    """fmod: x - trunc(x / y) * y (the sign of x); remainder: x - floor(x / y) * y (the sign of y). A float island
    in int8: trunc of a requantized quotient would jump by y wherever x / y nears an integer."""
    x, y = n.args[:2]
    b.island = n.target.__name__
    rounding = aten.trunc.default if n.target in (aten.fmod.Tensor, aten.fmod.Scalar) else aten.floor.default
    return b(aten.sub.Tensor, x, b(aten.mul.Tensor, b(rounding, b(aten.div.Tensor, x, y)), y))


def _atan2(b, n):
    """atan2(y, x) = atan(y / x), plus pi (y >= 0) or minus pi (y < 0) where x < 0; at x = 0 the quotient is +-inf and
    atan gives +-pi/2; at x = y = 0 the quotient is 0 / 1, so 0 as torch's (where runs as arithmetic on masks: a
    NaN would reach every branch). A float island in int8 (the jump of 2 pi across x < 0, y = 0)."""
    y, x = n.args[:2]
    b.island = "atan2"
    origin = b(aten.logical_and.default, b(aten.eq.Scalar, x, 0.0), b(aten.eq.Scalar, y, 0.0))
    base = b(aten.atan.default, b(aten.div.Tensor, y, b(aten.where.ScalarSelf, origin, 1.0, x)))
    turned = b(aten.where.self, b(aten.ge.Scalar, y, 0.0), b(aten.add.Tensor, base, math.pi),
               b(aten.sub.Tensor, base, math.pi))
    return b(aten.where.self, b(aten.lt.Scalar, x, 0.0), turned, base)


def _isnan_isinf(b, n):
    """isnan: x != x; isinf: |x| > the largest float32 (0/1 floats, as comparisons are; no inf constant in C)."""
    x = n.args[0]
    if n.target == aten.isnan.default:
        return b(aten.ne.Tensor, x, x)
    return b(aten.gt.Scalar, b(aten.abs.default, x), float(torch.finfo(torch.float32).max))


def _lerp(b, n):
    x, y, w = n.args[0], n.args[1], float(b.arg(2, "weight"))
    return b(aten.add.Tensor, x, b(aten.mul.Tensor, b(aten.sub.Tensor, y, x), w))


def _to_dtype(b, n):
    """x.float() / x.to(torch.float32) of a float tensor is x itself (of a constant, fold_constants computed it)."""
    x, dtype = n.args[0], n.args[1] if len(n.args) > 1 else n.kwargs.get("dtype")
    if x.meta["val"].is_floating_point() and dtype in (None, torch.float32, torch.float16, torch.bfloat16):
        return x
    raise b.refuse(f"a conversion of a {x.meta['val'].dtype} tensor to {dtype}",
                   "keep computed tensors float (index inputs feed embedding and indexing directly)")


DECOMPOSITIONS = {
    aten.to.dtype: _to_dtype, aten._to_copy.default: _to_dtype,
    aten.fmax.default: _fmax_fmin, aten.fmin.default: _fmax_fmin,
    aten.log2.default: _log2, aten.log10.default: _log2, aten.exp2.default: _exp2,
    aten.sinh.default: _hyperbolic, aten.cosh.default: _hyperbolic, aten.tan.default: _tan,
    aten.asinh.default: _inverse_hyperbolic, aten.acosh.default: _inverse_hyperbolic,
    aten.atanh.default: _inverse_hyperbolic,
    aten.fmod.Tensor: _modulo, aten.fmod.Scalar: _modulo, aten.remainder.Tensor: _modulo, aten.remainder.Scalar: _modulo,
    aten.atan2.default: _atan2, aten.lerp.Scalar: _lerp, aten.isnan.default: _isnan_isinf, aten.isinf.default: _isnan_isinf,
}
