"""Rewrite the README's numerics table from a numerics.json (python scripts/readme_numerics.py out/bench/numerics.json),
the output of `python -m mcu.tools.bench --numerics`: one row per zoo model and numeric mode (int8, a16w8, int4 weights,
float32) on one board."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from mcu.tools.bench import NUMERICS_HEAD, format_numerics


def main(numerics_json: str, readme: str = "README.md") -> None:
    lines = Path(readme).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(NUMERICS_HEAD))
    end = start + 2
    while end < len(lines) and lines[end].startswith("| "):
        end += 1
    lines[start:end] = format_numerics(json.loads(Path(numerics_json).read_text()))
    Path(readme).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
