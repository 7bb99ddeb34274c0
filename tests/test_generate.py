"""Greedy decoding on the device (issue #28's loop): a decoder-step package gets <name>_generate, the prompt and
every new token in one firmware run with the loop in C; its tokens equal the numpy reference's and, for the seeded
tinyllama_step, the float model's greedy tokens. mcu generate, mcu.load, run, profile and debug on such a package."""
from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import pytest
import torch

import mcu
from mcu.cli import main as cli_main
from mcu.errors import BoardFitError, McuError
from mcu.codegen.twins.sample import logits_f32, rng_seed, sample_token, xorshift32
from mcu.tools.generate import generate
from mcu.zoo.sequence import SEQUENCE, sequence_calibration

pytestmark = pytest.mark.qemu
PROMPT = [1, 2, 3]


@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    model, example = SEQUENCE["tinyllama_step"]()
    pkg = mcu.compile(model, example, calibration=sequence_calibration("tinyllama_step", 32),
                      out_dir=tmp_path_factory.mktemp("llm") / "pkg")
    return model, pkg


def float_greedy(model, prompt: list[int], n: int) -> list[int]:
    fresh = type(model)()
    fresh.load_state_dict(model.state_dict())
    fresh.eval()
    tokens = []
    with torch.no_grad():
        for pos in range(len(prompt) + n - 1):
            token = prompt[pos] if pos < len(prompt) else tokens[-1]
            logits = fresh(torch.tensor([[token]]), torch.tensor([pos]))
            if pos >= len(prompt) - 1:
                tokens.append(int(logits.reshape(-1).argmax()))
    return tokens


def test_generate_on_the_device_equals_the_reference_and_the_float_model(llm):
    model, pkg = llm
    dev = generate(pkg, PROMPT, 12)
    ref = generate(pkg, PROMPT, 12, target="reference")
    assert dev.tokens == ref.tokens == float_greedy(model, PROMPT, 12)
    assert len(dev.instructions) == 12 and dev.instructions[0] > 2.5 * dev.instructions[1]  # the prompt's 3 steps
    assert (dev.state_bytes, dev.arena_bytes) == (pkg.state_bytes, pkg.arena_bytes)
    header = (pkg.out_dir / "model.h").read_text()
    assert "mcu_status_t model_generate(const int32_t *prompt, uint32_t n_prompt, int32_t *out" in header


def test_generate_refuses_what_the_model_cannot_hold(llm, tmp_path):
    _, pkg = llm
    with pytest.raises(McuError, match="need 258 positions; the model's cache holds 256"):
        generate(pkg, PROMPT, 256)
    with pytest.raises(McuError, match=r"prompt token 512 is outside the vocabulary \[0, 512\)"):
        generate(pkg, [512], 2)
    plain = mcu.compile(torch.nn.Linear(4, 2).eval(), (torch.randn(1, 4),), out_dir=tmp_path / "plain")
    with pytest.raises(McuError, match="not a decoder step"):
        generate(plain, PROMPT, 2)


def test_cli_generate_run_and_profile_a_loaded_decoder_step(llm, capsys):
    _, pkg = llm
    loaded = mcu.load(pkg.out_dir)  # the manifest's int32 inputs, state and generate entries pass the checks
    assert loaded.state_bytes == pkg.state_bytes and loaded.manifest["generate"] == {"vocab": 512, "positions": 256}
    out = subprocess.run([sys.executable, "-m", "mcu.cli", "generate", str(pkg.out_dir), "--prompt", "1,2,3",
                          "--tokens", "4"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    want = generate(pkg, PROMPT, 4, target="reference").tokens
    assert f"tokens: {','.join(map(str, want))}" in out.stdout and "state 65,536 B" in out.stdout
    capsys.readouterr()
    assert cli_main(["generate", str(pkg.out_dir), "--prompt", "1,2,3", "--tokens", "4", "--temperature", "0.8",
                     "--top-k", "40", "--seed", "7", "--reference"]) == 0
    sampled = capsys.readouterr().out
    want = generate(pkg, PROMPT, 4, temperature=0.8, top_k=40, seed=7, target="reference").tokens
    assert f"tokens: {','.join(map(str, want))}" in sampled and "seed 7" in sampled, sampled
    for command in (["run"], ["profile"]):
        assert cli_main([*command, str(pkg.out_dir)]) == 0
        assert command != ["run"] or "device == numpy reference: yes" in capsys.readouterr().out
    np.testing.assert_array_equal(mcu.run(loaded, (torch.tensor([[5]]), torch.tensor([0]))).raw_outputs[0],
                                  loaded.reference((torch.tensor([[5]]), torch.tensor([0])))[0])


def test_the_m0_refuses_the_decoder_naming_the_bytes(tmp_path):
    """micro:bit (Cortex-M0, 256 KB flash, 16 KB RAM): the 64 KB of int16 KV cache alone is four times its RAM."""
    model, example = SEQUENCE["tinyllama_step"]()
    with pytest.raises(BoardFitError) as err:
        mcu.compile(model, example, board="microbit", calibration=sequence_calibration("tinyllama_step", 4),
                    out_dir=tmp_path / "m0")
    text = str(err.value)
    assert "microbit (Cortex-M0, 256 KB flash, 16 KB RAM)" in text and "state 65,536" in text, text
    assert "RAM:   needs " in text and "(fits)" not in text.split("RAM:")[1].splitlines()[0], text


def test_sampling_on_the_device_equals_the_reference_bit_for_bit(llm):
    """temperature 0.8, top-k 40, seed 7: <name>_generate_sampled's draws (float32 exp, xorshift32) equal the twin's."""
    _, pkg = llm
    dev = generate(pkg, PROMPT, 12, temperature=0.8, top_k=40, seed=7)
    ref = generate(pkg, PROMPT, 12, temperature=0.8, top_k=40, seed=7, target="reference")
    assert dev.tokens == ref.tokens, f"first mismatch at {next(i for i, (a, b) in enumerate(zip(dev.tokens, ref.tokens)) if a != b)}"
    header = (pkg.out_dir / "model.h").read_text()
    assert "mcu_status_t model_generate_sampled(const int32_t *prompt, uint32_t n_prompt, int32_t *out" in header


def test_sampling_degenerates_to_greedy_and_depends_on_the_seed(llm):
    _, pkg = llm
    greedy = generate(pkg, PROMPT, 12, target="reference").tokens
    assert generate(pkg, PROMPT, 12, temperature=0.0, top_k=40, seed=7, target="reference").tokens == greedy
    assert generate(pkg, PROMPT, 12, temperature=0.8, top_k=1, seed=7, target="reference").tokens == greedy
    assert generate(pkg, PROMPT, 12, temperature=0.8, top_k=1, seed=7).tokens == greedy  # on the device too
    a = generate(pkg, PROMPT, 12, temperature=1.5, seed=1, target="reference").tokens
    b = generate(pkg, PROMPT, 12, temperature=1.5, seed=2, target="reference").tokens
    assert a != b and a != greedy


def test_sampling_refuses_a_nan_temperature_and_seed_zero(llm):
    _, pkg = llm
    with pytest.raises(McuError, match="temperature=nan: give a finite number"):
        generate(pkg, PROMPT, 4, temperature=float("nan"))
    with pytest.raises(McuError, match=r"seed=0: the xorshift32 seed must be in \[1, 2\^32\)"):
        generate(pkg, PROMPT, 4, temperature=0.8, seed=0, target="reference")


def test_the_sampling_twin_by_hand():
    """xorshift32 from 1 (Marsaglia's 13, 17, 5) and murmur3's fmix32 seeding; top-k ties go to the lower index."""
    assert [xorshift32(1), xorshift32(xorshift32(1)), rng_seed(1), rng_seed(0)] == [270369, 67634689, 0x514E28B7, 0]
    x = np.array([1.0, 3.0, 3.0, 2.0], np.float32)
    assert {sample_token(x, 1.0, 1, rng_seed(seed))[0] for seed in range(1, 50)} == {1}
    assert {sample_token(x, 1.0, 2, rng_seed(seed))[0] for seed in range(1, 50)} == {1, 2}
    assert {sample_token(x, 1.0, 0, rng_seed(seed))[0] for seed in range(1, 50)} == {0, 1, 2, 3}
    assert {sample_token(x, 1e-3, 0, rng_seed(seed))[0] for seed in range(1, 50)} == {1, 2}
    assert sample_token(x, 1.0, 0, 1) == (0, 270369)  # u = (270369 >> 8) / 2^24 * sum: in the first weight


def test_the_c_sampler_equals_the_twin_on_tied_logits(llm, tmp_path):
    """The generated model_sample on the host compiler, on logits full of ties (values in int8's range, stored in the
    logits' type: int16 under the decoder defaults), against codegen/twins/sample.py: temperatures from 1e-3 to 1e3,
    top_k below 0, 0, 1, 2, 40, vocab - 1, vocab and above."""
    import hostc
    _, pkg = llm
    out, gen = pkg.manifest["outputs"][0], np.random.default_rng(0)
    ctype, dtype = {"int8": ("int8_t", np.int8), "int16": ("int16_t", np.int16)}[out["dtype"]]
    wrapper = tmp_path / "sample.c"
    wrapper.write_text('#include "model.c"\n'
                       f"int32_t test_sample(const {ctype} *q, float t, int32_t k, uint32_t *rng);\n"
                       f"int32_t test_sample(const {ctype} *q, float t, int32_t k, uint32_t *rng)\n"
                       "{\n    return model_sample(q, t, k, rng);\n}\n")
    lib = hostc.build([wrapper, pkg.out_dir / "weights.c", *sorted((pkg.out_dir / "mcu_runtime").rglob("*.c"))],
                      extra_flags=[f"-I{pkg.out_dir}"])
    lib.test_sample.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_int32, ctypes.POINTER(ctypes.c_uint32)]
    for case in range(400):
        q = gen.integers(-128, 128 if case % 2 else -120, 512).astype(dtype)
        t = float(np.float32(10.0 ** gen.uniform(-3, 3)))
        k = int(gen.choice([-3, 0, 1, 2, 40, 511, 512, 600]))
        state = rng_seed(case + 1)
        rng = ctypes.c_uint32(state)
        got = lib.test_sample(q.ctypes.data, t, k, ctypes.byref(rng))
        want = sample_token(logits_f32(q, out["scale"], out["zero_point"]), t, k, state)
        assert (got, rng.value) == want, f"case {case}: t={t} top_k={k}: C {got}, twin {want[0]}"
    # model_generate_sampled refuses a NaN or +inf temperature and a zero rng state before running anything
    lib.model_generate_sampled.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32,
                                           ctypes.c_float, ctypes.c_int32, ctypes.POINTER(ctypes.c_uint32),
                                           ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    prompt, tokens, logits = np.array(PROMPT, np.int32), np.zeros(4, np.int32), np.zeros(512, dtype)
    for t, state in ((float("nan"), 7), (float("inf"), 7), (0.8, 0)):
        rng = ctypes.c_uint32(state)
        assert lib.model_generate_sampled(prompt.ctypes.data, 3, tokens.ctypes.data, 4, t, 40, ctypes.byref(rng),
                                          logits.ctypes.data, None, None) == 1  # MCU_ERR_ARG
