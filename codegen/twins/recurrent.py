"""Twins of the recurrent kernels (mcu_rnn_f32, mcu_lstm_f32; their _quad variants run the same sums): float32
numpy in the C's exact order, each gate row's products summed from k = 0 up, then its bias (mcu_rnn_gate), and the
cells' equations one rounded float32 operation at a time (mcu_rnn_f32.h)."""
from __future__ import annotations

import numpy as np

from mcu.codegen.twins.float32 import _sigmoid
from mcu.codegen.twins.fmath import F32, tanh_f32


RNN_CELLS = ("lstm", "gru", "tanh", "relu")  # mcu_rnn_f32_params_t.cell (MCU_RNN_*; 0: mcu_lstm_f32)
RNN_GATES = (4, 3, 1, 1)  # gates of each cell: rows of w_ih and w_hh per hidden unit


def _rnn_steps(params: dict, input, h0, w_ih, w_hh, b_ih, b_hh, gates: int):
    """The inputs of mcu_rnn_f32 / mcu_lstm_f32 as arrays, their step order, and `gate(x, h, g)`: gate g's
    (w_ih x + b_ih, w_hh h + b_hh) for every batch row and unit, each product summed from 0 up as mcu_rnn_gate."""
    b, t, i, h = params["batches"], params["steps"], params["input_size"], params["hidden"]
    if min(b, t, i, h) < 1 or params["reverse"] not in (0, 1):
        raise ValueError(f"batches, steps, input_size, hidden must be >= 1: {b}, {t}, {i}, {h}")
    wi, wh = np.asarray(w_ih, F32).reshape(gates, h, i), np.asarray(w_hh, F32).reshape(gates, h, h)
    bi = None if b_ih is None else np.asarray(b_ih, F32).reshape(gates, h)
    bh = None if b_hh is None else np.asarray(b_hh, F32).reshape(gates, h)

    def affine(v, w, bias):
        acc = np.zeros((v.shape[0], w.shape[0]), F32)
        for k in range(v.shape[1]):
            acc = acc + v[:, k:k + 1] * w[:, k]
        return acc if bias is None else acc + bias

    def gate(xt, ht, g):
        return affine(xt, wi[g], None if bi is None else bi[g]), affine(ht, wh[g], None if bh is None else bh[g])

    order = range(t - 1, -1, -1) if params["reverse"] else range(t)
    return np.asarray(input, F32).reshape(b, t, i), np.asarray(h0, F32).reshape(b, h), order, gate


def rnn_f32(params: dict, input, h0, w_ih, w_hh, b_ih, b_hh) -> np.ndarray:
    """Twin of mcu_rnn_f32 (GRU, tanh or ReLU cell); returns float32 [batches, steps, hidden]."""
    if not 0 < params["cell"] < len(RNN_CELLS):
        raise ValueError(f"cell {params['cell']} is not MCU_RNN_GRU, _TANH or _RELU")
    cell = RNN_CELLS[params["cell"]]
    x, h, order, gate = _rnn_steps(params, input, h0, w_ih, w_hh, b_ih, b_hh, RNN_GATES[params["cell"]])
    y = np.zeros((x.shape[0], x.shape[1], h.shape[1]), F32)
    for t in order:
        if cell == "gru":
            r, z = _sigmoid(np.add(*gate(x[:, t], h, 0))), _sigmoid(np.add(*gate(x[:, t], h, 1)))
            gi, gh = gate(x[:, t], h, 2)
            n = tanh_f32(gi + r * gh)
            h = (h - n) * z + n
        else:
            a = np.add(*gate(x[:, t], h, 0))
            h = tanh_f32(a) if cell == "tanh" else np.where(a > 0, a, F32(0)).astype(F32)
        y[:, t] = h
    return y


def lstm_f32(params: dict, input, h0, c0, w_ih, w_hh, b_ih, b_hh) -> tuple[np.ndarray, np.ndarray]:
    """Twin of mcu_lstm_f32; returns (y float32 [batches, steps, hidden], c_n [batches, hidden])."""
    x, h, order, gate = _rnn_steps(params, input, h0, w_ih, w_hh, b_ih, b_hh, RNN_GATES[0])
    c = np.asarray(c0, F32).reshape(h.shape)
    y = np.zeros((x.shape[0], x.shape[1], h.shape[1]), F32)
    for t in order:
        i, f, g, o = (np.add(*gate(x[:, t], h, k)) for k in range(4))
        c = _sigmoid(f) * c + _sigmoid(i) * tanh_f32(g)
        h = _sigmoid(o) * tanh_f32(c)
        y[:, t] = h
    return y, c
