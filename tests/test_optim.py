"""Optimizers against PyTorch: 20-step trajectories, state_dict round trips, settings checks."""
import copy

import numpy as np
import pytest

import ember
from ember import optim

SHAPES = [(3, 4), (5,)]

# (optimizer name, keyword settings): adding an optimizer or an option is adding a row
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, eps=1e-6)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.5, amsgrad=True)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=0.1)),
    ("Adam", dict(lr=0.01, eps=0.1)),
    ("Adamax", dict(lr=0.01, eps=0.1, betas=(0.5, 0.9))),
    ("NAdam", dict(lr=0.01, eps=0.1)),
    ("RAdam", dict(lr=0.01, eps=0.1, betas=(0.5, 0.9))),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)),
    ("Adadelta", dict(lr=1.0, rho=0.8, weight_decay=0.1, maximize=True)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _inits():
    rng = np.random.default_rng(1)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def _grads(steps):
    rng = np.random.default_rng(2)
    return [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(steps)]


def _ember_params(arrays, device):
    return [ember.tensor(a, device=device, requires_grad=True) for a in arrays]


def _run_ember(opt, params, grads):
    out = []
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad = ember.tensor(g, device=p.device)
        opt.step()
        out.append([p.detach().cpu().numpy().copy() for p in params])
    return out


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_trajectory_matches_torch(device, torch, name, kwargs):
    grads = _grads(20)
    params = _ember_params(_inits(), device)
    mine = _run_ember(getattr(optim, name)(params, **kwargs), params, grads)
    tparams = [torch.tensor(a, requires_grad=True) for a in _inits()]
    topt = getattr(torch.optim, name)(tparams, **kwargs)
    for step, gs in enumerate(grads):
        for p, g in zip(tparams, gs):
            p.grad = torch.tensor(g)
        topt.step()
        for a, p in zip(mine[step], tparams):
            np.testing.assert_allclose(a, p.detach().numpy(), rtol=2e-5, atol=2e-6, err_msg=f"{name} step {step}")


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_state_dict_round_trip_continues_identically(device, name, kwargs):
    grads = _grads(12)
    params = _ember_params(_inits(), device)
    opt = getattr(optim, name)(params, **kwargs)
    full = _run_ember(opt, params, grads)
    params2 = _ember_params(_inits(), device)
    opt2 = getattr(optim, name)(params2, **kwargs)
    _run_ember(opt2, params2, grads[:6])
    saved = copy.deepcopy(opt2.state_dict())
    params3 = [p.detach().clone().requires_grad_(True) for p in params2]
    opt3 = getattr(optim, name)(params3, **kwargs)
    opt3.load_state_dict(saved)
    resumed = _run_ember(opt3, params3, grads[6:])
    for a, b in zip(full[6:], resumed):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_state_dict_layout_matches_torch(device, torch):
    params = _ember_params(_inits(), device)
    opt = optim.Adam([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=0.1)
    _run_ember(opt, params, _grads(1))
    tparams = [torch.tensor(a, requires_grad=True) for a in _inits()]
    topt = torch.optim.Adam([{"params": tparams[:1]}, {"params": tparams[1:], "lr": 0.5}], lr=0.1)
    for p, g in zip(tparams, _grads(1)[0]):
        p.grad = torch.tensor(g)
    topt.step()
    mine, theirs = opt.state_dict(), topt.state_dict()
    assert [g["params"] for g in mine["param_groups"]] == [[0], [1]]
    assert [g["lr"] for g in mine["param_groups"]] == [0.1, 0.5]
    assert set(mine["param_groups"][0]) == set(theirs["param_groups"][0])
    assert sorted(mine["state"]) == sorted(theirs["state"])
    assert set(mine["state"][0]) == set(theirs["state"][0])
    assert mine["state"][1]["step"].item() == theirs["state"][1]["step"].item() == 1.0


def test_param_groups_fall_back_to_defaults(device):
    a, b = _ember_params(_inits(), device)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1e-3}], lr=1e-2, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [1e-2, 1e-3]
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.9]
    c = ember.zeros(2, device=device, requires_grad=True)
    opt.add_param_group({"params": c, "lr": 0.5})
    assert opt.param_groups[2]["lr"] == 0.5 and opt.param_groups[2]["params"][0] is c


def test_zero_grad(device):
    p = ember.ones(3, device=device, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.abs().sum().item() == 0
    opt.zero_grad()
    assert p.grad is None


def test_step_closure_and_hooks(device):
    p = ember.ones(2, device=device, requires_grad=True)
    opt = optim.SGD([p], lr=0.5)
    calls = []
    h = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 2.0 and calls == ["pre", "post"]
    assert p.tolist() == [0.0, 0.0]
    h.remove()
    opt.step(closure)
    assert calls == ["pre", "post", "post"]


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(device, torch, line_search):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal((6, 1)).astype(np.float32)
    w0 = np.zeros((4, 1), np.float32)

    def run(lib, A, b, w, opt):
        def closure():
            opt.zero_grad()
            r = lib.matmul(A, w) - b
            loss = (r * r).sum()
            loss.backward()
            return loss
        return [opt.step(closure).detach().item() for _ in range(3)]

    w = ember.tensor(w0, device=device, requires_grad=True)
    mine = run(ember, ember.tensor(A, device=device), ember.tensor(b, device=device), w,
               optim.LBFGS([w], lr=0.5, max_iter=5, history_size=3, line_search_fn=line_search))
    tw = torch.tensor(w0, requires_grad=True)
    theirs = run(torch, torch.tensor(A), torch.tensor(b), tw,
                 torch.optim.LBFGS([tw], lr=0.5, max_iter=5, history_size=3, line_search_fn=line_search))
    np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.detach().cpu().numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("make,match", [
    (lambda ps: optim.SGD(ps, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda ps: optim.Adam(ps, betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
    (lambda ps: optim.Adam(ps, eps=-1), "Invalid epsilon value"),
    (lambda ps: optim.SGD(ps, lr=0.1, nesterov=True), "Nesterov momentum requires"),
    (lambda ps: optim.SGD(ps + ps, lr=0.1), "duplicate parameters"),
    (lambda ps: optim.SGD([{"params": ps[:1]}, {"params": ps[:1]}], lr=0.1), "more than one parameter group"),
    (lambda ps: optim.SGD([], lr=0.1), "empty parameter list"),
    (lambda ps: optim.SGD([ps[0] * 2], lr=0.1), "can't optimize a non-leaf Tensor"),
    (lambda ps: optim.LBFGS(ps, line_search_fn="armijo"), "strong_wolfe"),
])
def test_bad_settings(device, make, match):
    ps = _ember_params(_inits(), device)
    with pytest.raises(ValueError, match=match):
        make(ps)


def test_load_state_dict_mismatch_changes_nothing(device):
    params = _ember_params(_inits(), device)
    opt = optim.Adam(params, lr=0.1)
    _run_ember(opt, params, _grads(2))
    before = opt.state_dict()
    before_step = before["state"][0]["step"].item()
    other = optim.Adam([{"params": params[:1]}, {"params": params[1:]}], lr=0.2)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict(other.state_dict())
    one = optim.Adam(params[:1], lr=0.2)
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt.load_state_dict(one.state_dict())
    assert opt.param_groups[0]["lr"] == 0.1
    assert opt.state[params[0]]["step"].item() == before_step


def test_global_and_state_dict_hooks(device):
    p = ember.ones(2, device=device, requires_grad=True)
    opt = optim.SGD([p], lr=0.5, momentum=0.5)
    seen = []
    h = optim.register_optimizer_step_pre_hook(lambda o, a, k: seen.append(type(o).__name__))
    try:
        p.grad = ember.ones(2, device=device)
        opt.step()
    finally:
        h.remove()
    opt.step()
    assert seen == ["SGD"]
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
    loaded = []
    opt.register_load_state_dict_post_hook(lambda o: loaded.append(True))
    sd = opt.state_dict()
    assert sd["extra"] == 1 and sd["state"][0]["momentum_buffer"].tolist() == [1.5, 1.5]
    opt.load_state_dict(sd)
    assert loaded == [True]
