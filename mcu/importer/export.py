"""Export stage: nn.Module / ExportedProgram / .pt2 file -> a checked torch.export ExportedProgram."""
from __future__ import annotations

import copy
import io
import logging
import os
import re
import warnings
from pathlib import Path

import torch

from mcu.errors import ExportError, UnsupportedOpError
from mcu.importer.ops import ALTERNATIVES, SUPPORTED_OPS, op_name, source_line
from mcu.importer.recurrent import RNN_OPS

aten = torch.ops.aten


def check_supported(ep: torch.export.ExportedProgram) -> None:
    """Raise UnsupportedOpError naming the first unsupported op, its source line and an alternative."""
    for node in ep.graph.nodes:
        if node.op != "call_function" or node.target in SUPPORTED_OPS or node.target in RNN_OPS:
            continue
        if getattr(node.target, "__name__", "") == "getitem":
            continue
        name = op_name(node)
        where = source_line(node) or "(no source line recorded)"
        hint = ALTERNATIVES.get(name.rstrip("_"))
        fix = f"; use {hint} instead" if hint else "; replace it with a supported op"
        raise UnsupportedOpError(f"unsupported op '{name}' ({node.target}) at {where}{fix}. "
                                 f"Supported: {', '.join(sorted({str(o).split('.')[1] for o in SUPPORTED_OPS}))}")


def _user_frame(exc: BaseException) -> str:
    """'file:line: code' of the innermost frame of exc's traceback outside torch, torchao and mcu, or ''."""
    import linecache
    import traceback

    skip = (os.path.dirname(torch.__file__), os.path.dirname(__file__), "/torchao/", "<")
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not any(k in f.filename for k in skip)]
    if not frames:
        return ""
    f = frames[-1]
    return f"{f.filename}:{f.lineno}: {(f.line or linecache.getline(f.filename, f.lineno)).strip()}"


def _export_failure(exc: Exception) -> ExportError:
    """The ExportError for a torch.export failure: where in the user's code, what to make static."""
    where = _user_frame(exc) or "(no source line recorded)"
    first = (str(exc).strip().splitlines() or [""])[0]
    if "data-dependent" in str(exc) or type(exc).__name__ == "GuardOnDataDependentSymNode":
        return ExportError(f"torch.export cannot capture the model: at {where} the control flow depends on a "
                           f"tensor's values ({type(exc).__name__}: {first}). mcu compiles one static graph: "
                           f"compute both branches and pick with torch.where, or make the decision outside forward()")
    return ExportError(f"torch.export failed at {where}: {type(exc).__name__}: {first}. "
                       f"Make shapes static and remove data-dependent control flow")


def _archive_versions(path: Path) -> tuple[str, tuple[int, int]] | None:
    """(torch version, export schema version) a .pt2 archive was saved with, if it says."""
    import json
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            name = next(n for n in z.namelist() if re.search(r"(^|/)models/[^/]+\.json$", n))
            meta = json.loads(z.read(name))
        schema = meta.get("schema_version") or {}
        return str(meta.get("torch_version", "?")), (int(schema.get("major", -1)), int(schema.get("minor", -1)))
    except (OSError, ValueError, StopIteration, zipfile.BadZipFile, AttributeError):
        return None


def _load_failure(path: Path, exc: Exception) -> ExportError:
    """The ExportError for a .pt2 torch.export.load rejects: saved by another torch, or damaged."""
    from torch._export.serde.schema import SCHEMA_VERSION

    versions = _archive_versions(path)
    if versions is not None and (versions[0] != torch.__version__ or versions[1][0] != SCHEMA_VERSION[0]):
        saved, schema = versions
        return ExportError(f"{path} was saved by torch {saved} (export schema {schema[0]}.{schema[1]}); this is "
                           f"torch {torch.__version__} (schema {SCHEMA_VERSION[0]}.{SCHEMA_VERSION[1]}), which "
                           f"cannot load it: export the model again and save it with torch.export.save under "
                           f"torch {torch.__version__}")
    return ExportError(f"{path} is not a loadable .pt2 file ({type(exc).__name__}: {exc}); "
                       f"re-save it with torch.export.save under torch {torch.__version__}")


class UnsafePt2Error(ExportError):
    """A .pt2 holding something whose loading would run code: a pickled object that is not a plain tensor."""


_SYM_EXPR = re.compile(r"[A-Za-z0-9_+\-*/%(), .<>=]{0,400}\Z")
_SYM_NAMES = {"Max", "Min", "Mod", "floor", "ceiling", "Abs", "Integer", "Rational", "Eq", "Ne", "Lt", "Le", "Gt", "Ge",
              "And", "Or", "Not", "true", "false", "oo", "True", "False", "Symbol", "positive", "negative",
              "nonnegative", "nonpositive", "integer", "real", "finite",
              # torch.utils._sympy.functions, as torch's deserializer passes them to sympify
              "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt", "FloorToInt", "CeilDiv",
              "LShift", "RShift", "PowByNatural", "FloatPow", "FloatTrueDiv", "IntTrueDiv", "TruncToFloat",
              "IsNonOverlappingAndDenseIndicator"}


class _SafeSympy:
    """The sympy module as torch's deserializer sees it while mcu loads a .pt2: sympify (an eval) takes only
    expressions over shape symbols (s0, u1, ...), numbers, arithmetic and the named sympy functions."""

    def __init__(self, sympy):
        self._sympy = sympy

    def __getattr__(self, name):
        return getattr(self._sympy, name)

    def sympify(self, expr, *args, **kw):
        if isinstance(expr, str):
            plain = re.sub(r"'[a-z]{1,8}[0-9]+'", "s0", expr)  # Symbol('s31', ...): a symbol's name, quoted
            names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", plain))
            bad = [n for n in names if not (re.fullmatch(r"[a-z]{1,8}[0-9]+", n) or n in _SYM_NAMES)]
            if not _SYM_EXPR.match(plain) or bad:
                raise UnsafePt2Error(f"the .pt2 holds a shape expression mcu does not evaluate ({expr[:60]!r}): "
                                     f"it may run code; export the model again with static shapes")
        return self._sympy.sympify(expr, *args, **kw)


def load_pt2(path: Path, data: bytes | None = None) -> torch.export.ExportedProgram:
    """torch.export.load without running code from the file: every torch.load inside it runs with weights_only=True
    (tensors, tuples, dicts; the sample inputs included), pickled custom objects (pickle.loads, torchbind's
    _pickle_load_obj) are refused, and symbolic shape strings are checked before sympify evaluates them.
    data: the file's bytes, read already (checked against a checksum). A .pt2 that needs any of those raises
    UnsafePt2Error; PyTorch itself offers no safe load for such objects."""
    import contextlib
    from unittest import mock

    import sympy
    from torch._export.serde import serialize as serde
    from torch.export.pt2_archive import _package

    real_load = torch.load

    def tensors_only(f, *args, **kw):
        kw["weights_only"] = True
        try:
            return real_load(f, *args, **kw)
        except Exception as exc:
            if "Weights only load failed" in str(exc) or type(exc).__name__ == "UnpicklingError":
                raise UnsafePt2Error(f"{path} holds a pickled object that is not a plain tensor; loading it would "
                                     f"run code from the file, so mcu does not: save the model with "
                                     f"torch.export.save from a program without custom objects, or compile "
                                     f"from Python (module:function)") from None
            raise

    def refuse(*args, **kw):
        raise UnsafePt2Error(f"{path} holds a pickled custom object (a constant that is not a tensor); loading it "
                             f"would run code from the file, so mcu does not")

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(torch, "load", tensors_only))
        stack.enter_context(mock.patch.object(torch._C, "_pickle_load_obj", refuse))
        stack.enter_context(mock.patch.object(_package, "pickle", mock.NonCallableMock(loads=refuse, load=refuse)))
        stack.enter_context(mock.patch.object(serde, "sympy", _SafeSympy(sympy)))
        export_log = logging.getLogger("torch.export")  # it logs a failed load with a traceback; our error says it
        stack.callback(export_log.setLevel, export_log.level)
        export_log.setLevel(logging.CRITICAL)
        stack.enter_context(warnings.catch_warnings())
        warnings.filterwarnings("ignore", message=".*pickle protocol.*")  # the weights_only unpickler's note
        return torch.export.load(str(path) if data is None else io.BytesIO(data))


def check_static(ep: torch.export.ExportedProgram) -> None:
    """Raise ExportError naming the first dynamic input dim or data-dependent size: mcu plans static shapes."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    user_inputs = set(ep.graph_signature.user_inputs)
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        for i, d in enumerate(val.shape):
            if isinstance(d, int):
                continue
            if node.op == "placeholder" and node.name in user_inputs:
                raise ExportError(f"input '{node.name}' has a dynamic dim {i} ({d}); mcu compiles one static "
                                  f"shape: export without dynamic_shapes for dim {i} (the size you will run with)")
            if free_unbacked_symbols(d):
                where = source_line(node) or "(no source line recorded)"
                raise ExportError(f"'{op_name(node)}' at {where} has an output whose size depends on tensor values "
                                  f"(dim {i} = {d}); mcu needs static shapes: avoid boolean-mask indexing, "
                                  f"nonzero, unique and the like")


def export(model, example_inputs: tuple | None = None) -> torch.export.ExportedProgram:
    """Capture `model` (an nn.Module, an ExportedProgram or a path to a .pt2 file) with torch.export."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        if not path.is_file():
            raise ExportError(f"{path}: no such file; pass a .pt2 saved with torch.export.save")
        export_log = logging.getLogger("torch.export")
        level = export_log.level
        export_log.setLevel(logging.CRITICAL)  # torch logs the failure with a traceback; our error says it all
        try:
            ep = load_pt2(path)
        except UnsafePt2Error:
            raise
        except Exception as exc:  # torch raises many types for corrupt or foreign archives
            raise _load_failure(path, exc) from exc
        finally:
            export_log.setLevel(level)
    elif isinstance(model, torch.export.ExportedProgram):
        ep = model
    elif isinstance(model, torch.nn.Module):
        if example_inputs is None:
            raise ExportError("example_inputs are required to export an nn.Module")
        training = model.training
        try:
            with warnings.catch_warnings():  # torch's note on nn.GRU / nn.LSTM's _flat_weights, not the user's
                warnings.filterwarnings("ignore", message=".*were assigned during export.*")
                ep = torch.export.export(model.eval(), tuple(example_inputs))
        except Exception as exc:
            raise _export_failure(exc) from exc
        finally:
            model.train(training)  # the user's model as it was
    else:
        raise ExportError(f"cannot export a {type(model).__name__}; pass an nn.Module, an "
                          f"ExportedProgram or a .pt2 path")
    from mcu.importer.decompose import needs_torch_decompositions, torch_decompositions
    from mcu.importer.rewrites import REWRITTEN_OPS, views_as_slices
    from mcu.importer.state import lift_state
    check_static(ep)
    if needs_torch_decompositions(ep):
        ep = torch_decompositions(ep)  # a new program: the user's stays as it was
    ep = lift_state(ep)  # mutated buffers -> trailing inputs and outputs (a new program when there are any)
    if any(n.op == "call_function" and n.target in REWRITTEN_OPS for n in ep.graph.nodes):
        if isinstance(model, torch.export.ExportedProgram):
            ep = copy.deepcopy(ep)  # the user's program stays as it was
        views_as_slices(ep.graph_module)
    check_supported(ep)
    return ep


def example_inputs_of(ep: torch.export.ExportedProgram) -> tuple:
    """Zero tensors shaped like the program's user inputs (for a .pt2 given without inputs)."""
    from mcu.importer.state import ep_states
    vals = [n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"
            and n.name in ep.graph_signature.user_inputs]
    vals = vals[:len(vals) - len(ep_states(ep))]  # the lifted states are not the caller's
    return tuple(torch.zeros(v.shape, dtype=v.dtype) for v in vals)
