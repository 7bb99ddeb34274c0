"""`mcu eval DIR --data X.npy [--labels Y.npy]`: the float model, the integer reference and the device on N inputs.

 - The device runs all N inputs in ONE QEMU launch: a firmware built with -DMCU_BATCH (its own build folder)
   reads the quantized records from batch.bin and appends each inference's outputs to batch_out.bin.
 - The integer reference is the numpy twin path (Package.reference); the float model is optional (the
   user's module or the package's model.pt2, loaded only on request since loading it runs pickle).
 - A prediction is the argmax of the first output. With labels: top-1 accuracy of each path, per-class
   accuracy and the confusion matrix; without: top-1 agreement with the float model (or with the
   reference) and SQNR of the first output.
 - The result is kept in <package>/build/eval.json, where `mcu report` finds it.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from mcu.codegen.ir import DTYPES
from mcu.errors import McuError, status_name
from mcu.metrics import sqnr_db
from mcu.paths import BUILD_DIR

EVAL_FILE = "eval.json"
FLOAT_MODEL = "model.pt2"
PATHS = ("float", "reference", "device")


class InputError(McuError):
    """Bad data or labels for mcu.eval."""


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


def _as_inputs(pkg, data) -> tuple[list[np.ndarray], int]:
    """data -> one float array per model input, each [N, *shape[1:]] in torch order."""
    specs = pkg.manifest["inputs"]
    arrays = [np.asarray(d) for d in (data if isinstance(data, (tuple, list)) else (data,))]
    if len(arrays) != len(specs):
        raise InputError(f"the model takes {len(specs)} input(s), got {len(arrays)} data array(s)")
    n = len(arrays[0])
    if n == 0 or any(len(a) != n for a in arrays):
        raise InputError("the data arrays must hold the same number N > 0 of inputs on their first axis")
    return arrays, n


def _float_outputs(float_model, sample) -> np.ndarray:
    with torch.no_grad():
        out = float_model(*[torch.as_tensor(x).float() for x in sample])
    out = out[0] if isinstance(out, (tuple, list)) else out
    return out.detach().float().numpy()


def evaluate(pkg, data, labels=None, *, float_model=None, progress=None, timeout: float | None = None) -> EvalResult:
    """Run N inputs on the float model (if given), the integer reference and the device (one QEMU launch).

    data: an array [N, ...] (or one per model input) in torch order, each row one input without its batch
    axis of 1; labels: optional int array [N]; float_model: a torch module, callable or ExportedProgram;
    progress(done, total) follows the device run."""
    from mcu.build.firmware import build_firmware
    from mcu.qemu.runner import INSTRUCTIONS_PER_SECOND, run_firmware_batch
    from mcu.boards import load_board

    arrays, n = _as_inputs(pkg, data)
    if labels is not None:
        labels = np.asarray(labels).reshape(-1).astype(np.int64)
        if len(labels) != n:
            raise InputError(f"{len(labels)} labels for {n} inputs")
    if isinstance(float_model, torch.export.ExportedProgram):
        float_model = float_model.module()
    samples = [[a[i:i + 1] for a in arrays] for i in range(n)]

    records, ref_raw = [], []
    for s in samples:
        records.append(b"".join(x.tobytes() for x in pkg.quantize_inputs(s)))
        ref_raw.append(pkg.reference(s)[0])
    board = load_board(pkg.board)
    elf = build_firmware(board, pkg.out_dir, Path(pkg.build_dir).with_name(f"{pkg.board}-batch"),
                         defines=("MCU_BATCH",))
    start = time.monotonic()
    res = run_firmware_batch(elf, board, b"".join(records), n, progress=progress,
                             timeout=timeout if timeout is not None else 120 + 2.0 * n)
    seconds = time.monotonic() - start
    if res.status != 0:
        raise McuError(f"the model returned {status_name(res.status)} on the device: a code generator bug; "
                       f"please report it")
    specs = pkg.manifest["outputs"]
    per_record = sum(s["bytes"] for s in specs)
    if len(res.output_bytes) != n * per_record:
        raise McuError(f"the device wrote {len(res.output_bytes)} output bytes for {n} inputs, expected "
                       f"{n * per_record}")
    first = specs[0]
    dev_raw = [np.frombuffer(res.output_bytes[i * per_record:i * per_record + first["bytes"]],
                             dtype=DTYPES[first["dtype"]]).reshape(ref_raw[0].shape)
               for i in range(n)]
    ref_raw = np.stack(ref_raw)
    dev_raw = np.stack(dev_raw)
    outputs = {"reference": np.stack([pkg.dequantize_outputs([r])[0] for r in ref_raw]),
               "device": np.stack([pkg.dequantize_outputs([r])[0] for r in dev_raw])}
    if float_model is not None:
        outputs["float"] = np.stack([_float_outputs(float_model, s).reshape(ref_raw[0].shape) for s in samples])
    preds = {k: v.reshape(n, -1).argmax(axis=1) for k, v in outputs.items()}
    base = "float" if "float" in preds else "reference"
    classes = int(outputs["device"].reshape(n, -1).shape[1])

    accuracy = {p: (float((preds[p] == labels).mean()) if labels is not None and p in preds else None)
                for p in PATHS}
    agreement = {p: (float((preds[p] == preds[base]).mean()) if p in preds else None) for p in PATHS}
    sqnr = {p: (sqnr_db(outputs[base], outputs[p]) if p in outputs and p != base else None) for p in PATHS}
    per_class, confusion = {}, []
    if labels is not None:
        classes = max(classes, int(labels.max()) + 1)
        for p in preds:
            per_class[p] = [float((preds[p][labels == c] == c).mean()) if (labels == c).any() else None
                            for c in range(classes)]
        matrix = np.zeros((classes, classes), dtype=np.int64)
        np.add.at(matrix, (labels, np.clip(preds["device"], 0, classes - 1)), 1)
        confusion = matrix.tolist()
    result = EvalResult(
        count=n, accuracy=accuracy, agreement=agreement, sqnr_db=sqnr,
        device_float_differ=int((preds["device"] != preds["float"]).sum()) if "float" in preds else None,
        device_equals_reference=bool(np.array_equal(dev_raw, ref_raw)),
        instructions=(max(res.ticks - res.overhead_ticks, 0) * INSTRUCTIONS_PER_SECOND // board.systick_hz) // n,
        seconds=seconds, classes=classes, per_class=per_class, confusion=confusion,
        predictions={k: v.tolist() for k, v in preds.items()}, board=pkg.board,
    )
    path = pkg.out_dir / BUILD_DIR / EVAL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(result)))
    return result


def load_float_model(pkg):
    """The package's float model (model.pt2) as a callable module, or None when it has none (compiled from a
    QAT model). Only on the user's word (CLI --trust-model): checked against the manifest's seal as mcu debug
    does, then read through mcu.importer.export.load_pt2, which refuses pickled objects that are not plain tensors."""
    from mcu.importer.export import load_pt2

    path = Path(pkg.out_dir) / FLOAT_MODEL
    if not path.exists():
        return None
    data = None
    if not getattr(pkg, "trusted", False):
        from mcu.api import read_sealed
        data = read_sealed(pkg, FLOAT_MODEL)  # the bytes mcu wrote (the manifest's checksum), or a PackageError
    try:
        return load_pt2(path, data).module()
    except McuError:
        raise
    except Exception as exc:  # torch raises many types for damaged archives
        raise McuError(f"cannot load the float model {path} ({type(exc).__name__}: {str(exc)[:100]}); compile the "
                       f"model again with `mcu compile`") from exc


def load_result(pkg) -> EvalResult | None:
    """The last evaluation saved in pkg's build folder, or None."""
    path = Path(pkg.out_dir) / BUILD_DIR / EVAL_FILE
    if not path.is_file():
        return None
    try:
        return EvalResult(**json.loads(path.read_text()))
    except (ValueError, TypeError):
        return None
