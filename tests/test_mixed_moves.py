"""Mixed precision where values only move: a view, a copy, a concat of one tensor's copies or a rescale by a number
runs in the integer precision of the op it reads (mcu.quantization.quantizer, McuQuantizer._moved_precision). The
decoder step with int16 activations but an int8 KV cache and int8 attention products (issue #28's measured mix)
reads its cache where it lies: no int16 copy of the cache, repeat_interleave folded into the int8 product."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mcu
from mcu.state_region import initial_region, reference_step
from mcu.zoo.sequence import SEQUENCE, sequence_calibration

DECODER_MIX = {"op:matmul": "int8", "op:index_put": "int8"}  # int16 activations but the cache and the products


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    model, example = SEQUENCE["tinyllama_step"]()
    pkg = mcu.compile(model, example, board="mps3-an547", quantize="a16w8", mixed=DECODER_MIX,
                      calibration=sequence_calibration("tinyllama_step", 16),
                      out_dir=tmp_path_factory.mktemp("decoder") / "pkg")
    return model, pkg


def test_the_int8_cache_is_read_in_int8_by_the_attention_products(decoder):
    _, pkg = decoder
    g = pkg.graph
    calls = [n for n in g.nodes if n.op == "call"]
    cache = 4 * 256 * 8  # elements of one layer's key or value cache
    big = [(n.name, n.call.kernel) for n in calls for i in n.inputs
           if i is not None and not g.tensors[i].is_const and int(np.prod(g.tensors[i].shape)) >= cache]
    assert sorted({k for _, k in big}) == ["mcu_matmul_s8_mve", "mcu_scatter_s8"], big  # no convert, concat or copy
    products = [n for n in calls if n.call.kernel.startswith("mcu_matmul_s8")]
    assert len(products) == 4 and all(n.call.params["rhs_group"] == 2 for n in products)
    scores = [n.call.kernel for n in calls if g.tensors[n.outputs[0]].shape[-1] == 256 and "lut" in n.call.kernel]
    assert scores == []  # q @ k^T * hd^-0.5: the scale in the product's requantization (codegen fold_scale)
    assert all(s["dtype"] == "int8" for s in pkg.manifest["state"])


def test_the_mix_stays_near_the_float_model(decoder):
    model, pkg = decoder
    fresh = type(model)()
    fresh.load_state_dict(model.state_dict())
    fresh.eval()
    region, got, want = initial_region(pkg.graph), [], []
    tokens = sequence_calibration("tinyllama_step", 24, seed=5)
    for tok, pos in tokens:
        raw, region = reference_step(pkg.graph, [tok.numpy().astype(np.int32), pos.numpy().astype(np.int32)], region)
        got.append(pkg.dequantize_outputs(raw)[0].ravel())
        with torch.no_grad():
            want.append(fresh(tok, pos).numpy().ravel())
    got, want = np.concatenate(got), np.concatenate(want)
    sqnr = 10 * np.log10(np.mean(want ** 2) / np.mean((got - want) ** 2))
    assert sqnr >= 20.0, f"{sqnr:.1f} dB"
