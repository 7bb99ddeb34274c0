"""The trained tiny LM's int8-weight ceiling (issue #28): teacher-forced next-token agreement with the float model
over 16 held-out windows (1,008 positions) when only the weights are rounded to per-row symmetric int8 (activations
float): round-to-nearest per layer family, and GPTQ (Hessian-compensated rounding on 64 training windows).

    .venv/bin/python scripts/tinyllm_weight_ceiling.py
"""
import copy

import torch

from mcu.zoo.tinyllm import corpus, sequence_logits, trained_tinyllm, windows

torch.manual_seed(0)
model, _ = trained_tinyllm()
model.eval()
held = torch.tensor(windows(16))               # [16, 64]
def preds(m):
    with torch.no_grad():
        return sequence_logits(m, held[:, :-1]).argmax(-1)
want = preds(model)
def agree(m): return (preds(m) == want).float().mean().item()

def rtn(w, bits=8):
    q = 2 ** (bits - 1) - 1
    s = w.abs().amax(1, keepdim=True).clamp_min(1e-12) / q
    return (w / s).round().clamp(-q, q) * s

def linears(m):
    return [(n, mod) for n, mod in m.named_modules() if isinstance(mod, torch.nn.Linear)]

data = torch.tensor(list(corpus()))[: int(0.9 * len(corpus()))]
g = torch.Generator().manual_seed(1)
starts = torch.randint(0, len(data) - 65, (64,), generator=g)
calib = torch.stack([data[s:s + 64] for s in starts])

def gptq_layer(w, H, bits=8, damp=0.01, block=128):
    w = w.clone(); n = w.shape[1]
    q = 2 ** (bits - 1) - 1
    s = w.abs().amax(1, keepdim=True).clamp_min(1e-12) / q
    dead = torch.diag(H) == 0
    H = H.clone(); H[dead, dead] = 1; w[:, dead] = 0
    H += damp * torch.diag(H).mean() * torch.eye(n)
    Hinv = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
    Q = torch.zeros_like(w)
    for i in range(n):
        col = w[:, i]
        qc = (col / s[:, 0]).round().clamp(-q, q) * s[:, 0]
        Q[:, i] = qc
        err = (col - qc) / Hinv[i, i]
        w[:, i:] -= err[:, None] * Hinv[i, i:][None, :]
    return Q

def gptq(m, tied_rtn=True):
    m = copy.deepcopy(m)
    # quantize linears in order, collecting inputs with the already-quantized earlier layers
    names = [n for n, _ in linears(m)]
    for name in names:
        mod = dict(m.named_modules())[name]
        xs = []
        h = mod.register_forward_pre_hook(lambda mod_, a: xs.append(a[0].reshape(-1, a[0].shape[-1]).detach()))
        with torch.no_grad(): sequence_logits(m, calib)
        h.remove()
        X = torch.cat(xs).double()
        H = 2 * X.t() @ X / X.shape[0]
        mod.weight.data = gptq_layer(mod.weight.data.double(), H).float()
    # tied embed/projection: inputs to projection are model.norm outputs
    xs = []
    h = m.norm.register_forward_hook(lambda mod_, a, o: xs.append(o.reshape(-1, o.shape[-1]).detach()))
    with torch.no_grad(): sequence_logits(m, calib)
    h.remove()
    X = torch.cat(xs).double(); H = 2 * X.t() @ X / X.shape[0]
    m.embed.weight.data = (rtn(m.embed.weight.data) if tied_rtn else gptq_layer(m.embed.weight.data.double(), H).float())
    return m

print("float", agree(model))
r = copy.deepcopy(model)
for _, mod in linears(r): mod.weight.data = rtn(mod.weight.data)
print("rtn linears only", agree(r))
r.embed.weight.data = rtn(r.embed.weight.data)
print("rtn all", agree(r))
r2 = copy.deepcopy(model); r2.embed.weight.data = rtn(r2.embed.weight.data)
print("rtn embed only", agree(r2))
print("gptq linears + rtn embed", agree(gptq(model, True)))
print("gptq all", agree(gptq(model, False)))
