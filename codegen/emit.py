"""Emission: a lowered, planned graph -> the text of model.h, model.c and weights.c, and its Manifest.

Python computes every list and string; the Jinja templates in templates/ only loop and print.
Names and order derive from the graph alone, so the same model gives the same bytes.
"""
from __future__ import annotations

from importlib import resources

import jinja2
import numpy as np

from mcu.codegen.ir import C_TYPES, DTYPES, Graph, Tensor
from mcu.codegen.cheader import check_params
from mcu.codegen.kernels import KERNELS
from mcu.codegen.manifest import Manifest, build_manifest
from mcu.codegen.memory import ARENA_ALIGN, MemoryPlan, output_extent
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


def emit(graph: Graph, mem: MemoryPlan, *, name: str = "model", board: str = "") -> tuple[dict[str, str], Manifest]:
    """The text of model.h, model.c and weights.c, and the manifest (written as JSON by the caller)."""
    macro = name.upper()

    def cname(t: str) -> str:
        return f"{name}_w_{t}"

    def expr(t: str | None) -> str:
        if t is None:
            return "NULL"
        loc, tensor = mem.locations[t], graph.tensors[t]
        if loc.kind == "const":
            return cname(t)
        if loc.kind in ("input", "output"):
            return f"{loc.kind}{loc.index}"
        # Arena buffers are word-aligned (memory.BUFFER_ALIGN): the cast through void * tells -Wcast-align so.
        via = "(void *)" if np.dtype(DTYPES[tensor.dtype]).itemsize > 1 else ""
        return f"({C_TYPES[tensor.dtype]} *){via}(a + {loc.index})"

    used_consts = sorted({t for n in graph.nodes for t in n.inputs + tuple(n.attrs.get("quant") or ())
                          if t is not None and graph.tensors[t].is_const})
    consts = []
    for t in used_consts:
        tensor = graph.tensors[t]
        consts.append({"cname": cname(t), "ctype": C_TYPES[tensor.dtype], "size": int(tensor.data.size),
                       "comment": f"{t}: {tensor.dtype} [{', '.join(map(str, tensor.shape))}]"
                                  + (f" {tensor.layout}" if tensor.layout else ""),
                       "body": c_array_body(tensor.data, tensor.dtype), "bytes": tensor.nbytes})

    calls, quants = [], []
    for i, node in enumerate(graph.nodes):
        if node.op == "alias":
            continue
        a = node.attrs
        args = [f"&{name}_p{i}"]
        if a["quant"]:
            quants.append({"cname": f"{name}_q{i}", "mult": cname(a["quant"][0]), "shift": cname(a["quant"][1])})
            args.append(f"&{name}_q{i}")
        spec = KERNELS[a["kernel"]]
        check_params(spec.params_type, a["params"], f"{node.name} ({a['kernel']})")
        if spec.input_array:  # one `const T *const inputs[]` argument, as a C99 compound literal
            ctype = C_TYPES[graph.tensors[node.inputs[0]].dtype]
            args.append(f"(const {ctype} *const[]){{{', '.join(expr(t) for t in node.inputs)}}}")
            args.append(expr(node.outputs[0]))
        else:  # scratch (outputs after the first) goes right before the output, as in the C signatures
            args += [expr(t) for t in node.inputs + node.outputs[1:]] + [expr(node.outputs[0])]
        out = graph.tensors[node.outputs[0]]
        comment = f"{node.name}: {a['kernel']} -> [{', '.join(map(str, out.shape))}]"
        if node.source:
            comment += f"  ({node.source.replace('*/', '* /')})"
        # the debug dump takes every byte a strided output spans (mcu/debug.py gathers its pixels)
        calls.append({"output": expr(node.outputs[0]), "output_bytes": output_extent(graph, node),
                      "params_type": spec.params_type, "params_name": f"{name}_p{i}",
                      "params_c": c_struct(a["params"]), "call": f"{a['kernel']}({', '.join(args)})",
                      "comment": comment})

    def io(kind: str, i: int, t: str) -> dict:
        tensor = graph.tensors[t]
        return {"name": f"{kind}{i}", "macro": f"{macro}_{kind.upper()}{i}", "shape": list(tensor.shape),
                "layout": tensor.layout or "torch order", "ctype": C_TYPES[tensor.dtype], "dtype": tensor.dtype,
                "bytes": tensor.nbytes, "scale": _float_literal(tensor.qparams.s) if tensor.qparams else None,
                "zero_point": tensor.qparams.zp if tensor.qparams else None, "tensor": t}

    uses_arena = any(loc.kind == "arena" for loc in mem.locations.values())
    inputs = [io("input", i, t) for i, t in enumerate(graph.inputs)]
    outputs = [io("output", i, t) for i, t in enumerate(graph.outputs)]
    run_params = ", ".join([f"const {x['ctype']} *{x['name']}" for x in inputs]
                           + [f"{x['ctype']} *{x['name']}" for x in outputs] + ["void *arena"])
    run_args = ", ".join([x["name"] for x in inputs + outputs] + ["arena"])
    pointers = [x["name"] for x in inputs + outputs] + (["arena"] if uses_arena else [])
    null_check = " || ".join(f"{p} == NULL" for p in pointers)
    run_v_args = ", ".join([f"(const {x['ctype']} *)inputs[{i}]" for i, x in enumerate(inputs)]
                           + [f"({x['ctype']} *)outputs[{i}]" for i, x in enumerate(outputs)] + ["arena"])
    ctx = {"name": name, "macro": macro, "guard": f"{macro}_H", "arena_bytes": mem.arena_bytes,
           "arena_align": ARENA_ALIGN, "inputs": inputs, "outputs": outputs,
           "inputs_bytes": sum(x["bytes"] for x in inputs), "outputs_bytes": sum(x["bytes"] for x in outputs),
           "run_params": run_params, "run_args": run_args, "run_v_args": run_v_args, "null_check": null_check,
           "guard_bytes": ARENA_GUARD_BYTES, "consts": consts, "quants": quants, "calls": calls,
           "uses_arena": uses_arena, "io_doc": IO_DOC["float32" if all(x["scale"] is None for x in inputs + outputs)
                                                       else "int8"],
           "total_bytes": sum(c["bytes"] for c in consts)}
    manifest = build_manifest(graph, mem, name=name, board=board, inputs=inputs, outputs=outputs,
                              weights_bytes=ctx["total_bytes"])
    env = _env()
    return {
        "model.h": env.get_template("model.h.j2").render(ctx),
        "model.c": env.get_template("model.c.j2").render(ctx),
        "weights.c": env.get_template("weights.c.j2").render(ctx),
    }, manifest
