"""A lowered call's typed record (codegen/ir.py's Call): the verifier's rules and its form in ir.json."""
import json

import numpy as np
import pytest

from mcu.codegen.ir import Call, Graph, IRError, Node, Tensor, verify
from mcu.codegen.memory import plan_graph
from mcu.codegen.serialize import dump, load
from calls import call

PARAMS = {"size": 4}


def _graph(node: Node) -> Graph:
    consts = {n: Tensor(n, (4,), "int32", data=np.arange(4, dtype=np.int32)) for n in ("m", "s", "m2", "s2")}
    tensors = {"x": Tensor("x", (4,), "int8"), "y": Tensor("y", (4,), "int8"), **consts}
    return Graph(tensors, (node,), ("x",), ("y",))


def test_a_well_formed_call_passes():
    verify(_graph(call("n0", "mcu_lut_s8", ("x",), "y", PARAMS, ("m", "s"))))
    verify(_graph(call("n0", "mcu_lut_s8_x", ("x",), "y", PARAMS, ("m2", "s2"), twin="mcu_lut_s8",
                       twin_inputs=("x",), twin_quant=None)))


@pytest.mark.parametrize("node, match", [
    (Node("n0", "call", ("x",), ("y",), {"kernel": "mcu_lut_s8", "params": PARAMS}), "without a Call"),
    (Node("n0", "lut", ("x",), ("y",), call=Call("mcu_lut_s8", PARAMS)), "with a Call"),
    (Node("n0", "call", ("x",), ("y",), {"act": None}, call=Call("mcu_lut_s8", PARAMS)), "no attrs"),
    (call("n0", "", ("x",), "y", PARAMS), "kernel"),
    (call("n0", "mcu_lut_s8", ("x",), "y", PARAMS, fallback=3), "fallback"),
    (call("n0", "mcu_lut_s8", ("x",), "y", [("size", 4)]), "params"),
    (call("n0", "mcu_lut_s8", ("x",), "y", PARAMS, ("m", "nowhere")), "quant names 'nowhere'"),
    (call("n0", "mcu_lut_s8", ("x",), "y", PARAMS, ["m", "s"]), "quant is a list"),
    (call("n0", "mcu_lut_s8_x", ("x",), "y", PARAMS, twin="mcu_lut_s8", twin_inputs=("w",)), "twin_inputs names"),
    (call("n0", "mcu_lut_s8_x", ("x",), "y", PARAMS, twin_quant=("m", "s")), "twin constants"),
    (call("n0", "mcu_lut_s8", ("x",), "y", PARAMS, unfused=({"kernel": "mcu_lut_s8"},)), "unfused"),
])
def test_the_verifier_refuses_a_malformed_call(node, match):
    with pytest.raises(IRError, match=match):
        verify(_graph(node))


@pytest.mark.parametrize("fields, keys", [
    ({}, ["kernel", "params", "quant", "float_node"]),
    ({"fallback": "layer_norm"}, ["kernel", "params", "quant", "float_node", "fallback"]),
    ({"twin": "mcu_lut_s8"}, ["kernel", "params", "quant", "float_node", "twin"]),
    ({"twin": "mcu_lut_s8", "twin_inputs": ("x",), "twin_quant": None},  # null twin_quant: a selected variant
     ["kernel", "params", "quant", "float_node", "twin", "twin_inputs", "twin_quant"]),
])
def test_a_call_is_stored_as_the_attrs_it_always_had_and_loads_back(fields, keys):
    graph, mem = plan_graph(_graph(call("n0", "mcu_lut_s8", ("x",), "y", PARAMS, ("m", "s"), **fields)))
    text, arrays = dump(graph, mem)
    (node,) = json.loads(text)["graph"]["nodes"]
    assert list(node["attrs"]) == keys
    loaded, _ = load(text, lambda i: arrays[i])
    assert loaded.nodes[0].call == graph.nodes[0].call and loaded.nodes[0].attrs == {}
    assert dump(loaded, mem)[0] == text
