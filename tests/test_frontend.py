"""Export, quantization, import and passes: each stage alone, and the errors users see."""
import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.importer.from_quantized import import_quantized
from mcu.codegen.ir import Graph, IRError, Tensor, verify
from calls import call
from mcu.codegen.pipeline import PASSES
from mcu.errors import McuError
from mcu.errors import UnsupportedOpError, ExportError
from mcu.importer.export import export
from mcu.quantization.quantizer import quantize
from tests.opmodels import make


class Pool3d(nn.Module):
    def forward(self, x):
        return torch.nn.functional.max_pool3d(x, 2)  # the line the error must name


def _import(name):
    model, example, calib = make(name)
    return import_quantized(quantize(export(model, example), example, calib))


def test_unsupported_op_names_op_source_line_and_alternative():
    with pytest.raises(UnsupportedOpError) as exc:
        export(Pool3d(), (torch.randn(1, 1, 2, 4, 4),))
    msg = str(exc.value)
    assert "unsupported op 'max_pool3d'" in msg
    assert "test_frontend.py:" in msg and "return torch.nn.functional.max_pool3d(x, 2)" in msg
    assert "use max_pool2d instead" in msg


def test_batchnorm_is_folded_and_relu6_fused():
    g = _import("conv_bn_relu6")
    assert [n.op for n in g.nodes] == ["conv2d"]
    conv = g.nodes[0]
    assert conv.attrs["act"] == (0.0, 6.0)
    assert g.tensors[conv.inputs[1]].qparams.axis == 0  # per-channel weights
    assert g.tensors[conv.inputs[2]].dtype == "int32"     # int32 bias
    w = g.tensors[conv.inputs[1]].data
    assert w.dtype == np.int8 and w.min() >= -127 and np.abs(w).max(axis=(1, 2, 3)).min() == 127


def test_every_pass_keeps_the_ir_valid_and_lowers_everything():
    g = _import("flatten_linear")
    for p in PASSES:
        g = verify(p(g))
    ops = [n.call.portable if n.call else n.op for n in g.nodes]  # the portable kernel
    assert ops == ["mcu_conv2d_s8", "mcu_transpose_s8", "alias", "mcu_fully_connected_s8"]
    conv_w = g.tensors[(g.nodes[0].call.twin_inputs or g.nodes[0].inputs)[1]]  # before any repacking
    assert conv_w.shape == (4, 3, 3, 3) and conv_w.layout == "OHWI"
    assert g.tensors[g.inputs[0]].shape == (1, 5, 6, 3)  # NHWC input


def test_verify_catches_use_before_definition():
    t = Tensor("a", (1,), "int8")
    bad = Graph({"a": t, "b": Tensor("b", (1,), "int8")},
                (call("n0", "mcu_add_s8", ("b",), "a"),), ("a",), ("a",))
    with pytest.raises(IRError, match="reads b before it is defined"):
        verify(bad)


@pytest.mark.parametrize("batch, message", [
    ((torch.full((1, 20), float("nan")),), "NaN or Inf"),
    ((torch.randn(1, 21),), r"is \(1, 21\) torch.float32, expected \(1, 20\)"),
    ((torch.randn(1, 20), torch.randn(1, 20)), "has 2 inputs but the model takes 1"),
])
def test_bad_calibration_data_is_named(batch, message, tmp_path):
    model, example, _ = make("linear")
    with pytest.raises(McuError, match=message):
        mcu.compile(model, example, calibration=[batch], out_dir=tmp_path / "o")


def test_empty_calibration_set(tmp_path):
    model, example, _ = make("linear")
    with pytest.raises(McuError, match="calibration set is empty"):
        mcu.compile(model, example, calibration=[], out_dir=tmp_path / "o")


def test_same_model_gives_the_same_bytes(tmp_path):
    model, example, calib = make("conv3x3_relu")
    a = mcu.compile(model, example, calibration=calib, out_dir=tmp_path / "a")
    b = mcu.compile(model, example, calibration=calib, out_dir=tmp_path / "b")
    for f in ("model.h", "model.c", "weights.c", "manifest.json"):
        assert (a.out_dir / f).read_bytes() == (b.out_dir / f).read_bytes(), f


def test_output_folder_with_foreign_files_is_refused_then_kept_with_force(tmp_path):
    model, example, calib = make("linear")
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(McuError, match=r"holds files mcu did not write \(notes.txt\)"):
        mcu.compile(model, example, calibration=calib, out_dir=out)
    mcu.compile(model, example, calibration=calib, out_dir=out, force=True)
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "model.c").is_file()


def test_pt2_file_round_trip_and_corrupt_file(tmp_path):
    model, example, calib = make("conv1x1")
    path = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(model, example), str(path))
    pkg = mcu.compile(str(path), calibration=calib, out_dir=tmp_path / "o")
    direct = mcu.compile(model, example, calibration=calib, out_dir=tmp_path / "d")
    assert (pkg.out_dir / "weights.c").read_bytes() == (direct.out_dir / "weights.c").read_bytes()
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ExportError, match="is not a loadable .pt2 file"):
        mcu.compile(str(bad), out_dir=tmp_path / "x")


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_bias_correction_cancels_the_weight_rounding_on_the_calibration_mean(kind):
    """With one calibration input, E[x] is that input (a 1x1 conv's taps see no padding), so the corrected
    bias removes the weight rounding's output shift exactly and only the output's own rounding is left. The
    input is on its int8 grid (k / 255, max 1), so its quantization adds nothing; the bias makes the outputs
    small, so the output LSB is small and the uncorrected shift spans many of them."""
    torch.manual_seed(5)
    v = torch.randint(64, 256, (64,)).float() / 255
    v[0] = 1.0
    if kind == "linear":
        model, x = nn.Linear(64, 8).eval(), v.reshape(1, 64)
    else:
        model, x = nn.Conv2d(64, 8, 1).eval(), v.reshape(1, 64, 1, 1).expand(1, 64, 2, 2).contiguous()
    with torch.no_grad():
        model.bias.copy_(0.01 * torch.arange(1, 9) - model(x).reshape(8, -1)[:, 0] + model.bias)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ep, want = export(model, (x,)), model(x).detach()
    errs = {}
    for on in (True, False):
        q = quantize(ep, (x,), [(x,)], bias_correction=on)
        out_scale = next(n.args[1] for n in q.graph.nodes if "quantize_per_tensor" in str(n.target)
                         and n.args[0].op == "call_function" and n.args[0].name.startswith(kind))
        errs[on] = ((q(x) - want).abs().max() / out_scale).item()  # in output LSB
    assert errs[True] <= 0.501, errs
    assert errs[False] > 3.0, errs
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())  # the user's model untouched
