"""docs/benchmarks.md and the README's summary table, rendered from the JSON files `mcu bench` writes
(`mcu bench --markdown docs/benchmarks.md` runs the three and renders; `--render-only` renders what --out holds):

    mcu bench --out out/bench                                           # bench.json
    mcu bench --numerics --out out/bench                                # numerics.json
    mcu bench --quantize none --boards mps2-an386 mps2-an385 mps3-an547 --out out/bench   # bench-float32.json

- Every number of ours comes from those files; a file that is missing leaves its table out with the command
  that writes it.
- Numbers measured elsewhere (the peers, the "before" columns) are the named constants below, each with its
  source.
- The prose and the tables of slower scripts live in templates/benchmarks.md.j2; the tables are cells it is
  handed.
"""
from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import jinja2

TEMPLATE = "benchmarks.md.j2"
MODELS = ("kws", "vww", "ic", "ad")
MODEL_NAMES = {"kws": "KWS (DS-CNN)", "vww": "VWW (MobileNetV1-0.25)", "ic": "IC (ResNet-8)",
               "ad": "AD (FC autoencoder)"}
SUMMARY_BOARDS = ("mps2-an386", "mps3-an547")  # the M4 and the M55: the boards every peer was measured on
CORES = {"mps2-an386": "M4", "mps2-an385": "M3", "mps2-an500": "M7", "mps2-an505": "M33", "mps3-an547": "M55"}
README_BEGIN = "<!-- bench summary: mcu bench --markdown -->"
README_END = "<!-- end bench summary -->"

# TFLM + CMSIS-NN, instructions of one inference of the MLPerf Tiny reference int8 models (same layer shapes as
# mcu.zoo), TFLM 90b983c2, gcc 12.2 -O2, QEMU -icount shift=0. Source: shared/anchors/tflm_qemu.md.
TFLM_INSTRUCTIONS = {
    ("kws", "mps2-an386"): 7_699_720, ("vww", "mps2-an386"): 24_101_480,
    ("ic", "mps2-an386"): 29_863_120, ("ad", "mps2-an386"): 582_880,
    ("kws", "mps2-an385"): 10_534_440, ("vww", "mps2-an385"): 31_958_720,
    ("ic", "mps2-an385"): 41_847_280, ("ad", "mps2-an385"): 955_920,
    ("kws", "mps3-an547"): 1_815_625, ("vww", "mps3-an547"): 6_557_906,
    ("ic", "mps3-an547"): 4_911_469, ("ad", "mps3-an547"): 149_906,
}

# ExecuTorch's Cortex-M backend (CMSIS-NN cortex_m ops), the mcu.zoo models with seeded random weights, -O2,
# float I/O with its quantize/dequantize inside the timed execute(); no M3 runs. Source: shared/anchors/et_qemu.md.
ET_INSTRUCTIONS = {
    ("kws", "mps2-an386"): 8_540_120, ("vww", "mps2-an386"): 25_439_520,
    ("ic", "mps2-an386"): 30_009_520, ("ad", "mps2-an386"): 618_640,
    ("kws", "mps3-an547"): 1_840_125, ("vww", "mps3-an547"): 6_644_562,
    ("ic", "mps3-an547"): 4_927_843, ("ad", "mps3-an547"): 153_531,
}

# Instructions of the portable-kernel build of the same models, before the DSP, scalar and Helium variants
# (measured with `mcu bench` on that commit; not rerun on the M7 and M33). Source: the README's zoo table.
PORTABLE_INSTRUCTIONS = {
    ("kws", "mps2-an386"): 31_627_600, ("kws", "mps2-an385"): 31_434_160, ("kws", "mps3-an547"): 30_362_813,
    ("vww", "mps2-an386"): 84_265_360, ("vww", "mps2-an385"): 83_762_760, ("vww", "mps3-an547"): 74_477_313,
    ("ic", "mps2-an386"): 103_415_360, ("ic", "mps2-an385"): 102_909_480, ("ic", "mps3-an547"): 87_350_813,
    ("ad", "mps2-an386"): 2_497_840, ("ad", "mps2-an385"): 2_497_840, ("ad", "mps3-an547"): 1_456_063,
}

# The speed build when issue #14 ("one build") was filed: (instructions, arena bytes, weight flash / parameters).
# Measured with `mcu bench` on that commit, the M7 and M33 with scripts/flash_table.py.
ONE_BUILD_BEFORE = {
    ("kws", "mps2-an386"): (2_949_200, 16_264, 2.36), ("kws", "mps2-an385"): (7_583_160, 16_064, 2.33),
    ("kws", "mps2-an500"): (2_931_160, 16_264, 2.36), ("kws", "mps2-an505"): (2_951_600, 16_264, 2.36),
    ("kws", "mps3-an547"): (1_686_313, 16_064, 1.40),
    ("vww", "mps2-an386"): (8_303_760, 55_336, 2.19), ("vww", "mps2-an385"): (23_330_160, 55_296, 2.16),
    ("vww", "mps2-an500"): (8_297_560, 55_336, 2.19), ("vww", "mps2-an505"): (8_299_100, 55_336, 2.19),
    ("vww", "mps3-an547"): (6_078_594, 55_296, 1.19),
    ("ic", "mps2-an386"): (10_164_840, 49_832, 2.10), ("ic", "mps2-an385"): (26_248_160, 49_296, 2.08),
    ("ic", "mps2-an500"): (10_171_360, 49_832, 2.10), ("ic", "mps2-an505"): (10_166_800, 49_832, 2.10),
    ("ic", "mps3-an547"): (2_971_438, 49_668, 1.06),
    ("ad", "mps2-an386"): (241_600, 1_408, 2.10), ("ad", "mps2-an385"): (539_800, 256, 2.10),
    ("ad", "mps2-an500"): (241_720, 1_408, 2.10), ("ad", "mps2-an505"): (241_550, 1_408, 2.10),
    ("ad", "mps3-an547"): (107_813, 256, 1.06),
}

SOFT_FLOAT_BOARDS = ("mps2-an385",)  # no FPU among the bench boards: float32 runs libgcc's soft float


def _n(value) -> str:
    """An integer with thousands separators, or "-" for a number nobody measured."""
    return "-" if value is None else f"{value:,}"


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def _table(head: list[str], align: str, rows: list[list[str]]) -> str:
    """A Markdown table; align holds one letter per column: l (left) or r (right)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "".join("---|" if a == "l" else "---:|" for a in align)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def summary_table(rows: list[dict]) -> str:
    """Instructions of one inference on the M4 and the M55: mcu, ExecuTorch and TFLM + CMSIS-NN (the README's)."""
    by = {(r["model"], r["board"]): r for r in rows if r.get("quantize", "int8") == "int8"}
    head, align, body = ["model"], "l", []
    for board in SUMMARY_BOARDS:
        core = CORES[board]
        head += [f"{core} mcu", f"{core} ExecuTorch", f"{core} TFLM + CMSIS-NN"]
        align += "rrr"
    for model in MODELS:
        if not any((model, b) in by for b in SUMMARY_BOARDS):
            continue
        cells = [MODEL_NAMES[model]]
        for board in SUMMARY_BOARDS:
            ours = by.get((model, board))
            cells += [_n(ours["instructions"]) if ours else "-", _n(ET_INSTRUCTIONS.get((model, board))),
                      _n(TFLM_INSTRUCTIONS.get((model, board)))]
        body.append(cells)
    return _table(head, align, body)


def zoo_table(rows: list[dict]) -> str:
    """Every int8 row of bench.json with the portable build's, ExecuTorch's and TFLM's instructions beside it."""
    head = ["model", "board", "arena B", "arena B, memory mode (lower bound)", "weights B", "kernels B", "glue B",
            "instructions before (portable)", "instructions now", "MACs/instr now", "ExecuTorch instructions",
            "TFLM+CMSIS-NN instructions", "exact", "SQNR dB"]
    body = []
    for r in rows:
        key = (r["model"], r["board"])
        memory = f"{r['arena_memory']:,} ({r['arena_memory_lower_bound']:,})" if "arena_memory" in r else "-"
        body.append([r["model"], r["board"], _n(r["arena_bytes"]), memory, _n(r["flash_weights"]),
                     _n(r["flash_kernels"]), _n(r["flash_glue"]), _n(PORTABLE_INSTRUCTIONS.get(key)),
                     _n(r["instructions"]), f"{r['macs_per_instruction']:.3f}", _n(ET_INSTRUCTIONS.get(key)),
                     _n(TFLM_INSTRUCTIONS.get(key)), _yes(r["exact"]), f"{r['sqnr_db']:.1f}"])
    return _table(head, "ll" + "r" * 10 + "lr", body)


def one_build_table(rows: list[dict]) -> str:
    """Each int8 row against the speed build when issue #14 was filed (ONE_BUILD_BEFORE)."""
    head = ["model", "board", "instructions before -> now", "arena B before -> now (memory mode)",
            "weight flash / params before -> now", "kernels + glue B"]
    body = []
    for r in rows:
        before = ONE_BUILD_BEFORE.get((r["model"], r["board"]))
        if before is None or "arena_memory" not in r or "params" not in r:
            continue
        ins, arena, ratio = before
        body.append([r["model"], r["board"], f"{ins:,} -> {r['instructions']:,}",
                     f"{arena:,} -> {r['arena_bytes']:,} ({r['arena_memory']:,})",
                     f"{ratio:.2f} -> {r['flash_weights'] / r['params']:.2f}",
                     _n(r["flash_kernels"] + r["flash_glue"])])
    return _table(head, "llrrrr", body)


def float32_table(rows: list[dict]) -> str:
    """bench-float32.json: the float models on float32 kernels, with their relative error against torch."""
    head = ["model", "board", "arena B", "weights B", "flash total B", "instructions", "MACs/instr",
            "rel. error device / twin vs torch"]
    body = [[r["model"], r["board"] + (" (soft float)" if r["board"] in SOFT_FLOAT_BOARDS else ""),
             _n(r["arena_bytes"]), _n(r["flash_weights"]), _n(r["flash_total"]), _n(r["instructions"]),
             f"{r['macs_per_instruction']:.3f}", f"{r['rel_error_device']:.1e} / {r['rel_error_reference']:.1e}"]
            for r in rows]
    return _table(head, "llrrrrrl", body)


def numerics_table(rows: list[dict]) -> str:
    """numerics.json: int8, a16w8, int4 weights and float32 side by side on one board."""
    head = ["model", "mode", "SQNR vs float, dB", "weights B", "flash B", "arena B", "instructions",
            "device = reference"]
    body = [[r["model"], r["mode"], f"{r['sqnr_db']:.1f}", _n(r["flash_weights"]), _n(r["flash_total"]),
             _n(r["arena_bytes"]), _n(r["instructions"]), _yes(r["exact"])] for r in rows]
    return _table(head, "llrrrrrl", body)


def _load(out_dir: Path, name: str) -> list[dict] | None:
    path = out_dir / name
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return data["rows"] if isinstance(data, dict) else data


def _missing(command: str) -> str:
    return f"*Not in this run: `{command}` writes it.*"


def tables(out_dir: str | Path) -> dict[str, str]:
    """Each table the template names, as Markdown; a missing JSON file gives a line naming its command."""
    out_dir = Path(out_dir)
    bench, f32, num = (_load(out_dir, n) for n in ("bench.json", "bench-float32.json", "numerics.json"))
    if bench is None:
        raise FileNotFoundError(f"{out_dir / 'bench.json'}: no such file; `mcu bench --out {out_dir}` "
                                "writes it")
    int8 = [r for r in bench if r.get("quantize", "int8") == "int8"]
    return {
        "summary": summary_table(int8), "zoo": zoo_table(int8), "one_build": one_build_table(int8),
        "float32": float32_table(f32) if f32 else _missing(
            f"mcu bench --quantize none --boards mps2-an386 mps2-an385 mps3-an547 --out {out_dir}"),
        "numerics": numerics_table(num) if num else _missing(f"mcu bench --numerics --out {out_dir}"),
    }


def render(out_dir: str | Path) -> str:
    """docs/benchmarks.md from the JSON files in out_dir (bench.json required; numerics.json, bench-float32.json)."""
    loader = jinja2.FileSystemLoader(str(resources.files("mcu.templates")))
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template(TEMPLATE).render(tables=tables(out_dir))


def readme_with_summary(readme_text: str, out_dir: str | Path) -> str:
    """readme_text with the table between README_BEGIN and README_END replaced by summary_table of out_dir."""
    pattern = re.compile(re.escape(README_BEGIN) + r"\n.*?" + re.escape(README_END), re.S)
    if not pattern.search(readme_text):
        raise ValueError(f"the README has no summary markers ({README_BEGIN} ... {README_END})")
    block = f"{README_BEGIN}\n{tables(out_dir)['summary']}\n{README_END}"
    return pattern.sub(lambda _: block, readme_text, count=1)


def write(out_dir: str | Path, path: str | Path = "docs/benchmarks.md", readme: str | Path | None = None) -> Path:
    """Write render(out_dir) to path; with readme, refresh that README's summary table too. Returns path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(out_dir))
    if readme is not None:
        readme = Path(readme)
        readme.write_text(readme_with_summary(readme.read_text(), out_dir))
    return path
