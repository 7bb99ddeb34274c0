"""The sequence zoo (mcu.zoo.sequence) on the M4, M3 and M55: device == reference bit for bit over a run of calls
(the state carried on the device in one firmware run), SQNR vs the float model, and the streaming keyword spotter's
49 calls equal to its whole-utterance form."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mcu
from mcu.metrics import sqnr_db
from mcu.zoo.sequence import FRAMES, SEQUENCE, KwsSequence, sequence_calibration

pytestmark = pytest.mark.qemu
BOARDS = ["mps2-an386", "mps2-an385", "mps3-an547"]
MIN_SQNR = {"kws_stream": 25, "lid": 35, "bwe": 30, "tinyllama_step": 28}  # int8 vs float, 12 calls (M4: 29.4, 40.9, 36.9, 33.0)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    cache = {}

    def get(name, board, quantize="int8"):
        if (name, board, quantize) not in cache:
            model, example = SEQUENCE[name]()
            out = tmp_path_factory.mktemp(name) / f"{board}-{quantize}"
            done = next((pkg for (n, _, q), (_, pkg) in cache.items() if (n, q) == (name, quantize)), None)
            if done is not None and quantize != "none" and not done.state_bytes:  # calibrated once (no state)
                cache[name, board, quantize] = model, mcu.compile(done.converted, example, board=board, out_dir=out)
            else:
                calib = None if quantize == "none" else sequence_calibration(name, 64)
                cache[name, board, quantize] = model, mcu.compile(
                    model, example, board=board, calibration=calib, quantize=quantize, out_dir=out)
        return cache[name, board, quantize]
    return get


def float_calls(model, calls) -> list[np.ndarray]:
    """The float model called in order from its initial state (a copy: the zoo model's buffers stay)."""
    fresh = type(model)()
    fresh.load_state_dict(model.state_dict())
    with torch.no_grad():
        return [fresh.eval()(*x).numpy() for x in calls]


# tinyllama_step on the M4 is tests/test_generate.py's (its tokens, device == reference)
@pytest.mark.parametrize("name, board", [(n, b) for n in SEQUENCE for b in BOARDS
                                         if (n, b) != ("tinyllama_step", "mps2-an386")])
def test_sequence_model_is_bit_exact_on_the_device(compiled, name, board):
    model, pkg = compiled(name, board)
    calls = sequence_calibration(name, 12, seed=5)
    if pkg.state_bytes:
        want = mcu.session(pkg, "reference").run_sequence(calls)
        got = mcu.session(pkg).run_sequence(calls)
        raw_want, raw_got = [w.raw_outputs[0] for w in want], [g.raw_outputs[0] for g in got]
        outputs = [w.outputs[0] for w in want]
    else:
        raw_want = [pkg.reference(x)[0] for x in calls[:3]]
        raw_got = [mcu.run(pkg, x).raw_outputs[0] for x in calls[:3]]
        outputs = [pkg.dequantize_outputs(pkg.reference(x))[0] for x in calls]
    for k, (w, g) in enumerate(zip(raw_want, raw_got)):
        np.testing.assert_array_equal(g, w, err_msg=f"call {k}")
    db = sqnr_db(np.concatenate(float_calls(model, calls)), np.concatenate(outputs))
    assert db >= MIN_SQNR[name], db


@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_49_streamed_frames_equal_the_whole_utterance(compiled, quantize):
    model, pkg = compiled("kws_stream", "mps2-an386", quantize)
    utterance = torch.randn(1, 10, FRAMES, generator=torch.Generator().manual_seed(77))
    with torch.no_grad():
        whole = KwsSequence(model).eval()(utterance).numpy()
    last = mcu.session(pkg).run_sequence([(utterance[:, :, t],) for t in range(FRAMES)])[-1].outputs[0]
    if quantize == "none":
        np.testing.assert_allclose(last, whole, rtol=0, atol=2e-5)  # the same float arithmetic, call by call
    else:
        assert sqnr_db(whole, last) > 20  # 49 int8 steps of the GRU state vs the float utterance


def test_tinyllama_step_caches_keys_in_its_state_and_refuses_a_position_past_it(compiled):
    _, pkg = compiled("tinyllama_step", "mps3-an547")
    token, pos = pkg.manifest["inputs"]
    assert (token["dtype"], token["index_range"], pos["dtype"], pos["index_range"]) == ("int32", [0, 512], "int32", [0, 256])
    names = [s["name"] for s in pkg.manifest["state"]]
    assert names == ["layers.0.k_cache", "layers.0.v_cache", "layers.1.k_cache", "layers.1.v_cache"]
    assert pkg.state_bytes == 4 * 4 * 256 * 8 * 2  # int16 caches: 4 KV heads x 256 positions x 8 dims each
    # the rows are written straight into the state (the scatter is each cache's only reader): no cache in the
    # arena, no copy back
    assert "memmove" not in (pkg.out_dir / "model.c").read_text()
    assert all(pkg.memory.locations[t].kind == "state" for t in pkg.graph.outputs[1:])
    assert pkg.arena_bytes < 9000
    with pytest.raises(mcu.McuError, match=r"input1\[0\] = 256 is outside \[0, 256\)"):
        mcu.session(pkg, "reference").run((torch.tensor([[3]]), torch.tensor([256])))
