"""Recurrent layers over a whole sequence as ONE op per layer and direction: the loop over time steps runs in C.

torch.export keeps nn.GRU, nn.LSTM and nn.RNN as aten.gru.input / aten.lstm.input / aten.rnn_tanh.input /
aten.rnn_relu.input; torch's own decomposition unrolls them into T copies of the cell (generated code that grows
with the sequence). RNN_DECOMPOSITIONS (run by mcu.importer.decompose.torch_decompositions) instead lowers each
onto two ops of our own, one call per layer and direction:
- mcu::rnn(x [B, T, I], h0 [B, H], w_ih, w_hh, b_ih, b_hh, cell, reverse) -> y [B, T, H]: a GRU, or an Elman RNN
  with tanh or ReLU (cell "gru", "tanh", "relu");
- mcu::lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse) -> (y, c_n [B, H]).
Layers chain, a bidirectional layer concatenates its two directions' y, the final hidden state is y's last step
(the first, backwards). Both ops are float islands in the integer flows (mcu.importer.ops.FLOAT_ISLAND_OPS),
as the unrolled cells were; codegen lowers them to mcu_rnn_f32 and mcu_lstm_f32.
The eager implementations below are the cell equations torch documents (nn.GRU, nn.LSTM, nn.RNN).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


aten = torch.ops.aten
CELLS = ("gru", "tanh", "relu")  # mcu::rnn's cell argument; its index is mcu_rnn_f32_params_t.cell - 1 (0: LSTM)


@torch.library.custom_op("mcu::rnn", mutates_args=())
def rnn(x: torch.Tensor, h0: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor, b_ih: torch.Tensor | None,
        b_hh: torch.Tensor | None, cell: str, reverse: bool) -> torch.Tensor:
    h, ys = h0, []
    for t in _steps(x, reverse):
        gi, gh = F.linear(x[:, t], w_ih, b_ih), F.linear(h, w_hh, b_hh)
        if cell == "gru":
            i_r, i_z, i_n = gi.chunk(3, 1)
            h_r, h_z, h_n = gh.chunk(3, 1)
            r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
            n = torch.tanh(i_n + r * h_n)
            h = (h - n) * z + n
        else:
            h = torch.tanh(gi + gh) if cell == "tanh" else torch.relu(gi + gh)
        ys.append(h)
    return torch.stack(ys[::-1] if reverse else ys, 1)


@rnn.register_fake
def _(x, h0, w_ih, w_hh, b_ih, b_hh, cell, reverse):
    return x.new_empty(x.shape[0], x.shape[1], h0.shape[-1])


@torch.library.custom_op("mcu::lstm", mutates_args=())
def lstm(x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor,
         b_ih: torch.Tensor | None, b_hh: torch.Tensor | None, reverse: bool) -> tuple[torch.Tensor, torch.Tensor]:
    h, c, ys = h0, c0, []
    for t in _steps(x, reverse):
        i, f, g, o = (F.linear(x[:, t], w_ih, b_ih) + F.linear(h, w_hh, b_hh)).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        ys.append(h)
    return torch.stack(ys[::-1] if reverse else ys, 1), c.clone()


@lstm.register_fake
def _(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse):
    return x.new_empty(x.shape[0], x.shape[1], h0.shape[-1]), c0.new_empty(c0.shape)


def _steps(x: torch.Tensor, reverse: bool) -> range:
    return range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])


def _layers(kind: str, x, hx, params, has_biases, num_layers, bidirectional, batch_first):
    """The body shared by the four decompositions: (output, h_n, c_n or None) as the aten op returns them."""
    h0, c0 = (hx[0], hx[1]) if kind == "lstm" else (hx, None)
    per = 4 if has_biases else 2
    dirs = 2 if bidirectional else 1
    if len(params) != per * num_layers * dirs:  # refused before (mcu.importer.decompose.check_recurrent)
        raise ValueError(f"{kind}: {len(params)} weights, expected {per * num_layers * dirs}")
    seq = x if batch_first else x.transpose(0, 1)  # [B, T, I]
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w = list(params[k * per:(k + 1) * per]) + [None, None]
            h = h0.narrow(0, k, 1).reshape(h0.shape[1:])
            if kind == "lstm":
                y, c = torch.ops.mcu.lstm(seq, h, c0.narrow(0, k, 1).reshape(c0.shape[1:]), w[0], w[1], w[2], w[3],
                                          d == 1)
                cs.append(c.unsqueeze(0))
            else:
                y = torch.ops.mcu.rnn(seq, h, w[0], w[1], w[2], w[3], kind, d == 1)
            last = y.narrow(1, 0 if d == 1 else y.shape[1] - 1, 1).transpose(0, 1)  # [1, B, H]
            hs.append(last)
            outs.append(y)
        seq = torch.cat(outs, 2) if dirs == 2 else outs[0]
    out = seq if batch_first else seq.transpose(0, 1)
    return out, torch.cat(hs, 0), (torch.cat(cs, 0) if kind == "lstm" else None)


def _gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    out, h, _ = _layers("gru", input, hx, params, has_biases, num_layers, bidirectional, batch_first)
    return out, h


def _elman(cell: str):
    def decomposition(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        out, h, _ = _layers(cell, input, hx, params, has_biases, num_layers, bidirectional, batch_first)
        return out, h
    return decomposition


def _lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return _layers("lstm", input, hx, params, has_biases, num_layers, bidirectional, batch_first)


RNN_DECOMPOSITIONS = {aten.gru.input: _gru, aten.lstm.input: _lstm, aten.rnn_tanh.input: _elman("tanh"),
                      aten.rnn_relu.input: _elman("relu")}
RNN_OPS = {torch.ops.mcu.rnn.default, torch.ops.mcu.lstm.default}


def projected(n) -> bool:
    """An aten.lstm.input node with proj_size (a fifth weight per layer and direction), which mcu::lstm does not run."""
    if n.target != aten.lstm.input:
        return False
    per = 4 if n.args[3] else 2
    return len(n.args[2]) != per * int(n.args[4]) * (2 if n.args[7] else 1)
