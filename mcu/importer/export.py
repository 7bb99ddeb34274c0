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
from torch.fx import Node

from mcu.errors import McuError

aten = torch.ops.aten

# Elementwise functions of one activation (and of a tensor and a scalar): int8 and int16 run them through a look-up
# table computed with the op itself (mcu.importer.from_quantized LUT_OPS), float32 through mcu_unary_f32 (codegen/lowering_float).
ELEMENTWISE_OPS = {
    aten.hardswish.default, aten.hardswish_.default, aten.hardsigmoid.default, aten.hardsigmoid_.default,
    aten.leaky_relu.default, aten.leaky_relu_.default, aten.gelu.default, aten.silu.default, aten.silu_.default,
    aten.elu.default, aten.elu_.default, aten.softplus.default, aten.neg.default, aten.abs.default, aten.exp.default,
    aten.log.default, aten.log1p.default, aten.expm1.default, aten.sqrt.default, aten.rsqrt.default,
    aten.reciprocal.default, aten.square.default, aten.sin.default, aten.cos.default, aten.floor.default,
    aten.ceil.default, aten.round.default, aten.trunc.default, aten.sign.default, aten.erf.default,
    aten.mish.default, aten.selu.default, aten.celu.default, aten.log_sigmoid.default, aten.hardshrink.default,
    aten.softshrink.default, aten.threshold.default, aten.rrelu.default, aten.pow.Tensor_Scalar,
}

# Ops with no integer kernel: in int8 and a16w8 models each runs as a float32 island (dequantize, the float kernel,
# quantize; mcu.quantization.quantizer marks it float32 as mixed= would), as does a division of two tensors.
FLOAT_ISLAND_OPS = {aten.minimum.default, aten.maximum.default, aten.pow.Tensor_Tensor, aten.amax.default,
                    aten.argmax.default, aten.argmin.default,
                    aten.amin.default, aten.prod.dim_int, aten.prod.default}

# Ops mcu.importer.decompose rewrites as primitives before quantization (their names, to keep mcu.importer.export import-light).
COMPOSITE_OPS = {
    aten.group_norm.default, aten.instance_norm.default, aten.rms_norm.default, aten.var.correction, aten.var.dim,
    aten.std.correction, aten.std.dim, aten.logsumexp.default, aten.log_softmax.int, aten._log_softmax.default,
    aten.linalg_vector_norm.default, aten.norm.ScalarOpt_dim, aten.clamp.Tensor, aten.clamp_min.Tensor, aten.clamp_max.Tensor,
    aten.prelu.default, aten.scaled_dot_product_attention.default, aten.cumsum.default,
    aten.conv_transpose1d.default, aten.conv_transpose2d.input, aten.upsample_bilinear2d.vec,
    aten.upsample_bicubic2d.vec, aten.where.self, aten.masked_fill.Scalar, aten.logical_not.default,
    aten.logical_and.default, aten.logical_or.default, aten.bitwise_not.default, aten.bitwise_and.Tensor,
    aten.bitwise_or.Tensor, aten.__and__.Tensor, aten.__or__.Tensor, aten.embedding.default,
    aten.index_select.default, aten.bilinear.default,
    aten.gt.Tensor, aten.gt.Scalar, aten.lt.Tensor, aten.lt.Scalar, aten.ge.Tensor, aten.ge.Scalar, aten.le.Tensor,
    aten.le.Scalar, aten.eq.Tensor, aten.eq.Scalar, aten.ne.Tensor, aten.ne.Scalar,
    # constants (mcu.importer.decompose.CONSTANT_OPS), folded at compile time
    aten.zeros.default, aten.ones.default, aten.full.default, aten.scalar_tensor.default, aten.arange.default,
    aten.arange.start, aten.arange.start_step, aten.zeros_like.default, aten.ones_like.default,
    aten.full_like.default,
}

# Every aten op the int8 flow accepts at export time (before quantization).
SUPPORTED_OPS = {
    aten.conv2d.default, aten.linear.default, aten.batch_norm.default,
    aten._native_batch_norm_legit_no_training.default,
    aten.relu.default, aten.relu_.default, aten.relu6.default, aten.hardtanh.default, aten.hardtanh_.default,
    aten.add.Tensor, aten.add_.Tensor,
    aten.max_pool2d.default, aten.avg_pool2d.default, aten.adaptive_avg_pool2d.default, aten.mean.dim,
    aten.flatten.using_ints, aten.view.default, aten.reshape.default, aten._unsafe_view.default,
    aten.squeeze.dim, aten.squeeze.dims, aten.unsqueeze.default, aten.contiguous.default,
    aten.dropout.default, aten.clone.default, aten.softmax.int, aten._softmax.default,
    aten.pad.default, aten.constant_pad_nd.default,
    # op breadth: elementwise, look-up-table activations, data movement, reductions, 1-d ops, matmul, norms
    aten.sub.Tensor, aten.sub_.Tensor, aten.mul.Tensor, aten.mul_.Tensor, aten.div.Tensor, aten.div_.Tensor,
    aten.rsub.Scalar, aten.clamp.default, aten.sigmoid.default, aten.sigmoid_.default, aten.tanh.default,
    aten.tanh_.default, aten.hardswish.default, aten.hardswish_.default, aten.hardsigmoid.default,
    aten.hardsigmoid_.default, aten.leaky_relu.default, aten.leaky_relu_.default, aten.gelu.default,
    aten.silu.default, aten.silu_.default, aten.elu.default, aten.elu_.default, aten.softplus.default,
    *ELEMENTWISE_OPS, *FLOAT_ISLAND_OPS,
    aten.cat.default, aten.permute.default, aten.transpose.int, aten.upsample_nearest2d.vec,
    aten.upsample_nearest1d.vec, aten.sum.dim_IntList, aten.conv1d.default, aten.max_pool1d.default,
    aten.avg_pool1d.default, aten.matmul.default, aten.sum.default, aten.mean.default, *COMPOSITE_OPS, aten.bmm.default, aten.layer_norm.default, aten.slice.Tensor,
}

# The nearest supported way to express an unsupported op.
ALTERNATIVES = {
    "upsample_bilinear2d": "nearest upsampling (F.interpolate mode='nearest')",
    "max_pool3d": "max_pool2d", "conv3d": "conv2d", "stack": "cat of unsqueezed tensors",
}


class UnsupportedOpError(McuError):
    """The model uses an op the int8 flow cannot compile."""


class ExportError(McuError):
    """torch.export could not capture the model, or the .pt2 file cannot be loaded."""


_FRAME_FILE = re.compile(r'File "([^"]+)"')
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def source_line(node: Node) -> str:
    """'file:line: code' of the user's frame that created the node, or '' when unknown."""
    trace = node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    torch_dir = os.path.dirname(torch.__file__)
    user = [f for f in frames if not f[0].startswith(torch_dir) and "/torchao/" not in f[0]]
    if not user:
        return ""
    file, line, _func, code = user[-1]
    return f"{file}:{line}: {code.strip()}"


def portable_path(file: str) -> str:
    """A source file as generated files name it, the same on every machine: relative to the working directory if
    it is under it, else to the folder holding its top-level package (mymodels/net.py), else its bare name."""
    path = Path(file)
    if not path.is_absolute():
        return path.as_posix()
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        pass
    top = path.parent
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    return path.relative_to(top).as_posix()


def portable_source(source: str) -> str:
    """A source_line with its file as portable_path names it: what generated files carry."""
    file, sep, rest = source.partition(":")
    return portable_path(file) + sep + rest if sep and file else source


def portable_stack_trace(trace: str) -> str:
    """A node's stack_trace with every frame's file as portable_path names it."""
    return _FRAME_FILE.sub(lambda m: f'File "{portable_path(m.group(1))}"', trace)


def op_name(node: Node) -> str:
    return str(getattr(node.target, "__name__", node.target)).split(".")[0]


def check_supported(ep: torch.export.ExportedProgram) -> None:
    """Raise UnsupportedOpError naming the first unsupported op, its source line and an alternative."""
    for node in ep.graph.nodes:
        if node.op != "call_function" or node.target in SUPPORTED_OPS:
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
    from mcu.importer.decompose import TORCH_DECOMPOSED, torch_decompositions
    from mcu.importer.rewrites import REWRITTEN_OPS, views_as_slices
    check_static(ep)
    if any(n.op == "call_function" and n.target in TORCH_DECOMPOSED for n in ep.graph.nodes):
        ep = torch_decompositions(ep)  # a new program: the user's stays as it was
    if any(n.op == "call_function" and n.target in REWRITTEN_OPS for n in ep.graph.nodes):
        if isinstance(model, torch.export.ExportedProgram):
            ep = copy.deepcopy(ep)  # the user's program stays as it was
        views_as_slices(ep.graph_module)
    check_supported(ep)
    return ep


def example_inputs_of(ep: torch.export.ExportedProgram) -> tuple:
    """Zero tensors shaped like the program's user inputs (for a .pt2 given without inputs)."""
    vals = [n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"
            and n.name in ep.graph_signature.user_inputs]
    return tuple(torch.zeros(v.shape, dtype=v.dtype) for v in vals)
