"""The tiny LM's quantization-aware training (mcu.zoo.tinyllm): its last steps train through per-row int8 weights
and int8-rounded attention activations, and leave every stored weight on the grid the quantizer uses (scale
max|w| / 127 per row, [-127, 127]), so int8 storage rounds nothing."""
from __future__ import annotations

import torch

from mcu.zoo.tinyllm import RECIPE, RowInt8, _weights, fake_int8, train


def test_a_short_qat_run_leaves_the_weights_on_the_int8_grid():
    model = train({**RECIPE, "steps": 3, "qat": 2, "batch": 2})
    for module in _weights(model):
        w = module.weight.detach()
        q = w / (w.abs().amax(1, keepdim=True) / 127)
        assert not hasattr(module, "parametrizations")
        # the quantizer's w / scale lands within float32 rounding of an integer: it rounds back to the same int8
        assert (q - q.round()).abs().max() < 1e-3 and q.round().abs().max() <= 127, type(module).__name__


def test_the_fake_quantizers_round_like_int8_and_pass_gradients_through():
    w = torch.tensor([[0.5, -0.25, 0.1, 1.0], [0.01, 0.02, -0.03, 0.0]], requires_grad=True)
    q = RowInt8()(w)
    assert torch.allclose(q[0], torch.tensor([64, -32, 13, 127]) / 127.0) and q[1, 2] == -0.03
    q.sum().backward()
    assert torch.equal(w.grad, torch.ones_like(w))
    x = torch.linspace(-1.0, 3.0, 9)
    scale = 4.0 / 255
    zero = round(-128 + 1.0 / scale)
    codes = fake_int8(x) / scale + zero
    assert (codes - codes.round()).abs().max() < 1e-3 and codes.min() >= -128 and codes.max() <= 127
    assert (fake_int8(x) - x).abs().max() <= scale / 2 + 1e-6
