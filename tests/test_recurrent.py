"""GRU, LSTM and RNN over a whole sequence: one mcu_rnn_f32 / mcu_lstm_f32 call per layer and direction, the time
loop in C (mcu.importer.recurrent). Float32 within 1e-5 of torch, the C (host, sanitized; QEMU) equal to the twin
bit for bit, int8 models exact on the M4, M3 and M55, and the generated code the same size whatever the length."""
from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.build.host import run_host
from mcu.errors import UnsupportedOpError


class Seq(nn.Module):
    """A recurrent layer's output sequence and its final state(s), as users write them."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        y, state = self.layer(x)
        return (y, *state) if isinstance(state, tuple) else (y, state)


def _model(kind: str, seed: int = 0, **kw) -> nn.Module:
    torch.manual_seed(seed)
    return Seq(getattr(nn, kind)(6, 8, **kw)).eval()


CASES = {  # name: (model, input shape)
    "gru": (lambda: _model("GRU", batch_first=True), (1, 9, 6)),
    "gru_2_layers_bidirectional_batch2": (lambda: _model("GRU", num_layers=2, bidirectional=True), (5, 2, 6)),
    "lstm_2_layers_bidirectional": (lambda: _model("LSTM", num_layers=2, bidirectional=True, batch_first=True),
                                    (1, 7, 6)),
    "lstm_no_bias": (lambda: _model("LSTM", bias=False), (4, 1, 6)),
    "rnn_tanh": (lambda: _model("RNN", batch_first=True), (1, 5, 6)),
    "rnn_relu_2_layers": (lambda: _model("RNN", nonlinearity="relu", num_layers=2, batch_first=True), (1, 5, 6)),
}


def _example(shape, seed: int = 1):
    return (torch.randn(shape, generator=torch.Generator().manual_seed(seed)),)


@pytest.mark.parametrize("optimize", ["speed", "memory"])
@pytest.mark.parametrize("name", CASES)
def test_float32_equals_torch_and_the_c_equals_its_twin(name, optimize, tmp_path):
    """speed: the _quad variants (weights in quads of rows), memory: the portable kernels; both equal the twin."""
    build, shape = CASES[name]
    model, example = build(), _example(shape)
    pkg = mcu.compile(model, example, quantize="none", out_dir=tmp_path / "pkg", optimize=optimize)
    kernels = collections.Counter(n.call.kernel for n in pkg.graph.nodes if n.call)
    layers = model.layer.num_layers * (2 if model.layer.bidirectional else 1)
    kernel = ("mcu_lstm_f32" if name.startswith("lstm") else "mcu_rnn_f32") + ("_quad" if optimize == "speed" else "")
    assert kernels[kernel] == layers
    ref = pkg.reference(example)
    with torch.no_grad():
        want = [w.numpy() for w in model(*example)]
    for r, w in zip(ref, want, strict=True):
        assert np.abs(np.asarray(r).reshape(w.shape) - w).max() <= 1e-5
    host = run_host(pkg, example).outputs
    assert all(np.array_equal(np.asarray(h).reshape(-1), np.asarray(r).reshape(-1)) for h, r in zip(host, ref))


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385", "mps3-an547"])
def test_int8_gru_and_lstm_exact_on_board(board, tmp_path):
    """A conv front end, a bidirectional GRU and an LSTM, then a linear head: int8 around float32 recurrences."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(3)
            self.front = nn.Conv1d(6, 8, 3, padding=1)
            self.gru = nn.GRU(8, 8, batch_first=True, bidirectional=True)
            self.lstm = nn.LSTM(16, 8, batch_first=True)
            self.head = nn.Linear(8, 4)

        def forward(self, x):
            y, _ = self.gru(torch.relu(self.front(x)).transpose(1, 2))
            y, (h, c) = self.lstm(y)
            return self.head(y[:, -1] + c[0])

    model = Net().eval()
    example = _example((1, 6, 12))
    calib = [_example((1, 6, 12), seed=s) for s in range(8)]
    pkg = mcu.compile(model, example, board=board, calibration=calib, out_dir=tmp_path / "pkg")
    ref = pkg.reference(example)
    dev = mcu.run(pkg, example)
    assert all(np.array_equal(np.asarray(d).reshape(-1), np.asarray(r).reshape(-1))
               for d, r in zip(dev.raw_outputs, ref))
    with torch.no_grad():
        want = model(*example).numpy()
    got = np.asarray(pkg.dequantize_outputs(ref)[0]).reshape(want.shape)
    assert 10 * np.log10((want ** 2).sum() / ((want - got) ** 2).sum()) >= 25.0


def test_generated_code_does_not_grow_with_the_sequence(tmp_path):
    """The 49-step GRU's model.c is the 10-step one's, up to the digits of its step count."""
    sizes = {}
    for steps in (10, 49):
        model = _model("GRU", batch_first=True)
        pkg = mcu.compile(model, _example((1, steps, 6)), out_dir=tmp_path / f"t{steps}")
        sizes[steps] = ((tmp_path / f"t{steps}" / "model.c").stat().st_size, len(pkg.graph.nodes))
    assert sizes[49][1] == sizes[10][1]
    assert abs(sizes[49][0] - sizes[10][0]) <= 64


def test_an_lstm_with_a_projection_is_refused_naming_the_fix(tmp_path):
    model = _model("LSTM", proj_size=4)
    with pytest.raises(UnsupportedOpError, match="proj_size.*nn.Linear after the LSTM"):
        mcu.compile(model, _example((3, 1, 6)), quantize="none", out_dir=tmp_path / "pkg")


def test_a_slice_of_a_converted_sequence_converts_only_what_it_keeps():
    """slice_first: quantize then take the last step -> take the last step then quantize (one row, not 49)."""
    from mcu.codegen.ir import Graph, Node, QParams, Tensor, verify
    from mcu.codegen.passes.slice_first import slice_first

    qp = QParams.tensor(0.1, 3)
    tensors = {"x": Tensor("x", (1, 49, 8), "float32"), "q": Tensor("q", (1, 49, 8), "int8", qp),
               "y": Tensor("y", (1, 1, 8), "int8", qp)}
    graph = verify(Graph(tensors, (Node("n0", "quantize", ("x",), ("q",)),
                                   Node("n1", "slice", ("q",), ("y",), {"dim": 1, "start": 48, "step": 1})),
                         ("x",), ("y",)))
    moved = verify(slice_first(graph))
    assert [(n.op, n.inputs, n.outputs) for n in moved.nodes] == [("slice", ("x",), ("n1_first",)),
                                                                  ("quantize", ("n1_first",), ("y",))]
    assert moved.tensors["n1_first"].shape == (1, 1, 8) and moved.tensors["n1_first"].dtype == "float32"
    assert "q" not in moved.tensors
    # the sequence read by another op too: nothing moves
    tensors["z"] = Tensor("z", (1, 49, 8), "int8", qp)
    both = Graph(tensors, graph.nodes + (Node("n2", "lut", ("q",), ("z",), {"fn": ("clone.default", (...,), ())}),),
                 ("x",), ("y", "z"))
    assert slice_first(verify(both)) == both
