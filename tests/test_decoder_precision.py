"""An int8 run of a decoder step takes mcu.quantization.decoder's defaults (issue #28): int16 activations throughout
(the KV cache, the attention products and the mask's add included), the tied output projection as a linear layer
with per-row int8 weights and int16 logits. On the seeded tinyllama_step (host only: the integer reference) the defaults keep the float model's next
token more often than every op in int8 does; other models' int8 runs are untouched."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mcu
from mcu.state_region import initial_region, reference_step
from mcu.zoo.sequence import SEQUENCE, TinyLlamaStep, sequence_calibration

STEPS = 48


def _compile(tmp_path, **kw):
    model, example = SEQUENCE["tinyllama_step"]()
    return model, mcu.compile(model, example, board="mps3-an547", out_dir=tmp_path, force=True,
                              calibration=sequence_calibration("tinyllama_step", 24), **kw)


def _agreement(model, pkg) -> float:
    """Share of STEPS steps (a seeded token stream at positions 0..) whose reference argmax is the float model's."""
    fresh = type(model)()
    fresh.load_state_dict(model.state_dict())
    fresh.eval()
    region, agree = initial_region(pkg.graph), 0
    for tok, pos in sequence_calibration("tinyllama_step", STEPS, seed=9):
        raw, region = reference_step(pkg.graph, [tok.numpy().astype(np.int32), pos.numpy().astype(np.int32)], region)
        with torch.no_grad():
            agree += int(np.asarray(raw[0]).reshape(-1).argmax() == int(fresh(tok, pos).reshape(-1).argmax()))
    return agree / STEPS


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    base = tmp_path_factory.mktemp("decoder")
    model, default = _compile(base / "default")
    _, every_int8 = _compile(base / "int8", mixed={TinyLlamaStep: "int8"})  # a module rule wins over the defaults
    return model, default, every_int8


def test_the_decoder_defaults_in_an_int8_run(packages):
    _, pkg, _ = packages
    kernels = [n.call.kernel for n in pkg.graph.nodes if n.op == "call"]
    assert pkg.manifest["outputs"][0]["dtype"] == "int16"  # the logits
    assert [s["dtype"] for s in pkg.manifest["state"]] == ["int16"] * 4  # the KV cache
    assert sum(k.startswith("mcu_matmul_s16") for k in kernels) == 4 and "mcu_softmax_s16" in kernels
    assert sum(k.startswith("mcu_add_broadcast_s16") for k in kernels) == 2  # the mask
    assert not any(k.startswith("mcu_convert") for k in kernels), kernels  # attention @ v reads the softmax as is
    assert kernels[-1].startswith("mcu_fully_connected_s16")  # the tied output projection, int8 weights
    assert not any(k.startswith("mcu_matmul_f32") or "_s8" in k for k in kernels), kernels  # no int8, no float products


def test_the_decoder_defaults_keep_more_tokens_than_every_op_in_int8(packages):
    model, default, every_int8 = packages
    got, base = _agreement(model, default), _agreement(model, every_int8)
    assert got >= 0.95 and got > base, (got, base)  # measured: 48/48 against 46/48


def test_models_without_a_cache_keep_plain_int8(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Softmax(-1)).eval()
    pkg = mcu.compile(model, (torch.randn(1, 8),), board="mps3-an547", out_dir=tmp_path)
    assert {n.call.portable for n in pkg.graph.nodes if n.op == "call"} <= {"mcu_fully_connected_s8",
                                                                           "mcu_softmax_s8"}
