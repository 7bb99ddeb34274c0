"""Integer (index) inputs: token ids and positions feed embedding, index_select and x[idx] as int32 on the device
(mcu_gather). The device equals the reference bit for bit, an index outside its table is refused on the host with
the op's source line, and the C returns MCU_ERR_INDEX for one (never a read outside the table)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mcu
from mcu.errors import MCU_ERR_INDEX, InputError
from mcu.metrics import sqnr_db
from mcu.qemu.runner import run_firmware

VOCAB, DIM, T = 96, 16, 6


class TokenClassifier(nn.Module):
    """A bag-of-embeddings text classifier: token ids -> embedding -> mean -> linear."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.fc = nn.Linear(DIM, 5)

    def forward(self, tokens):
        return self.fc(torch.relu(self.embed(tokens)).mean(1))


class RowPicker(nn.Module):
    """Rows of an activation picked by an index input: index_select and x[idx]."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 12)

    def forward(self, x, idx):
        y = self.proj(x)                      # [10, 12]
        return torch.index_select(y, 0, idx) + y[:, :4][idx].sum()


def tokens(seed: int, shape=(1, T)) -> torch.Tensor:
    return torch.randint(0, VOCAB, shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module", params=["int8", "none"])
def classifier(request, tmp_path_factory):
    torch.manual_seed(0)
    model = TokenClassifier().eval()
    calib = [(tokens(i),) for i in range(8)]
    pkg = mcu.compile(model, calib[0], calibration=None if request.param == "none" else calib,
                      quantize=request.param, out_dir=tmp_path_factory.mktemp("tok") / request.param)
    return model, pkg


def test_token_input_is_int32_with_its_table_range(classifier):
    _, pkg = classifier
    spec = pkg.manifest["inputs"][0]
    assert (spec["dtype"], spec["shape"], spec["index_range"]) == ("int32", [1, T], [0, VOCAB])
    assert "test_token_inputs.py" in spec["index_use"] and "self.embed(tokens)" in spec["index_use"]
    assert f"#define MODEL_INPUT0_INDEX_LIMIT {VOCAB}\n" in (pkg.out_dir / "model.h").read_text()
    assert any(n.call.kernel.startswith("mcu_gather_") for n in pkg.graph.nodes if n.call)


@pytest.mark.qemu
def test_token_model_on_the_device_equals_the_reference(classifier):
    model, pkg = classifier
    x = tokens(100)
    res = mcu.run(pkg, (x,))
    np.testing.assert_array_equal(res.raw_outputs[0], pkg.reference((x,))[0])
    with torch.no_grad():
        want = model(x).numpy()
    quantized = pkg.manifest["outputs"][0]["scale"] is not None
    assert sqnr_db(want, res.outputs[0]) > (25 if quantized else 100)


def test_out_of_range_token_is_refused_on_the_host_naming_the_op(classifier):
    _, pkg = classifier
    bad = tokens(3)
    bad[0, 2] = VOCAB
    with pytest.raises(InputError, match=rf"input0\[0, 2\] = {VOCAB} is outside \[0, {VOCAB}\).*self.embed"):
        pkg.quantize_inputs((bad,))
    bad[0, 2] = -1
    with pytest.raises(InputError, match="negative indices do not wrap"):
        pkg.quantize_inputs((bad,))
    with pytest.raises(InputError, match="must be an integer tensor"):
        pkg.quantize_inputs((bad.float(),))


@pytest.mark.qemu
def test_device_returns_index_error_for_an_out_of_range_token(classifier):
    _, pkg = classifier
    raw = tokens(4).numpy().astype(np.int32)
    raw[0, 5] = VOCAB + 7  # bypasses the host check: the firmware must refuse it itself
    res = run_firmware(pkg.build(), pkg.board, raw.tobytes())
    assert res.status == MCU_ERR_INDEX


@pytest.mark.qemu
def test_index_select_and_indexing_of_activations_by_an_input(tmp_path):
    torch.manual_seed(1)
    model = RowPicker().eval()
    calib = [(torch.randn(10, 8, generator=torch.Generator().manual_seed(i)),
              torch.randint(0, 10, (3,), generator=torch.Generator().manual_seed(50 + i))) for i in range(6)]
    pkg = mcu.compile(model, calib[0], calibration=calib, out_dir=tmp_path / "pick")
    assert pkg.manifest["inputs"][1]["index_range"] == [0, 10]
    x = calib[2]
    res = mcu.run(pkg, x)
    np.testing.assert_array_equal(res.raw_outputs[0], pkg.reference(x)[0])
    with torch.no_grad():
        assert sqnr_db(model(*x).numpy(), res.outputs[0]) > 25
