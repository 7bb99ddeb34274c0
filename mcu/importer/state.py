"""State kept between calls: the buffers a model mutates become explicit inputs and outputs of the program.

torch.export writes `self.h.copy_(h)`, `self.cache[:, :, pos] = k` and `index_copy_` on a buffer as in-place ops;
after functionalization (`run_decompositions`) each mutated buffer is a BUFFER input whose new value is a
BUFFER_MUTATION output. lift_state turns every such pair into a USER_INPUT after forward's own inputs and a
USER_OUTPUT after its own outputs, in the order of the program's buffers, so that quantization calibrates the state
like an activation and the importer sees ordinary tensors. What the pair was is recorded in `ep_states(ep)`:
the buffer's name, its initial value and the source line of its last write; the compiler turns the pairs back into
one planned state region (codegen/ir.py's `State`).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch.export.exported_program import ModuleCallEntry, ModuleCallSignature
from torch.export.graph_signature import ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec
from torch.utils import _pytree as pytree

from mcu.codegen.ir import DTYPES, Graph, Node, State, Tensor, verify
from mcu.errors import ExportError
from mcu.importer.ops import source_line

META = "mcu_state"  # ep.graph_module.meta key: tuple[LiftedState, ...]


@dataclasses.dataclass(frozen=True)
class LiftedState:
    name: str            # the buffer's name in the model (h, layers.0.k_cache)
    init: torch.Tensor   # its value when the model was exported: what <prefix>_reset writes
    source: str          # the user's line that writes it (the last mutation)


def mutates_buffers(ep: torch.export.ExportedProgram) -> bool:
    """Does the program write any buffer (an in-place op on a BUFFER input)?"""
    buffers = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.BUFFER}
    return any(n.op == "call_function" and getattr(n.target, "_schema", None) is not None
               and n.target._schema.is_mutable and n.args and getattr(n.args[0], "name", None) in buffers
               for n in ep.graph.nodes)


def ep_states(ep: torch.export.ExportedProgram) -> tuple[LiftedState, ...]:
    """The states lift_state made of ep's buffers (after its user inputs and outputs, in this order); () if none."""
    return ep.graph_module.meta.get(META, ())


def lift_state(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """ep (functionalized) with each mutated buffer as a trailing user input and its new value as a trailing user
    output; ep itself when nothing is mutated. A new program: the user's stays as it was."""
    if mutates_buffers(ep):
        _check_shapes(ep)
        ep = ep.run_decompositions({})  # functional: BUFFER_MUTATION outputs instead of in-place ops
    sig = ep.graph_signature
    mutated = {s.target: s.arg.name for s in sig.output_specs if s.kind == OutputKind.BUFFER_MUTATION}
    if not mutated:
        return ep
    gm = ep.graph_module
    nodes = {n.name: n for n in gm.graph.nodes}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    lifted = [s for s in sig.input_specs if s.kind == InputKind.BUFFER and s.target in mutated]
    for s in lifted:  # the state placeholders after every other input, in buffer order
        placeholders[-1].append(nodes[s.arg.name])
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    outs = list(output.args[0])
    kinds = [s.kind for s in sig.output_specs]
    user_outs = [o for o, k in zip(outs, kinds) if k != OutputKind.BUFFER_MUTATION]
    updates = [nodes[mutated[s.target]] for s in lifted]
    output.args = (tuple(user_outs + updates),)
    _check_updates(updates, lifted)
    input_specs = [s for s in sig.input_specs if s not in lifted] + [
        InputSpec(InputKind.USER_INPUT, s.arg, None) for s in lifted]
    output_specs = [s for s in sig.output_specs if s.kind != OutputKind.BUFFER_MUTATION] + [
        OutputSpec(OutputKind.USER_OUTPUT, dataclasses.replace(s.arg, name=u.name), None)
        for s, u in zip(lifted, updates)]
    gm.recompile()
    states = tuple(LiftedState(s.target, ep.state_dict[s.target].detach().clone() if s.target in ep.state_dict
                               else ep.constants[s.target].detach().clone(), source_line(u) or "")
                   for s, u in zip(lifted, updates))
    new = torch.export.ExportedProgram(
        root=gm, graph=gm.graph, graph_signature=ExportGraphSignature(input_specs, output_specs),
        state_dict={k: v for k, v in ep.state_dict.items() if k not in mutated},
        range_constraints=ep.range_constraints, module_call_graph=_call_graph(ep, input_specs, output_specs),
        constants={k: v for k, v in ep.constants.items() if k not in mutated}, verifiers=ep.verifiers)
    new.graph_module.meta[META] = states
    return new


def _check_shapes(ep: torch.export.ExportedProgram) -> None:
    """A buffer overwritten by copy_ with a value of another shape (`self.h = torch.cat([self.h, x])`: a buffer
    that grows) has no fixed place in the state region: an ExportError naming it and its line."""
    names = {s.arg.name: s.target for s in ep.graph_signature.input_specs if s.kind == InputKind.BUFFER}
    for n in ep.graph.nodes:
        if n.op == "call_function" and n.target == torch.ops.aten.copy_.default and n.args[0].name in names:
            old, new = n.args[0].meta.get("val"), n.args[1].meta.get("val") if hasattr(n.args[1], "meta") else None
            if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and old.shape != new.shape:
                raise ExportError(f"buffer '{names[n.args[0].name]}' is written at "
                                  f"{source_line(n) or '(no source line recorded)'} with a value of shape "
                                  f"{list(new.shape)} but holds {list(old.shape)}: a state keeps its shape between "
                                  f"calls; keep a fixed-size window (shift it with cat + slice) instead of growing it")


def _check_updates(updates, lifted) -> None:
    """A state's new value must be a tensor the model computes, of the buffer's shape and type."""
    for u, s in zip(updates, lifted):
        val, old = u.meta.get("val"), next(iter(u.graph.find_nodes(op="placeholder", target=s.arg.name)), None)
        was = old.meta.get("val") if old is not None else None
        if isinstance(val, torch.Tensor) and isinstance(was, torch.Tensor) and \
                (tuple(val.shape) != tuple(was.shape) or val.dtype != was.dtype):
            raise ExportError(f"buffer '{s.target}' is written at {source_line(u) or '(no source line recorded)'} "
                              f"with a {val.dtype} {list(val.shape)} value but holds {was.dtype} "
                              f"{list(was.shape)}; a state keeps its shape and type between calls")


def _call_graph(ep, input_specs, output_specs) -> list[ModuleCallEntry]:
    """ep's module call graph with the top-level signature taking the user inputs (and giving the user outputs)
    as flat positional tensors, the lifted states included."""
    n_in = sum(s.kind == InputKind.USER_INPUT for s in input_specs)
    n_out = sum(s.kind == OutputKind.USER_OUTPUT for s in output_specs)
    in_spec = pytree.tree_flatten((tuple(range(n_in)), {}))[1]
    out_spec = pytree.tree_flatten(tuple(range(n_out)))[1]
    top = ep.module_call_graph[0]
    sig = ModuleCallSignature(inputs=[], outputs=[], in_spec=in_spec, out_spec=out_spec,
                              forward_arg_names=[s.arg.name for s in input_specs if s.kind == InputKind.USER_INPUT])
    return [ModuleCallEntry(top.fqn, sig)] + list(ep.module_call_graph[1:])


def attach_state(graph: Graph, states: tuple[LiftedState, ...]) -> Graph:
    """The imported IR graph with its trailing inputs and outputs marked as `states` (codegen/ir.py's State):
    each initial value in its tensor's type (quantized on its qparams), an update on other qparams requantized
    onto the state's (a state is read next call as it was written)."""
    if not states:
        return graph
    k, tensors, nodes, outputs = len(states), dict(graph.tensors), list(graph.nodes), list(graph.outputs)
    records = []
    for j, s in enumerate(states):
        i, o = len(graph.inputs) - k + j, len(outputs) - k + j
        t, u = tensors[graph.inputs[i]], tensors[outputs[o]]
        if u.qparams != t.qparams or u.dtype != t.dtype:
            name = f"t{len(tensors)}"
            tensors[name] = Tensor(name, u.shape, t.dtype, t.qparams)
            op, attrs = ("lut", {"fn": ("clone.default", (...,), ())}) if t.dtype == u.dtype == "int8" else ("convert", {})
            nodes.append(Node(f"n{len(nodes)}_state_{op}", op, (u.name,), (name,), attrs, s.source))
            outputs[o] = name
        records.append(State(s.name, i, o, _stored_init(s, t), s.source))
    return verify(Graph(tensors, tuple(nodes), graph.inputs, tuple(outputs), tuple(records)))


def _stored_init(s: LiftedState, t: Tensor) -> np.ndarray:
    """A state's initial value in its IR tensor's type, torch order."""
    x = s.init.detach().to(torch.float64).numpy().reshape(t.shape if not t.layout else s.init.shape)
    if t.qparams is None:
        return np.ascontiguousarray(x.astype(DTYPES[t.dtype]))
    info = np.iinfo(DTYPES[t.dtype])
    q = np.round(x.astype(np.float32) * np.float32(1.0 / t.qparams.s)) + t.qparams.zp
    return np.clip(q, info.min, info.max).astype(DTYPES[t.dtype])
