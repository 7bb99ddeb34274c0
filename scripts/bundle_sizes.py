"""Flash of KWS, AD and the example CNN alone and bundled into one firmware, per board (issue #27 goal).

python scripts/bundle_sizes.py [--boards B ...] [-o out/bundle_sizes]

Compiles the three models as kws, ad and cnn for each board, bundles them (mcu.bundle) and prints `mcu size` of the
bundle (each model's own firmware, the kernels shared once), then one table: each model alone, their sum, the bundle
and the saving. tests/test_bundle.py builds the bundle's firmware with make and CMake and checks the ELF against it.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import mcu
from mcu.bundles import bundle_size
from mcu.zoo.example import calibration_set, example_cnn
from mcu.zoo.mlperf_tiny import ad, kws

BOARDS = ["mps2-an386", "mps3-an547"]
MODELS = {"kws": kws, "ad": ad, "cnn": example_cnn}


def board_bundle(board: str, out: Path):
    """The three models compiled for board and bundled; their BundleSize."""
    for name, make in MODELS.items():
        model, example = make()
        mcu.compile(model, example, board=board, name=name, out_dir=out / board / name, force=True,
                    calibration=calibration_set(4) if name == "cnn" else None)
    b = mcu.bundle([out / board / n for n in MODELS], out_dir=out / board / "bundle", force=True)
    return bundle_size(b)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", nargs="+", default=BOARDS)
    parser.add_argument("-o", "--out", type=Path, default=Path("out/bundle_sizes"))
    args = parser.parse_args(argv)
    sizes = {board: board_bundle(board, args.out) for board in args.boards}
    for size in sizes.values():
        print(size.format() + "\n")
    head = f"{'flash, bytes':<14}" + "".join(f"{n + ' alone':>12}" for n in MODELS)
    print(head + f"{'sum':>12}{'bundle':>12}{'saving':>12}")
    for board, size in sizes.items():
        alone = "".join(f"{size.models[n]['alone']:>12,}" for n in MODELS)
        print(f"{board:<14}{alone}{size.alone:>12,}{size.total:>12,}{size.alone - size.total:>12,}")


if __name__ == "__main__":
    main()
