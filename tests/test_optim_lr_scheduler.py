"""LR schedulers against PyTorch step by step, and state_dict round trips."""
import pytest

import ember


def _opt(lib, device=None, kind="SGD"):
    kw = {"device": device} if device else {}
    a = lib.zeros(2, requires_grad=True, **kw)
    b = lib.zeros(3, requires_grad=True, **kw)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if kind == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib.optim.Adam(groups, lr=0.1)


def _seq(S, o):
    return S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=4), S.ExponentialLR(o, gamma=0.9)],
                          milestones=[5])


def _chain(S, o):
    return S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=3), S.ExponentialLR(o, gamma=0.9)])


# (name, optimizer kind, build(lr_scheduler module, optimizer)): adding a scheduler is adding a row
CASES = [
    ("StepLR", "SGD", lambda S, o: S.StepLR(o, step_size=3, gamma=0.5)),
    ("MultiStepLR", "SGD", lambda S, o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.5)),
    ("ExponentialLR", "SGD", lambda S, o: S.ExponentialLR(o, gamma=0.9)),
    ("CosineAnnealingLR", "SGD", lambda S, o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", "SGD", lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                                       eta_min=1e-3)),
    ("LambdaLR", "SGD", lambda S, o: S.LambdaLR(o, lr_lambda=[lambda e: 0.95 ** e, lambda e: 1 / (e + 1)])),
    ("MultiplicativeLR", "SGD", lambda S, o: S.MultiplicativeLR(o, lr_lambda=lambda e: 0.9)),
    ("LinearLR", "SGD", lambda S, o: S.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6)),
    ("ConstantLR", "SGD", lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=4)),
    ("PolynomialLR", "SGD", lambda S, o: S.PolynomialLR(o, total_iters=8, power=2.0)),
    ("OneCycleLR", "SGD", lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=25)),
    ("OneCycleLR3", "Adam", lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=25, three_phase=True,
                                                       anneal_strategy="linear")),
    ("CyclicLR", "SGD", lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, mode="triangular2")),
    ("CyclicLRexp", "Adam", lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5,
                                                     mode="exp_range", gamma=0.9)),
    ("SequentialLR", "SGD", _seq),
    ("ChainedScheduler", "SGD", _chain),
]
IDS = [c[0] for c in CASES]


def _trace(lib, sched, opt, steps):
    out = []
    for _ in range(steps):
        opt.step()
        sched.step()
        g = opt.param_groups[0]
        out.append((sched.get_last_lr(), g.get("momentum", g.get("betas", (None,))[0])))
    return out


@pytest.mark.parametrize("name,kind,build", CASES, ids=IDS)
def test_values_match_torch(device, torch, name, kind, build):
    o = _opt(ember, device, kind)
    mine = _trace(ember, build(ember.optim.lr_scheduler, o), o, 24)
    t = _opt(torch, None, kind)
    theirs = _trace(torch, build(torch.optim.lr_scheduler, t), t, 24)
    assert [g["lr"] for g in o.param_groups] == pytest.approx([g["lr"] for g in t.param_groups], rel=1e-12)
    for step, ((a, ma), (b, mb)) in enumerate(zip(mine, theirs)):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15), f"{name} step {step}"
        assert ma == pytest.approx(mb, rel=1e-12), f"{name} momentum at step {step}"


@pytest.mark.parametrize("name,kind,build", CASES, ids=IDS)
def test_state_dict_round_trip(device, name, kind, build):
    o = _opt(ember, device, kind)
    s = build(ember.optim.lr_scheduler, o)
    full = _trace(ember, s, o, 16)
    o2 = _opt(ember, device, kind)
    s2 = build(ember.optim.lr_scheduler, o2)
    _trace(ember, s2, o2, 8)
    o3 = _opt(ember, device, kind)
    s3 = build(ember.optim.lr_scheduler, o3)
    o3.load_state_dict(o2.state_dict())
    s3.load_state_dict(s2.state_dict())
    assert _trace(ember, s3, o3, 8) == full[8:]


def test_reduce_on_plateau_matches_torch(device, torch):
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.92, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.7]
    traces = []
    for lib, dev in ((ember, device), (torch, None)):
        o = _opt(lib, dev)
        s = lib.optim.lr_scheduler.ReduceLROnPlateau(o, factor=0.5, patience=1, cooldown=1, min_lr=[0.0, 0.02])
        trace = []
        for m in metrics:
            o.step()
            s.step(m)
            trace.append(s.get_last_lr())
        traces.append(trace)
    assert traces[0] == traces[1]


@pytest.mark.parametrize("build,err,match", [
    (lambda S, o: S.ConstantLR(o, factor=2.0), ValueError, "between 0 and 1"),
    (lambda S, o: S.LinearLR(o, start_factor=0), ValueError, "Starting multiplicative factor"),
    (lambda S, o: S.OneCycleLR(o, max_lr=1.0), ValueError, "total_steps OR"),
    (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "positive integer T_0"),
    (lambda S, o: S.ReduceLROnPlateau(o, factor=1.5), ValueError, "Factor should be < 1.0"),
    (lambda S, o: S.LambdaLR(o, lr_lambda=[lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas"),
    (lambda S, o: S.StepLR(object(), step_size=1), TypeError, "is not an Optimizer"),
    (lambda S, o: S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[3]), ValueError, "one more than"),
])
def test_bad_settings(device, build, err, match):
    o = _opt(ember, device)
    with pytest.raises(err, match=match):
        build(ember.optim.lr_scheduler, o)


def test_one_cycle_past_total_steps(device):
    o = _opt(ember, device)
    s = ember.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=2)
    with pytest.warns(UserWarning, match=r"before `optimizer.step\(\)`"):
        s.step()
    o.step()
    s.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        s.step()
