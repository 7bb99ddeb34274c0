"""`mcu debug DIR --input x.npy`: where do the device's numbers part ways?

- A debug build (-DMCU_DEBUG) makes model.c hand every kernel's output to mcu_pal_debug_tensor(),
  which the harness appends to debug.bin as records: u32 call index, u32 byte count, the bytes.
- The same input runs through the numpy integer reference (every tensor kept) and through the float
  model (model.pt2, saved at compile time, with BatchNorms folded as for quantization); an IR output
  matches the float value its quantize node quantized (its Call's float_node).
- model.pt2 is opened only for a package compiled in this process or with trust_model=True (CLI --trust-model):
  a .pt2 is PyTorch's format, whose loader may run code from the file; even then it is read through
  mcu.importer.export.load_pt2, which refuses pickled objects that are not plain tensors.
- One row per call: op, kernel, the user's source line, max |device - reference| in LSB, and the
  SQNR of the dequantized device tensor against the float activation. The first row whose LSB error
  is not zero is where device and reference part ways.
- A producer writing into a channel concat in place (output_pixel_stride) dumps every byte its output spans,
  the other producers' channels between its pixels included; its own pixels are gathered before comparing.
- The debug build also checks the guard bytes after the arena after every op (model.h); a run that stops with
  MCU_ERR_ARENA_GUARD raises an McuError naming the op that wrote past the arena (the last one dumped).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mcu.codegen.ir import DTYPES
from mcu.codegen.sharing import pixel_stride
from mcu.codegen.reference import run_reference
from mcu.errors import MCU_STATUS, McuError
from mcu.metrics import sqnr_db
from mcu.package import FLOAT_MODEL, read_sealed
from mcu.state_region import initial_region, with_initial_state

DEBUG_FILE = "debug.bin"
MCU_ERR_ARENA_GUARD = next(k for k, v in MCU_STATUS.items() if v == "MCU_ERR_ARENA_GUARD")


@dataclass
class DebugRow:
    index: int           # call index in model.c
    node: str
    kernel: str
    source: str
    max_lsb: int         # vs the numpy integer reference
    sqnr_db: float | None  # vs the float model's matching activation (None: no float counterpart)


def parse_dump(data: bytes) -> dict[int, bytes]:
    """debug.bin -> {call index: output bytes}."""
    out, pos = {}, 0
    while pos + 8 <= len(data):
        index, size = struct.unpack_from("<II", data, pos)
        out[index] = data[pos + 8:pos + 8 + size]
        pos += 8 + size
    return out


def check_trusted(pkg, trust_model: bool) -> None:
    """Refuse to open a package's model.pt2 that neither this process wrote nor the user vouched for."""
    if (pkg.out_dir / FLOAT_MODEL).exists() and not (trust_model or pkg.trusted):
        raise McuError(f"mcu debug compares with the float model {pkg.out_dir / FLOAT_MODEL}, and loading a .pt2 can "
                       f"run code from whoever wrote it; pass --trust-model (trust_model=True) if you trust where "
                       f"{pkg.out_dir} came from, or compile the model yourself")


def float_activations(pkg, inputs, trust_model: bool = False) -> dict[str, np.ndarray]:
    """Every call_function node's float output, by node name, from the float model as prepared
    for quantization (BatchNorm folded), on `inputs` (torch order)."""
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

    from mcu.importer.export import load_pt2
    from mcu.quantization.quantizer import McuQuantizer

    path = pkg.out_dir / FLOAT_MODEL
    if not path.exists():
        return {}  # compiled from a quantized model (QAT): no float model to compare with
    data = None
    if not pkg.trusted:
        data = read_sealed(pkg, FLOAT_MODEL)  # the bytes mcu wrote, or a PackageError
    check_trusted(pkg, trust_model)
    try:
        ep = load_pt2(path, data)
    except McuError:
        raise
    except Exception as exc:  # torch raises many types for damaged archives
        raise McuError(f"cannot load the float model {path} ({type(exc).__name__}: {str(exc)[:100]}); compile the "
                       f"model again with `mcu compile`") from None
    states = [torch.from_numpy(_real(pkg.graph.tensors[pkg.graph.inputs[st.input]], st.init)) for st in pkg.graph.state]
    inputs = [*(inputs if isinstance(inputs, (tuple, list)) else (inputs,)), *states]  # a model with state: its start
    return record_outputs(prepare_pt2e(ep.module(), McuQuantizer(states=len(states))), inputs, lambda n: n.name)


def _real(tensor, values: np.ndarray) -> np.ndarray:
    """A state's initial value as the float model holds it (dequantized; float32 as it is)."""
    q = tensor.qparams
    x = values.astype(np.float32) if q is None else (values.astype(np.float32) - q.zp) * np.float32(q.s)
    return x.reshape(values.shape)


def record_outputs(module: torch.fx.GraphModule, inputs, key) -> dict[str, np.ndarray]:
    """Run module on inputs (torch order) and keep each call_function node's tensor output under key(node),
    skipping the nodes for which key returns None."""
    values: dict[str, np.ndarray] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            name = key(n) if n.op == "call_function" and isinstance(result, torch.Tensor) else None
            if name is not None:
                values[name] = result.detach().numpy().copy()
            return result

    with torch.no_grad():
        Recorder(module).run(*[torch.as_tensor(x) for x in inputs])
    return values


def _to_torch_order(x: np.ndarray, layout: str) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if layout == "NHWC" and x.ndim == 4 else x


def compare(pkg, inputs, dump: dict[int, bytes], trust_model: bool = False,
            floats: dict[str, np.ndarray] | None = None) -> list[DebugRow]:
    """Rows of the debugger's table from a device dump (floats: float_activations, computed here if None)."""
    if isinstance(inputs, (torch.Tensor, np.ndarray)):
        inputs = (inputs,)
    ref = run_reference(pkg.graph, with_initial_state(pkg.graph, pkg.quantize_inputs(inputs)), every_tensor=True)
    if floats is None:
        floats = float_activations(pkg, inputs, trust_model)
    rows = []
    calls = [n for n in pkg.graph.nodes if n.op == "call"]
    for i, node in enumerate(calls):
        t = pkg.graph.tensors[node.outputs[0]]
        raw = dump.get(i)
        if raw is None:
            break  # the device stopped before this call
        device = _gather(np.frombuffer(raw, dtype=DTYPES[t.dtype]), node).reshape(t.shape)
        if t.dtype == "float32":  # float32 kernels (quantize="none"): units in the last place
            max_lsb = max_ulp(device, ref[t.name])
        else:
            max_lsb = int(np.abs(device.astype(np.int64) - ref[t.name].astype(np.int64)).max())
        sq = None
        fv = floats.get(node.call.float_node or "")
        if fv is not None and t.dtype == "float32":
            real = _to_torch_order(device, t.layout)
            if real.size == fv.size:
                sq = sqnr_db(fv.reshape(-1), real.reshape(-1))
        elif fv is not None and t.qparams is not None and t.qparams.per_tensor:
            real = (device.astype(np.float32) - t.qparams.zp) * np.float32(t.qparams.s)
            real = _to_torch_order(real, t.layout)
            if real.size == fv.size:
                sq = sqnr_db(fv.reshape(-1), real.reshape(-1))
        rows.append(DebugRow(i, node.name, node.call.kernel, node.source, max_lsb, sq))
    return rows


def _gather(flat: np.ndarray, node) -> np.ndarray:
    """A call's output elements from its dump: for a strided output, pixel q's C_out channels at q * stride."""
    stride = pixel_stride(node)
    if stride is None:
        return flat
    n, h, w, c = node.call.params["output"]
    return flat[(np.arange(n * h * w) * stride)[:, None] + np.arange(c)]


def max_ulp(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance between float32 arrays in units in the last place (adjacent floats are 1 apart,
    +0 and -0 are 0 apart; a NaN against anything but a NaN counts as 2^31)."""
    def ordered(x):
        i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(1 << 31) - i, i)  # negative floats below the positive ones, -0 at 0
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    d = np.abs(ordered(a) - ordered(b))
    nan = np.isnan(a) | np.isnan(b)
    d = np.where(nan, np.where(np.isnan(a) & np.isnan(b), 0, 1 << 31), d)
    return int(d.max()) if d.size else 0


def first_divergence(rows: list[DebugRow]) -> DebugRow | None:
    return next((r for r in rows if r.max_lsb != 0), None)


def format_rows(rows: list[DebugRow]) -> str:
    lines = [f"{'#':>3} {'op':24} {'kernel':26} {'max LSB':>7} {'SQNR dB':>8}  source"]
    for r in rows:
        sq = "-" if r.sqnr_db is None else ("inf" if r.sqnr_db == float("inf") else f"{r.sqnr_db:.1f}")
        lines.append(f"{r.index:>3} {r.node[:24]:24} {r.kernel[:26]:26} {r.max_lsb:>7} {sq:>8}  {r.source}")
    bad = first_divergence(rows)
    lines.append("device == reference at every op" if bad is None else
                 f"first divergence: #{bad.index} {bad.node} ({bad.kernel}) at {bad.source or 'a compiler-made op'}: "
                 f"{bad.max_lsb} LSB from the numpy reference")
    return "\n".join(lines)


def debug(pkg, inputs, *, timeout: float = 300.0, trust_model: bool = False) -> list[DebugRow]:
    """Build the debug firmware, run it on `inputs` (float, torch order), return the table rows. The package's
    model.pt2 is loaded only if this process compiled it or trust_model is set (see check_trusted)."""
    from mcu.build.firmware import build_firmware
    from mcu.qemu.runner import run_firmware

    if isinstance(inputs, (torch.Tensor, np.ndarray)):
        inputs = (inputs,)
    raw_in = pkg.quantize_inputs(inputs)
    floats = float_activations(pkg, inputs, trust_model)  # before the slow build: a bad model.pt2 fails first
    elf = build_firmware(pkg.board, pkg.out_dir, Path(pkg.build_dir).with_name(f"{pkg.board}-debug"),
                         defines=("MCU_DEBUG",))
    res = run_firmware(elf, pkg.board, initial_region(pkg.graph) + b"".join(x.tobytes() for x in raw_in), timeout=timeout,
                       collect=(DEBUG_FILE,))
    dump = parse_dump(res.files.get(DEBUG_FILE, b""))
    if res.status == MCU_ERR_ARENA_GUARD:
        calls = [n for n in pkg.graph.nodes if n.op == "call"]
        i = max(dump, default=0)
        node = calls[i]
        where = f" at {node.source}" if node.source else ""
        raise McuError(f"op #{i} {node.name} ({node.call.kernel}){where} wrote past the end of the arena: the "
                       f"debug build found the guard bytes after it changed (MCU_ERR_ARENA_GUARD). This is a kernel "
                       f"or memory-plan bug in mcu; please report it with the model")
    return compare(pkg, inputs, dump, trust_model, floats)
