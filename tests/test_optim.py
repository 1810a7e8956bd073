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
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-4, 1.0), maximize=True)),
    ("ASGD", dict(lr=0.01)),
    ("ASGD", dict(lr=0.05, lambd=1e-3, alpha=0.5, t0=5, weight_decay=0.1, maximize=True)),
    ("Adafactor", dict(lr=0.01)),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, d=1.5, beta2_decay=-0.5, eps=(1e-20, 1e-3), maximize=True)),
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


BLOCKED = [c for c in CASES if c[0] in ("SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad",
                                        "Adadelta")]


@pytest.mark.parametrize("name,kwargs", BLOCKED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BLOCKED)])
def test_large_parameters_update_in_blocks_as_in_one_piece(device, torch, name, kwargs, monkeypatch):
    """A parameter of several blocks (``ember.kernels.optim.BLOCK``, the last one part-filled) next to a
    non-contiguous one, on two threads: bit for bit the update of the whole arrays at once, and PyTorch's."""
    from ember.kernels import optim as kopt

    rng = np.random.default_rng(3)
    shapes = [(3, kopt.BLOCK - 5), (7, 40)]
    inits = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(3)]

    def run(block):
        monkeypatch.setattr(kopt, "BLOCK", block)
        params = _ember_params(inits, device)
        params[1] = ember.tensor(inits[1].T.copy(), device=device).t().requires_grad_(True)  # a strided one
        return _run_ember(getattr(optim, name)(params, **kwargs), params, grads)

    before = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        blocked, whole = run(kopt.BLOCK), run(1 << 40)
    finally:
        ember.set_num_threads(before)
    tparams = [torch.tensor(a, requires_grad=True) for a in inits]
    topt = getattr(torch.optim, name)(tparams, **kwargs)
    for step, gs in enumerate(grads):
        for p, g in zip(tparams, gs):
            p.grad = torch.tensor(g)
        topt.step()
        for a, b, p in zip(blocked[step], whole[step], tparams):
            np.testing.assert_array_equal(a, b)
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


def test_sparse_adam_matches_torch_on_embedding_gradients(device, torch):
    rng = np.random.default_rng(3)
    table = rng.standard_normal((6, 3)).astype(np.float32)
    w = ember.tensor(table, device=device, requires_grad=True)
    tw = torch.tensor(table, requires_grad=True)
    opt, topt = optim.SparseAdam([w], lr=0.1), torch.optim.SparseAdam([tw], lr=0.1)
    for step in range(6):
        idx = rng.integers(0, 6, size=4)
        upstream = rng.standard_normal((4, 3)).astype(np.float32)
        w.grad = None
        (ember.nn.functional.embedding(ember.tensor(idx, device=device), w) * ember.tensor(upstream, device=device)
         ).sum().backward()
        tw.grad = None
        (torch.nn.functional.embedding(torch.tensor(idx), tw, sparse=True) * torch.tensor(upstream)).sum().backward()
        opt.step()
        topt.step()
        np.testing.assert_allclose(w.detach().cpu().numpy(), tw.detach().numpy(), rtol=2e-5, atol=2e-6,
                                   err_msg=f"step {step}")


def test_muon_matches_torch_in_float64(device, torch):
    rng = np.random.default_rng(4)
    init = rng.standard_normal((4, 6))
    p = ember.tensor(init, device=device, requires_grad=True)
    opt = optim.Muon([p], lr=0.02, weight_decay=0.01)
    expected = torch.tensor(init)
    buf = torch.zeros_like(expected)
    from torch.optim import _muon

    for _ in range(5):
        g = rng.standard_normal((4, 6))
        p.grad = ember.tensor(g, device=device)
        opt.step()
        tg = torch.tensor(g)
        buf.lerp_(tg, 1 - 0.95)
        update = tg.lerp(buf, 0.95)
        a, b, c = _muon.DEFAULT_A, _muon.DEFAULT_B, _muon.DEFAULT_C
        x = update.T / update.T.norm().clamp(min=1e-7)  # PyTorch's iteration, in float64 instead of bfloat16
        for _ in range(5):
            gram = x @ x.T
            x = torch.addmm(x, torch.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
        expected.mul_(1 - 0.02 * 0.01).add_(x.T, alpha=-0.02 * max(1, 4 / 6) ** 0.5)
        np.testing.assert_allclose(p.detach().cpu().numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([ember.zeros(3, requires_grad=True, device=device)])


def test_swa_averaged_model_ema_and_swalr_match_torch(device, torch):
    from ember.optim import swa_utils

    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((2, 3)).astype(np.float32)
    net = ember.nn.Linear(3, 2).to(device)
    tnet = torch.nn.Linear(3, 2)
    with ember.no_grad():
        net.weight.copy_(ember.tensor(w0, device=device))
        net.bias.zero_()
    with torch.no_grad():
        tnet.weight.copy_(torch.tensor(w0))
        tnet.bias.zero_()
    for make in (lambda m, mod: mod.AveragedModel(m),
                 lambda m, mod: mod.AveragedModel(m, multi_avg_fn=mod.get_ema_multi_avg_fn(0.9)),
                 lambda m, mod: mod.AveragedModel(m, avg_fn=mod.get_ema_avg_fn(0.8))):
        avg, tavg = make(net, swa_utils), make(tnet, torch.optim.swa_utils)
        for _ in range(4):
            delta = rng.standard_normal((2, 3)).astype(np.float32)
            with ember.no_grad():
                net.weight.add_(ember.tensor(delta, device=device))
            with torch.no_grad():
                tnet.weight.add_(torch.tensor(delta))
            avg.update_parameters(net)
            tavg.update_parameters(tnet)
        np.testing.assert_allclose(avg.module.weight.detach().cpu().numpy(), tavg.module.weight.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        assert int(avg.n_averaged) == int(tavg.n_averaged) == 4
    p, tp = ember.zeros(1, requires_grad=True, device=device), torch.zeros(1, requires_grad=True)
    opt, topt = optim.SGD([p], lr=1.0), torch.optim.SGD([tp], lr=1.0)
    for strategy in ("cos", "linear"):
        sched = swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3, anneal_strategy=strategy)
        tsched = torch.optim.swa_utils.SWALR(topt, swa_lr=0.05, anneal_epochs=3, anneal_strategy=strategy)
        for _ in range(5):
            opt.step(), topt.step(), sched.step(), tsched.step()
            assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr())
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="step")


def test_update_bn_recomputes_running_stats_as_torch(device, torch):
    from ember.optim import swa_utils

    rng = np.random.default_rng(6)
    batches = [rng.standard_normal((8, 3)).astype(np.float32) for _ in range(3)]
    net = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.BatchNorm1d(3)).to(device)
    tnet = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    tnet.load_state_dict({k: torch.tensor(v.detach().cpu().numpy()) for k, v in net.state_dict().items()})
    net.eval()
    swa_utils.update_bn([ember.tensor(b, device=device) for b in batches], net)
    torch.optim.swa_utils.update_bn([torch.tensor(b) for b in batches], tnet)
    assert not net.training
    np.testing.assert_allclose(net[1].running_mean.cpu().numpy(), tnet[1].running_mean.numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(net[1].running_var.cpu().numpy(), tnet[1].running_var.numpy(), rtol=1e-5)
    assert net[1].momentum == 0.1


@pytest.mark.parametrize("make,match", [
    (lambda p: optim.Rprop(p, etas=(1.5, 2.0)), "Invalid eta values"),
    (lambda p: optim.Adafactor(p, beta2_decay=0.5), "beta2_decay should be <= 0"),
    (lambda p: optim.Adafactor(p, d=0.5), "Clipping threshold d should be >= 1"),
    (lambda p: optim.ASGD(p, lr=-1), "Invalid learning rate"),
    (lambda p: optim.SparseAdam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
])
def test_new_optimizers_check_settings_as_torch(make, match, torch):
    with pytest.raises(ValueError, match=match):
        make([ember.zeros(2, requires_grad=True)])
