"""Emission: a lowered, planned graph -> the text of <name>.h, <name>.c and its weights file, and its Manifest.

Python computes every list and string; the Jinja templates in templates/ only loop and print.
Names and order derive from the graph alone, so the same model gives the same bytes.
"""
from __future__ import annotations

from importlib import resources

import jinja2
import numpy as np

from mcu.codegen.ir import C_TYPES, DTYPES, Graph, Node
from mcu.codegen.cheader import check_params
from mcu.codegen.kernels import KERNELS
from mcu.codegen.manifest import Manifest, build_manifest
from mcu.codegen.memory import ARENA_ALIGN, MemoryPlan, state_offsets
from mcu.codegen.names import DEFAULT_NAME, check_name, model_files
from mcu.codegen.sharing import output_extent
from mcu.codegen.errors import McuError

ARENA_GUARD_BYTES = 16  # debug builds: guard bytes after the arena, checked after every op (model.c)
IO_DOC = {"int8": "int8 tensors quantized as below:\n * real = (q - ZERO_POINT) * SCALE.",
          "float32": 'float32 tensors, as the float\n * model takes them (quantize="none").'}
PER_LINE = {"int8": 20, "uint16": 12, "int16": 12, "int32": 8, "int64": 4, "float32": 6}


def _env() -> jinja2.Environment:
    loader = jinja2.FileSystemLoader(str(resources.files("mcu.templates")))
    return jinja2.Environment(loader=loader, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=False, lstrip_blocks=False)


def c_value(v) -> str:
    """A parameter value as a C initializer."""
    if isinstance(v, (tuple, list)):
        return "{" + ", ".join(c_value(x) for x in v) + "}"
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        v = int(v)
        return str(v) if v != -(2**31) else "(-2147483647 - 1)"
    if isinstance(v, (float, np.floating)):
        return _float_literal(v)
    raise TypeError(f"cannot emit {v!r} as a C parameter")


def c_struct(params: dict) -> str:
    return "{ " + ", ".join(f".{k} = {c_value(v)}" for k, v in params.items()) + " }"


def c_array_body(data: np.ndarray, dtype: str) -> str:
    flat = data.reshape(-1)
    if dtype == "float32":
        items = [_float_literal(x) for x in flat]
    else:
        items = [c_value(int(x)) for x in flat]
    n = PER_LINE[dtype]
    return "\n".join("    " + ", ".join(items[i:i + n]) + "," for i in range(0, len(items), n))


def _float_literal(x: float) -> str:
    """x as a float32 C literal that reads back exactly: 1.5f, 1.0f (never 1f, an integer with a bad suffix)."""
    text = f"{float(np.float32(x)):.9g}"
    if not np.isfinite(np.float32(x)):
        raise McuError(f"the model holds a float {text} (a weight, bias or parameter), which C cannot write as a "
                       f"constant; the model's parameters must be finite")
    return text + ("f" if any(c in text for c in ".e") else ".0f")


def const_name(name: str, t: str) -> str:
    """The C array of constant tensor t in model `name`'s weights.c."""
    return f"{name}_w_{t}"


def tensor_expr(graph: Graph, mem: MemoryPlan, name: str, t: str | None) -> str:
    """The C expression of tensor t's storage inside `<name>_run`: NULL, a constant, an I/O pointer or an arena
    offset."""
    if t is None:
        return "NULL"
    loc, tensor = mem.locations[t], graph.tensors[t]
    if loc.kind == "const":
        return const_name(name, t)
    if loc.kind in ("input", "output"):
        return f"{loc.kind}{loc.index}"
    if loc.kind == "state":
        return f"({C_TYPES[tensor.dtype]} *)(void *)(s + {loc.index})"
    # Arena buffers are word-aligned (memory.BUFFER_ALIGN): the cast through void * tells -Wcast-align so.
    via = "(void *)" if np.dtype(DTYPES[tensor.dtype]).itemsize > 1 else ""
    return f"({C_TYPES[tensor.dtype]} *){via}(a + {loc.index})"


def const_records(graph: Graph, name: str) -> list[dict]:
    """weights.c's arrays: every constant a call reads (an input or a quant tensor), sorted by name."""
    consts = []
    for t in graph.used_constants():
        tensor = graph.tensors[t]
        consts.append({"cname": const_name(name, t), "ctype": C_TYPES[tensor.dtype], "size": int(tensor.data.size),
                       "comment": f"{t}: {tensor.dtype} [{', '.join(map(str, tensor.shape))}]"
                                  + (f" {tensor.layout}" if tensor.layout else ""),
                       "body": c_array_body(tensor.data, tensor.dtype), "bytes": tensor.nbytes})
    return consts


def call_args(graph: Graph, mem: MemoryPlan, name: str, i: int, node: Node) -> list[str]:
    """The C arguments of call i: params, quant (if any), the inputs, any scratch, the output last."""
    def expr(t):
        return tensor_expr(graph, mem, name, t)

    args = [f"&{name}_p{i}"] + ([f"&{name}_q{i}"] if node.call.quant else [])
    if KERNELS[node.call.kernel].input_array:  # one `const T *const inputs[]` argument, a C99 compound literal
        ctype = C_TYPES[graph.tensors[node.inputs[0]].dtype]
        return args + [f"(const {ctype} *const[]){{{', '.join(expr(t) for t in node.inputs)}}}",
                       expr(node.outputs[0])]
    # scratch (outputs after the first) goes right before the output, as in the C signatures
    return args + [expr(t) for t in node.inputs + node.outputs[1:]] + [expr(node.outputs[0])]


def call_record(graph: Graph, mem: MemoryPlan, name: str, i: int, node: Node) -> dict:
    """model.c's entry for call i: its params struct, the call and a comment naming the op and its source."""
    c = node.call
    spec = KERNELS[c.kernel]
    check_params(spec.params_type, c.params, f"{node.name} ({c.kernel})")
    out = graph.tensors[node.outputs[0]]
    comment = f"{node.name}: {c.kernel} -> [{', '.join(map(str, out.shape))}]"
    if node.source:
        comment += f"  ({node.source.replace('*/', '* /')})"
    # the debug dump takes every byte a strided output spans (mcu/tools/debug.py gathers its pixels)
    return {"output": tensor_expr(graph, mem, name, node.outputs[0]), "output_bytes": output_extent(graph, node),
            "params_type": spec.params_type, "params_name": f"{name}_p{i}", "params_c": c_struct(c.params),
            "call": f"{c.kernel}({', '.join(call_args(graph, mem, name, i, node))})", "comment": comment}


def quant_record(name: str, i: int, node: Node) -> dict | None:
    """model.c's per-channel quant struct of call i, None when its kernel takes none."""
    quant = node.call.quant
    if not quant:
        return None
    return {"cname": f"{name}_q{i}", "mult": const_name(name, quant[0]), "shift": const_name(name, quant[1])}


def io_record(graph: Graph, macro: str, kind: str, i: int, t: str) -> dict:
    """Input or output i (kind "input" / "output") as model.h documents it and the manifest lists it."""
    tensor = graph.tensors[t]
    return {"name": f"{kind}{i}", "macro": f"{macro}_{kind.upper()}{i}", "shape": list(tensor.shape),
            "layout": tensor.layout or "torch order", "ctype": C_TYPES[tensor.dtype], "dtype": tensor.dtype,
            "bytes": tensor.nbytes, "scale": _float_literal(tensor.qparams.s) if tensor.qparams else None,
            "zero_point": tensor.qparams.zp if tensor.qparams else None, "tensor": t,
            "elements": int(np.prod(tensor.shape, dtype=np.int64)), **quant_limits(tensor), **index_bounds(graph, t)}


def index_bounds(graph: Graph, t: str) -> dict:
    """An int32 input's legal values: {"index_range": [0, rows], "index_use": the op and source line} of the
    smallest table it indexes (mcu_gather returns MCU_ERR_INDEX outside it); {} for other tensors."""
    uses = [(n.call.params["rows"], n.source) for n in graph.nodes
            if n.call and n.call.kernel.startswith(("mcu_gather_", "mcu_scatter_")) and n.inputs[1] == t]
    if graph.tensors[t].dtype != "int32" or not uses:
        return {}
    rows, source = min(uses)
    return {"index_range": [0, int(rows)], "index_use": f"an indexing op (embedding, index_select, x[idx], a "
                                                        f"cache write) at {source or 'an unknown source line'}"}


def quant_limits(tensor) -> dict:
    """What <name>_quantize_input<k> needs beyond the header's macros: float32(1 / scale) (the multiplier
    quantize_per_tensor uses, Package.quantize_inputs) and the integer range, as float literals; {} for float32."""
    if not tensor.qparams:
        return {}
    info = np.iinfo(DTYPES[tensor.dtype])
    return {"inv_scale": _float_literal(1.0 / tensor.qparams.s), "qmin": _float_literal(info.min),
            "qmax": _float_literal(info.max)}


def run_signature(inputs: list[dict], outputs: list[dict], uses_arena: bool, has_state: bool = False) -> dict:
    """The parameter and argument lists of `<name>_run` and its `_run_v` wrapper, and its NULL check; a model with
    state takes the state region last."""
    pointers = [x["name"] for x in inputs + outputs] + (["arena"] if uses_arena else []) + \
        (["state"] if has_state else [])
    state = ["state"] if has_state else []
    return {"run_params": ", ".join([f"const {x['ctype']} *{x['name']}" for x in inputs]
                                    + [f"{x['ctype']} *{x['name']}" for x in outputs] + ["void *arena"]
                                    + ["void *state"] * has_state),
            "run_args": ", ".join([x["name"] for x in inputs + outputs] + ["arena"] + state),
            "run_v_params": "const void *const inputs[], void *const outputs[], void *arena"
                            + ", void *state" * has_state,
            "run_v_args": ", ".join([f"(const {x['ctype']} *)inputs[{i}]" for i, x in enumerate(inputs)]
                                    + [f"({x['ctype']} *)outputs[{i}]" for i, x in enumerate(outputs)] + ["arena"]
                                    + state),
            "null_check": " || ".join(f"{p} == NULL" for p in pointers)}


def generate_record(inputs: list[dict], outputs: list[dict], state: list[dict]) -> dict | None:
    """A decoder step (a token id and its position in, logits out, state kept) gets <name>_generate, greedy decoding
    on the device: {"ctype", "vocab", "elements"} of the logits (the argmax runs over the last `vocab`), else None."""
    if not state or len(inputs) != 2 or len(outputs) != 1 or any(
            x["dtype"] != "int32" or x["elements"] != 1 or "index_range" not in x for x in inputs):
        return None
    vocab = int(outputs[0]["shape"][-1])
    if vocab > inputs[0]["index_range"][1] or outputs[0]["dtype"] not in ("int8", "int16", "float32"):
        return None
    return {"ctype": outputs[0]["ctype"], "vocab": vocab, "elements": outputs[0]["elements"],
            "positions": inputs[1]["index_range"][1]}


def state_records(graph: Graph, mem: MemoryPlan, name: str) -> list[dict]:
    """Each state as <name>.h documents it and <name>.c resets and writes it back: offset in the state region,
    bytes, the C expression of its new value, and its initial value (None: all zeros)."""
    offsets, _ = state_offsets(graph)
    records = []
    for k, (s, off) in enumerate(zip(graph.state, offsets)):
        t = graph.tensors[graph.inputs[s.input]]
        init = s.init.reshape(t.shape if not t.layout else (t.shape[0], t.shape[3], t.shape[1], t.shape[2]))
        if t.layout == "NHWC":
            init = init.transpose(0, 2, 3, 1)
        records.append({"name": s.name, "index": k, "offset": off, "bytes": t.nbytes, "ctype": C_TYPES[t.dtype],
                        "shape": list(t.shape), "layout": t.layout or "torch order", "dtype": t.dtype,
                        "scale": _float_literal(t.qparams.s) if t.qparams else None,
                        "zero_point": t.qparams.zp if t.qparams else None, "source": s.source.replace("*/", "* /"),
                        "new_value": None if mem.locations[graph.outputs[s.output]] == mem.locations[
                            graph.inputs[s.input]] else tensor_expr(graph, mem, name, graph.outputs[s.output]),
                        "init": None if not init.any() else c_array_body(np.ascontiguousarray(init), t.dtype),
                        "size": int(init.size), "tensor": graph.inputs[s.input]})
    return records


def weights_placement(section: str = "") -> dict:
    """The weights file's default section when no macro names one: the compiler's (.rodata) or `section` (a board
    region for weights that do not fit its flash, mcu/build/fit.py)."""
    if not section:
        return {"weights_default": "", "weights_default_doc": "by default the compiler's (.rodata)"}
    return {"weights_default": f' __attribute__((section("{section}")))',
            "weights_default_doc": f"by default {section}, which the board's linker script places"}


def emit(graph: Graph, mem: MemoryPlan, *, name: str = DEFAULT_NAME, board: str = "",
         weights_section: str = "") -> tuple[dict[str, str], Manifest]:
    """The text of <name>.h, <name>.c and its weights file (codegen/names.py: model.h, model.c and weights.c for the
    default name), and the manifest (written as JSON by the caller). weights_section: the weights' default linker
    section, "" for the compiler's."""
    macro = check_name(name).upper()
    header, source, weights_file = model_files(name)
    consts = const_records(graph, name)
    calls = [call_record(graph, mem, name, i, n) for i, n in enumerate(graph.nodes) if n.op != "alias"]
    quants = [q for i, n in enumerate(graph.nodes) if n.op != "alias" and (q := quant_record(name, i, n))]
    inputs = [io_record(graph, macro, "input", i, t) for i, t in enumerate(graph.user_inputs)]
    outputs = [io_record(graph, macro, "output", i, t) for i, t in enumerate(graph.user_outputs)]
    uses_arena = any(loc.kind == "arena" for loc in mem.locations.values())
    state = state_records(graph, mem, name)
    ctx = {"name": name, "macro": macro, "header": header, "source": source, "weights_file": weights_file, "guard": f"{macro}_H", "arena_bytes": mem.arena_bytes,
           "arena_align": ARENA_ALIGN, "inputs": inputs, "outputs": outputs,
           "inputs_bytes": sum(x["bytes"] for x in inputs), "outputs_bytes": sum(x["bytes"] for x in outputs),
           **run_signature(inputs, outputs, uses_arena, bool(state)), "state": state,
           "state_bytes": state_offsets(graph)[1], "generate": generate_record(inputs, outputs, state),
           "guard_bytes": ARENA_GUARD_BYTES, "consts": consts, "quants": quants, "calls": calls,
           "uses_arena": uses_arena, "io_doc": IO_DOC["float32" if all(x["scale"] is None for x in inputs + outputs)
                                                       else "int8"],
           "total_bytes": sum(c["bytes"] for c in consts), **weights_placement(weights_section)}
    manifest = build_manifest(graph, mem, name=name, board=board, inputs=inputs, outputs=outputs,
                              weights_bytes=ctx["total_bytes"], state=state, state_bytes=ctx["state_bytes"],
                              generate=ctx["generate"])
    env = _env()
    return {
        header: env.get_template("model.h.j2").render(ctx),
        source: env.get_template("model.c.j2").render(ctx),
        weights_file: env.get_template("weights.c.j2").render(ctx),
    }, manifest
