"""A package is data: damaged or forged package folders give one `mcu: error:` line and never run their code.

A short campaign of mutants (tests/package_fuzz.py; scripts/fuzz_package.py runs a long one) through run, size, plan,
report and debug in this process, a few through the `mcu` command itself; plus the named cases: an old package's
ir.pkl, model.pt2 only with --trust-model, a .pt2 with a pickle payload given to `mcu compile`, manifest names."""
from __future__ import annotations

import contextlib
import io
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

import mcu
import mcu.cli
import mcu.package
from mcu.codegen.names import NAME_RULE
from package_fuzz import (COMMANDS, MARKER_NAME, check_outcome, fresh_copy, harmless, make_package, mutants, payload,
                          pt2_payload, reseal, tree)

SHORT_CAMPAIGN = 120  # mutants; each runs every command (about 15 s on one core)


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    return make_package(tmp_path_factory.mktemp("fuzzsrc"))


def run_cli(argv) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = mcu.cli.main([str(a) for a in argv])
    return rc, err.getvalue()


def commands_for(label: str) -> list[list[str]]:
    # run, size, plan and report never open model.pt2 (test_commands_other_than_debug_never_open_model_pt2):
    # a damaged model.pt2 leaves them working, so its mutants go through debug only
    return [c for c in COMMANDS if c[0] == "debug"] if label.startswith("model.pt2") else COMMANDS


def test_short_campaign(package, tmp_path):
    rng = random.Random(15)
    marker = tmp_path / MARKER_NAME
    x = package.parent / "x.npy"
    failures, count = [], 0
    for label, apply in mutants(package, rng, marker):
        if count == SHORT_CAMPAIGN:
            break
        count += 1
        d = fresh_copy(package, tmp_path / "m")
        apply(d)
        if "resealed" in label and harmless(d):
            continue  # a forgery that changes nothing the commands use: it may run (counted, not checked)
        before = tree(tmp_path, d / ".mcu-build")
        for cmd in commands_for(label):
            rc, err = run_cli([cmd[0], d] + [a.format(x=x) for a in cmd[1:]])
            problem = check_outcome(rc, err)
            if problem is None and marker.exists():
                problem = "the payload ran"
            if problem is None and tree(tmp_path, d / ".mcu-build") != before:
                problem = "wrote outside the package's build folder"
            if problem:
                failures.append(f"{label} | mcu {cmd[0]}: {problem}")
    assert count == SHORT_CAMPAIGN
    assert failures == []


def test_mutants_through_the_mcu_command(package, tmp_path):
    marker = tmp_path / MARKER_NAME
    d = fresh_copy(package, tmp_path / "a")
    (d / "ir_data" / "0.npy").write_bytes(payload(marker))
    reseal(d)
    e = fresh_copy(package, tmp_path / "b")
    (e / "manifest.json").write_text((e / "manifest.json").read_text().replace('"board": "mps2-an386"',
                                                                              '"board": "../../mps2-an386"'))
    reseal(e)
    for folder, cmd in ((d, "run"), (e, "size")):
        proc = subprocess.run([sys.executable, "-m", "mcu.cli", cmd, str(folder)], capture_output=True, text=True)
        assert check_outcome(proc.returncode, proc.stderr) is None, proc.stderr
    assert not marker.exists()


def test_old_package_is_refused_naming_its_version(package, tmp_path):
    marker = tmp_path / MARKER_NAME
    d = fresh_copy(package, tmp_path / "old")
    m = json.loads((d / "manifest.json").read_text())
    del m["package"]
    (d / "manifest.json").write_text(json.dumps(m))
    (d / "ir.pkl").write_bytes(payload(marker))
    rc, err = run_cli(["run", d])
    assert rc == 1 and err == (f"mcu: error: {d} was written by an older mcu (mcu 0.1.0 before package format 1: its "
                               f"IR is a pickle, which mcu no longer opens); compile the model again with this mcu "
                               f"({mcu.package.mcu_version()}): `mcu compile MODEL -o {d}`\n")
    assert not marker.exists()


def test_debug_opens_model_pt2_only_with_trust_model(package, tmp_path):
    marker = tmp_path / MARKER_NAME
    d = fresh_copy(package, tmp_path / "p")
    (d / "model.pt2").write_bytes(pt2_payload((d / "model.pt2").read_bytes(), marker, "sample_inputs"))
    reseal(d)  # forged: the manifest's checksum matches the payload
    x = package.parent / "x.npy"
    rc, err = run_cli(["debug", d, "--input", x])
    assert rc == 1 and err == (f"mcu: error: mcu debug compares with the float model {d / 'model.pt2'}, and loading a "
                               f".pt2 can run code from whoever wrote it; pass --trust-model (trust_model=True) if you "
                               f"trust where {d} came from, or compile the model yourself\n")
    rc, err = run_cli(["debug", d, "--trust-model", "--input", x])
    assert rc == 1 and err == (f"mcu: error: {d / 'model.pt2'} holds a pickled object that is not a plain tensor; "
                               f"loading it would run code from the file, so mcu does not: save the model with "
                               f"torch.export.save from a program without custom objects, or compile from Python "
                               f"(module:function)\n")
    assert not marker.exists()


def test_commands_other_than_debug_never_open_model_pt2(package, tmp_path, monkeypatch):
    import torch

    def no(*a, **k):
        raise AssertionError("model.pt2 was opened")
    monkeypatch.setattr(torch.export, "load", no)
    d = fresh_copy(package, tmp_path / "q")
    (d / "model.pt2").write_bytes(b"not a zip")
    rc, err = run_cli(["plan", d])
    assert (rc, err) == (0, "")


def test_compile_refuses_a_pt2_whose_sample_inputs_are_a_pickle_payload(package, tmp_path):
    import torch
    marker = tmp_path / MARKER_NAME
    ep = torch.export.export(torch.nn.Linear(4, 3).eval(), (torch.randn(1, 4),))
    good = tmp_path / "good.pt2"
    torch.export.save(ep, good)
    evil = tmp_path / "evil.pt2"
    evil.write_bytes(pt2_payload(good.read_bytes(), marker, "sample_inputs"))
    rc, err = run_cli(["compile", evil, "--quantize", "none", "-o", tmp_path / "out"])
    assert rc == 1 and err == (f"mcu: error: {evil} holds a pickled object that is not a plain tensor; loading it "
                               f"would run code from the file, so mcu does not: save the model with torch.export.save "
                               f"from a program without custom objects, or compile from Python (module:function)\n")
    assert not marker.exists() and not (tmp_path / "out").exists()
    rc, err = run_cli(["compile", good, "--quantize", "none", "-o", tmp_path / "out"])
    assert rc == 0, err


@pytest.mark.parametrize("field,value,message", [
    ("board", "../../boards/mps2-an386", "board '../../boards/mps2-an386' is not one of mcu's boards (`mcu boards`)"),
    ("kernels", ["../../../etc/passwd"], "kernel '../../../etc/passwd' is not family/name (no '..', no absolute path)"),
    ("kernels", ["/abs/mcu_conv2d_s8"], "kernel '/abs/mcu_conv2d_s8' is not family/name (no '..', no absolute path)"),
    ("kernels", ["conv/mcu_not_a_kernel"], "kernel 'conv/mcu_not_a_kernel' is not in mcu's kernel registry"),
    ("name", "../model", f"model name '../model' is not a valid model name ({NAME_RULE})"),
])
def test_manifest_names_are_checked_before_they_reach_the_build(package, tmp_path, field, value, message):
    d = fresh_copy(package, tmp_path / "n")
    m = json.loads((d / "manifest.json").read_text())
    m[field] = value
    (d / "manifest.json").write_text(json.dumps(m))
    reseal(d)
    rc, err = run_cli(["size", d])
    assert rc == 1 and err == (f"mcu: error: {d / 'manifest.json'}: {message}; the package is damaged or was not "
                               f"written by mcu: compile it again with `mcu compile`\n")
    assert not (d / ".mcu-build").exists()


def test_a_package_round_trips_exactly(package):
    pkg = mcu.load(package)
    again = mcu.load(package)
    assert pkg.graph == again.graph and pkg.memory == again.memory
    assert (package / "ir.json").is_file() and not (package / "ir.pkl").exists()
    assert sorted(p.name for p in (package / "ir_data").iterdir()) == sorted(
        f"{i}.npy" for i in range(pkg.manifest["package"]["arrays"]))
