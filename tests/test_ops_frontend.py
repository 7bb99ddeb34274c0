"""Op breadth through the front end and the passes: each op's export, quantizer annotation, IR mapping,
layout (NHWC) handling and lowering, checked op by op on small models (no QEMU)."""
import numpy as np
import pytest
import torch
from torch import nn
import torch.nn.functional as F

import mcu
from mcu.codegen.kernels import KERNELS
from mcu.cli import main as cli_main
from mcu.errors import QuantizationError
from mcu.importer.from_quantized import import_quantized
from mcu.codegen.ir import verify
from mcu.codegen.errors import LoweringError
from mcu.codegen.pipeline import PASSES
from mcu.importer.ops import SUPPORTED_OPS
from mcu.errors import UnsupportedOpError
from mcu.importer.export import export
from mcu.quantization.quantizer import quantize
from tests.opmodels import Fn, make

aten = torch.ops.aten


def _import(model, *shapes):
    example = tuple(torch.randn(s) for s in shapes)
    return import_quantized(quantize(export(model.eval(), example), example))


def _lower(model, *shapes):
    g = _import(model, *shapes)
    for p in PASSES:
        g = verify(p(g))
    return g


def _calls(g):
    """The portable kernel of every call (select_kernels may have picked a faster variant), or the op."""
    return [n.call.portable if n.op == "call" else n.op for n in g.nodes]


def _compile(name, tmp_path):
    model, example, calib = make(name)
    return mcu.compile(model, example, calibration=calib, out_dir=tmp_path / name)


# ---- export ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["cat", "mul", "sub", "sigmoid", "tanh", "hardswish", "hardsigmoid", "leaky_relu",
                                "gelu", "clamp", "upsample_nearest2d", "sum", "conv1d", "max_pool1d", "avg_pool1d",
                                "matmul", "bmm", "permute", "transpose", "layer_norm"])
def test_new_ops_are_supported_at_export(op):
    names = {str(o).split(".")[1] for o in SUPPORTED_OPS}
    assert op in names


def test_unsupported_op_still_named_with_alternative():
    with pytest.raises(UnsupportedOpError, match="unsupported op 'max_pool3d'.*use max_pool2d instead"):
        export(Fn(lambda x: torch.nn.functional.max_pool3d(x, 2)), (torch.randn(1, 1, 2, 4, 4),))


# ---- quantizer and frontend -------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, scale, zp", [(torch.sigmoid, 1 / 256, -128), (torch.tanh, 1 / 128, 0)],
                         ids=["sigmoid", "tanh"])
def test_sigmoid_tanh_outputs_have_fixed_qparams(fn, scale, zp):
    g = _import(Fn(fn), (1, 8))
    (node,) = g.nodes
    assert node.op == "lut" and node.attrs["fn"][0] == f"{fn.__name__}.default"
    assert g.tensors[node.outputs[0]].qparams.scale == (scale,) and g.tensors[node.outputs[0]].qparams.zp == zp


@pytest.mark.parametrize("fn, spec", [
    (lambda x: F.leaky_relu(x, 0.2), ("leaky_relu.default", (..., 0.2), ())),
    (lambda x: F.gelu(x, approximate="tanh"), ("gelu.default", (...,), (("approximate", "tanh"),))),
    (lambda x: 1.0 - x, ("rsub.Scalar", (..., 1.0), ())),
    (lambda x: x * 3, ("mul.Tensor", (..., 3), ())),
    (F.hardswish, ("hardswish.default", (...,), ())),
], ids=["leaky_relu", "gelu_tanh", "rsub", "mul_scalar", "hardswish"])
def test_unary_functions_become_lut_nodes_with_their_float_function(fn, spec):
    (node,) = _import(Fn(fn), (1, 8)).nodes
    assert (node.op, node.attrs["fn"]) == ("lut", spec)


def test_lut_ops_observe_their_own_output():
    g = _import(Fn(F.hardswish), (1, 8))
    x, out = g.tensors[g.inputs[0]], g.tensors[g.outputs[0]]
    assert x.qparams != out.qparams


def test_fixed_qparams_feeding_an_add_get_an_identity_lut_requantization():
    g = _import(Fn(lambda x, y: torch.sigmoid(x) + y), (1, 8), (1, 8))
    assert [n.op for n in g.nodes] == ["lut", "lut", "add"]
    assert g.nodes[1].attrs["fn"][0] == "clone.default"


@pytest.mark.parametrize("fn, op, attrs", [
    (lambda x, y: torch.cat([x, y], -1), "concat", {"dim": 3}),
    (lambda x, y: x.permute(0, 2, 3, 1), "permute", {"perm": (0, 2, 3, 1)}),
    (lambda x, y: x.transpose(1, -1), "permute", {"perm": (0, 3, 2, 1)}),
    (lambda x, y: x.sum((1, -1), keepdim=True), "sum", {"dims": (1, 3), "keepdim": True}),
    (lambda x, y: x.clamp(max=0.5), "clamp", {"act": (float("-inf"), 0.5)}),
    (lambda x, y: F.interpolate(x, scale_factor=(2, 3)), "upsample_nearest", {"scale": (2, 3)}),
    (lambda x, y: x - y, "sub", {}),
    (lambda x, y: x * y, "mul", {}),
    (lambda x, y: x @ y, "matmul", {}),
], ids=["cat", "permute", "transpose", "sum", "clamp_max", "upsample", "sub", "mul", "matmul"])
def test_frontend_maps_ops_with_attrs(fn, op, attrs):
    nodes = _import(Fn(fn), (1, 2, 4, 4), (1, 2, 4, 4)).nodes
    assert nodes[-1].op == op and {k: nodes[-1].attrs[k] for k in attrs} == attrs


def test_layer_norm_keeps_float_parameters():
    ln = nn.LayerNorm(6)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
    g = _import(ln, (2, 3, 6))
    (node,) = g.nodes
    w = g.tensors[node.inputs[1]]
    assert node.op == "layer_norm" and (node.attrs["normalized"], node.attrs["eps"]) == (1, 1e-5)
    assert w.dtype == "float32" and np.array_equal(w.data, ln.weight.detach().numpy())


@pytest.mark.parametrize("fn, shapes, message", [
    (lambda x: F.max_pool2d(x, 2, dilation=2), [(1, 2, 6, 6)], "max_pool2d with dilation"),
])
def test_ops_without_an_int8_form_are_named(fn, shapes, message):
    with pytest.raises(QuantizationError, match=message):
        _import(Fn(fn), *shapes)


# ---- passes: decomposition, layout, transposes --------------------------------------------------------------------

def test_conv1d_runs_on_the_2d_kernel_without_transposes_between_1d_ops():
    model, example, _ = make("conv1d_pool1d")
    g = _lower(model, *[e.shape for e in example])
    kernels = [k for k in _calls(g) if k != "alias"]
    # a transpose only where the [N, C, L] input enters (the output has L = 1: a reshape)
    assert kernels == ["mcu_transpose_s8", "mcu_conv2d_s8", "mcu_maxpool2d_s8", "mcu_conv2d_grouped_s8",
                       "mcu_avgpool2d_s8"]
    conv = next(n for n in g.nodes if n.op == "call" and n.call.portable == "mcu_conv2d_s8")
    assert conv.call.params["filter"] == (6, 1, 3, 4) and conv.call.params["pad_left"] == 1


def test_grouped_conv_uses_the_grouped_kernel_and_depthwise_stays_depthwise():
    assert _calls(_lower(nn.Conv2d(4, 6, 3, groups=2), (1, 4, 5, 5))) == ["mcu_conv2d_grouped_s8"]
    assert _calls(_lower(nn.Conv2d(4, 4, 3, groups=4), (1, 4, 5, 5))) == ["mcu_dwconv2d_s8"]


def test_concat_axis_is_remapped_to_nhwc_and_equal_qparams_are_copied():
    g = _lower(Fn(lambda x: torch.cat([x, x], 1)), (1, 3, 4, 5))
    (call,) = g.nodes
    p = call.call.params
    assert KERNELS[call.call.kernel].input_array and p["outer"] == 20 and p["sizes"] == (3, 3)  # channels last: axis 3
    assert p["multiplier"] == (1 << 30, 1 << 30) and p["shift"] == (1, 1)


def test_concat_of_ten_inputs_is_chained():
    g = _lower(Fn(lambda x: torch.cat([x * (i + 1) for i in range(10)], 1)), (1, 2, 3))
    concats = [n for n in g.nodes if n.op == "call" and n.call.kernel == "mcu_concat_s8"
               or n.op == "alias" and n.attrs.get("view") == "concat"]  # the first is written in place (a view)
    params = [c.call.params if c.call else c.attrs["params"] for c in concats]  # a view keeps the call's params
    assert [(c.op, p["num_inputs"]) for c, p in zip(concats, params)] == [("alias", 8), ("call", 3)]


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (0, 3, 1, 2), (3, 2, 1, 0), (0, 1, 3, 2)])
def test_permute_of_a_4d_tensor_is_one_transpose_in_stored_order(perm):
    g = _lower(Fn(lambda x: x.permute(*perm) * 2.0), (1, 2, 3, 4))
    x = np.arange(24, dtype=np.int8).reshape(1, 2, 3, 4)
    tr = [n for n in g.nodes if n.op == "call" and n.call.kernel == "mcu_transpose_s8"]
    assert len(tr) == 1
    stored_in = x.transpose(0, 2, 3, 1)
    params = tr[0].call.params  # the kernel's 4-d view: adjacent axes merged, size-1 axes dropped
    out = stored_in.reshape(params["in_dims"]).transpose(params["perm"])
    want = x.transpose(perm)
    want = want.transpose(0, 2, 3, 1)  # the 4-d result is stored NHWC too
    assert np.array_equal(out.reshape(-1), want.reshape(-1))


@pytest.mark.parametrize("dims, keepdim, nhwc_dims", [((1,), True, (3,)), ((2, 3), False, None), ((0, 1), True, (0, 3))])
def test_mean_and_sum_dims_follow_the_layout(dims, keepdim, nhwc_dims):
    g = _lower(Fn(lambda x: x.sum(dims, keepdim=keepdim)), (2, 3, 4, 5))
    (red,) = [n for n in g.nodes if n.op == "call" and n.call.kernel == "mcu_reduce_sum_s8"]
    p = red.call.params
    reduced = tuple(i for i in range(4) if p["output"][i] != p["input"][i])
    assert p["input"] == (2, 4, 5, 3) and reduced == (nhwc_dims or (1, 2))


def test_spatial_mean_still_becomes_an_average_pool():
    assert "mcu_avgpool2d_s8" in _calls(_lower(Fn(lambda x: x.mean((2, 3))), (1, 3, 5, 5)))


def test_broadcast_operand_of_lower_rank_is_viewed_as_nhwc():
    g = _lower(Fn(lambda x, y: x - y), (1, 4, 3, 5), (5,))
    (call,) = [n for n in g.nodes if n.op == "call"]
    p = call.call.params
    # the broadcasting add, or its 16-bit-multiplier form where that arithmetic's bound holds (a sub: M2 < 0)
    assert call.call.portable in ("mcu_add_broadcast_s8", "mcu_add_m16_s8")
    assert p["subtract"] == 1 if "subtract" in p else p["multiplier2"] < 0 < p["multiplier1"]
    assert tuple(p["input1"]) == (1, 3, 5, 4) and tuple(p["input2"]) == (1, 1, 5, 1)
    assert tuple(p["output"]) == (1, 3, 5, 4)


def test_equal_shape_add_keeps_the_plain_add_kernel():
    assert _calls(_lower(Fn(lambda x, y: x + y), (1, 2, 3, 3), (1, 2, 3, 3))) == ["mcu_add_s8"]


def test_linear_on_4d_runs_in_torch_order_and_round_trips_cancel():
    model, example, _ = make("permute_linear")
    kernels = [k for k in _calls(_lower(model, example[0].shape)) if k != "alias"]
    # permute(0,2,3,1) of an NHWC tensor is torch order already, the GELU between the linears commutes with
    # the transposes around them, and permuting back gives the NHWC result: no transpose at all
    assert kernels == ["mcu_fully_connected_s8", "mcu_lut_s8", "mcu_fully_connected_s8"]


def test_matmul_broadcast_of_part_of_the_batch_is_refused():
    with pytest.raises(LoweringError, match="batch dims"):
        _lower(Fn(lambda a, b: a @ b), (2, 3, 4, 5), (2, 1, 5, 2))


def test_matmul_with_a_broadcast_operand():
    g = _lower(Fn(lambda a, b: a @ b), (2, 3, 4), (4, 5))
    (call,) = g.nodes
    p = call.call.params
    assert (p["batches"], p["lhs_batches"], p["rhs_batches"], p["m"], p["k"], p["n"]) == (2, 2, 1, 3, 4, 5)


def test_linear_on_3d_input_folds_leading_dims_into_batches():
    g = _lower(nn.Linear(8, 5), (2, 3, 8))
    (call,) = g.nodes
    assert _calls(g) == ["mcu_fully_connected_s8"] and call.call.params["batches"] == 6


def test_standalone_relu_on_a_model_input_is_a_lut_and_fused_clamp_is_not():
    assert _calls(_lower(Fn(F.relu), (1, 8))) == ["mcu_lut_s8"]
    assert _calls(_lower(nn.Sequential(nn.Linear(8, 4), nn.Hardtanh(-0.5, 0.5)), (1, 8))) == ["mcu_fully_connected_s8"]


# ---- lowering output: no float fallback, manifest, C text ------------------------------------------------------------

def test_layer_norm_is_one_integer_kernel_without_a_fallback(tmp_path, capsys):
    pkg = _compile("layer_norm_3d", tmp_path)
    assert [n.call.kernel for n in pkg.graph.nodes if n.op == "call"] == ["mcu_layer_norm_s8"]
    assert pkg.manifest["fallbacks"] == []
    assert not [t for t in pkg.graph.tensors.values() if t.dtype == "float32" and not t.is_const]
    model_c = (pkg.out_dir / "model.c").read_text()
    assert ".var_shift = " in model_c and ".eps = " in model_c


def test_cli_compile_prints_no_fallback_for_layer_norm(tmp_path, capsys, monkeypatch):
    import tests.opmodels as opmodels
    monkeypatch.setattr(opmodels, "cli_layer_norm", lambda: make("layer_norm_3d")[:2], raising=False)
    assert cli_main(["compile", "tests.opmodels:cli_layer_norm", "-o", str(tmp_path / "o")]) == 0
    assert "float32 fallback" not in capsys.readouterr().out


def test_int8_models_have_no_fallbacks(tmp_path):
    assert _compile("activations_lut", tmp_path).manifest["fallbacks"] == []


def test_concat_passes_its_inputs_as_a_compound_literal(tmp_path):
    text = (_compile("concat_channels", tmp_path).out_dir / "model.c").read_text()
    assert "mcu_concat_s8(&model_p0, (const int8_t *const[]){input0, input1}, output0)" in text


def test_lut_table_is_clamped_by_a_fused_activation():
    g = _lower(Fn(lambda x: F.relu(F.hardswish(x))), (1, 8))
    (call,) = g.nodes
    table = g.tensors[call.inputs[0]].data
    zp = g.tensors[g.outputs[0]].qparams.zp
    assert table.min() == max(zp, -128)


def test_nearest_upsample_1d_runs_on_the_2d_kernel():
    g = _lower(Fn(lambda x: F.interpolate(x, scale_factor=3)), (1, 4, 5))
    (up,) = [n for n in g.nodes if n.op == "call" and n.call.kernel == "mcu_upsample_nearest_s8"]
    assert up.call.params["scale_h"] == 1 and up.call.params["scale_w"] == 3


@pytest.mark.parametrize("fn", [F.gelu, torch.sigmoid, F.hardswish, lambda x: x.clamp(-0.3, 0.7)],
                         ids=["gelu", "sigmoid", "hardswish", "clamp"])
def test_lut_ops_equal_torchao_exactly(fn, tmp_path):
    """Tolerance 0 LSB: the table holds torch's own dequantize -> f -> quantize result for every input."""
    g = torch.Generator().manual_seed(3)
    calib = [(torch.randn(1, 256, generator=g) * 3,) for _ in range(4)]
    pkg = mcu.compile(Fn(fn), calib[0], calibration=calib, out_dir=tmp_path / "o")
    spec = pkg.manifest["outputs"][0]
    for _ in range(3):
        x = (torch.randn(1, 256, generator=g) * 3,)
        ao = np.round(pkg.torchao_reference(x)[0] / spec["scale"]) + spec["zero_point"]
        assert np.array_equal(pkg.reference(x)[0].astype(np.int64), ao.astype(np.int64))
