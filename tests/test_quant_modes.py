"""Quantization choices beyond the defaults: activation observers, quantization-aware training (a model
quantized already), and the user's model left as it was."""
import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.errors import McuError
from mcu.importer.export import export
from mcu.metrics import lsb_error
from mcu.quantization.observers import OBSERVERS
from mcu.quantization.quantizer import McuQuantizer, quantize


def _act_scale(converted, name: str) -> float:
    """The scale of the quantize node right after the call named `name` (or after its ReLU)."""
    for n in converted.graph.nodes:
        if "quantize_per_tensor" in str(n.target) and n.args[0].op == "call_function" \
                and n.args[0].name.startswith(name):
            return float(n.args[1])
    raise AssertionError(f"no quantize node after {name}")


def _identity_scales(calib) -> dict[str, float]:
    """The output scale of an identity linear layer calibrated on calib, per observer."""
    model = nn.Sequential(nn.Linear(4, 4)).eval()
    with torch.no_grad():
        model[0].weight.copy_(torch.eye(4))
        model[0].bias.zero_()
    ep = export(model, calib[0])
    return {obs: _act_scale(quantize(ep, calib[0], calib, observer=obs, bias_correction=False), "linear")
            for obs in OBSERVERS}


def test_observers_set_the_range_as_documented():
    """One calibration value in 10,000 is an outlier at 100: minmax and mse (clipping it would cost more
    squared error than the coarser grid) cover it, percentile clips it."""
    g = torch.Generator().manual_seed(0)
    calib = [(torch.rand(25, 4, generator=g) * 2 - 1,) for _ in range(100)]  # 10,000 values in 100 batches
    calib[7][0][3] = torch.tensor([100.0, 0.0, 0.0, 0.0])
    scales = _identity_scales(calib)
    assert scales["minmax"] == pytest.approx(101.0 / 255, rel=1e-3)  # [-1, 100] in 255 steps
    assert scales["percentile"] < 2.1 / 255  # the 99.99th percentile stops at ~1
    assert scales["mse"] > 0.9 * scales["minmax"]


def test_mse_observer_trades_a_heavy_tail_for_a_finer_grid():
    """Laplace-distributed values: the least-squares range clips the extremes and its grid's squared error on
    the values is below min/max's."""
    from mcu.quantization.observers import MseObserver
    from torchao.quantization.pt2e import MinMaxObserver

    g = torch.Generator().manual_seed(0)
    u = torch.rand(10000, generator=g) - 0.5
    x = -torch.sign(u) * torch.log1p(-2 * u.abs())
    errs = {}
    for obs in (MseObserver, MinMaxObserver):
        o = obs(dtype=torch.qint8, quant_min=-128, quant_max=127)
        o(x)
        scale, zp = o.calculate_qparams()
        errs[obs.__name__] = float(((torch.fake_quantize_per_tensor_affine(x, float(scale), int(zp), -128, 127)
                                     - x) ** 2).sum())
    assert errs["MseObserver"] < 0.995 * errs["MinMaxObserver"], errs


def test_compile_leaves_the_users_model_in_its_mode_and_untouched(tmp_path):
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.ReLU()).train()
    with torch.no_grad():
        model[1].running_mean.fill_(0.5)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    mcu.compile(model, (torch.randn(1, 4),), out_dir=tmp_path / "o")
    assert model.training and all(m.training for m in model.modules())
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())


def _qat_model():
    """A conv + BatchNorm + ReLU, linear model prepared for QAT with our quantizer, trained 5 steps, converted."""
    from torchao.quantization.pt2e import move_exported_model_to_eval
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_qat_pt2e

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 36, 3))
    x = torch.randn(8, 1, 6, 6, generator=torch.Generator().manual_seed(1))
    y = x.flatten(1)[:, :3] * 2
    example = (x[:1],)
    prepared = prepare_qat_pt2e(torch.export.export(model, example).module(), McuQuantizer(qat=True))
    opt = torch.optim.SGD(prepared.parameters(), lr=0.01)
    losses = []
    for _ in range(5):
        loss = ((prepared(x[:1]) - y[:1]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return convert_pt2e(move_exported_model_to_eval(prepared)), x, losses


@pytest.fixture(scope="module")
def qat(tmp_path_factory):
    converted, x, losses = _qat_model()
    return converted, x, losses, mcu.compile(converted, (x[:1],), out_dir=tmp_path_factory.mktemp("qat") / "pkg")


def test_qat_model_compiles_with_batchnorm_folded_and_matches_torchao(qat):
    converted, x, losses, pkg = qat
    assert losses[-1] < losses[0]  # it did train
    assert [op["kernel"].split("_s8")[0] for op in pkg.manifest["ops"] if op["kernel"] != "alias"] == \
        ["mcu_conv2d", "mcu_transpose", "mcu_fully_connected"]  # BatchNorm folded into the conv, ReLU fused
    spec = pkg.manifest["outputs"][0]
    for i in range(8):
        ref = pkg.reference((x[i:i + 1],))[0]
        theirs = converted(x[i:i + 1]).detach().numpy()
        assert lsb_error(ref, theirs, spec["scale"], spec["zero_point"]).max() <= 1


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385", "mps3-an547"])
def test_qat_model_is_exact_on_the_device(qat, board, tmp_path):
    converted, x, _, pkg = qat
    if board != pkg.board:
        pkg = mcu.compile(converted, (x[:1],), board=board, out_dir=tmp_path / "pkg")
    res = mcu.run(pkg, (x[3:4],))
    assert np.array_equal(res.raw_outputs[0], pkg.reference((x[3:4],))[0])


def test_a_quantized_model_takes_no_calibration(qat, tmp_path):
    converted, x, _, _ = qat
    with pytest.raises(McuError, match="the model is quantized already .* pass calibration=None"):
        mcu.compile(converted, (x[:1],), calibration=[(x[:1],)], out_dir=tmp_path / "o")


# ---- int4 weights --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ad_int4(tmp_path_factory):
    from mcu.zoo import MODELS, calibration_set
    model, example = MODELS["ad"]()
    root = tmp_path_factory.mktemp("int4")
    return {board: mcu.compile(model, example, board=board, calibration=calibration_set("ad"), weights="int4",
                               out_dir=root / board) for board in ("mps2-an386", "mps2-an385", "mps3-an547")}


def test_int4_weights_are_packed_two_per_byte(ad_int4, tmp_path):
    from mcu.zoo import MODELS, calibration_set
    pkg = ad_int4["mps2-an386"]
    kernels = [op["kernel"] for op in pkg.manifest["ops"]]
    assert kernels == ["mcu_fully_connected_s4"] * 10
    weights = [t for t in pkg.graph.tensors.values() if t.is_const and t.name.endswith("_s4_w")]
    unpacked = [pkg.graph.tensors[n.call.twin_inputs[1]] for n in pkg.graph.nodes if n.op == "call"]
    assert all(-7 <= t.data.min() and t.data.max() <= 7 for t in unpacked)  # the quantizer's int4 range
    assert sum(t.data.size for t in weights) == sum((t.shape[1] + 1) // 2 * t.shape[0] for t in unpacked)
    model, example = MODELS["ad"]()
    int8 = mcu.compile(model, example, calibration=calibration_set("ad"), optimize="memory", out_dir=tmp_path / "i8")
    assert pkg.manifest["weights_bytes"] < 0.56 * int8.manifest["weights_bytes"]  # the int32 biases stay


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385", "mps3-an547"])
def test_int4_model_is_exact_on_the_device(ad_int4, board):
    from mcu.zoo import calibration_set
    pkg = ad_int4[board]
    x = calibration_set("ad", 1, seed=77)[0]
    res = mcu.run(pkg, x)
    assert np.array_equal(res.raw_outputs[0], pkg.reference(x)[0])


def test_unknown_weight_format_is_refused(tmp_path):
    with pytest.raises(McuError, match=r"weights='int2' is not one of int8, int4"):
        mcu.compile(nn.Linear(4, 2), (torch.randn(1, 4),), weights="int2", out_dir=tmp_path / "o")


def test_cli_weights_int4(tmp_path, capsys):
    from mcu.cli import main
    assert main(["compile", "mcu.zoo:example_cnn", "--weights", "int4", "-o", str(tmp_path / "o")]) == 0
    kernels = [op["kernel"] for op in mcu.load(tmp_path / "o").manifest["ops"]]
    assert "mcu_conv2d_s4" in kernels and "mcu_fully_connected_s4" in kernels
