"""The trained tiny LM (mcu.zoo.tinyllm) compiled in float32, int8 (a decoder's defaults, mcu.quantization.decoder, and
every op int8) and a16w8: teacher-forced next-token agreement
with the float model over held-out text (16 windows of 63 positions), greedy generation on the device against
PyTorch's float greedy tokens, instructions per token, state and arena (issue #28's table).

    .venv/bin/python scripts/tinyllm_accuracy.py [--boards mps2-an386,mps3-an547] [--tokens 60] [--rows "int8;a16w8"]
"""
from __future__ import annotations

import argparse
import tempfile

import numpy as np
import torch

import mcu
from mcu.state_region import initial_region, reference_step
from mcu.tools.generate import generate
from mcu.zoo.sequence import TinyLlamaStep
from mcu.zoo.tinyllm import fresh_model, trained_tinyllm, windows


# (row label, quantize, mixed): "int8" is the default run (a decoder's defaults); a module rule naming the model
# overrides them, every op int8
PRECISIONS = (("none", "none", None), ("int8", "int8", None), ("int8, every op", "int8", {TinyLlamaStep: "int8"}),
              ("a16w8", "a16w8", None))


def calibration(n_windows: int = 8) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Text windows token by token at positions 0..63, in order (the state carried, as on the device)."""
    return [(torch.tensor([[t]]), torch.tensor([p])) for w in windows(n_windows + 16)[16:] for p, t in enumerate(w)]


def teacher_forced(pkg, model, texts) -> float:
    """Share of positions whose reference argmax equals the float model's, each window from a fresh state."""
    agree = total = 0
    for text in texts:
        fresh = fresh_model(model)
        region = initial_region(pkg.graph)
        shapes = [pkg.graph.tensors[t].shape for t in pkg.graph.inputs[:2]]
        for pos, tok in enumerate(text[:-1]):
            with torch.no_grad():
                want = int(fresh(torch.tensor([[tok]]), torch.tensor([pos])).reshape(-1).argmax())
            raw, region = reference_step(pkg.graph, [np.full(shapes[0], tok, np.int32),
                                                      np.full(shapes[1], pos, np.int32)], region)
            agree += int(np.asarray(raw[0]).reshape(-1).argmax() == want)
            total += 1
    return agree / total


def float_greedy(model, prompt: list[int], n: int) -> list[int]:
    fresh = fresh_model(model)
    tokens = []
    with torch.no_grad():
        for pos in range(len(prompt) + n - 1):
            tok = prompt[pos] if pos < len(prompt) else tokens[-1]
            logits = fresh(torch.tensor([[tok]]), torch.tensor([pos]))
            if pos >= len(prompt) - 1:
                tokens.append(int(logits.reshape(-1).argmax()))
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="mps2-an386,mps3-an547")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rows", default="", help="the rows to run, by label, ';' between (default: all)")
    args = parser.parse_args()
    model, example = trained_tinyllm(log=print)
    texts = windows(16)
    prompt = list(b"The ")
    want = float_greedy(model, prompt, args.tokens)
    print(f"float greedy: {bytes(want).decode('ascii', 'replace')!r}")
    print("| precision | board | teacher-forced agreement | greedy tokens = float | first token | per token | "
          "weights (B) | state (B) | arena (B) | device == reference |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for k, (label, quantize, mixed) in enumerate(PRECISIONS):
            if args.rows and label not in args.rows.split(";"):
                continue
            agreement = None
            for board in args.boards.split(","):
                pkg = mcu.compile(model, example, board=board, quantize=quantize, out_dir=f"{tmp}/{k}-{board}",
                                  calibration=None if quantize == "none" else calibration(), mixed=mixed)
                agreement = teacher_forced(pkg, model, texts) if agreement is None else agreement
                dev = generate(pkg, prompt, args.tokens)
                ref = generate(pkg, prompt, args.tokens, target="reference")
                same = sum(a == b for a, b in zip(dev.tokens, want))
                print(f"| {label} | {board} | {agreement:.1%} | {same}/{args.tokens} | {dev.instructions[0]:,} | "
                      f"{int(np.mean(dev.instructions[1:])):,} | {pkg.manifest['weights_bytes']:,} | "
                      f"{dev.state_bytes:,} | {dev.arena_bytes:,} | "
                      f"{'yes' if dev.tokens == ref.tokens else 'NO'} |", flush=True)
                if board == args.boards.split(",")[0]:
                    print(f"  device text: {bytes(dev.tokens).decode('ascii', 'replace')!r}", flush=True)


if __name__ == "__main__":
    main()
