"""mcu eval: a small MLP trained on scikit-learn's 8x8 digits, int8 on the M4; all test inputs in one QEMU run."""
import json
import re

import numpy as np
import pytest
import torch

import mcu
import mcu.qemu.runner as runner
from mcu.paths import BUILD_DIR
from scripts.eval_digits import digits_split, train_mlp

pytest.importorskip("sklearn")


@pytest.mark.qemu
def test_digits_device_equals_reference_and_tracks_float(tmp_path, monkeypatch):
    x_train, y_train, x_test, y_test = digits_split()
    model = train_mlp(x_train, y_train)
    calib = [(torch.from_numpy(x_train[i:i + 1]),) for i in range(0, 256, 2)]
    pkg = mcu.compile(model, (torch.from_numpy(x_test[:1]),), board="mps2-an386", calibration=calib,
                      out_dir=tmp_path / "digits")
    launches, seen = [], []
    for name in ("run_firmware", "run_firmware_batch"):
        original = getattr(runner, name)
        monkeypatch.setattr(runner, name, lambda *a, _f=original, _n=name, **k: launches.append(_n) or _f(*a, **k))
    x, y = x_test[:200], y_test[:200]
    r = mcu.eval(pkg, x, y, float_model=model, progress=lambda done, total: seen.append((done, total)))
    assert launches == ["run_firmware_batch"]  # one firmware run for all 200 inputs
    assert seen and seen[-1] == (200, 200) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert r.count == 200 and r.device_equals_reference
    assert r.accuracy["device"] == r.accuracy["reference"]
    assert abs(r.accuracy["device"] - r.accuracy["float"]) <= 0.01, r.table()
    assert r.accuracy["float"] > 0.9
    assert r.device_float_differ == sum(a != b for a, b in zip(r.predictions["device"], r.predictions["float"]))
    assert np.sum(r.confusion) == 200 and np.trace(r.confusion) == round(200 * r.accuracy["device"])
    assert len(r.per_class["device"]) == 10
    assert "top-1" in r.table()
    saved = json.loads((pkg.out_dir / BUILD_DIR / "eval.json").read_text())
    assert saved["accuracy"] == r.accuracy


@pytest.mark.qemu
def test_eval_without_labels_reports_agreement_and_sqnr(tmp_path):
    x_train, y_train, x_test, _ = digits_split()
    model = train_mlp(x_train, y_train, epochs=20)
    calib = [(torch.from_numpy(x_train[i:i + 1]),) for i in range(0, 64, 2)]
    pkg = mcu.compile(model, (torch.from_numpy(x_test[:1]),), board="mps2-an386", calibration=calib,
                      out_dir=tmp_path / "digits")
    r = mcu.eval(pkg, x_test[:20])  # no labels, no float model: agreement and SQNR vs the reference
    assert r.accuracy == {"float": None, "reference": None, "device": None}
    assert r.agreement["device"] == 1.0 and r.device_equals_reference
    assert r.device_float_differ is None and r.confusion == []
    with pytest.raises(mcu.McuError, match="labels"):
        mcu.eval(pkg, x_test[:20], np.zeros(3))


@pytest.mark.qemu
def test_cli_eval_prints_the_table(tmp_path, capsys):
    import mcu.cli
    x_train, y_train, x_test, y_test = digits_split()
    model = train_mlp(x_train, y_train, epochs=20)
    calib = [(torch.from_numpy(x_train[i:i + 1]),) for i in range(0, 64, 2)]
    pkg = mcu.compile(model, (torch.from_numpy(x_test[:1]),), board="mps2-an386", calibration=calib,
                      out_dir=tmp_path / "digits")
    np.save(tmp_path / "x.npy", x_test[:30])
    np.save(tmp_path / "y.npy", y_test[:30])
    rc = mcu.cli.main(["eval", str(pkg.out_dir), "--data", str(tmp_path / "x.npy"), "--labels",
                       str(tmp_path / "y.npy"), "--trust-model", "--progress"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert re.search(r"top-1 +\d+\.\d\d% +\d+\.\d\d% +\d+\.\d\d%", out), out  # float, reference, device
    assert "30 inputs on mps2-an386; device == reference bit for bit: yes" in out
    assert "30/30" in err  # the progress bar
    rc = mcu.cli.main(["eval", str(pkg.out_dir), "--data", str(tmp_path / "x.npy"), "--labels", str(tmp_path / "nope.npy")])
    out, err = capsys.readouterr()
    assert rc == 1 and err.startswith("mcu: error: cannot read the data"), err
