"""Attention over a KV cache without copies: q @ k^T reads the key cache's rows where they lie, grouped-query heads
read their shared key / value head (no repeat_interleave copy), a product with a constant (a tied output projection)
is a fully connected layer, and the matmul variants (DSP, Helium) equal the reference bit for bit on the device."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.codegen.ir import Graph, Node, QParams, Tensor, verify
from mcu.codegen.passes.fold_matmul_operands import fold_matmul_operands
from mcu.metrics import sqnr_db

Q = QParams.tensor(0.05, 3)


def _t(name, shape, q=Q):
    return Tensor(name, tuple(shape), "int8", q)


def gqa_ir(extra_reader: bool = False) -> Graph:
    """matmul(q [8, 1, 8], permute(repeat_interleave(k [4, 32, 8], 2, dim=0))) as the importer spells it."""
    ts = [_t("q", (8, 1, 8)), _t("k", (4, 32, 8)), _t("k1", (4, 1, 32, 8)), _t("k2", (4, 2, 32, 8)),
          _t("k3", (8, 32, 8)), _t("kt", (8, 8, 32)), _t("s", (8, 1, 32))]
    nodes = [Node("r1", "reshape", ("k",), ("k1",)), Node("cat", "concat", ("k1", "k1"), ("k2",), {"dim": 1}),
             Node("r2", "reshape", ("k2",), ("k3",)), Node("tr", "permute", ("k3",), ("kt",), {"perm": (0, 2, 1)}),
             Node("mm", "matmul", ("q", "kt"), ("s",))]
    outputs = ("s", "k3") if extra_reader else ("s",)
    return verify(Graph({t.name: t for t in ts}, tuple(nodes), ("q", "k"), outputs))


def test_fold_reads_the_cache_where_it_lies():
    g = fold_matmul_operands(gqa_ir())
    assert [n.op for n in g.nodes] == ["matmul"]
    mm = g.nodes[0]
    assert mm.inputs == ("q", "k") and mm.attrs == {"rhs_transposed": True, "rhs_group": 2}
    assert set(g.tensors) == {"q", "k", "s"}


def test_fold_keeps_a_copy_someone_else_reads():
    g = fold_matmul_operands(gqa_ir(extra_reader=True))
    mm = next(n for n in g.nodes if n.op == "matmul")
    assert mm.inputs == ("q", "k3") and mm.attrs == {"rhs_transposed": True}  # the transpose still folds
    assert [n.op for n in g.nodes] == ["reshape", "concat", "reshape", "matmul"]


def test_fold_needs_the_same_quantization():
    g = gqa_ir()
    other = QParams.tensor(0.1, 0)  # k3 and its transpose on other qparams than the cache: only the transpose folds
    g = g.replace(tensors={**g.tensors, **{n: g.tensors[n].replace(qparams=other) for n in ("k3", "kt")}})
    mm = next(n for n in fold_matmul_operands(g).nodes if n.op == "matmul")
    assert mm.inputs == ("q", "k3") and mm.attrs == {"rhs_transposed": True}


class CachedAttention(nn.Module):
    """One query position: 8 heads over a 4-head KV cache of 24 positions written at `pos`, then a tied output
    projection (x @ table^T) of a token embedding table."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(40, 16)
        self.wq, self.wk, self.wv = nn.Linear(16, 16), nn.Linear(16, 8), nn.Linear(16, 8)
        self.register_buffer("k_cache", torch.zeros(4, 24, 2))
        self.register_buffer("v_cache", torch.zeros(4, 24, 2))

    def forward(self, token, pos):
        x = self.embed(token).reshape(1, 16)
        q = self.wq(x).view(8, 1, 2)
        self.k_cache[:, pos] = self.wk(x).view(4, 1, 2)
        self.v_cache[:, pos] = self.wv(x).view(4, 1, 2)
        keys, values = self.k_cache.repeat_interleave(2, dim=0), self.v_cache.repeat_interleave(2, dim=0)
        attn = torch.softmax(q @ keys.transpose(-1, -2), -1) @ values
        return attn.reshape(1, 16) @ self.embed.weight.t()


def _stream(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, 40, (1, 1), generator=g), torch.tensor([p])) for p in range(n)]


@pytest.fixture(scope="module")
def attention():
    torch.manual_seed(3)
    return CachedAttention().eval()


@pytest.mark.qemu
@pytest.mark.parametrize("board, mixed, matmul", [
    ("mps2-an386", {CachedAttention: "int8"}, "mcu_matmul_gemm_s8_dsp"),
    ("mps3-an547", None, "mcu_matmul_s16_mve"), ("mps2-an385", None, "mcu_matmul_s16")])
def test_cached_attention_on_the_device_equals_the_reference(attention, board, mixed, matmul, tmp_path):
    """One query's 8 heads over 4 KV heads: an int16 cache and products under the decoder defaults (Helium: 8-lane
    dot products), or pinned int8: 2 rows per rhs batch, which the M4 runs on its GEMM core
    (codegen/kernels/geometry.py, is_matmul_gemm_*)."""
    pkg = mcu.compile(attention, _stream(1, 0)[0], board=board, calibration=_stream(24, 1), out_dir=tmp_path / "p",
                      mixed=mixed)
    kernels = [n.call.kernel for n in pkg.graph.nodes if n.call]
    assert kernels.count(matmul) == 2, kernels
    assert not any("concat" in k or "transpose" in k for k in kernels), kernels  # no copy of the cache
    # the tied projection: a linear layer (int16 logits under the decoder defaults, mcu/quantization/decoder.py)
    assert any(k.startswith("mcu_fully_connected_s" + ("8" if mixed else "16")) for k in kernels[-1:]), kernels
    xs = _stream(12, 2)
    want = mcu.session(pkg, "reference").run_sequence(xs)
    got = mcu.session(pkg).run_sequence(xs)
    for w, d in zip(want, got):
        np.testing.assert_array_equal(d.raw_outputs[0], w.raw_outputs[0])
    fresh = CachedAttention().eval()
    fresh.load_state_dict(attention.state_dict())
    with torch.no_grad():
        ref = np.concatenate([fresh(*x).numpy() for x in xs])
    assert sqnr_db(ref, np.concatenate([w.outputs[0] for w in want])) > 20


class PrefillAttention(nn.Module):
    """Self-attention over 16 tokens: 4 query heads of 8 dims over 2 KV heads (grouped), q @ k^T reading k's rows
    and attn @ v, both on the GEMM cores (32 rows per rhs batch: 2 heads of 16 tokens share each KV head)."""

    def __init__(self):
        super().__init__()
        self.wq, self.wk, self.wv = nn.Linear(32, 32), nn.Linear(32, 16), nn.Linear(32, 16)

    def forward(self, x):
        q = self.wq(x).view(16, 4, 8).transpose(0, 1)
        k = self.wk(x).view(16, 2, 8).transpose(0, 1).repeat_interleave(2, dim=0)
        v = self.wv(x).view(16, 2, 8).transpose(0, 1).repeat_interleave(2, dim=0)
        attn = torch.softmax(q @ k.transpose(-1, -2) * 8 ** -0.5, -1) @ v
        return attn.transpose(0, 1).reshape(16, 32)


@pytest.mark.qemu
@pytest.mark.parametrize("board, matmul", [("mps2-an386", "mcu_matmul_gemm_s8_dsp"),
                                           ("mps3-an547", "mcu_matmul_gemm_s8_mve"), ("mps2-an385", "mcu_matmul_s8")])
def test_prefill_attention_on_the_gemm_cores_equals_the_reference(board, matmul, tmp_path):
    torch.manual_seed(5)
    model = PrefillAttention().eval()
    g = torch.Generator().manual_seed(6)
    calib = [(torch.randn(16, 32, generator=g),) for _ in range(8)]
    pkg = mcu.compile(model, calib[0], board=board, calibration=calib, out_dir=tmp_path / "p")
    kernels = [n.call.kernel for n in pkg.graph.nodes if n.call]
    assert kernels.count(matmul) == 2, kernels
    for x in calib[:3]:
        np.testing.assert_array_equal(mcu.run(pkg, x).raw_outputs[0], pkg.reference(x)[0])


def test_float_attention_folds_too(attention, tmp_path):
    pkg = mcu.compile(attention, _stream(1, 0)[0], quantize="none", out_dir=tmp_path / "f")
    mm = [n.call for n in pkg.graph.nodes if n.call and n.call.kernel == "mcu_matmul_f32"]
    assert [(c.params["rhs_group"], c.params["rhs_transposed"]) for c in mm] == [(2, 1), (2, 0), (1, 0)]
    xs = _stream(6, 4)
    fresh = CachedAttention().eval()
    fresh.load_state_dict(attention.state_dict())
    got = mcu.session(pkg, "reference").run_sequence(xs)
    with torch.no_grad():
        for x, g in zip(xs, got):
            np.testing.assert_allclose(g.outputs[0], fresh(*x).numpy(), rtol=1e-5, atol=1e-5)
