"""`mcu generate DIR --prompt 1,2,3 --tokens 64 [--temperature 0.8 --top-k 40 --seed 7]`: decoding of a
decoder-step package on its board, greedy or sampled.

- The device runs the prompt and every new token in ONE firmware run: a -DMCU_GENERATE firmware (its own build
  folder) calls the generated <name>_generate_sampled once, the loop in C (argmax or a seeded draw, the token fed
  back at the next position, the KV cache in the state region); its weak <name>_on_token hook times each token.
- The reference decodes the same way on the numpy twins (mcu.state_region), from the same initial state, drawing
  with codegen/twins/sample.py (the same float32 operations and xorshift32): the device's tokens must equal it,
  token for token.
- Instructions: the first token's cover the prompt (one step per prompt token); each later token is one step.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from mcu.codegen.twins.sample import logits_f32, rng_seed, sample_token
from mcu.errors import McuError, status_name
from mcu.package import Package
from mcu.state_region import initial_region, reference_step


@dataclass
class Generation:
    tokens: list[int]
    instructions: list[int]  # per token on the device (the first: the prompt's steps and the first token); [] on the reference
    state_bytes: int
    arena_bytes: int

    def summary(self) -> str:
        lines = [f"tokens: {','.join(map(str, self.tokens))}"]
        if self.instructions:
            rest = self.instructions[1:] or [0]
            lines.append(f"instructions: first token (with the prompt) {self.instructions[0]:,}; then per token "
                         f"first {rest[0]:,}, last {rest[-1]:,}, mean {int(np.mean(rest)):,}")
        lines.append(f"state {self.state_bytes:,} B, arena {self.arena_bytes:,} B")
        return "\n".join(lines)


def check_generate(pkg: Package, prompt: list[int], n: int) -> dict:
    """The package's decoder-step description, or an McuError saying why it cannot generate this."""
    spec = pkg.manifest.get("generate")
    if spec is None:
        raise McuError("this package is not a decoder step (a token id and its position in, logits out, a KV cache "
                       "kept as state): it has no <name>_generate; compile such a model (mcu.zoo tinyllama_step)")
    if not prompt or n < 1 or len(prompt) > 1024 or n > 1024:
        raise McuError(f"a prompt of {len(prompt)} tokens and {n} new ones: give 1 to 1024 of each")
    if len(prompt) + n - 1 > spec["positions"]:
        raise McuError(f"{len(prompt)} prompt tokens + {n} new ones need {len(prompt) + n - 1} positions; the model's "
                       f"cache holds {spec['positions']}")
    bad = [t for t in prompt if not 0 <= t < pkg.manifest["inputs"][0]["index_range"][1]]
    if bad:
        raise McuError(f"prompt token {bad[0]} is outside the vocabulary [0, {pkg.manifest['inputs'][0]['index_range'][1]})")
    return spec


@dataclass(frozen=True)
class Sampling:
    """How each token is chosen: temperature <= 0 is greedy; else a draw among the top_k (<= 0: all) with the
    xorshift32 generator from state rng_seed(seed)."""
    temperature: float = 0.0
    top_k: int = 0
    seed: int = 1

    def check(self) -> Sampling:
        t = np.float32(self.temperature)
        if not np.isfinite(t):
            raise McuError(f"temperature={self.temperature!r}: give a finite number (<= 0 for greedy decoding)")
        if not -(1 << 31) <= int(self.top_k) < 1 << 31:
            raise McuError(f"top_k={self.top_k}: give an int32 (<= 0 keeps every logit)")
        if not 0 < int(self.seed) < 1 << 32:
            raise McuError(f"seed={self.seed}: the xorshift32 seed must be in [1, 2^32) (0 would stay 0 forever)")
        return self


def generate(pkg: Package, prompt: list[int], n: int, *, temperature: float = 0.0, top_k: int = 0, seed: int = 1,
             target: str = "device", timeout: float = 600.0) -> Generation:
    """n tokens after prompt, greedy (temperature <= 0) or sampled, on the device (one firmware run) or the numpy
    reference."""
    spec = check_generate(pkg, list(prompt), n)
    sampling = Sampling(float(temperature), int(top_k), int(seed)).check()
    if target == "reference":
        return Generation(_reference_tokens(pkg, list(prompt), n, spec["vocab"], sampling), [], pkg.state_bytes,
                          pkg.arena_bytes)
    if target != "device":
        raise McuError(f"target={target!r}: generate on 'device' (QEMU) or 'reference' (numpy)")
    return _device(pkg, list(prompt), n, sampling, timeout)


def _reference_tokens(pkg: Package, prompt: list[int], n: int, vocab: int, sampling: Sampling) -> list[int]:
    """The reference's tokens: the prompt at positions 0.., then each chosen token fed back, as
    <name>_generate_sampled."""
    region, tokens, pos, rng = initial_region(pkg.graph), [], 0, rng_seed(sampling.seed)
    shapes = [pkg.graph.tensors[t].shape for t in pkg.graph.inputs[:2]]
    out = pkg.manifest["outputs"][0]
    while len(tokens) < n:
        token = prompt[pos] if pos < len(prompt) else tokens[-1]
        step = [np.full(shapes[0], token, np.int32), np.full(shapes[1], pos, np.int32)]
        raw, region = reference_step(pkg.graph, step, region)
        if pos >= len(prompt) - 1:
            last = np.asarray(raw[0]).reshape(-1)[-vocab:]
            if np.float32(sampling.temperature) > 0:
                token, rng = sample_token(logits_f32(last, out.get("scale"), out.get("zero_point")),
                                          sampling.temperature, sampling.top_k, rng)
            else:
                token = int(last.argmax())
            tokens.append(token)
        pos += 1
    return tokens


def _device(pkg: Package, prompt: list[int], n: int, sampling: Sampling, timeout: float) -> Generation:
    from mcu.boards import load_board
    from mcu.build.firmware import build_firmware
    from mcu.qemu.runner import INSTRUCTIONS_PER_SECOND, run_firmware

    board = load_board(pkg.board)
    elf = build_firmware(board, pkg.out_dir, pkg.build_dir.with_name(f"{pkg.board}-generate"),
                         defines=("MCU_GENERATE",))
    data = initial_region(pkg.graph) + struct.pack(f"<IIfiI{len(prompt)}i", len(prompt), n, sampling.temperature,
                                                   sampling.top_k, sampling.seed, *prompt)
    res = run_firmware(elf, board, data, timeout=timeout)
    if res.status != 0:
        raise McuError(f"{pkg.name}_generate returned {status_name(res.status)} on the device")
    tokens = list(struct.unpack_from(f"<{n}i", res.output_bytes, 0))
    ticks = struct.unpack_from(f"<{n}I", res.output_bytes, 4 * n)
    return Generation(tokens, [t * INSTRUCTIONS_PER_SECOND // board.systick_hz for t in ticks], pkg.state_bytes,
                      pkg.arena_bytes)
