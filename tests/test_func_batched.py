"""Batched function transforms: jacrev, jacfwd, hessian, autograd.functional.jacobian/hessian(vectorize=True) and
autograd.grad(is_grads_batched=True) run every basis vector in one vmapped pass, with PyTorch's results."""
import numpy as np
import pytest

import ember
from ember.autograd import engine
from ember.func import batching
from ember.testing import assert_close

torch = pytest.importorskip("torch")


def _data(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _close(a, b):
    if isinstance(b, dict):
        assert set(a) == set(b)
        for k in b:
            _close(a[k], b[k])
    elif isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
    else:
        assert_close(a, b, rtol=1e-9, atol=1e-10)


@pytest.fixture
def engine_runs(monkeypatch):
    """How many backward passes the engine runs."""
    calls = []
    real = engine.run

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(engine, "run", counting)
    return calls


def _layer(lib, W, b):
    return lambda x: lib.tanh(W @ x + b)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd", "hessian", "jacrev2", "jacfwd2"])
def test_jacobians_match_torch_func(device, transform, engine_runs):
    W, b, x = _data((5, 7), (5,), (7,))
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        f = _layer(lib, lib.tensor(W, device=dev), lib.tensor(b, device=dev))
        F = lib.func
        t = {"jacrev": F.jacrev(f), "jacfwd": F.jacfwd(f), "hessian": F.hessian(f),
             "jacrev2": F.jacrev(F.jacrev(f)), "jacfwd2": F.jacfwd(F.jacfwd(f))}[transform]
        engine_runs.clear()
        res.append(t(lib.tensor(x, device=dev)))
        if lib is ember:
            # at most two backward passes per level of differentiation (forward products: the vjp's graph, then
            # its backward), never one per basis vector
            assert len(engine_runs) <= 4, len(engine_runs)
    _close(*res)


@pytest.mark.parametrize("chunk_size", [None, 1, 3, 100])
def test_jacrev_chunk_size(device, chunk_size):
    W, b, x = _data((5, 7), (5,), (7,), seed=1)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        f = _layer(lib, lib.tensor(W, device=dev), lib.tensor(b, device=dev))
        res.append(lib.func.jacrev(f, chunk_size=chunk_size)(lib.tensor(x, device=dev)))
    _close(*res)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_argnums_tuple_has_aux_and_output_trees(device, name):
    a, b = _data((3,), (2, 3), seed=2)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        def f(x, y):
            z = (y * x).sin()
            return {"sum": z.sum(1), "prod": z * x}, (x * 2).detach()
        jac = getattr(lib.func, name)(f, argnums=(1, 0), has_aux=True)
        res.append(jac(lib.tensor(a, device=dev), lib.tensor(b, device=dev)))
    _close(*res)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd", "hessian"])
def test_per_sample_fallback_inside_the_batched_pass(device, name):
    # flip and roll have no batching rule: the vmapped backward runs them once per basis vector, same results
    (x,) = _data((4,), seed=3)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        def f(x, lib=lib):
            return (lib.roll(x, 1) * x.flip(0)).exp()
        batching.LOOPED.clear()
        res.append(getattr(lib.func, name)(f)(lib.tensor(x, device=dev)))
        if lib is ember:
            assert batching.LOOPED
    _close(*res)


def test_jacrev_inside_vmap_ntk(device, engine_runs):
    # the empirical NTK recipe: vmap(jacrev(functional_call)) over a batch, contracted
    (xs,) = _data((4, 3), seed=4)
    lib_nets = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        net = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2)).double().to(dev)
        if lib_nets:  # PyTorch's network starts from ember's weights
            state = lib_nets[0][1].state_dict()
            net.load_state_dict({k: torch.tensor(v.detach().cpu().numpy()) for k, v in state.items()})
        lib_nets.append((lib, net, dev))
    res = []
    for lib, net, dev in lib_nets:
        params = {k: v.detach() for k, v in net.named_parameters()}

        def single(p, x, lib=lib, net=net):
            return lib.func.functional_call(net, p, (x.unsqueeze(0),)).squeeze(0)
        engine_runs.clear()
        jac = lib.func.vmap(lib.func.jacrev(single), (None, 0))(params, lib.tensor(xs, device=dev))
        if lib is ember:
            assert len(engine_runs) == 1
        flat = [j.flatten(2) for j in jac.values()]
        res.append(lib.stack([lib.einsum("Naf,Mbf->NMab", j, j) for j in flat]).sum(0))
    _close(*res)


def test_vmap_over_vjp_fn_is_one_backward(device, engine_runs):
    (xs,) = _data((4, 3), seed=5)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(xs, device=dev)
        out, fn = lib.func.vjp(lambda x: x.sin() * x.sum(0), x)
        engine_runs.clear()
        res.append(lib.func.vmap(fn)(lib.eye(12, dtype=lib.float64, device=dev).reshape(12, 4, 3)))
        if lib is ember:
            assert len(engine_runs) == 1
    _close(*res)


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_is_grads_batched(device, create_graph, engine_runs):
    W, x0, v = _data((4, 6), (6,), (3, 4), seed=6)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(x0, device=dev, requires_grad=True)
        unused = lib.tensor(1.0, device=dev, requires_grad=True)
        y = lib.tanh(lib.tensor(W, device=dev) @ x)
        engine_runs.clear()
        g, none = lib.autograd.grad(y, (x, unused), lib.tensor(v, device=dev), create_graph=create_graph,
                                    allow_unused=True, is_grads_batched=True)
        assert none is None
        if lib is ember:
            assert len(engine_runs) == 1
        assert g.requires_grad == create_graph
        second = lib.autograd.grad(g.sum(), x)[0] if create_graph else g
        res.append((g.detach(), second))
    _close(*res)


def test_grad_is_grads_batched_errors(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.ones(3, device=dev, requires_grad=True)
        y = x * 2
        with pytest.raises(RuntimeError, match="is_grads_batched=True"):
            lib.autograd.grad(y, x, lib.ones(3, device=dev), is_grads_batched=True)
        with pytest.raises(RuntimeError, match="not have been used"):
            lib.autograd.grad(y, (x, lib.ones(1, device=dev, requires_grad=True)), lib.ones(2, 3, device=dev),
                              is_grads_batched=True)


@pytest.mark.parametrize("create_graph", [False, True])
def test_functional_jacobian_and_hessian_vectorized(device, create_graph, engine_runs):
    W, a, b = _data((4, 3), (3,), (4,), seed=7)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        Wl = lib.tensor(W, device=dev)
        AF = lib.autograd.functional

        def f(x, y, lib=lib, Wl=Wl):
            return lib.tanh(Wl @ x) * y, (x * x).sum()

        def s(x, y, lib=lib, Wl=Wl):
            return (lib.tanh(Wl @ x) * y).sum()
        inputs = (lib.tensor(a, device=dev), lib.tensor(b, device=dev))
        engine_runs.clear()
        jac = AF.jacobian(f, inputs, create_graph=create_graph, vectorize=True)
        if lib is ember:
            assert len(engine_runs) == 2  # one per output
        hes = AF.hessian(s, inputs, create_graph=create_graph, vectorize=True)
        res.append((jac, hes))
    _close(*res)


@pytest.mark.parametrize("name", ["jacfwd", "hessian", "jacrev_chunked", "jacrev_of_vmap"])
def test_transforms_under_and_over_vmap(device, name):
    W, X = _data((3, 4), (5, 4), seed=8)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        Wl = lib.tensor(W, device=dev)

        def f(x, lib=lib, Wl=Wl):
            return lib.tanh(Wl @ x) * x[:3]
        F = lib.func
        t = {"jacfwd": lib.vmap(F.jacfwd(f)), "hessian": lib.vmap(F.hessian(f)),
             "jacrev_chunked": lib.vmap(F.jacrev(f, chunk_size=2)), "jacrev_of_vmap": F.jacrev(lib.vmap(f))}[name]
        res.append(t(lib.tensor(X, device=dev)))
    _close(*res)
