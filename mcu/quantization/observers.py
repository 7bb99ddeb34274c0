"""The activation and weight observers mcu quantizes with, and the qspecs built from them (int8, int16, int4, fixed)."""
from __future__ import annotations

import dataclasses

import torch

import mcu.torchao_quiet  # noqa: F401  (before any torchao import)
from torchao.quantization.pt2e import (FakeQuantize, HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver,
                                       MovingAveragePerChannelMinMaxObserver, PerChannelMinMaxObserver)
from torchao.quantization.pt2e.quantizer import FixedQParamsQuantizationSpec, QuantizationSpec

from mcu.errors import McuError

ACT_QSPEC = QuantizationSpec(
    dtype=torch.int8,
    quant_min=-128,
    quant_max=127,
    qscheme=torch.per_tensor_affine,
    is_dynamic=False,
    observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=2**-20),
)

# A constant read as data (an embedding's table, a tied output projection's weights): int8 symmetric per tensor, so
# that a product with it runs as a fully connected layer and the gather and the product share one table.
TABLE_QSPEC = QuantizationSpec(
    dtype=torch.int8,
    quant_min=-127,
    quant_max=127,
    qscheme=torch.per_tensor_symmetric,
    is_dynamic=False,
    observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=2**-20, qscheme=torch.per_tensor_symmetric),
)

ACT16_QSPEC = QuantizationSpec(
    dtype=torch.int16,
    quant_min=-32768,
    quant_max=32767,
    qscheme=torch.per_tensor_symmetric,
    is_dynamic=False,
    observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=2**-20, qscheme=torch.per_tensor_symmetric),
)

WEIGHT_QSPEC = QuantizationSpec(
    dtype=torch.int8,
    quant_min=-127,
    quant_max=127,
    qscheme=torch.per_channel_symmetric,
    ch_axis=0,
    is_dynamic=False,
    observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=2**-20),
)



class PercentileObserver(HistogramObserver):
    """The activation range from the 0.01st to the 99.99th percentile of everything calibration saw (a histogram
    of 2048 bins), so that rare outliers do not stretch the scale; the range still holds zero."""

    def __init__(self, *args, percentile: float = 99.99, **kwargs):
        super().__init__(*args, **kwargs)
        self.percentile = percentile

    def _non_linear_param_search(self) -> tuple[torch.Tensor, torch.Tensor]:
        cdf = torch.cumsum(self.histogram, 0) / self.histogram.sum()
        width = (self.max_val - self.min_val) / self.bins
        tail = (100.0 - self.percentile) / 100.0
        lo = int(torch.searchsorted(cdf, torch.tensor(tail, dtype=cdf.dtype)))
        hi = int(torch.searchsorted(cdf, torch.tensor(1.0 - tail, dtype=cdf.dtype)))
        return self.min_val + width * lo, self.min_val + width * (hi + 1)


class MseObserver(HistogramObserver):
    """The activation range, among [min, max] scaled by 1.00, 0.99, ..., 0.05, whose int8 grid gives the least
    squared error over the calibration histogram (bin centres, clipping included). torch's own HistogramObserver
    search approximates this and, at 8 bits, all but never moves from min/max."""

    def _non_linear_param_search(self) -> tuple[torch.Tensor, torch.Tensor]:
        edges = torch.linspace(float(self.min_val), float(self.max_val), self.bins + 1, dtype=torch.float64)
        centres, counts = (edges[:-1] + edges[1:]) / 2, self.histogram.double()
        best, best_err = (self.min_val, self.max_val), float("inf")
        for k in range(100, 4, -1):
            lo, hi = self.min_val * (k / 100), self.max_val * (k / 100)
            scale, zp = self._calculate_qparams(lo, hi)
            scale, zp = float(scale), int(zp)
            q = torch.clamp(torch.round(centres / scale) + zp, self.quant_min, self.quant_max)
            err = float((counts * (centres - (q - zp) * scale) ** 2).sum())
            if err < best_err:
                best, best_err = (lo, hi), err
        return best


# Activation range setting, per run (mcu.compile(observer=...)): "minmax" keeps every calibrated value in range;
# "percentile" clips the rarest 0.01 % at each end; "mse" picks the range of least squared quantization error.
OBSERVERS = {"minmax": MinMaxObserver, "percentile": PercentileObserver, "mse": MseObserver}


def act_qspec(observer: str = "minmax", qat: bool = False, bits: int = 8) -> QuantizationSpec:
    """int8 per-tensor affine activations observed by `observer` (QAT: fake-quantized, moving-average min/max);
    bits=16: int16 per-tensor symmetric (zero point 0)."""
    if observer not in OBSERVERS:
        raise McuError(f"observer={observer!r} is not one of {', '.join(sorted(OBSERVERS))}")
    spec = ACT_QSPEC if bits == 8 else ACT16_QSPEC
    obs = MovingAverageMinMaxObserver if qat else OBSERVERS[observer]
    ctr = obs.with_args(eps=2**-20, qscheme=spec.qscheme)
    if qat:
        ctr = FakeQuantize.with_args(observer=obs, eps=2**-20, qscheme=spec.qscheme)
    return dataclasses.replace(spec, observer_or_fake_quant_ctr=ctr)


WEIGHT_BITS = {"int8": 127, "int4": 7}  # symmetric weight range [-q, q]


def weight_qspec(qat: bool = False, weights: str = "int8") -> QuantizationSpec:
    """Per-channel symmetric weights in [-127, 127] (int8) or [-7, 7] (int4: stored two per byte)."""
    if weights not in WEIGHT_BITS:
        raise McuError(f"weights={weights!r} is not one of {', '.join(WEIGHT_BITS)}")
    q = WEIGHT_BITS[weights]
    spec = dataclasses.replace(WEIGHT_QSPEC, quant_min=-q, quant_max=q)
    if not qat:
        return spec
    return dataclasses.replace(spec, observer_or_fake_quant_ctr=FakeQuantize.with_args(
        observer=MovingAveragePerChannelMinMaxObserver, eps=2**-20))


SOFTMAX_OUT_QSPEC = FixedQParamsQuantizationSpec(
    dtype=torch.int8,
    scale=1.0 / 256.0,
    zero_point=-128,
    quant_min=-128,
    quant_max=127,
    qscheme=torch.per_tensor_affine,
)

TANH_OUT_QSPEC = FixedQParamsQuantizationSpec(
    dtype=torch.int8,
    scale=1.0 / 128.0,
    zero_point=0,
    quant_min=-128,
    quant_max=127,
    qscheme=torch.per_tensor_affine,
)

FIXED16_QSPEC = FixedQParamsQuantizationSpec(  # softmax, sigmoid and tanh under a16w8: [-1, 1) in 2^-15 steps
    dtype=torch.int16,
    scale=1.0 / 32768.0,
    zero_point=0,
    quant_min=-32768,
    quant_max=32767,
    qscheme=torch.per_tensor_affine,
)
