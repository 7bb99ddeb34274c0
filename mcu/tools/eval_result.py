"""An evaluation's result (mcu eval) and where it is kept: <package>/.mcu-build/eval.json, read by mcu report."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mcu.paths import BUILD_DIR

EVAL_FILE = "eval.json"
PATHS = ("float", "reference", "device")


@dataclass
class EvalResult:
    count: int
    accuracy: dict[str, float | None]              # top-1 per path (None: no labels, or path not run)
    agreement: dict[str, float | None]             # top-1 agreement with the float model (or the reference)
    sqnr_db: dict[str, float | None]               # first output vs the float model (or the reference)
    device_float_differ: int | None                # inputs the device and the float model classify differently
    device_equals_reference: bool                  # raw first output bit for bit, every input
    instructions: int                              # mean per inference on the device
    seconds: float                                 # wall time of the device run (build excluded)
    classes: int = 0
    per_class: dict[str, list[float | None]] = field(default_factory=dict)  # accuracy of each class, per path
    confusion: list[list[int]] = field(default_factory=list)  # device: rows = label, columns = prediction
    predictions: dict[str, list[int]] = field(default_factory=dict, repr=False)
    board: str = ""

    def table(self) -> str:
        """The side-by-side table as text."""
        rows = [f"{'':12}{'float':>10}{'reference':>11}{'device':>10}"]

        def fmt(v, pct):
            return "-" if v is None else f"{100 * v:.2f}%" if pct else f"{v:.1f} dB"
        if any(v is not None for v in self.accuracy.values()):
            rows.append(f"{'top-1':12}" + "".join(f"{fmt(self.accuracy[p], True):>{w}}"
                                                  for p, w in zip(PATHS, (10, 11, 10))))
        rows.append(f"{'agreement':12}" + "".join(f"{fmt(self.agreement[p], True):>{w}}"
                                                  for p, w in zip(PATHS, (10, 11, 10))))
        rows.append(f"{'SQNR':12}" + "".join(f"{fmt(self.sqnr_db[p], False):>{w}}" for p, w in zip(PATHS, (10, 11, 10))))
        rows.append(f"{self.count} inputs on {self.board}; device == reference bit for bit: "
                    f"{'yes' if self.device_equals_reference else 'NO'}; "
                    + (f"device and float differ on {self.device_float_differ}; " if self.device_float_differ is not None
                       else "") + f"{self.instructions:,} instructions per inference; {self.seconds:.1f} s on QEMU")
        return "\n".join(rows)


def save_result(pkg, result: EvalResult) -> None:
    """Keep result in pkg's build folder, where load_result (and mcu report) find it."""
    path = Path(pkg.out_dir) / BUILD_DIR / EVAL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(result)))


def load_result(pkg) -> EvalResult | None:
    """The last evaluation saved in pkg's build folder, or None."""
    path = Path(pkg.out_dir) / BUILD_DIR / EVAL_FILE
    if not path.is_file():
        return None
    try:
        return EvalResult(**json.loads(path.read_text()))
    except (ValueError, TypeError):
        return None
