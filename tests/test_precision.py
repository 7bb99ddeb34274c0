"""target_sqnr (issue 16 item 2): layers, rules, the greedy search on a known noise model, and end to end."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.errors import McuError
from mcu.importer.export import export
from mcu.metrics import sqnr_db
from mcu.quantization.precision import relative_costs, search
from mcu.quantization.units import Unit, rules, units


class Gate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, 4, 1), nn.Conv2d(4, c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.fc2(torch.relu(self.fc1(x.mean((2, 3), keepdim=True)))))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Sequential(nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False), nn.BatchNorm2d(c),
                                                nn.ReLU()), Gate(c), nn.Conv2d(c, c, 1))

    def forward(self, x):
        return x + self.conv(x)


class Net(nn.Module):
    """Small, with channels of very different ranges: int8 lands near 30 dB."""

    def __init__(self, c=8):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.ReLU())
        self.blocks = nn.Sequential(Block(c), Block(c))
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(c, 5)

    def forward(self, x):
        return self.head(self.pool(self.blocks(self.stem(x))))


def _net():
    torch.manual_seed(3)
    m = Net()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_var.copy_(torch.rand(mod.num_features) + 0.5)
                mod.weight.copy_(torch.exp(1.5 * torch.randn(mod.num_features)))
    m.eval()
    g = torch.Generator().manual_seed(0)
    calib = [(torch.randn(1, 3, 16, 16, generator=g),) for _ in range(8)]
    return m, calib


def test_units_are_module_paths_a_conv_with_its_wrappers_and_the_other_ops_by_module():
    m, calib = _net()
    found = {u.name: u for u in units(export(m, calib[0]).graph)}
    assert list(found) == ["stem", "blocks.0.conv.0", "blocks.0.conv.1", "blocks.0.conv.1.fc1", "blocks.0.conv.1.fc2",
                           "blocks.0.conv.2", "blocks.0", "blocks.1.conv.0", "blocks.1.conv.1", "blocks.1.conv.1.fc1",
                           "blocks.1.conv.1.fc2", "blocks.1.conv.2", "blocks.1", "pool", "head"]  # in order of first op
    # conv + relu, 8x8 outputs; params are weights (a bias is priced per channel); ops without MACs by outputs
    assert found["stem"] == Unit("stem", 64 * 8 * 27, 8 * 27, 8, 2, ("stem",), elements=64 * 8)
    assert found["blocks.0.conv.0"].macs == 64 * 8 * 9 and found["blocks.0.conv.0"].params == 72
    assert found["head"] == Unit("head", 8 * 5, 40, 5, 1, ("head",))
    # the gate: mean, sigmoid, mul (fc1 took its relu)
    assert found["blocks.0.conv.1"] == Unit("blocks.0.conv.1", 0, 0, 0, 3, ("blocks.0.conv.1",), elements=8 + 8 + 8 * 64)
    assert found["blocks.0"].macs == 0 and found["blocks.0"].ops == 1  # the residual add


def test_rules_spell_out_the_units_inside_a_raised_one():
    us = [Unit(n, 0, 0, 0, 1) for n in ("a", "a.b", "a.b.c", "ab", "d")]
    assert rules({"a": "float32"}, us, "int8") == {"a": "float32", "a.b": "int8", "a.b.c": "int8"}
    assert rules({"a.b": "a16w8", "d": "float32"}, us, "int8") == {"a.b": "a16w8", "a.b.c": "int8",
                                                                    "d": "float32"}
    assert rules({}, us, "int8") == {}
    flat = [Unit("net.0", 1, 1, 1, 3, keys=("net.0", "net.1", "net.2")), Unit("net.3", 1, 1, 1, 1, keys=("net.3",))]
    assert rules({"net.0": "a16w8"}, flat, "int8") == {"net.0": "a16w8", "net.1": "a16w8", "net.2": "a16w8"}


def test_a_flat_sequential_conv_takes_its_batchnorm_and_relu_siblings():
    seq = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 4, 1), nn.Flatten(),
                        nn.Linear(4 * 6 * 6, 2)).eval()
    found = units(export(seq, (torch.randn(1, 3, 8, 8),)).graph)
    assert [(u.name, u.keys) for u in found] == [("0", ("0", "1", "2")), ("3", ("3",)), ("5", ("5",))]


def _additive(noises: dict[str, dict[str, float]], floor: float = 0.0):
    """measure() of a network whose output noise is the sum of its layers' (signal power 1)."""
    calls = []

    def measure(mixed):
        calls.append(dict(mixed))
        n = floor + sum(v[mixed.get(u, "int8")] for u, v in noises.items())
        return float("inf") if n == 0 else 10 * np.log10(1 / n)
    return measure, calls


def test_search_raises_the_cheapest_layers_that_reach_the_target_on_an_additive_noise_model():
    us = [Unit("big", 10_000, 10_000, 10, 1), Unit("small", 100, 100, 10, 1), Unit("mid", 1_000, 1_000, 10, 1)]
    noises = {"big": {"int8": 1e-3, "a16w8": 1e-5, "float32": 0.0},
              "small": {"int8": 1e-3, "a16w8": 1e-5, "float32": 0.0},
              "mid": {"int8": 1e-4, "a16w8": 1e-6, "float32": 0.0}}
    measure, calls = _additive(noises)
    # int8: 2.1e-3 -> 26.8 dB; 30 dB needs <= 1e-3: raising "small" (the cheapest) alone leaves 1.11e-3, so
    # "mid" must not suffice either; big + small is needed. The cheapest way: small and big to a16w8.
    choice = search(measure, 1.0, us, 30.0, "int8", frozenset({"dsp"}))
    assert round(choice.base_db, 2) == 26.78
    assert choice.sqnr_db >= 30.0
    assert choice.mixed == {"big": "a16w8", "small": "a16w8"}
    assert [o.unit.name for o in choice.rows] == ["big", "small"]
    assert choice.shares[0][0] in ("big", "small") and round(sum(f for _, f in choice.shares), 6) == 1.0
    # every measurement is of a whole network: each isolated one has every other layer float32
    assert calls[1] == {"big": "float32", "small": "float32", "mid": "float32"}
    assert {"big": "int8", "small": "float32", "mid": "float32"} in calls


def test_search_keeps_int8_when_the_target_is_met_and_says_when_it_cannot_be():
    us = [Unit("a", 100, 100, 1, 1)]
    measure, calls = _additive({"a": {"int8": 1e-4, "a16w8": 1e-6, "float32": 0.0}})
    choice = search(measure, 1.0, us, 35.0, "int8", frozenset())
    assert choice.mixed == {} and choice.rows == [] and len(calls) == 1
    measure, _ = _additive({"a": {"int8": 1e-4, "a16w8": 1e-6, "float32": 0.0}}, floor=1e-5)
    with pytest.raises(McuError, match=r"target_sqnr=60 dB is out of reach: 39\.6 dB at int8, and 50\.0 dB with "
                                       r"every layer float32"):
        search(measure, 1.0, us, 60.0, "int8", frozenset())


def test_search_prices_float32_by_the_core_a16w8_first_on_a_dsp_core():
    us = [Unit("a", 1000, 1000, 10, 1)]
    noises = {"a": {"int8": 1e-3, "a16w8": 1e-6, "float32": 0.0}}
    for features, want in ((frozenset({"dsp"}), "a16w8"), (frozenset({"fpu", "dsp"}), "a16w8")):
        measure, _ = _additive(noises)
        assert search(measure, 1.0, us, 50.0, "int8", features).mixed == {"a": want}
    measure, _ = _additive(noises)  # 70 dB: only float32 gets there
    assert search(measure, 1.0, us, 70.0, "int8", frozenset({"fpu"})).mixed == {"a": "float32"}


def test_compile_with_target_sqnr_reaches_it_on_the_reference_and_the_device(tmp_path):
    m, calib = _net()
    with torch.no_grad():
        want = [m(*x).numpy() for x in calib]
    base = mcu.compile(m, calib[0], calibration=calib, out_dir=tmp_path / "int8")
    base_db = sqnr_db(want, [base.dequantize_outputs(base.reference(x))[0] for x in calib])
    target = base_db + 8
    lines = []
    pkg = mcu.compile(m, calib[0], calibration=iter(calib), out_dir=tmp_path / "auto", target_sqnr=target,
                      log=lines.append)
    choice = pkg.precision
    assert choice.sqnr_db >= target and choice.rows and choice.base_db < target
    assert any(line.startswith("sensitivity 1/15: stem alone at int8") for line in lines)
    got = sqnr_db(want, [pkg.dequantize_outputs(pkg.reference(x))[0] for x in calib])
    assert got == pytest.approx(choice.sqnr_db, abs=1e-3)  # the choice was measured on the integer reference
    res = mcu.run(pkg, calib[0])
    assert np.array_equal(res.raw_outputs[0], pkg.reference(calib[0])[0])
    # pinning the printed choice compiles the same model
    pinned = mcu.compile(m, calib[0], calibration=calib, out_dir=tmp_path / "pinned", mixed=choice.mixed)
    assert np.array_equal(pinned.reference(calib[1])[0], pkg.reference(calib[1])[0])
    assert "pin it: mixed=" in choice.table()


def test_target_sqnr_errors_name_the_fix(tmp_path):
    m, calib = _net()
    with pytest.raises(McuError, match="use quantize='int8'"):
        mcu.compile(m, calib[0], quantize="none", target_sqnr=30, out_dir=tmp_path / "a")
    with pytest.raises(McuError, match="out of reach"):
        mcu.compile(m, calib[0], calibration=calib, target_sqnr=200, out_dir=tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_a_mix_that_does_not_fit_the_board_counts_as_none_and_the_error_says_so():
    us = [Unit("a", 1000, 1000, 10, 1)]
    measure, _ = _additive({"a": {"int8": 1e-3, "a16w8": 1e-5, "float32": 0.0}})
    unfit = lambda mixed: float("-inf") if mixed.get("a") == "float32" else measure(mixed)  # noqa: E731
    with pytest.raises(McuError, match=r"out of reach: 30\.0 dB at int8, 50\.0 dB with the best mixed choice found "
                                       r"\(the larger mixes do not fit the board\)"):
        search(measure, 1.0, us, 70.0, "int8", frozenset({"fpu"}), verify=unfit)


def test_the_flash_budget_leaves_out_raises_the_board_has_no_room_for():
    us = [Unit("a", 1000, 1000, 10, 1), Unit("b", 1000, 1000, 10, 1)]
    noises = {"a": {"int8": 1e-3, "a16w8": 1e-3, "float32": 0.0},  # weight-bound: only float32 helps
              "b": {"int8": 1e-4, "a16w8": 1e-6, "float32": 0.0}}
    measure, _ = _additive(noises)
    assert search(measure, 1.0, us, 35.0, "int8", frozenset({"fpu"})).mixed == {"a": "float32"}
    # float32 "a" adds 3 B x 1000 weights: a budget of 2,999 B leaves only b's a16w8, which cannot reach 35 dB
    with pytest.raises(McuError, match=r"out of reach: 29\.6 dB at int8, 30\.0 dB with the best mixed choice found"):
        search(measure, 1.0, us, 35.0, "int8", frozenset({"fpu"}), flash_budget=2_999)
    assert search(measure, 1.0, us, 35.0, "int8", frozenset({"fpu"}), flash_budget=3_000).mixed == {"a": "float32"}


class _Scores(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, q, k):
        return self.proj(q) @ k.transpose(-1, -2)


def test_products_of_two_activations_are_priced_as_their_macs():
    """q @ k^T has MACs of its own (no longer one element each), run by mcu_matmul_s16 at a16w8: raising it to a16w8
    costs a weighted layer's MACs at a16w8, less than float32; a product with a constant (a tied projection) is a
    weighted layer's MACs."""
    found = {u.name: u for u in units(export(_Scores().eval(), (torch.randn(1, 4, 8), torch.randn(1, 6, 8))).graph)}
    root, proj = found["_Scores"], found["proj"]
    assert (root.products, root.macs, root.elements) == (4 * 6 * 8, 0, 0) and proj.macs == 4 * 8 * 8
    cost = relative_costs(list(found.values()), frozenset({"dsp", "fpu"}))
    assert 0 < cost(root, "int8", "a16w8")[0] < cost(root, "int8", "float32")[0]
    macs_share = root.products / (root.products + proj.macs)
    assert cost(root, "int8", "a16w8")[0] == pytest.approx(macs_share * cost(proj, "int8", "a16w8")[0] / (1 - macs_share))
    assert cost(proj, "int8", "a16w8")[0] < cost(proj, "int8", "float32")[0]
