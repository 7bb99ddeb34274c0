"""`mcu eval DIR --data X.npy [--labels Y.npy]`: the float model, the integer reference and the device on N inputs.

 - The device runs all N inputs in ONE QEMU launch: a firmware built with -DMCU_BATCH (its own build folder)
   reads the quantized records from batch.bin and appends each inference's outputs to batch_out.bin.
 - The integer reference is the numpy twin path (Package.reference); the float model is optional (the
   user's module or the package's model.pt2, loaded only on request since loading it runs pickle).
 - A model with state runs the N inputs as one sequence in order, from its initial state, on every path.
 - A prediction is the argmax of the first output. With labels: top-1 accuracy of each path, per-class
   accuracy and the confusion matrix; without: top-1 agreement with the float model (or with the
   reference) and SQNR of the first output.
 - The result is kept in <package>/build/eval.json, where `mcu report` finds it.
"""
from __future__ import annotations

import copy
import time
from pathlib import Path

import numpy as np
import torch

from mcu.codegen.ir import DTYPES
from mcu.errors import InputError, McuError, status_name
from mcu.metrics import sqnr_db
from mcu.package import FLOAT_MODEL, read_sealed
from mcu.tools.eval_result import PATHS, EvalResult, save_result



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
    arrays, n = _as_inputs(pkg, data)
    if labels is not None:
        labels = np.asarray(labels).reshape(-1).astype(np.int64)
        if len(labels) != n:
            raise InputError(f"{len(labels)} labels for {n} inputs")
    if isinstance(float_model, torch.export.ExportedProgram):
        float_model = float_model.module()
    samples = [[a[i:i + 1] for a in arrays] for i in range(n)]
    if pkg.state_bytes:  # a model with state: the N inputs are one sequence, the state carried from the first
        ref_raw = np.stack(_reference_sequence(pkg, samples))
        float_model = copy.deepcopy(float_model)  # its buffers move on; the user's model stays as it was
    else:
        ref_raw = np.stack([pkg.reference(s)[0] for s in samples])
    dev_raw, instructions, seconds = _device_run(pkg, samples, ref_raw[0].shape, progress, timeout)
    outputs = {"reference": np.stack([pkg.dequantize_outputs([r])[0] for r in ref_raw]),
               "device": np.stack([pkg.dequantize_outputs([r])[0] for r in dev_raw])}
    if float_model is not None:
        outputs["float"] = np.stack([_float_outputs(float_model, s).reshape(ref_raw[0].shape) for s in samples])
    result = EvalResult(count=n, **_scores(outputs, labels, n),
                        device_equals_reference=bool(np.array_equal(dev_raw, ref_raw)), instructions=instructions,
                        seconds=seconds, board=pkg.board)
    save_result(pkg, result)
    return result


def _device_run(pkg, samples: list, shape: tuple, progress, timeout: float | None) -> tuple[np.ndarray, int, float]:
    """Every sample through the device in one QEMU launch (a -DMCU_BATCH firmware): the raw first outputs, the
    mean instructions per inference and the run's wall time."""
    from mcu.boards import load_board
    from mcu.build.firmware import build_firmware
    from mcu.qemu.runner import INSTRUCTIONS_PER_SECOND, run_firmware_batch

    from mcu.state_region import initial_region

    n = len(samples)
    records = [initial_region(pkg.graph)] if pkg.state_bytes else []  # the state region, once before the records
    records += [b"".join(x.tobytes() for x in pkg.quantize_inputs(s)) for s in samples]
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
    if len(res.output_bytes) != n * per_record + pkg.state_bytes:  # a model with state: the region follows
        raise McuError(f"the device wrote {len(res.output_bytes)} output bytes for {n} inputs, expected "
                       f"{n * per_record + pkg.state_bytes}")
    first = specs[0]
    dev_raw = np.stack([np.frombuffer(res.output_bytes[i * per_record:i * per_record + first["bytes"]],
                                      dtype=DTYPES[first["dtype"]]).reshape(shape) for i in range(n)])
    instructions = (max(res.ticks - res.overhead_ticks, 0) * INSTRUCTIONS_PER_SECOND // board.systick_hz) // n
    return dev_raw, instructions, seconds


def _reference_sequence(pkg, samples: list) -> list[np.ndarray]:
    """The reference's first output (torch order) for each sample in turn, the state carried from the initial one."""
    from mcu.package import to_torch
    from mcu.state_region import initial_region, reference_step

    region, out = initial_region(pkg.graph), []
    for s in samples:
        raw, region = reference_step(pkg.graph, pkg.quantize_inputs(s), region)
        out.append(to_torch(raw[0], pkg.manifest["outputs"][0]))
    return out


def _scores(outputs: dict[str, np.ndarray], labels: np.ndarray | None, n: int) -> dict:
    """EvalResult's scores of each path's outputs: top-1 accuracy, agreement, SQNR, per-class accuracy, the
    confusion matrix and the predictions."""
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
    return dict(accuracy=accuracy, agreement=agreement, sqnr_db=sqnr,
                device_float_differ=int((preds["device"] != preds["float"]).sum()) if "float" in preds else None,
                classes=classes, per_class=per_class, confusion=confusion,
                predictions={k: v.tolist() for k, v in preds.items()})


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
        data = read_sealed(pkg, FLOAT_MODEL)  # the bytes mcu wrote (the manifest's checksum), or a PackageError
    try:
        return load_pt2(path, data).module()
    except McuError:
        raise
    except Exception as exc:  # torch raises many types for damaged archives
        raise McuError(f"cannot load the float model {path} ({type(exc).__name__}: {str(exc)[:100]}); compile the "
                       f"model again with `mcu compile`") from exc
