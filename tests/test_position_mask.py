"""Attention over a KV cache with a mask computed from the position input (issue #25 item 3: causal
scaled_dot_product_attention with a mask from a position input), and the 4-d cache it reads.

- `mask = arange(n) <= pos` (an integer constant against a one-element integer input) compares the constant with
  the position gathered as a float from [0 .. n] (mcu.importer.composites.logic._position_compare): a gather whose
  range the device checks, and constants of n + 1 and n elements, not an (n + 1) x n table.
- A boolean mask the model computes (a comparison, or a view of one) is an additive mask at run time.
- A 4-d cache written along dim 2 (`index_copy_`) and read by attention keeps torch's element order
  (codegen/passes/layout.py remaps gather's and scatter's dim to NHWC).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import mcu
from mcu.errors import McuError
from mcu.metrics import sqnr_db

HEADS, CACHE, DIM = 2, 8, 16


class Step(nn.Module):
    """One decoder attention step: q, k, v of one token; k and v written into a [1, H, S, D] cache at pos."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(DIM, DIM), nn.Linear(DIM, DIM), nn.Linear(DIM, DIM)
        self.register_buffer("kc", torch.zeros(1, HEADS, CACHE, DIM // HEADS))
        self.register_buffer("vc", torch.zeros(1, HEADS, CACHE, DIM // HEADS))

    def forward(self, x, pos):
        q, k, v = (f(x).view(1, 1, HEADS, DIM // HEADS).transpose(1, 2) for f in (self.q, self.k, self.v))
        self.kc.index_copy_(2, pos, k)
        self.vc.index_copy_(2, pos, v)
        mask = torch.arange(CACHE) <= pos
        y = F.scaled_dot_product_attention(q, self.kc, self.vc, attn_mask=mask.view(1, 1, 1, CACHE))
        return y.transpose(1, 2).reshape(1, 1, DIM)


def _fresh(model: Step) -> Step:
    twin = Step().eval()
    twin.load_state_dict(model.state_dict())
    twin.kc.zero_(), twin.vc.zero_()
    return twin


def _tokens(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1, DIM, generator=g), torch.tensor([i])) for i in range(n)]


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Step().eval()


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_position_masked_attention_over_a_cache_on_the_device(model, quantize, tmp_path):
    """Four steps in a session on the M4: float32 within 1e-5 of torch, int8 equal to the reference bit for bit and
    within 20 dB SQNR of torch; the position input's range is the mask table's."""
    steps = _tokens(4, seed=1)
    pkg = mcu.compile(model, steps[0], quantize=quantize, out_dir=tmp_path / "p",
                      calibration=None if quantize == "none" else
                      [t for seed in range(2, 8) for t in _tokens(CACHE, seed)])
    assert pkg.manifest["inputs"][1]["dtype"] == "int32" and pkg.manifest["inputs"][1]["index_range"] == [0, CACHE]
    shapes = [pkg.graph.tensors[t].shape for t in pkg.graph.used_constants()]
    assert (CACHE + 1, 1) in shapes and (CACHE + 1, CACHE) not in shapes  # the positions, not a table of masks
    torch_step, device, reference = _fresh(model), mcu.session(pkg), mcu.session(pkg, "reference")
    want, got = [], []
    for x, pos in steps:
        want.append(torch_step(x, pos).detach().numpy().ravel())
        run = device.run((x, pos))
        assert np.array_equal(run.raw_outputs[0], reference.run((x, pos)).raw_outputs[0])
        got.append(run.outputs[0].ravel())
    want, got = np.concatenate(want), np.concatenate(got)
    if quantize == "none":
        assert np.abs(got - want).max() <= 1e-5
    else:
        assert sqnr_db(want, got) >= 20


def test_the_mask_matters_and_a_4d_cache_keeps_torch_order(model, tmp_path):
    """The reference at step 3 after steps 0-2 equals torch; with the mask dropped it would not (the cache's
    unwritten rows would take part), so the mask is what makes it equal."""
    pkg = mcu.compile(model, _tokens(1, 0)[0], quantize="none", out_dir=tmp_path / "p")
    session, torch_step, unmasked = mcu.session(pkg, "reference"), _fresh(model), _fresh(model)
    for x, pos in _tokens(4, seed=3):
        got = session.run((x, pos)).outputs[0].ravel()
        want = torch_step(x, pos).detach().numpy().ravel()
        assert np.abs(got - want).max() <= 1e-5
        q = unmasked.q(x).view(1, 1, HEADS, -1).transpose(1, 2)
        unmasked.kc.index_copy_(2, pos, unmasked.k(x).view(1, 1, HEADS, -1).transpose(1, 2))
        unmasked.vc.index_copy_(2, pos, unmasked.v(x).view(1, 1, HEADS, -1).transpose(1, 2))
        loose = F.scaled_dot_product_attention(q, unmasked.kc, unmasked.vc).transpose(1, 2).reshape(-1)
        assert np.abs(loose.detach().numpy() - want).max() > 1e-3


class Valid(nn.Module):
    """Attention over 4 tokens, each key kept where the model's float `valid` input says so (a computed bool)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)

    def forward(self, x, valid):
        q, k, v = (t.view(1, 4, HEADS, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=(valid > 0.5).view(1, 1, 1, 4))
        return y.transpose(1, 2).reshape(1, 4, DIM)


def test_a_mask_computed_from_float_inputs(tmp_path):
    torch.manual_seed(5)
    m = Valid().eval()
    x, valid = torch.randn(1, 4, DIM), torch.tensor([[1.0, 0.0, 1.0, 1.0]])
    pkg = mcu.compile(m, (x, valid), quantize="none", out_dir=tmp_path / "p")
    assert np.abs(pkg.reference((x, valid))[0].ravel() - m(x, valid).detach().numpy().ravel()).max() <= 1e-5


class BoolInput(nn.Module):
    def forward(self, x, keep):
        return torch.where(keep, x, 0.0)


def test_a_boolean_model_input_as_a_condition_is_still_refused(tmp_path):
    with pytest.raises(McuError, match="boolean model input as a condition .* pass it as a float 0/1 tensor"):
        mcu.compile(BoolInput(), (torch.randn(1, 4), torch.tensor([[True, False, True, True]])), quantize="none",
                    out_dir=tmp_path / "p")


class TableMask(nn.Module):
    """A causal mask as users keep it: a [S, S] buffer (-30 above the diagonal, or `table`), row `pos` of it."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.register_buffer("mask", table)

    def forward(self, x, pos):
        return x + self.mask[pos]


@pytest.mark.parametrize("table, computed", [
    (torch.full((CACHE, CACHE), -30.0).triu(1), True),    # j > p masked: -30 (k j exact: folded in the constants)
    (torch.full((CACHE, CACHE), 0.25).tril(), True),       # j <= p: 0.25, else 0 (k not an integer: a product)
    (torch.full((CACHE, CACHE), -2.0).triu() + 1.0, True),  # j >= p: -1, else 1
    (torch.randn(CACHE, CACHE, generator=torch.Generator().manual_seed(0)), False),  # any table: still gathered
])
def test_a_mask_table_row_at_the_position_is_computed_not_stored(table, computed, tmp_path):
    """Row pos of a two-valued triangular table is a comparison with the position (no [S, S] constant in flash),
    exact in float32 at every position; any other table stays a gather."""
    model = TableMask(table)
    x = torch.randn(1, CACHE, generator=torch.Generator().manual_seed(1))
    pkg = mcu.compile(model, (x, torch.tensor([0])), quantize="none", out_dir=tmp_path / "p")
    shapes = [pkg.graph.tensors[t].shape for t in pkg.graph.used_constants()]
    assert ((CACHE, CACHE) in shapes) is not computed
    for pos in range(CACHE):
        inputs = (x, torch.tensor([pos]))
        assert np.array_equal(pkg.reference(inputs)[0].ravel(), model(*inputs).numpy().ravel())
