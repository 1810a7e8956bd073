"""nn.init distributions and bounds, layer default initialisation as PyTorch's, nn.utils."""
import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.testing import to_numpy


def test_calculate_gain(torch):
    for nl, p in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                  ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert nn.init.calculate_gain(nl, p) == pytest.approx(torch.nn.init.calculate_gain(nl, p))
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        nn.init.calculate_gain("nope")


@pytest.mark.parametrize("fn,kwargs,bound", [
    (nn.init.uniform_, {"a": -0.3, "b": 0.7}, (-0.3, 0.7)),
    (nn.init.xavier_uniform_, {"gain": 2.0}, (-2 * math.sqrt(6 / (40 + 60)),) * 1 + (2 * math.sqrt(6 / 100),)),
    (nn.init.kaiming_uniform_, {"a": math.sqrt(5)}, (-1 / math.sqrt(40), 1 / math.sqrt(40))),
    (nn.init.kaiming_uniform_, {"nonlinearity": "relu", "mode": "fan_out"},
     (-math.sqrt(6 / 60), math.sqrt(6 / 60))),
])
def test_uniform_initialisers_bounds(device, fn, kwargs, bound):
    w = ember.empty(60, 40, device=device)
    assert fn(w, **kwargs) is w
    a = to_numpy(w)
    lo, hi = bound
    assert a.min() >= lo and a.max() <= hi
    assert a.min() < lo + 0.1 * (hi - lo) and a.max() > hi - 0.1 * (hi - lo)   # the whole range is used


@pytest.mark.parametrize("fn,kwargs,std", [
    (nn.init.normal_, {"mean": 0.0, "std": 0.5}, 0.5),
    (nn.init.xavier_normal_, {}, math.sqrt(2 / (200 + 300))),
    (nn.init.kaiming_normal_, {"nonlinearity": "relu"}, math.sqrt(2 / 200)),
    (nn.init.trunc_normal_, {"std": 1.0, "a": -1.0, "b": 1.0}, 0.5376),
])
def test_normal_initialisers_std(device, fn, kwargs, std):
    w = ember.empty(300, 200, device=device)
    a = to_numpy(fn(w, **kwargs))
    assert abs(a.std() - std) < 0.05 * std and abs(a.mean()) < 0.05
    if fn is nn.init.trunc_normal_:
        assert a.min() >= -1 and a.max() <= 1


def test_structured_initialisers(torch, device):
    w = ember.empty(3, 5, device=device)
    np.testing.assert_array_equal(to_numpy(nn.init.eye_(w)), np.eye(3, 5))
    np.testing.assert_array_equal(to_numpy(nn.init.constant_(w, 0.3)), np.full((3, 5), 0.3, np.float32))
    np.testing.assert_array_equal(to_numpy(nn.init.ones_(w)), 1)
    np.testing.assert_array_equal(to_numpy(nn.init.zeros_(w)), 0)
    d = ember.empty(4, 2, 3, 3, device=device)
    t = torch.empty(4, 2, 3, 3)
    np.testing.assert_array_equal(to_numpy(nn.init.dirac_(d, groups=2)), torch.nn.init.dirac_(t, groups=2).numpy())
    q = to_numpy(nn.init.orthogonal_(ember.empty(4, 6, device=device), gain=2.0))
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(4), atol=1e-5)
    s = to_numpy(nn.init.sparse_(ember.empty(10, 4, device=device), 0.3))
    assert ((s == 0).sum(0) >= 3).all()
    p = nn.Parameter(ember.zeros(2, 2, device=device))
    nn.init.normal_(p)
    assert p.grad_fn is None and p.requires_grad and p.is_leaf
    with pytest.warns(FutureWarning):
        nn.init.xavier_uniform(ember.empty(2, 2))


@pytest.mark.parametrize("build,params", [
    (lambda n: n.Linear(50, 30), {"weight": 1 / math.sqrt(50), "bias": 1 / math.sqrt(50)}),
    (lambda n: n.Conv2d(4, 8, 3), {"weight": 1 / math.sqrt(36), "bias": 1 / math.sqrt(36)}),
    (lambda n: n.ConvTranspose2d(4, 8, 3), {"weight": 1 / math.sqrt(72), "bias": 1 / math.sqrt(72)}),
    (lambda n: n.Bilinear(5, 6, 7), {"weight": 1 / math.sqrt(5), "bias": 1 / math.sqrt(5)}),
])
def test_layers_initialise_like_torch(torch, build, params):
    e, t = build(nn), build(torch.nn)
    for name, bound in params.items():
        a, b = to_numpy(getattr(e, name)), getattr(t, name).detach().numpy()
        assert a.shape == b.shape and a.dtype == b.dtype
        # the largest of n uniform draws on [-bound, bound] is below q * bound with probability q ** n: one in a
        # million whichever generator (device) drew them
        assert np.abs(a).max() <= bound and np.abs(a).max() > 1e-6 ** (1 / a.size) * bound
    emb = to_numpy(nn.Embedding(200, 50).weight)
    assert abs(emb.std() - 1) < 0.05
    bn = nn.BatchNorm2d(3)
    assert np.all(to_numpy(bn.weight) == 1) and np.all(to_numpy(bn.bias) == 0)
    assert np.all(to_numpy(nn.PReLU(3).weight) == 0.25)


def test_clip_grad_and_vector_conversion(torch, device):
    ps = [nn.Parameter(ember.tensor(np.arange(4.0).reshape(2, 2), device=device)),
          nn.Parameter(ember.ones(3, device=device))]
    tp = [torch.nn.Parameter(torch.tensor(np.arange(4.0).reshape(2, 2), dtype=torch.float32)),
          torch.nn.Parameter(torch.ones(3))]
    for p, q in zip(ps, tp):
        p.grad = p.detach() * 3
        q.grad = q.detach() * 3
    for norm_type in (2.0, 1.0, float("inf")):
        for p, q in zip(ps, tp):
            p.grad = p.detach() * 3
            q.grad = q.detach() * 3
        n_e = nn.utils.clip_grad_norm_(ps, 1.5, norm_type)
        n_t = torch.nn.utils.clip_grad_norm_(tp, 1.5, norm_type)
        assert float(n_e.item()) == pytest.approx(float(n_t), rel=1e-5)
        for p, q in zip(ps, tp):
            np.testing.assert_allclose(to_numpy(p.grad), q.grad.numpy(), rtol=1e-5)
    nn.utils.clip_grad_value_(ps, 0.5)
    assert np.abs(to_numpy(ps[0].grad)).max() <= 0.5
    v = nn.utils.parameters_to_vector(ps)
    np.testing.assert_array_equal(to_numpy(v), [0, 1, 2, 3, 1, 1, 1])
    nn.utils.vector_to_parameters(v * 2, ps)
    np.testing.assert_array_equal(to_numpy(ps[1]), [2, 2, 2])
    with pytest.raises(RuntimeError, match="does not match"):
        nn.utils.vector_to_parameters(v[:3], ps)
