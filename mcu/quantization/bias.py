"""Bias correction (Nagel et al., "Data-Free Quantization", 2019, the empirical form) on a prepared PT2E model.

Rounding the weights shifts each output channel's mean by (W_q - W) . E[x]; with E[x] measured per input channel during
calibration (InputMeans), that shift is subtracted from the float bias before conversion (correct_biases), so
torchao's reference and our kernels both carry it.
"""
from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from mcu.importer.ops import WEIGHTED_OPS

aten = torch.ops.aten
TRANSPOSED = {aten.conv_transpose2d.input, aten.conv_transpose1d.default}  # weight [I, O, K...] (groups 1)
CORRECTED = WEIGHTED_OPS | TRANSPOSED


class InputMeans(torch.fx.Interpreter):
    """Runs the prepared model (its observers record as usual) and sums each conv/linear input per channel."""

    def __init__(self, module: GraphModule):
        super().__init__(module)
        self._sums: dict[str, tuple[torch.Tensor, int]] = {}

    def run_node(self, n: Node):
        if n.op == "call_function" and n.target in CORRECTED:
            x = self.env[n.args[0]]
            channel = x.dim() - 1 if n.target == aten.linear.default else 1
            total, count = self._sums.get(n.name, (0.0, 0))
            dims = [d for d in range(x.dim()) if d != channel]
            per_channel = x.double().sum(dims) if dims else x.double()  # sum([]) would sum everything
            self._sums[n.name] = (total + per_channel, count + x.numel() // x.shape[channel])
        return super().run_node(n)

    def means(self) -> dict[str, torch.Tensor]:
        return {name: total / count for name, (total, count) in self._sums.items()}


def _attr(module: GraphModule, node) -> tuple[object, str] | None:
    """(owner, attribute name) of the get_attr behind node, through observer modules; None if there is none."""
    while isinstance(node, Node) and node.op == "call_module":
        node = node.args[0]
    if not isinstance(node, Node) or node.op != "get_attr":
        return None
    *path, name = node.target.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    return owner, name


def correct_biases(prepared: GraphModule, means: dict[str, torch.Tensor]) -> None:
    """b -= (W_q - W) . E[x] for every calibrated conv/linear with a bias, W_q being the weight as its observer
    will quantize it. For a conv, E[x] is per input channel (taps near a padded border see zeros instead, which
    the correction ignores)."""
    for n in prepared.graph.nodes:
        if n.op != "call_function" or n.target not in CORRECTED or n.name not in means or len(n.args) < 3:
            continue
        w_obs, w_at, b_at = n.args[1], _attr(prepared, n.args[1]), _attr(prepared, n.args[2])
        if w_at is None or b_at is None or not (isinstance(w_obs, Node) and w_obs.op == "call_module"):
            continue
        w = getattr(*w_at).detach().double()
        obs = getattr(prepared, w_obs.target)
        scale, _ = obs.calculate_qparams()
        s = scale.double().reshape(-1, *([1] * (w.dim() - 1)))
        if n.target in TRANSPOSED:
            s = scale.double().reshape(1, -1, *([1] * (w.dim() - 2)))
        dw = torch.clamp(torch.round(w / s), obs.quant_min, obs.quant_max) * s - w
        mu = means[n.name]
        if n.target in TRANSPOSED:  # an output pixel meets 1 / prod(stride) of the taps, on average
            stride = n.args[3] if len(n.args) > 3 else 1
            per_pixel = math.prod(stride) if isinstance(stride, (list, tuple)) else int(stride) ** (dw.dim() - 2)
            shift = mu @ dw.sum(dim=tuple(range(2, dw.dim()))) / per_pixel    # [I] @ [I, O]
        elif n.target == aten.linear.default:
            shift = dw @ mu
        else:
            groups = n.args[6] if len(n.args) > 6 else 1
            per_in = dw.sum(dim=tuple(range(2, dw.dim())))                    # [O, I / groups]
            mu_g = mu.reshape(groups, -1).repeat_interleave(dw.shape[0] // groups, dim=0)  # [O, I / groups]
            shift = (per_in * mu_g).sum(1)
        owner, name = b_at
        b = getattr(owner, name)
        corrected = (b.detach().double() - shift).to(b.dtype)  # a new tensor: the user's bias may be this one
        setattr(owner, name, torch.nn.Parameter(corrected, requires_grad=False)
                if isinstance(b, torch.nn.Parameter) else corrected)
