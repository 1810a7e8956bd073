"""Shared helpers of the nn tests: copying PyTorch weights in and comparing forward and backward."""
import numpy as np

import ember
from ember.testing import assert_close

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-7, atol=1e-9)}


def load_torch_state(module, torch_module):
    """Copy a torch module's state_dict into the ember module (through NumPy)."""
    sd = {k: ember.tensor(v.detach().cpu().numpy()) for k, v in torch_module.state_dict().items()}
    module.load_state_dict(sd)
    return module


def pair(torch, arr, device, requires_grad=True):
    """The same array as an ember tensor on ``device`` and a torch tensor (both leaves)."""
    e = ember.tensor(arr, device=device, requires_grad=requires_grad and arr.dtype.kind == "f")
    t = torch.tensor(arr, requires_grad=requires_grad and arr.dtype.kind == "f")
    return e, t


def compare_module(torch, emod, tmod, inputs, device, dtype, out_index=None):
    """Run both modules on the same inputs; compare outputs, input grads and parameter grads."""
    tol = TOL[dtype]
    tmod = tmod.to(getattr(torch, dtype))
    load_torch_state(emod, tmod)
    emod.to(device=device, dtype=getattr(ember, dtype))
    ein, tin = zip(*[pair(torch, a, device) for a in inputs])
    eo, to = emod(*ein), tmod(*tin)
    if out_index is not None:
        eo, to = eo[out_index], to[out_index]
    assert_close(eo, to, **tol)
    g = np.random.default_rng(1).standard_normal(tuple(to.shape)).astype(dtype)
    eo.backward(ember.tensor(g, device=device))
    to.backward(torch.tensor(g))
    for e, t in zip(ein, tin):
        if t.requires_grad:
            assert_close(e.grad, t.grad, **tol)
    tparams = dict(tmod.named_parameters())
    for name, p in emod.named_parameters():
        if tparams[name].grad is None:
            assert p.grad is None or not np.any(p.grad.numpy()), name
        else:
            assert_close(p.grad, tparams[name].grad, msg=name, **tol)
    return eo, to


def sgd_steps(model, nll, batch, lib, steps=2):
    """``steps`` SGD steps of ``model`` over ``batch`` (pairs given to ``nll``, the losses summed) with ``lib``'s
    optimizer; each step's loss and gradients (numpy), then the final parameters."""
    opt = lib.optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-3)
    record = []
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(nll(w, y) for w, y in batch)
        loss.backward()
        record.append((float(loss.detach()), [p.grad.detach().cpu().numpy().copy() for p in model.parameters()]))
        opt.step()
    return record, [p.detach().cpu().numpy().copy() for p in model.parameters()]
