"""Optimizers: a failed step (a gradient of the wrong shape) raises PyTorch's error and changes nothing."""
from __future__ import annotations

import ember


# =========================================================================== a failed optimizer step changes nothing
OPTIMIZERS = {  # every optimizer of ember.optim, with settings that give each a state worth keeping
    "SGD": {"lr": 0.1, "momentum": 0.9}, "Adam": {"lr": 0.1}, "AdamW": {"lr": 0.1}, "Adamax": {"lr": 0.1},
    "NAdam": {"lr": 0.1}, "RAdam": {"lr": 0.1}, "RMSprop": {"lr": 0.1, "momentum": 0.5, "centered": True},
    "Adagrad": {"lr": 0.1}, "Adadelta": {"lr": 0.1}, "Rprop": {"lr": 0.1}, "ASGD": {"lr": 0.1, "t0": 0},
    "SparseAdam": {"lr": 0.1}, "Adafactor": {"lr": 0.1}, "Muon": {"lr": 0.1}, "LBFGS": {"lr": 0.1},
}


def _snapshot(opt, params):
    import copy
    state = {id(p): {k: (v.detach().clone() if hasattr(v, "detach") else copy.deepcopy(v)) for k, v in s.items()}
             for p, s in opt.state.items()}
    return [p.detach().clone() for p in params], state, copy.deepcopy([{k: v for k, v in g.items() if k != "params"}
                                                                       for g in opt.param_groups])


def _same(a, b):
    if isinstance(a, ember.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).logical_or(a.isnan() & b.isnan()).all())
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def failed_step(m, name, dev, wrong):
    """Two steps of optimizer ``name``, then a step with a gradient of the wrong shape (``wrong``: 'grad', the
    gradient replaced; 'param', the parameter's data replaced).  Returns the exception type of the failed step
    and, for ember, whether parameters, state and settings are exactly as before it."""
    a = m.nn.Parameter(m.tensor([[0.5, -1.0], [2.0, 0.25]], device=dev))
    b = m.nn.Parameter(m.tensor([[1.5, 1.0], [-2.0, 0.75]], device=dev))
    opt = getattr(m.optim, name)([a, b], **OPTIMIZERS[name])

    def closure():
        opt.zero_grad()
        loss = (a * a).sum() + (b * b * 3).sum() + (a * b).sum()
        loss.backward()
        return loss

    for _ in range(2):
        closure() if name != "LBFGS" else None
        try:
            opt.step(closure) if name == "LBFGS" else opt.step()
        except Exception:  # noqa: BLE001 - optimizers refusing these gradients (SparseAdam) fail alike below
            pass
    closure() if name != "LBFGS" else None
    if wrong == "param":
        b.data = m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], device=dev)
    else:
        b._grad = m.ones(3, device=dev) if m.__name__ == "ember" else None
        if m.__name__ != "ember":
            b.data = m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], device=dev)
    before = _snapshot(opt, [a, b]) if m.__name__ == "ember" else None
    try:
        opt.step(lambda: (a * a).sum()) if name == "LBFGS" else opt.step()
        raised = None
    except Exception as exc:  # noqa: BLE001 - the exception type is the result compared
        raised = type(exc).__name__
    unchanged = _same(before, _snapshot(opt, [a, b])) if before is not None else None
    return raised, unchanged
