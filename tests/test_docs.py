"""The README and docs/*.md name only commands and options that exist and link only to files and headings that exist;
`mcu bench --markdown` (mcu.tools.bench_markdown) renders a fixed bench run to exact rows.

- Code (inline spans and fenced blocks) is read token by token: `mcu CMD` and `./dev CMD` set the command whose
  parser the following options must be in; `python scripts/X.py` and `python -m mcu.X` (a module that must exist)
  set a script whose source must spell the option; an option with no command before it must be an
  option of some `mcu` command.
- Links: every relative `[text](target)` resolves to a file, and `#anchor` to a heading of it (GitHub's slugs).
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from mcu.cli import build_parser
from mcu.tools import bench_markdown

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DEV_TASKS = {"setup", "example", "test"}  # ./dev's own tasks; any other is an mcu command


def _parsers() -> dict[str, set[str]]:
    """Each mcu command's option strings; "" holds the top-level ones."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = {"": set(parser._option_string_actions)}
    options.update({name: set(p._option_string_actions) for name, p in sub.choices.items()})
    return options


def code_segments(text: str) -> list[str]:
    """The lines of fenced code blocks and the inline code spans of the rest."""
    segments, rest, fenced = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            segments.append(line.split(" # ")[0])
        else:
            rest.append(line)
    return segments + re.findall(r"`([^`\n]+)`", "\n".join(rest))


def unknown_names(text: str) -> list[str]:
    """Every command or option the text's code names that does not exist, as 'mcu CMD' or 'mcu CMD --opt'."""
    options = _parsers()
    anywhere = set().union(*options.values())
    bad = []
    for segment in code_segments(text):
        raw = segment.split()
        tokens = [t.strip("[](),;") for t in raw]
        command, script = None, None
        for i, token in enumerate(tokens):
            after = tokens[i + 1] if i + 1 < len(tokens) else ""
            if raw[i] in ("mcu", "./dev") and re.fullmatch(r"[a-z][a-z-]*", after):
                if token == "./dev" and after in DEV_TASKS:
                    command, script = None, None
                elif after in options:
                    command, script = after, None
                else:
                    bad.append(f"{token} {after}")
            elif token == "-m" and after.startswith("mcu."):
                module = ROOT / after.replace(".", "/")
                script = next((f for f in (module.with_suffix(".py"), module / "__main__.py") if f.is_file()), None)
                if script is None:
                    bad.append(f"python -m {after}")
            elif token == "python" and after.startswith("scripts/") and after.endswith(".py"):
                script = ROOT / after
            elif re.fullmatch(r"--[a-z][a-z0-9-]*", token.split("=")[0]) or (
                    command and re.fullmatch(r"-[a-z]", token)):
                option = token.split("=")[0]
                if script is not None:
                    ok = script.is_file() and f'"{option}"' in script.read_text()
                elif command is not None:
                    ok = option in options[command] or option in options[""]
                else:
                    ok = option in anywhere
                if not ok:
                    where = script.relative_to(ROOT) if script is not None else f"mcu {command or '*'}"
                    bad.append(f"{where} {option}")
    return bad


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"#{1,6} (.+)", line)
        if m:
            s = slug(m.group(1))
            out.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
    return out


def broken_links(path: Path, text: str | None = None) -> list[str]:
    """Relative links of the Markdown file at path (or of text, read as if it were there) that do not resolve."""
    text = path.read_text() if text is None else text
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        name, _, anchor = target.partition("#")
        if not name:
            headings = anchors(text)
        else:
            file = (path.parent / name).resolve()
            if not file.exists():
                bad.append(target)
                continue
            headings = anchors(file.read_text()) if file.suffix == ".md" else set()
        if anchor and anchor not in headings:
            bad.append(target)
    return bad


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_and_option_the_docs_name_exists(doc):
    assert unknown_names(doc.read_text()) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    assert broken_links(doc) == []


def test_the_checks_catch_a_made_up_command_option_and_link():
    text = ("`mcu compile m.pt2 --board b --no-such-option`, `mcu frobnicate DIR`, `--made-up`, `./dev compile x -q`\n"
            "```sh\nmcu bench --numerics --nope\npython -m mcu.bench --out x\npython scripts/target_sqnr.py --target 40 --tagret 3\n```\n")
    assert sorted(unknown_names(text)) == sorted([
        "mcu compile --no-such-option", "mcu frobnicate", "mcu * --made-up", "mcu compile -q", "mcu bench --nope",
        "python -m mcu.bench", "scripts/target_sqnr.py --tagret"])
    links = "[a](user-guide.md) [b](user-guide.md#boards) [c](no-such.md) [d](user-guide.md#no-such-heading) [e](#x)"
    assert broken_links(ROOT / "docs" / "index.md", links + "\n## X\n") == [
        "no-such.md", "user-guide.md#no-such-heading"]


def test_the_readme_keeps_the_command_ci_runs():
    assert "./dev test" in (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^\./dev test\s", (ROOT / "README.md").read_text(), re.M)


def test_slugs_follow_github():
    assert slug("Automatic precision: `--target-sqnr`") == "automatic-precision---target-sqnr"
    assert slug("PyTorch's op tests: `python scripts/opinfo_coverage.py [--board B]`") == \
        "pytorchs-op-tests-python-scriptsopinfo_coveragepy---board-b"


# ---- mcu.tools.bench_markdown ---------------------------------------------------------------------------------

ROW = {"model": "kws", "board": "mps2-an386", "quantize": "int8", "arena_bytes": 8704, "arena_lower_bound": 8704,
       "flash_weights": 32600, "flash_kernels": 14052, "flash_runtime": 0, "flash_glue": 1464, "flash_other": 2772,
       "flash_total": 50888, "instructions": 3708840, "macs": 2656768, "macs_per_instruction": 0.7163339480808015,
       "exact": True, "sqnr_db": 37.89854311344825, "params": 23180, "arena_memory": 8384,
       "arena_memory_lower_bound": 8384}
M7 = dict(ROW, board="mps2-an500", instructions=3695120, exact=False, flash_kernels=14306)
NUMERICS = [{"model": "kws", "mode": "a16w8", "board": "mps2-an386", "sqnr_db": 55.49, "flash_weights": 53440,
             "flash_total": 67264, "arena_bytes": 32256, "instructions": 7375160, "exact": True}]
FLOAT32 = [dict(ROW, board="mps2-an385", quantize="none", arena_bytes=64000, flash_weights=90416, flash_total=99568,
                instructions=235703880, macs_per_instruction=0.0112, rel_error_device=6.2e-7,
                rel_error_reference=6.9e-7)]


def _bench_dir(tmp_path, numerics=True) -> Path:
    (tmp_path / "bench.json").write_text(json.dumps([ROW, M7]))
    (tmp_path / "bench-float32.json").write_text(json.dumps(FLOAT32))
    if numerics:
        (tmp_path / "numerics.json").write_text(json.dumps(NUMERICS))
    return tmp_path


def test_render_gives_the_rows_of_a_fixed_bench_run(tmp_path):
    lines = bench_markdown.render(_bench_dir(tmp_path)).splitlines()
    for row in [
        # the summary: ours beside ExecuTorch's and TFLM's (named constants); no M55 row in this run
        "| KWS (DS-CNN) | 3,708,840 | 8,540,120 | 7,699,720 | - | 1,840,125 | 1,815,625 |",
        # the zoo table: the portable build's instructions are constants, the M7 has no peer numbers
        "| kws | mps2-an386 | 8,704 | 8,384 (8,384) | 32,600 | 14,052 | 1,464 | 31,627,600 | 3,708,840 | 0.716 | "
        "8,540,120 | 7,699,720 | yes | 37.9 |",
        "| kws | mps2-an500 | 8,704 | 8,384 (8,384) | 32,600 | 14,306 | 1,464 | - | 3,695,120 | 0.716 | - | - | NO | "
        "37.9 |",
        # the one-build table: before (constants) -> now
        "| kws | mps2-an386 | 2,949,200 -> 3,708,840 | 16,264 -> 8,704 (8,384) | 2.36 -> 1.41 | 15,516 |",
        "| kws | mps2-an385 (soft float) | 64,000 | 90,416 | 99,568 | 235,703,880 | 0.011 | 6.2e-07 / 6.9e-07 |",
        "| kws | a16w8 | 55.5 | 53,440 | 67,264 | 32,256 | 7,375,160 | yes |",
    ]:
        assert row in lines, row


def test_a_missing_json_names_its_command_and_the_readme_summary_is_replaced(tmp_path):
    out = _bench_dir(tmp_path, numerics=False)
    assert f"*Not in this run: `mcu bench --numerics --out {out}` writes it.*" in bench_markdown.render(out)
    readme = (f"# x\n{bench_markdown.README_BEGIN}\n| old |\n{bench_markdown.README_END}\nrest\n")
    new = bench_markdown.readme_with_summary(readme, out).splitlines()
    assert new[0:3] == ["# x", bench_markdown.README_BEGIN, "| model | M4 mcu | M4 ExecuTorch | M4 TFLM + CMSIS-NN | "
                        "M55 mcu | M55 ExecuTorch | M55 TFLM + CMSIS-NN |"]
    assert new[-2:] == [bench_markdown.README_END, "rest"] and "| old |" not in new
    path = bench_markdown.write(out, tmp_path / "docs" / "benchmarks.md")
    assert path.read_text() == bench_markdown.render(out)
