"""nn.utils.parametrize and nn.utils.parametrizations against PyTorch: values, gradients, state dicts."""
import copy
import doctest
import pickle
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.utils.parametrize as P
from ember.nn.utils import parametrizations
from ember.testing import assert_close

TOL = dict(rtol=1e-9, atol=1e-10)


def to_numpy(t):
    return t.detach().cpu().numpy()


def twins(torch, emod, tmod, device):
    """``emod`` given ``tmod``'s float64 weights, on ``device``."""
    tmod = tmod.double()
    emod.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()})
    return emod.to(device=device, dtype=ember.float64), tmod


def params_of(mod):
    return dict(mod.named_parameters())


def check_forward_backward(torch, emod, tmod, x, device):
    """Same output and the same gradient on every parameter (the originals of the parametrizations)."""
    ex, tx = ember.tensor(x, device=device), torch.tensor(x)
    eo, to = emod(ex), tmod(tx)
    assert_close(eo, to, **TOL)
    eo.pow(2).sum().backward()
    to.pow(2).sum().backward()
    tp = params_of(tmod)
    assert sorted(params_of(emod)) == sorted(tp)
    for name, p in params_of(emod).items():
        assert_close(p.grad, tp[name].grad, msg=name, **TOL)


def make_symmetric(base):
    class Symmetric(base.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).T

        def right_inverse(self, A):
            return A.triu()
    return Symmetric


def make_rank_one(base, lib):
    class RankOne(base.Module):
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Z):
            U, S, Vh = lib.linalg.svd(Z, full_matrices=False)
            s0_sqrt = S[0].sqrt().unsqueeze(-1)
            return U[..., :, 0] * s0_sqrt, Vh[..., 0, :] * s0_sqrt
    return RankOne


class Double(nn.Module):
    def forward(self, X):
        return 2 * X

    def right_inverse(self, X):
        return X / 2


def test_register_symmetric_matches_torch(torch, device):
    em, tm = twins(torch, nn.Linear(5, 5), torch.nn.Linear(5, 5), device)
    P.register_parametrization(em, "weight", make_symmetric(nn)())
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", make_symmetric(torch.nn)())
    assert type(em).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert P.type_before_parametrizations(em) is nn.Linear and isinstance(em, nn.Linear)
    assert P.is_parametrized(em) and P.is_parametrized(em, "weight") and not P.is_parametrized(em, "bias")
    assert list(em.state_dict()) == list(tm.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert_close(em.parametrizations.weight.original, tm.parametrizations.weight.original, **TOL)
    assert_close(em.weight, tm.weight, **TOL)
    assert_close(em.weight, em.weight.T, **TOL)
    assert isinstance(em.parametrizations.weight, P.ParametrizationList)
    check_forward_backward(torch, em, tm, np.random.default_rng(0).standard_normal((3, 5)), device)
    # assigning goes through right_inverse into the same original Parameter
    A = np.random.default_rng(1).random((5, 5))
    A = A + A.T
    original = em.parametrizations.weight.original
    em.weight = ember.tensor(A, device=device)
    tm.weight = torch.tensor(A)
    assert em.parametrizations.weight.original is original
    assert_close(em.weight, A, **TOL)
    assert_close(em.parametrizations.weight.original, tm.parametrizations.weight.original, **TOL)


def test_state_dict_from_torch_loads(torch, device):
    tm = torch.nn.Linear(4, 3).double()
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", torch.nn.Tanh())
    em = P.register_parametrization(nn.Linear(4, 3, device=device, dtype=ember.float64), "weight", nn.Tanh())
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert_close(em.weight, tm.weight, **TOL)


def test_stacked_and_removed(torch, device):
    em, tm = twins(torch, nn.Linear(4, 4), torch.nn.Linear(4, 4), device)
    w0 = to_numpy(em.weight).copy()
    for mod, lib in ((em, nn), (tm, torch.nn)):
        reg = P.register_parametrization if lib is nn else torch.nn.utils.parametrize.register_parametrization
        reg(mod, "weight", make_symmetric(lib)())
        reg(mod, "weight", lib.Tanh())
    assert len(em.parametrizations.weight) == 2
    assert_close(em.weight, tm.weight, **TOL)
    check_forward_backward(torch, em, tm, np.ones((2, 4)), device)
    expected = to_numpy(tm.weight)
    P.remove_parametrizations(em, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    assert type(em) is nn.Linear and not hasattr(em, "parametrizations")
    assert isinstance(em.weight, nn.Parameter) and list(em.state_dict()) == list(tm.state_dict())
    assert_close(em.weight, expected, **TOL)
    # leave_parametrized=False: back to the original, here right_inverse's halving
    P.register_parametrization(em, "weight", Double())
    P.remove_parametrizations(em, "weight", leave_parametrized=False)
    assert_close(em.weight, expected / 2, **TOL)
    assert not np.allclose(expected, w0)


def test_tuple_right_inverse_gives_original0_original1(torch, device):
    em, tm = twins(torch, nn.Linear(4, 4), torch.nn.Linear(4, 4), device)
    P.register_parametrization(em, "weight", make_rank_one(nn, ember)())
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", make_rank_one(torch.nn, torch)())
    keys = ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert list(em.state_dict()) == list(tm.state_dict()) == keys
    assert ember.linalg.matrix_rank(em.weight).item() == 1
    assert_close(em.weight, tm.weight, rtol=1e-8, atol=1e-10)  # singular vectors' signs cancel in the product
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        P.remove_parametrizations(em, "weight", leave_parametrized=False)
    w = to_numpy(em.weight)
    P.remove_parametrizations(em, "weight")
    assert isinstance(em.weight, nn.Parameter)
    assert_close(em.weight, w, **TOL)


def test_parametrized_buffer(device):
    m = nn.BatchNorm1d(3).to(device)
    P.register_parametrization(m, "running_var", Double())
    assert "parametrizations.running_var.original" in m.state_dict()
    assert not isinstance(m.parametrizations.running_var.original, nn.Parameter)
    assert_close(m.running_var, np.ones(3, np.float32))
    assert_close(m.parametrizations.running_var.original, np.full(3, 0.5, np.float32))


def test_cached_computes_once(device):
    calls = []

    class Counted(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 3

    m = P.register_parametrization(nn.Linear(2, 2).to(device), "weight", Counted())
    calls.clear()
    with P.cached():
        a, b = m.weight, m.weight
        with P.cached():
            assert m.weight is a
        assert m.weight is a
    assert a is b and len(calls) == 1
    assert m.weight is not m.weight and len(calls) == 3


def test_deepcopy_allowed_pickle_refused(device):
    m = P.register_parametrization(nn.Linear(3, 3).to(device), "weight", Double())
    c = copy.deepcopy(m)
    assert type(c) is type(m) and c.parametrizations.weight.original is not m.parametrizations.weight.original
    assert_close(c.weight, m.weight)
    with ember.no_grad():
        c.parametrizations.weight.original.zero_()
    assert not np.allclose(to_numpy(m.weight), 0)
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through "
                                           r"state_dict\(\)"):
        pickle.dumps(m)


def test_training_mode_follows_module(device):
    m = nn.Linear(2, 2).to(device).eval()
    p = Double()
    P.register_parametrization(m, "weight", p)
    assert not p.training
    m.train()
    assert p.training


def test_transfer_parametrizations_and_params(device):
    src = P.register_parametrization(nn.Linear(3, 3).to(device), "weight", Double())
    dst = nn.Linear(3, 3).to(device)
    P.transfer_parametrizations_and_params(src, dst)
    assert P.is_parametrized(dst, "weight")
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    assert_close(dst.weight, src.weight)


def test_errors(device):
    m = nn.Linear(3, 3).to(device)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with "
                                         "name 'nope'"):
        P.register_parametrization(m, "nope", Double())

    class ToDouble(nn.Module):
        def forward(self, X):
            return X.double()

    class Flatten(nn.Module):
        def forward(self, X):
            return X.flatten()

    with pytest.raises(ValueError, match="may not change the dtype of the tensor, unless `unsafe` flag"):
        P.register_parametrization(m, "weight", ToDouble())
    assert not P.is_parametrized(m) and type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    P.register_parametrization(m, "weight", Flatten(), unsafe=True)
    assert m.weight.shape == (9,)
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        m.weight = ember.zeros(9, device=device)
    with pytest.raises(ValueError, match="does not have a parametrization on bias2"):
        P.remove_parametrizations(m, "bias2")


def test_stacking_checks_shape(device):
    m = P.register_parametrization(nn.Linear(3, 3).to(device), "weight", Double())

    class Flatten(nn.Module):
        def forward(self, X):
            return X.flatten()

    with pytest.raises(ValueError, match=r"may not change the shape of the tensor, unless the `unsafe` flag is "
                                         r"enabled.\nmodule.weight.shape"):
        P.register_parametrization(m, "weight", Flatten())
    assert len(m.parametrizations.weight) == 1


# ------------------------------------------------------------------------------------ parametrizations
@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_matches_torch(torch, device, dim):
    em, tm = twins(torch, nn.Linear(5, 4), torch.nn.Linear(5, 4), device)
    parametrizations.weight_norm(em, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    assert list(em.state_dict()) == list(tm.state_dict())
    for k in ("original0", "original1"):
        assert_close(getattr(em.parametrizations.weight, k), getattr(tm.parametrizations.weight, k), **TOL)
    check_forward_backward(torch, em, tm, np.random.default_rng(2).standard_normal((3, 5)), device)


def test_weight_norm_conv_and_legacy_state_dict(torch, device):
    tm = torch.nn.Conv2d(2, 3, 3).double()
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(tm)
    legacy = {k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    assert sorted(legacy) == ["bias", "weight_g", "weight_v"]
    em = parametrizations.weight_norm(nn.Conv2d(2, 3, 3).to(device=device, dtype=ember.float64))
    em.load_state_dict(legacy)
    x = np.random.default_rng(3).standard_normal((1, 2, 5, 5))
    assert_close(em(ember.tensor(x, device=device)), tm(torch.tensor(x)), **TOL)


def _copy_uv(em, tm):
    for k in ("_u", "_v"):
        getattr(em.parametrizations.weight[0], k).copy_(
            ember.tensor(getattr(tm.parametrizations.weight[0], k).numpy()))


@pytest.mark.parametrize("make", ["linear", "conv_t"])
def test_spectral_norm_matches_torch(torch, device, make):
    if make == "linear":
        em, tm = twins(torch, nn.Linear(6, 4), torch.nn.Linear(6, 4), device)
        x = np.random.default_rng(4).standard_normal((3, 6))
    else:
        em, tm = twins(torch, nn.ConvTranspose2d(3, 2, 2), torch.nn.ConvTranspose2d(3, 2, 2), device)
        x = np.random.default_rng(4).standard_normal((1, 3, 4, 4))
    parametrizations.spectral_norm(em, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(tm, n_power_iterations=2)
    assert list(em.state_dict()) == list(tm.state_dict())
    sn = em.parametrizations.weight[0]
    assert sn.dim == (1 if make == "conv_t" else 0)
    with ember.no_grad():
        _copy_uv(em, tm)
    check_forward_backward(torch, em, tm, x, device)  # training: power iteration on the copied u, v
    assert_close(sn._u, tm.parametrizations.weight[0]._u, **TOL)
    assert_close(sn._v, tm.parametrizations.weight[0]._v, **TOL)
    em.eval()
    tm.eval()
    u = to_numpy(sn._u).copy()
    assert_close(em.weight, tm.weight, **TOL)
    assert np.array_equal(to_numpy(sn._u), u)  # eval mode leaves the estimate alone
    # sigma is close to the largest singular value
    w = to_numpy(em.parametrizations.weight.original).reshape(to_numpy(sn._u).shape[0], -1) \
        if make == "linear" else None
    if w is not None:
        assert np.linalg.norm(to_numpy(em.weight), 2) == pytest.approx(1.0, rel=1e-2)


def test_spectral_norm_vector_and_errors(device):
    m = nn.Linear(3, 4).to(device)
    parametrizations.spectral_norm(m, "bias")
    assert m.bias.norm().item() == pytest.approx(1.0, rel=1e-5)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        parametrizations.spectral_norm(m, "nope")
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        parametrizations.spectral_norm(nn.Linear(2, 2), dim=2)


@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_square_matches_torch(torch, device, orth_map):
    em, tm = twins(torch, nn.Linear(4, 4), torch.nn.Linear(4, 4), device)
    parametrizations.orthogonal(em, orthogonal_map=orth_map)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orth_map)
    assert list(em.state_dict()) == list(tm.state_dict()) == [
        "bias", "parametrizations.weight.original", "parametrizations.weight.0.base"]
    assert_close(em.parametrizations.weight.original, tm.parametrizations.weight.original, **TOL)
    assert_close(em.parametrizations.weight[0].base, tm.parametrizations.weight[0].base, rtol=1e-8, atol=1e-10)
    assert_close(em.weight, tm.weight, rtol=1e-8, atol=1e-10)
    with ember.no_grad(), torch.no_grad():  # move off the base point so the map's gradient is exercised
        noise = np.random.default_rng(5).standard_normal((4, 4)) * 0.3
        np.fill_diagonal(noise, 0.0)  # the householder map reads the diagonal's sign through .int()
        em.parametrizations.weight.original.add_(ember.tensor(noise, device=device))
        tm.parametrizations.weight.original.add_(torch.tensor(noise))
    Q = to_numpy(em.weight)
    np.testing.assert_allclose(Q.T @ Q, np.eye(4), atol=1e-10)
    check_forward_backward(torch, em, tm, np.random.default_rng(6).standard_normal((2, 4)), device)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3)])
@pytest.mark.parametrize("orth_map", [None, "matrix_exp", "cayley", "householder"])
def test_orthogonal_rectangular(device, shape, orth_map):
    m = nn.Linear(shape[1], shape[0], device=device, dtype=ember.float64)
    parametrizations.orthogonal(m, orthogonal_map=orth_map)
    if orth_map is None:
        assert m.parametrizations.weight[0].orthogonal_map.name == "householder"
    Q = to_numpy(m.weight)
    G = Q @ Q.T if shape[0] < shape[1] else Q.T @ Q
    np.testing.assert_allclose(G, np.eye(min(shape)), atol=1e-10)
    m.weight.sum().backward()
    assert m.parametrizations.weight.original.grad.shape == shape


def test_orthogonal_assign_and_no_trivialization(torch, device):
    m = parametrizations.orthogonal(nn.Linear(4, 4, device=device, dtype=ember.float64))
    Q = np.linalg.qr(np.random.default_rng(7).standard_normal((4, 4)))[0]
    m.weight = ember.tensor(Q, device=device)
    assert_close(m.weight, Q, rtol=1e-9, atol=1e-12)
    # without trivialization the householder map stores reflectors that reproduce the weight
    tm = torch.nn.Linear(5, 3).double()
    em, tm = twins(torch, nn.Linear(5, 3), tm, device)
    parametrizations.orthogonal(em, orthogonal_map="householder", use_trivialization=False)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map="householder", use_trivialization=False)
    assert list(em.state_dict()) == list(tm.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert_close(em.parametrizations.weight.original, tm.parametrizations.weight.original, rtol=1e-8, atol=1e-10)
    assert_close(em.weight, tm.weight, rtol=1e-8, atol=1e-10)
    # registration works (right_inverse's NotImplementedError is skipped); assigning does not
    m2 = parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        m2.weight = ember.eye(3)


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions"):
        parametrizations.orthogonal(nn.Linear(2, 2), "bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", '
                                         '"householder". Got: qr'):
        parametrizations.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")


@pytest.mark.parametrize("module", ["ember.nn.utils.parametrize", "ember.nn.utils.parametrizations"])
def test_docs_examples_run(module):
    __import__(module)
    result = doctest.testmod(sys.modules[module])
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("orth_map", ["matrix_exp", "householder"])
def test_orthogonal_batch_matches_torch(torch, device, orth_map):
    """A batch of matrices (a buffer of shape (2, 3, 3)), trained one step."""
    def make(lib):
        m = lib.Module()
        m.register_parameter("weight", lib.Parameter(lib_randn(lib)))
        return m

    def lib_randn(lib):
        arr = np.random.default_rng(8).standard_normal((2, 3, 3))
        return ember.tensor(arr) if lib is nn else torch.tensor(arr)

    em, tm = make(nn).to(device), make(torch.nn)
    parametrizations.orthogonal(em, orthogonal_map=orth_map)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orth_map)
    assert_close(em.weight, tm.weight, rtol=1e-8, atol=1e-10)
    em.weight.sum().backward()
    tm.weight.sum().backward()
    assert_close(em.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad,
                 rtol=1e-8, atol=1e-10)
    with ember.no_grad():
        em.parametrizations.weight.original.sub_(0.1 * em.parametrizations.weight.original.grad)
    Q = to_numpy(em.weight)
    np.testing.assert_allclose(np.swapaxes(Q, -1, -2) @ Q, np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-10)


def test_training_steps_track_torch(torch, device):
    """Three SGD steps on a net with weight norm, spectral norm and an orthogonal layer follow PyTorch's."""
    def make(lib):
        return lib.Sequential(lib.Linear(4, 4), lib.Tanh(), lib.Linear(4, 3), lib.Tanh(), lib.Linear(3, 2))

    em, tm = twins(torch, make(nn), make(torch.nn), device)
    for net, pz in ((em, parametrizations), (tm, torch.nn.utils.parametrizations)):
        pz.orthogonal(net[0])
        pz.weight_norm(net[2])
        pz.spectral_norm(net[4])
    with ember.no_grad():
        for k, v in tm.state_dict().items():  # the same base point and power-iteration vectors
            em.state_dict()[k].copy_(ember.tensor(v.numpy()))
    eopt = ember.optim.SGD(em.parameters(), lr=0.1)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    x = np.random.default_rng(9).standard_normal((5, 4))
    for _ in range(3):
        for net, opt, inp in ((em, eopt, ember.tensor(x, device=device)), (tm, topt, torch.tensor(x))):
            opt.zero_grad()
            net(inp).pow(2).mean().backward()
            opt.step()
    for k, v in tm.state_dict().items():
        assert_close(em.state_dict()[k], v, msg=k, rtol=1e-8, atol=1e-10)
