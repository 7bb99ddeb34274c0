"""Rewrite the README's benchmark table from a bench.json (python scripts/readme_bench.py out/bench/bench.json).

The "before (portable)" and TFLM columns are kept from the README's current table: they are measured once
(portable kernels: `optimize="memory"` builds of the same commit; TFLM: shared/anchors/tflm_qemu.md)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

HEADER = ("| model | board | arena B | weights B | kernels B | glue B | instructions before (portable) | "
          "instructions now | MACs/instr now | TFLM+CMSIS-NN instructions | exact | SQNR dB |")


def main(bench_json: str, readme: str = "README.md") -> None:
    text = Path(readme).read_text()
    lines = text.splitlines()
    start = lines.index(HEADER)
    end = start + 2
    while end < len(lines) and lines[end].startswith("| "):
        end += 1
    kept = {}
    for line in lines[start + 2:end]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        kept[cells[0], cells[1]] = (cells[6], cells[9])
    data = json.loads(Path(bench_json).read_text())
    out = []
    for r in data["rows"] if isinstance(data, dict) else data:
        before, tflm = kept.get((r["model"], r["board"]), ("-", "-"))
        out.append(f"| {r['model']} | {r['board']} | {r['arena_bytes']:,} | {r['flash_weights']:,} | "
                   f"{r['flash_kernels']:,} | {r['flash_glue']:,} | {before} | {r['instructions']:,} | "
                   f"{r['macs_per_instruction']:.3f} | {tflm} | {'yes' if r['exact'] else 'NO'} | {r['sqnr_db']:.1f} |")
    Path(readme).write_text("\n".join(lines[:start + 2] + out + lines[end:]) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
