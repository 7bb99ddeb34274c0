"""Rewrite the README's benchmark table from a bench.json (python scripts/readme_bench.py out/bench/bench.json).

The "before (portable)" and TFLM columns are kept from the README's current table: they are measured once
(portable kernels: `optimize="memory"` builds of the same commit before the variants; TFLM:
shared/anchors/tflm_qemu.md)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

COLUMNS = ["model", "board", "arena B", "arena B, memory mode (lower bound)", "weights B", "kernels B", "glue B",
           "instructions before (portable)", "instructions now", "MACs/instr now", "TFLM+CMSIS-NN instructions",
           "exact", "SQNR dB"]
KEPT = ("instructions before (portable)", "TFLM+CMSIS-NN instructions")


def main(bench_json: str, readme: str = "README.md") -> None:
    lines = Path(readme).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| model | board | arena B |"))
    names = [c.strip() for c in lines[start].strip("|").split("|")]
    end = start + 2
    while end < len(lines) and lines[end].startswith("| "):
        end += 1
    kept = {}
    for line in lines[start + 2:end]:
        cells = dict(zip(names, (c.strip() for c in line.strip("|").split("|"))))
        kept[cells["model"], cells["board"]] = {k: cells.get(k, "-") for k in KEPT}
    data = json.loads(Path(bench_json).read_text())
    out = ["| " + " | ".join(COLUMNS) + " |", "|---|---|" + "---:|" * 9 + "---|---:|"]
    for r in data["rows"] if isinstance(data, dict) else data:
        k = kept.get((r["model"], r["board"]), dict.fromkeys(KEPT, "-"))
        memory = f"{r['arena_memory']:,} ({r['arena_memory_lower_bound']:,})" if "arena_memory" in r else "-"
        out.append(f"| {r['model']} | {r['board']} | {r['arena_bytes']:,} | {memory} | {r['flash_weights']:,} | "
                   f"{r['flash_kernels']:,} | {r['flash_glue']:,} | {k[KEPT[0]]} | {r['instructions']:,} | "
                   f"{r['macs_per_instruction']:.3f} | {k[KEPT[1]]} | {'yes' if r['exact'] else 'NO'} | "
                   f"{r['sqnr_db']:.1f} |")
    Path(readme).write_text("\n".join(lines[:start] + out + lines[end:]) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
