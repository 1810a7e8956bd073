"""ember.distributions against torch.distributions: log_prob, entropy, moments, cdf/icdf, shapes, expand and
validation for every family, on every backend (float64 parameters, the same values scored by both)."""
import math
import warnings
import numpy as np
import pytest

import ember
import ember.distributions as D

RNG = np.random.default_rng(1234)


def r(*s):
    return RNG.standard_normal(s)


def pos(*s, lo=0.5, hi=3.0):
    return RNG.uniform(lo, hi, s)


def unit(*s):
    return RNG.uniform(0.1, 0.9, s)


def simplex(*s):
    x = RNG.uniform(0.2, 1.0, s)
    return x / x.sum(-1, keepdims=True)


def spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def tril(n, batch=()):
    return np.linalg.cholesky(spd(n, batch))


# (name, params as numpy arrays or numbers; keyword "args" for positional extras)
CASES = [
    ("Normal", dict(loc=r(3), scale=pos(3))),
    ("Normal", dict(loc=0.5, scale=2.0)),
    ("LogNormal", dict(loc=r(2, 3), scale=pos(2, 3))),
    ("HalfNormal", dict(scale=pos(4))),
    ("Laplace", dict(loc=r(3), scale=pos(3))),
    ("Uniform", dict(low=r(3) - 2, high=r(3) + 2)),
    ("Cauchy", dict(loc=r(3), scale=pos(3))),
    ("HalfCauchy", dict(scale=pos(3))),
    ("Exponential", dict(rate=pos(3))),
    ("Gamma", dict(concentration=pos(3), rate=pos(3))),
    ("Chi2", dict(df=pos(3, lo=1.0, hi=5.0))),
    ("Beta", dict(concentration1=pos(3), concentration0=pos(3))),
    ("StudentT", dict(df=np.array([0.8, 1.5, 3.0, 7.0]), loc=r(4), scale=pos(4))),
    ("Gumbel", dict(loc=r(3), scale=pos(3))),
    ("Pareto", dict(scale=pos(3), alpha=pos(3, lo=2.5, hi=4.0))),
    ("Weibull", dict(scale=pos(3), concentration=pos(3, lo=1.2, hi=3.0))),
    ("Bernoulli", dict(probs=unit(4))),
    ("Bernoulli", dict(logits=r(2, 3))),
    ("Categorical", dict(probs=simplex(2, 4))),
    ("Categorical", dict(logits=r(3, 5))),
    ("OneHotCategorical", dict(probs=simplex(2, 4))),
    ("Binomial", dict(total_count=np.array([5.0, 5.0, 5.0]), probs=unit(3))),
    ("Binomial", dict(total_count=np.array([3.0, 7.0, 10.0]), logits=r(3))),
    ("Multinomial", dict(total_count=6, probs=simplex(2, 3))),
    ("Poisson", dict(rate=pos(4, lo=0.5, hi=8.0))),
    ("Geometric", dict(probs=unit(4))),
    ("NegativeBinomial", dict(total_count=pos(3, lo=1.0, hi=5.0), probs=unit(3))),
    ("NegativeBinomial", dict(total_count=pos(3, lo=1.0, hi=5.0), logits=r(3))),
    ("Dirichlet", dict(concentration=pos(2, 4))),
    ("MultivariateNormal", dict(loc=r(2, 3), covariance_matrix=spd(3, (2,)))),
    ("MultivariateNormal", dict(loc=r(3), precision_matrix=spd(3))),
    ("MultivariateNormal", dict(loc=r(3), scale_tril=tril(3, (2,)))),
    ("LowRankMultivariateNormal", dict(loc=r(2, 3), cov_factor=r(2, 3, 2), cov_diag=pos(2, 3))),
    ("RelaxedBernoulli", dict(temperature=np.array(0.7), probs=unit(3))),
    ("RelaxedOneHotCategorical", dict(temperature=np.array(0.5), probs=simplex(2, 4))),
    ("LogisticNormal", dict(loc=r(2, 3), scale=pos(2, 3))),
    ("ContinuousBernoulli", dict(probs=np.array([0.1, 0.4995, 0.7]))),
    ("ContinuousBernoulli", dict(logits=r(3))),
    ("FisherSnedecor", dict(df1=np.array([1.5, 3.0, 6.0]), df2=np.array([1.5, 3.0, 8.0]))),
    ("Kumaraswamy", dict(concentration1=pos(3), concentration0=pos(3))),
    ("InverseGamma", dict(concentration=np.array([0.5, 1.5, 3.0]), rate=pos(3))),
    ("GeneralizedPareto", dict(loc=r(3), scale=pos(3), concentration=np.array([-0.3, 0.0, 0.4]), _single=True)),
    ("VonMises", dict(loc=r(3), concentration=np.array([0.5, 2.0, 6.0]))),
    ("Wishart", dict(df=np.array([4.0, 6.0]), covariance_matrix=spd(3, (2,)))),
    ("Wishart", dict(df=5.0, scale_tril=tril(2))),
    ("LKJCholesky", dict(dim=3, concentration=np.array([0.5, 2.0]))),
]


def _ids(cases):
    return [f"{n}-{'-'.join(p)}" for n, p in cases]


def build(mod, name, params, device=None):
    """The family ``name`` of ``mod`` (ember or torch), ndarray parameters as float64 tensors (float32 where
    ``params`` says ``_single=True``: PyTorch's GeneralizedPareto scores only single precision)."""
    dtype = mod.float32 if params.get("_single") else mod.float64

    def conv(v):
        if isinstance(v, np.ndarray):
            if mod is ember:
                return ember.tensor(v, dtype=dtype, device=device)
            return mod.tensor(v, dtype=dtype)
        return v
    return getattr(mod.distributions, name)(**{k: conv(v) for k, v in params.items() if k != "_single"})


def to_np(t):
    return np.asarray(t.detach().cpu().numpy() if hasattr(t, "cpu") else t.detach().numpy(), dtype=np.float64)


def close(e, t, rtol=1e-6, atol=1e-8):
    a, b = to_np(e), t.detach().numpy().astype(np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    if t.dtype != t.new_zeros(()).double().dtype:  # single precision: its own rounding
        rtol, atol = max(rtol, 2e-5), max(atol, 1e-6)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def torch_sample(dist, shape):
    with warnings.catch_warnings():  # PyTorch's Wishart warns "Singular sample detected." on valid draws
        warnings.simplefilter("ignore", UserWarning)
        return dist.sample(shape)


def _try(fn):
    try:
        return fn(), None
    except NotImplementedError as e:
        return None, e


@pytest.mark.parametrize("name,params", CASES, ids=_ids(CASES))
def test_family_against_torch(device, torch, name, params):
    torch.manual_seed(0)
    te = build(torch, name, params)
    ee = build(ember, name, params, device)
    assert tuple(ee.batch_shape) == tuple(te.batch_shape)
    assert tuple(ee.event_shape) == tuple(te.event_shape)
    assert ee.has_rsample == te.has_rsample
    assert ee.has_enumerate_support == te.has_enumerate_support
    value = torch_sample(te, (5,))
    ev = ember.tensor(value.numpy(), device=device)
    close(ee.log_prob(ev), te.log_prob(value))
    for prop in ("mean", "variance", "stddev", "mode"):
        expect, err = _try(lambda prop=prop: getattr(te, prop))
        if err is None:
            close(getattr(ee, prop), expect)
    expect, err = _try(te.entropy)
    if err is None:
        close(ee.entropy(), expect, rtol=1e-5)
    expect, err = _try(lambda: te.cdf(value))
    if err is None:
        close(ee.cdf(ev), expect)
        q = torch.rand((5,) + tuple(te.batch_shape), dtype=torch.float64) * 0.9 + 0.05
        expect, err = _try(lambda: te.icdf(q))
        if err is None:
            close(ee.icdf(ember.tensor(q.numpy(), device=device)), expect, rtol=1e-6, atol=1e-7)
    homogeneous = not isinstance(te, torch.distributions.Binomial) or bool(
        te.total_count.min() == te.total_count.max())
    if te.has_enumerate_support and homogeneous:
        close(ee.enumerate_support(), te.enumerate_support())
        close(ee.enumerate_support(expand=False), te.enumerate_support(expand=False))
    sample = ee.sample((2,))
    assert tuple(sample.shape) == (2,) + tuple(te.batch_shape) + tuple(te.event_shape)
    assert bool(ee.support.check(sample).all())


@pytest.mark.parametrize("name,params", CASES, ids=_ids(CASES))
def test_expand(device, torch, name, params):
    ee = build(ember, name, params, device)
    te = build(torch, name, params)
    new_batch = (2,) + tuple(ee.batch_shape)
    ex, tx = ee.expand(new_batch), te.expand(new_batch)
    assert type(ex) is type(ee)
    assert tuple(ex.batch_shape) == tuple(tx.batch_shape) and tuple(ex.event_shape) == tuple(tx.event_shape)
    value = torch_sample(tx, ())
    dev = device if any(isinstance(v, np.ndarray) for v in params.values()) else "cpu"  # numbers: default device
    close(ex.log_prob(ember.tensor(value.numpy(), device=dev)), tx.log_prob(value))
    assert tuple(ex.sample((3,)).shape) == (3,) + new_batch + tuple(ee.event_shape)


KL_PAIRS = [
    ("Normal", dict(loc=r(3), scale=pos(3)), "Normal", dict(loc=r(3), scale=pos(3))),
    ("Bernoulli", dict(probs=unit(3)), "Bernoulli", dict(logits=r(3))),
    ("Beta", dict(concentration1=pos(3), concentration0=pos(3)), "Beta",
     dict(concentration1=pos(3), concentration0=pos(3))),
    ("Binomial", dict(total_count=np.array([5.0, 6.0]), probs=unit(2)), "Binomial",
     dict(total_count=np.array([5.0, 5.0]), probs=unit(2))),
    ("Categorical", dict(probs=simplex(2, 4)), "Categorical", dict(logits=r(2, 4))),
    ("OneHotCategorical", dict(probs=simplex(2, 4)), "OneHotCategorical", dict(probs=simplex(2, 4))),
    ("Dirichlet", dict(concentration=pos(2, 3)), "Dirichlet", dict(concentration=pos(2, 3))),
    ("Exponential", dict(rate=pos(3)), "Exponential", dict(rate=pos(3))),
    ("Gamma", dict(concentration=pos(3), rate=pos(3)), "Gamma", dict(concentration=pos(3), rate=pos(3))),
    ("Gumbel", dict(loc=r(3), scale=pos(3)), "Gumbel", dict(loc=r(3), scale=pos(3))),
    ("Geometric", dict(probs=unit(3)), "Geometric", dict(probs=unit(3))),
    ("HalfNormal", dict(scale=pos(3)), "HalfNormal", dict(scale=pos(3))),
    ("Laplace", dict(loc=r(3), scale=pos(3)), "Laplace", dict(loc=r(3), scale=pos(3))),
    ("Poisson", dict(rate=pos(3)), "Poisson", dict(rate=pos(3))),
    ("Uniform", dict(low=np.array([0.0, -1.0]), high=np.array([1.0, 0.5])), "Uniform",
     dict(low=np.array([-1.0, 0.0]), high=np.array([2.0, 1.0]))),
    ("Cauchy", dict(loc=r(3), scale=pos(3)), "Cauchy", dict(loc=r(3), scale=pos(3))),
    ("Pareto", dict(scale=pos(3), alpha=pos(3)), "Pareto", dict(scale=pos(3), alpha=pos(3))),
    ("LogNormal", dict(loc=r(3), scale=pos(3)), "LogNormal", dict(loc=r(3), scale=pos(3))),
    ("MultivariateNormal", dict(loc=r(2, 3), covariance_matrix=spd(3, (2,))), "MultivariateNormal",
     dict(loc=r(3), scale_tril=tril(3))),
    ("LowRankMultivariateNormal", dict(loc=r(3), cov_factor=r(3, 2), cov_diag=pos(3)),
     "LowRankMultivariateNormal", dict(loc=r(2, 3), cov_factor=r(2, 3, 1), cov_diag=pos(2, 3))),
    ("MultivariateNormal", dict(loc=r(3), covariance_matrix=spd(3)), "LowRankMultivariateNormal",
     dict(loc=r(3), cov_factor=r(3, 2), cov_diag=pos(3))),
    ("LowRankMultivariateNormal", dict(loc=r(3), cov_factor=r(3, 2), cov_diag=pos(3)), "MultivariateNormal",
     dict(loc=r(3), covariance_matrix=spd(3))),
    ("ContinuousBernoulli", dict(probs=unit(3)), "ContinuousBernoulli", dict(probs=unit(3))),
    ("Beta", dict(concentration1=pos(3), concentration0=pos(3)), "ContinuousBernoulli", dict(probs=unit(3))),
    ("Uniform", dict(low=np.array([0.1, -0.5]), high=np.array([0.6, 0.9])), "ContinuousBernoulli",
     dict(probs=unit(2))),
    ("ContinuousBernoulli", dict(probs=unit(3)), "Exponential", dict(rate=pos(3))),
    ("ContinuousBernoulli", dict(probs=unit(3)), "Normal", dict(loc=r(3), scale=pos(3))),
    ("ContinuousBernoulli", dict(probs=unit(2)), "Uniform", dict(low=np.array([-1.0, 0.1]),
                                                                  high=np.array([2.0, 3.0]))),
    ("ContinuousBernoulli", dict(probs=unit(2)), "Pareto", dict(scale=pos(2), alpha=pos(2))),
    ("Normal", dict(loc=r(2), scale=pos(2)), "ContinuousBernoulli", dict(probs=unit(2))),
    # across families
    ("Bernoulli", dict(probs=unit(3)), "Poisson", dict(rate=pos(3))),
    ("Beta", dict(concentration1=pos(3), concentration0=pos(3)), "Exponential", dict(rate=pos(3))),
    ("Beta", dict(concentration1=pos(3), concentration0=pos(3)), "Gamma", dict(concentration=pos(3), rate=pos(3))),
    ("Beta", dict(concentration1=pos(3), concentration0=pos(3)), "Normal", dict(loc=r(3), scale=pos(3))),
    ("Beta", dict(concentration1=pos(2), concentration0=pos(2)), "Uniform",
     dict(low=np.array([0.0, 0.5]), high=np.array([1.0, 1.0]))),
    ("Exponential", dict(rate=pos(3)), "Gamma", dict(concentration=pos(3), rate=pos(3))),
    ("Exponential", dict(rate=pos(3)), "Gumbel", dict(loc=r(3), scale=pos(3))),
    ("Exponential", dict(rate=pos(3)), "Normal", dict(loc=r(3), scale=pos(3))),
    ("Gamma", dict(concentration=pos(3), rate=pos(3)), "Exponential", dict(rate=pos(3))),
    ("Gamma", dict(concentration=pos(3), rate=pos(3)), "Gumbel", dict(loc=r(3), scale=pos(3))),
    ("Gamma", dict(concentration=pos(3), rate=pos(3)), "Normal", dict(loc=r(3), scale=pos(3))),
    ("Gumbel", dict(loc=r(3), scale=pos(3)), "Normal", dict(loc=r(3), scale=pos(3))),
    ("Laplace", dict(loc=r(3), scale=pos(3)), "Normal", dict(loc=r(3), scale=pos(3))),
    ("Normal", dict(loc=r(3), scale=pos(3)), "Gumbel", dict(loc=r(3), scale=pos(3))),
    ("Normal", dict(loc=r(3), scale=pos(3)), "Laplace", dict(loc=r(3), scale=pos(3))),
    ("Normal", dict(loc=r(3), scale=pos(3)), "Exponential", dict(rate=pos(3))),
    ("Pareto", dict(scale=pos(3), alpha=np.array([0.5, 1.5, 3.0])), "Exponential", dict(rate=pos(3))),
    ("Pareto", dict(scale=pos(3), alpha=np.array([0.5, 1.5, 3.0])), "Gamma",
     dict(concentration=pos(3), rate=pos(3))),
    ("Pareto", dict(scale=pos(3), alpha=np.array([1.5, 2.5, 3.0])), "Normal", dict(loc=r(3), scale=pos(3))),
    ("Poisson", dict(rate=pos(3)), "Bernoulli", dict(probs=unit(3))),
    ("Uniform", dict(low=np.array([0.1, -0.5]), high=np.array([0.6, 0.9])), "Beta",
     dict(concentration1=pos(2), concentration0=pos(2))),
    ("Uniform", dict(low=np.array([0.1, -0.5]), high=np.array([0.6, 0.9])), "Exponential", dict(rate=pos(2))),
    ("Uniform", dict(low=np.array([0.1, -0.5]), high=np.array([0.6, 0.9])), "Gamma",
     dict(concentration=pos(2), rate=pos(2))),
    ("Uniform", dict(low=r(3) - 2, high=r(3) + 2), "Gumbel", dict(loc=r(3), scale=pos(3))),
    ("Uniform", dict(low=r(3) - 2, high=r(3) + 2), "Normal", dict(loc=r(3), scale=pos(3))),
    ("Uniform", dict(low=np.array([2.0, 0.5]), high=np.array([3.0, 2.0])), "Pareto",
     dict(scale=np.array([1.0, 1.0]), alpha=pos(2))),
]


@pytest.mark.parametrize("pn,pp,qn,qp", KL_PAIRS, ids=[f"{a}-{c}" for a, _, c, _ in KL_PAIRS])
def test_kl_against_torch(device, torch, pn, pp, qn, qp):
    expect = torch.distributions.kl_divergence(build(torch, pn, pp), build(torch, qn, qp))
    got = D.kl_divergence(build(ember, pn, pp, device), build(ember, qn, qp, device))
    close(got, expect, rtol=1e-6, atol=1e-8)


def test_kl_independent_and_bregman(device, torch):
    loc, scale = r(2, 3), pos(2, 3)
    loc2, scale2 = r(2, 3), pos(2, 3)
    e = D.kl_divergence(D.Independent(build(ember, "Normal", dict(loc=loc, scale=scale), device), 1),
                        D.Independent(build(ember, "Normal", dict(loc=loc2, scale=scale2), device), 1))
    t = torch.distributions.kl_divergence(
        torch.distributions.Independent(build(torch, "Normal", dict(loc=loc, scale=scale)), 1),
        torch.distributions.Independent(build(torch, "Normal", dict(loc=loc2, scale=scale2)), 1))
    close(e, t)
    # the exponential-family Bregman divergence, reached for a family without its own pair
    from ember.distributions.kl import _kl_expfamily_expfamily
    p = build(ember, "Gamma", dict(concentration=pos(3), rate=pos(3)), device)
    q = build(ember, "Gamma", dict(concentration=pos(3), rate=pos(3)), device)
    np.testing.assert_allclose(to_np(_kl_expfamily_expfamily(p, q)), to_np(D.kl_divergence(p, q)), rtol=1e-6)


def test_kl_missing_pair_and_register(device):
    p = D.Cauchy(ember.zeros(2, device=device), ember.ones(2, device=device))
    q = D.Normal(ember.zeros(2, device=device), ember.ones(2, device=device))
    with pytest.raises(NotImplementedError, match="Cauchy.*Normal"):
        D.kl_divergence(p, q)

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return ember.zeros(p.batch_shape, device=device) + 7.0

    try:
        out = D.kl_divergence(MyNormal(ember.zeros(2, device=device), ember.ones(2, device=device)), q)
        assert out.tolist() == [7.0, 7.0]
    finally:
        from ember.distributions import kl
        del kl._KL_REGISTRY[MyNormal, D.Normal]
        kl._KL_MEMOIZE.clear()
    with pytest.raises(TypeError):  # a class of any kind is accepted, as PyTorch accepts it; a non-class is not
        D.register_kl(3, D.Normal)


def test_independent_and_mixture(device, torch):
    loc, scale = r(2, 3), pos(2, 3)
    ei = D.Independent(build(ember, "Normal", dict(loc=loc, scale=scale), device), 1)
    ti = torch.distributions.Independent(build(torch, "Normal", dict(loc=loc, scale=scale)), 1)
    assert tuple(ei.batch_shape) == (2,) and tuple(ei.event_shape) == (3,)
    v = ti.sample((4,))
    close(ei.log_prob(ember.tensor(v.numpy(), device=device)), ti.log_prob(v))
    close(ei.entropy(), ti.entropy())
    w = simplex(2, 3)
    em = D.MixtureSameFamily(D.Categorical(ember.tensor(w, device=device)),
                             build(ember, "Normal", dict(loc=loc, scale=scale), device))
    tm = torch.distributions.MixtureSameFamily(torch.distributions.Categorical(torch.tensor(w)),
                                               build(torch, "Normal", dict(loc=loc, scale=scale)))
    v = tm.sample((5,))
    ev = ember.tensor(v.numpy(), device=device)
    close(em.log_prob(ev), tm.log_prob(v))
    close(em.cdf(ev), tm.cdf(v))
    close(em.mean, tm.mean)
    close(em.variance, tm.variance)
    assert tuple(em.sample((7,)).shape) == (7, 2)
    w2 = simplex(2)
    emv = D.MixtureSameFamily(D.Categorical(ember.tensor(w2, device=device)), ei)  # vector components
    tmv = torch.distributions.MixtureSameFamily(torch.distributions.Categorical(torch.tensor(w2)), ti)
    v = tmv.sample((4,))
    close(emv.log_prob(ember.tensor(v.numpy(), device=device)), tmv.log_prob(v))
    assert tuple(emv.sample((6,)).shape) == (6, 3)


def test_transformed_distribution(device, torch):
    loc, scale = r(3), pos(3)
    et = [D.AffineTransform(1.0, 2.0), D.SigmoidTransform()]
    tt = [torch.distributions.AffineTransform(1.0, 2.0), torch.distributions.SigmoidTransform()]
    e = D.TransformedDistribution(build(ember, "Normal", dict(loc=loc, scale=scale), device), et)
    t = torch.distributions.TransformedDistribution(build(torch, "Normal", dict(loc=loc, scale=scale)), tt)
    v = t.sample((4,))
    ev = ember.tensor(v.numpy(), device=device)
    close(e.log_prob(ev), t.log_prob(v))
    close(e.cdf(ev), t.cdf(v))
    q = torch.rand(4, 3, dtype=torch.float64)
    close(e.icdf(ember.tensor(q.numpy(), device=device)), t.icdf(q))
    assert e.has_rsample and tuple(e.rsample((2,)).shape) == (2, 3)


def test_distribution_docs_example(device):
    # the module docstring's example, as written in PyTorch's documentation
    m = D.Normal(ember.tensor([0.0], device=device), ember.tensor([1.0], device=device))
    assert tuple(m.sample().shape) == (1,)
    m = D.Categorical(ember.tensor([0.25, 0.25, 0.25, 0.25], device=device))
    assert 0 <= int(m.sample()) <= 3
    probs = ember.tensor([0.1, 0.9], device=device, requires_grad=True)
    m = D.Categorical(probs)
    action = m.sample()
    loss = -m.log_prob(action) * 1.0
    loss.backward()
    assert probs.grad is not None and probs.grad.shape == probs.shape


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("ctor,param", [
    (lambda d: D.Normal(ember.zeros(2, device=d), -ember.ones(2, device=d)), "scale"),
    (lambda d: D.Gamma(ember.ones(2, device=d), ember.zeros(2, device=d)), "rate"),
    (lambda d: D.Bernoulli(probs=ember.tensor([1.5], device=d)), "probs"),
    (lambda d: D.Categorical(probs=ember.tensor([[-0.5, 1.5]], device=d)), "probs"),
    (lambda d: D.Beta(ember.tensor([0.0], device=d), ember.tensor([1.0], device=d)), "concentration1"),
    (lambda d: D.Dirichlet(ember.tensor([1.0, -1.0], device=d)), "concentration"),
    (lambda d: D.Uniform(ember.tensor([2.0], device=d), ember.tensor([1.0], device=d)), "low"),
    (lambda d: D.Poisson(ember.tensor([-1.0], device=d)), "rate"),
    (lambda d: D.MultivariateNormal(ember.zeros(2, device=d), ember.tensor([[1.0, 2.0], [2.0, 1.0]], device=d)),
     "covariance_matrix"),
    (lambda d: D.Binomial(ember.tensor([2.5], device=d), probs=ember.tensor([0.5], device=d)), "total_count"),
])
def test_invalid_parameters_raise(device, ctor, param):
    with pytest.raises(ValueError, match=f"Expected parameter {param} .* to satisfy the constraint"):
        ctor(device)


def test_validation_off_and_default(device):
    d = D.Normal(ember.zeros(1, device=device), -ember.ones(1, device=device), validate_args=False)
    assert float(d.scale) == -1.0
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(ember.zeros(1, device=device), -ember.ones(1, device=device))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(ember.zeros(1, device=device), -ember.ones(1, device=device))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Bernoulli()


@pytest.mark.parametrize("dist,value", [
    (lambda d: D.Exponential(ember.ones(2, device=d)), [-1.0, 1.0]),
    (lambda d: D.Bernoulli(probs=ember.full((2,), 0.5, device=d)), [0.5, 1.0]),
    (lambda d: D.Beta(ember.ones(2, device=d), ember.ones(2, device=d)), [1.5, 0.5]),
    (lambda d: D.Poisson(ember.ones(2, device=d)), [1.5, 2.0]),
    (lambda d: D.Categorical(ember.ones(2, 3, device=d)), [3.0, 1.0]),
    (lambda d: D.Dirichlet(ember.ones(2, device=d)), [0.7, 0.7]),
])
def test_log_prob_outside_support_raises(device, dist, value):
    d = dist(device)
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(ember.tensor(value, device=device))


def test_log_prob_shape_mismatch_raises(device):
    d = D.MultivariateNormal(ember.zeros(3, device=device), ember.eye(3, device=device))
    with pytest.raises(ValueError, match="event_shape"):
        d.log_prob(ember.zeros(2, device=device))
    d = D.Normal(ember.zeros(3, device=device), ember.ones(3, device=device))
    with pytest.raises(ValueError, match="broadcastable"):
        d.log_prob(ember.zeros(4, device=device))


# ---------------------------------------------------------------- sampling

MOMENT_CASES = [
    ("Normal", dict(loc=np.array([1.0, -2.0]), scale=np.array([0.5, 2.0]))),
    ("LogNormal", dict(loc=np.array([0.0, 0.3]), scale=np.array([0.3, 0.5]))),
    ("HalfNormal", dict(scale=np.array([1.0, 2.0]))),
    ("Laplace", dict(loc=np.array([1.0, -1.0]), scale=np.array([0.5, 1.5]))),
    ("Uniform", dict(low=np.array([0.0, -3.0]), high=np.array([1.0, 2.0]))),
    ("Exponential", dict(rate=np.array([0.5, 3.0]))),
    ("Gamma", dict(concentration=np.array([0.3, 4.0]), rate=np.array([1.0, 2.0]))),
    ("Chi2", dict(df=np.array([1.0, 6.0]))),
    ("Beta", dict(concentration1=np.array([0.5, 3.0]), concentration0=np.array([2.0, 4.0]))),
    ("StudentT", dict(df=np.array([5.0, 10.0]), loc=np.array([0.0, 1.0]), scale=np.array([1.0, 2.0]))),
    ("Gumbel", dict(loc=np.array([0.0, 1.0]), scale=np.array([1.0, 0.5]))),
    ("Pareto", dict(scale=np.array([1.0, 2.0]), alpha=np.array([5.0, 6.0]))),
    ("Weibull", dict(scale=np.array([1.0, 2.0]), concentration=np.array([1.5, 3.0]))),
    ("Bernoulli", dict(probs=np.array([0.2, 0.7]))),
    ("Binomial", dict(total_count=np.array([10.0, 4.0]), probs=np.array([0.3, 0.8]))),
    ("Poisson", dict(rate=np.array([0.5, 7.0]))),
    ("Geometric", dict(probs=np.array([0.3, 0.8]))),
    ("NegativeBinomial", dict(total_count=np.array([3.0, 5.0]), probs=np.array([0.4, 0.6]))),
    ("Multinomial", dict(total_count=5, probs=np.array([0.2, 0.3, 0.5]))),
    ("Dirichlet", dict(concentration=np.array([0.5, 1.0, 3.0]))),
    ("MultivariateNormal", dict(loc=np.array([1.0, -1.0]), covariance_matrix=np.array([[2.0, 0.5], [0.5, 1.0]]))),
    ("LowRankMultivariateNormal", dict(loc=np.array([1.0, -1.0]), cov_factor=np.array([[1.0], [0.5]]),
                                       cov_diag=np.array([0.5, 0.2]))),
    ("OneHotCategorical", dict(probs=np.array([0.1, 0.6, 0.3]))),
    ("ContinuousBernoulli", dict(probs=np.array([0.2, 0.5, 0.9]))),
    ("FisherSnedecor", dict(df1=np.array([5.0, 10.0]), df2=np.array([12.0, 20.0]))),
    ("Kumaraswamy", dict(concentration1=np.array([0.5, 2.0]), concentration0=np.array([2.0, 3.0]))),
    ("InverseGamma", dict(concentration=np.array([6.0, 9.0]), rate=np.array([1.0, 2.0]))),
    ("GeneralizedPareto", dict(loc=np.array([0.0, 1.0]), scale=np.array([1.0, 2.0]),
                               concentration=np.array([-0.2, 0.1]))),
]


@pytest.mark.parametrize("name,params", MOMENT_CASES, ids=[c[0] for c in MOMENT_CASES])
def test_sample_moments(device, name, params):
    d = build(ember, name, params, device)
    n = 40000
    x = to_np(d.sample((n,)))
    mean, var = to_np(d.mean), to_np(d.variance)
    assert bool(d.support.check(ember.tensor(x[:100], device=device)).all())
    se = np.sqrt(var / n)
    assert np.all(np.abs(x.mean(0) - mean) < 6 * se + 1e-9), (x.mean(0), mean)
    # the sample variance: loose bounds (its spread depends on the fourth moment)
    np.testing.assert_allclose(x.var(0), var, rtol=0.1, atol=1e-9)


KS_CASES = [c for c in MOMENT_CASES if c[0] in (
    "Normal", "LogNormal", "HalfNormal", "Laplace", "Uniform", "Exponential", "Gumbel", "Pareto", "Weibull")] + [
    ("Cauchy", dict(loc=np.array([0.0, 1.0]), scale=np.array([1.0, 0.5]))),
    ("HalfCauchy", dict(scale=np.array([1.0, 3.0]))),
]


@pytest.mark.parametrize("name,params", KS_CASES, ids=[c[0] for c in KS_CASES])
def test_sample_ks(device, name, params):
    d = build(ember, name, params, device)
    n = 4000
    x = d.sample((n,))
    x_sorted = ember.sort(x, dim=0).values
    cdf = to_np(d.cdf(x_sorted))
    ecdf_hi = np.arange(1, n + 1)[:, None] / n
    ecdf_lo = np.arange(0, n)[:, None] / n
    ks = np.maximum(np.abs(ecdf_hi - cdf), np.abs(cdf - ecdf_lo)).max(0)
    assert np.all(ks < 1.95 / np.sqrt(n)), ks  # the 0.1% critical value


def test_gamma_family_ks(device, torch):
    # Gamma/Beta/StudentT have no ember cdf: compare against PyTorch's cdf (or a sorted PyTorch sample)
    for name, params in [("Gamma", dict(concentration=np.array([0.4, 3.0]), rate=np.array([1.0, 2.0]))),
                         ("Beta", dict(concentration1=np.array([0.5, 2.0]), concentration0=np.array([3.0, 2.0])))]:
        n = 4000
        x = to_np(build(ember, name, params, device).sample((n,)))
        y = build(torch, name, params).sample((n,)).numpy()
        for j in range(x.shape[1]):
            grid = np.sort(np.concatenate([x[:, j], y[:, j]]))
            fx = np.searchsorted(np.sort(x[:, j]), grid, side="right") / n
            fy = np.searchsorted(np.sort(y[:, j]), grid, side="right") / n
            assert np.abs(fx - fy).max() < 1.95 * np.sqrt(2 / n)  # two-sample KS at 0.1%


def test_categorical_frequencies(device):
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    d = D.Categorical(ember.tensor(p, device=device))
    x = to_np(d.sample((20000,))).astype(int)
    assert x.shape == (20000, 2)
    for row in range(2):
        freq = np.bincount(x[:, row], minlength=3) / 20000
        np.testing.assert_allclose(freq, p[row], atol=0.02)


# ---------------------------------------------------------------- gradients

def test_standard_gamma_grad_matches_torch(device, torch):
    alpha = torch.tensor([0.05, 0.3, 0.9, 1.0, 2.5, 6.0, 9.0, 30.0, 400.0], dtype=torch.float64).repeat(20)
    x = torch._standard_gamma(alpha)
    got = ember._standard_gamma_grad(ember.tensor(alpha.numpy(), device=device),
                                     ember.tensor(x.numpy(), device=device))
    close(got, torch._standard_gamma_grad(alpha, x), rtol=1e-9, atol=1e-12)


def test_dirichlet_grad_matches_torch(device, torch):
    a = torch.tensor([[0.1, 0.5], [1.0, 3.0], [7.0, 9.0], [0.3, 20.0], [2.0, 2.0], [50.0, 0.5], [8.0, 30.0]],
                     dtype=torch.float64).repeat(20, 1)
    x = torch._sample_dirichlet(a)
    total = a.sum(-1, True).expand_as(a)
    got = ember._dirichlet_grad(ember.tensor(x.numpy(), device=device), ember.tensor(a.numpy(), device=device),
                                ember.tensor(total.numpy(), device=device))
    close(got, torch._dirichlet_grad(x, a, total), rtol=1e-9, atol=1e-12)


def test_dirichlet_rsample_backward_is_torchs_formula(device, torch):
    # the backward of a draw x: _dirichlet_grad(x, alpha, total) * (g - sum(x * g)), PyTorch's formula
    alpha = ember.tensor([[0.7, 2.0, 3.5]], dtype=ember.float64, device=device, requires_grad=True)
    x = ember._sample_dirichlet(alpha)
    w = ember.tensor([[1.0, -2.0, 0.5]], dtype=ember.float64, device=device)
    (x * w).sum().backward()
    ta = torch.tensor(to_np(alpha))
    tx = torch.tensor(to_np(x))
    tg = torch.tensor(to_np(w))
    grad = torch._dirichlet_grad(tx, ta, ta.sum(-1, True).expand_as(ta))
    close(alpha.grad, grad * (tg - (tx * tg).sum(-1, True)), rtol=1e-9)


def test_gamma_rsample_gradient_is_pathwise(device):
    # d/d(alpha) E[X] = 1/rate, d/d(rate) E[X] = -alpha/rate^2: averaged pathwise gradients match
    a = ember.tensor([0.5, 3.0], dtype=ember.float64, device=device, requires_grad=True)
    b = ember.tensor([2.0, 1.5], dtype=ember.float64, device=device, requires_grad=True)
    x = D.Gamma(a, b).rsample((40000,))
    x.mean(0).sum().backward()
    np.testing.assert_allclose(to_np(a.grad), 1 / np.array([2.0, 1.5]), rtol=0.05)
    np.testing.assert_allclose(to_np(b.grad), -np.array([0.5, 3.0]) / np.array([2.0, 1.5]) ** 2, rtol=0.05)


def test_beta_dirichlet_rsample_gradient(device):
    a = ember.tensor([0.7, 2.0], dtype=ember.float64, device=device, requires_grad=True)
    b = ember.tensor([1.5, 3.0], dtype=ember.float64, device=device, requires_grad=True)
    D.Beta(a, b).rsample((40000,)).mean(0).sum().backward()
    av, bv = np.array([0.7, 2.0]), np.array([1.5, 3.0])
    np.testing.assert_allclose(to_np(a.grad), bv / (av + bv) ** 2, rtol=0.06)
    np.testing.assert_allclose(to_np(b.grad), -av / (av + bv) ** 2, rtol=0.06)
    c = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, device=device, requires_grad=True)
    D.Dirichlet(c).rsample((40000,))[:, 0].mean().backward()
    cv = np.array([1.0, 2.0, 3.0])
    expect = np.array([cv[1] + cv[2], -cv[0], -cv[0]]) / cv.sum() ** 2  # d(c0 / sum c)/dc
    np.testing.assert_allclose(to_np(c.grad), expect, atol=0.01)


@pytest.mark.parametrize("name,params", [
    ("Normal", dict(loc=np.array([0.3, -1.0]), scale=np.array([0.5, 2.0]))),
    ("Laplace", dict(loc=np.array([0.3, -1.0]), scale=np.array([0.5, 2.0]))),
    ("Uniform", dict(low=np.array([0.0, -1.0]), high=np.array([1.0, 3.0]))),
    ("Exponential", dict(rate=np.array([0.5, 2.0]))),
    ("LogNormal", dict(loc=np.array([0.0, 0.5]), scale=np.array([0.3, 0.4]))),
    ("Gumbel", dict(loc=np.array([0.0, 0.5]), scale=np.array([0.3, 0.4]))),
    ("MultivariateNormal", dict(loc=np.array([1.0, -1.0]), scale_tril=np.array([[1.0, 0.0], [0.3, 0.5]]))),
])
def test_rsample_same_noise_as_torch(device, torch, name, params):
    """With the same seed-independent noise, rsample's gradient equals PyTorch's: both draw through
    loc + scale * eps (or the family's transform), so fixing eps by inverting the sample gives the same path."""
    e_params = {k: ember.tensor(v, dtype=ember.float64, device=device, requires_grad=True) for k, v in params.items()}
    t_params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    ed = getattr(D, name)(**e_params)
    td = getattr(torch.distributions, name)(**t_params)
    xe = ed.rsample((3,))
    # the PyTorch sample on the same path: replay ember's draw by the distribution's own standardisation
    if name == "MultivariateNormal":
        L = params["scale_tril"]
        eps = np.linalg.solve(L, (to_np(xe) - params["loc"]).T).T
        xt = td.loc + (torch.tensor(eps) @ td.scale_tril.mT)
    elif name in ("Normal", "Laplace", "Gumbel", "LogNormal"):
        base = (to_np(xe) if name != "LogNormal" else np.log(to_np(xe)))
        loc, scale = params["loc"], params["scale"]
        eps = (base - loc) / scale
        z = td.loc + td.scale * torch.tensor(eps)
        xt = z.exp() if name == "LogNormal" else z
    elif name == "Uniform":
        u = (to_np(xe) - params["low"]) / (params["high"] - params["low"])
        xt = td.low + torch.tensor(u) * (td.high - td.low)
    else:
        eps = to_np(xe) * params["rate"]
        xt = torch.tensor(eps) / td.rate
    close(xe, xt, rtol=1e-10)
    w = np.linspace(0.5, 1.5, xe.numel()).reshape(tuple(xe.shape))
    (xe * ember.tensor(w, device=device)).sum().backward()
    (xt * torch.tensor(w)).sum().backward()
    for k in params:
        close(e_params[k].grad, t_params[k].grad, rtol=1e-8)


@pytest.mark.parametrize("name,make", [
    ("Normal", lambda a, b: D.Normal(a, b.exp())),
    ("Gamma", lambda a, b: D.Gamma(a.exp(), b.exp())),
    ("Beta", lambda a, b: D.Beta(a.exp(), b.exp())),
    ("StudentT", lambda a, b: D.StudentT(a.exp() + 1, b, b.exp())),
    ("Binomial", lambda a, b: D.Binomial(5, logits=a + b)),
    ("Poisson", lambda a, b: D.Poisson(a.exp() + b.exp())),
    ("Categorical", lambda a, b: D.Categorical(logits=ember.stack([a, b, a * b], -1))),
    ("Dirichlet", lambda a, b: D.Dirichlet(ember.stack([a.exp(), b.exp()], -1))),
])
def test_log_prob_entropy_gradgradcheck(device, name, make):
    a = ember.tensor([0.3, -0.4], dtype=ember.float64, device=device, requires_grad=True)
    b = ember.tensor([0.2, 0.5], dtype=ember.float64, device=device, requires_grad=True)
    with ember.no_grad():
        value = make(a, b).sample()

    def f(a, b):
        d = make(a, b)
        out = d.log_prob(value)
        if name not in ("Binomial", "Poisson"):
            out = out + d.entropy()
        return out

    assert ember.autograd.gradcheck(f, (a, b))
    assert ember.autograd.gradgradcheck(f, (a, b))


def test_kl_gradient_matches_torch(device, torch):
    vals = [np.array([0.3, -0.2]), np.array([0.5, 1.5]), np.array([-0.1, 0.4]), np.array([1.2, 0.7])]
    e = [ember.tensor(v, device=device, requires_grad=True) for v in vals]
    t = [torch.tensor(v, requires_grad=True) for v in vals]
    D.kl_divergence(D.Gamma(e[1], e[3]), D.Gamma(e[3], e[1])).sum().backward()
    torch.distributions.kl_divergence(torch.distributions.Gamma(t[1], t[3]),
                                      torch.distributions.Gamma(t[3], t[1])).sum().backward()
    close(e[1].grad, t[1].grad, rtol=1e-7)
    close(e[3].grad, t[3].grad, rtol=1e-7)


def test_straight_through_and_relaxed_rsample(device):
    p = ember.tensor([0.2, 0.3, 0.5], dtype=ember.float64, device=device, requires_grad=True)
    d = D.OneHotCategoricalStraightThrough(probs=p)
    s = d.rsample((4,))
    assert bool(((s.detach() == 0) | (s.detach() == 1)).all())
    (s * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, device=device)).sum().backward()
    assert p.grad is not None and float(p.grad.abs().sum()) > 0
    t = ember.tensor(0.5, dtype=ember.float64, device=device)
    logits = ember.tensor([0.1, -0.3], dtype=ember.float64, device=device, requires_grad=True)
    x = D.RelaxedBernoulli(t, logits=logits).rsample((5,))
    assert bool(((x > 0) & (x < 1)).all())
    x.sum().backward()
    assert logits.grad is not None


# ---------------------------------------------------------------- transforms and constraints

TRANSFORMS = [
    ("ExpTransform", (), (3,)),
    ("SigmoidTransform", (), (3,)),
    ("TanhTransform", (), (3,)),
    ("SoftplusTransform", (), (3,)),
    ("AffineTransform", (0.5, -2.0), (3,)),
    ("PowerTransform", (2.0,), (3,)),
    ("StickBreakingTransform", (), (2, 3)),
    ("LowerCholeskyTransform", (), (3, 3)),
    ("CorrCholeskyTransform", (), (2, 3)),
]


@pytest.mark.parametrize("name,args,shape", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transforms_against_torch(device, torch, name, args, shape):
    et = getattr(D, name)(*args)
    tt = getattr(torch.distributions, name)(*args)
    x = np.abs(r(*shape)) + 0.1 if name == "PowerTransform" else r(*shape) * 0.5
    ex, tx = ember.tensor(x, device=device), torch.tensor(x)
    ey, ty = et(ex), tt(tx)
    close(ey, ty, rtol=1e-10)
    close(et.inv(ey), tt.inv(ty), rtol=1e-8, atol=1e-10)
    if name not in ("LowerCholeskyTransform",):
        close(et.log_abs_det_jacobian(ex, ey), tt.log_abs_det_jacobian(tx, ty), rtol=1e-8, atol=1e-10)
    assert tuple(et.forward_shape(shape)) == tuple(tt.forward_shape(shape))
    assert et.bijective == tt.bijective
    assert et.domain.event_dim == tt.domain.event_dim and et.codomain.event_dim == tt.codomain.event_dim


def test_compose_cat_stack_reshape_transforms(device, torch):
    x = r(4, 2)
    ex, tx = ember.tensor(x, device=device), torch.tensor(x)
    ec = D.ComposeTransform([D.AffineTransform(1.0, 2.0), D.ExpTransform()])
    tc = torch.distributions.ComposeTransform([torch.distributions.AffineTransform(1.0, 2.0),
                                               torch.distributions.ExpTransform()])
    close(ec(ex), tc(tx))
    close(ec.log_abs_det_jacobian(ex, ec(ex)), tc.log_abs_det_jacobian(tx, tc(tx)))
    close(ec.inv(ec(ex)), tx, rtol=1e-10)
    ecat = D.CatTransform([D.ExpTransform(), D.identity_transform], dim=1, lengths=[1, 1])
    tcat = torch.distributions.CatTransform([torch.distributions.ExpTransform(),
                                             torch.distributions.identity_transform], dim=1, lengths=[1, 1])
    close(ecat(ex), tcat(tx))
    close(ecat.log_abs_det_jacobian(ex, ecat(ex)), tcat.log_abs_det_jacobian(tx, tcat(tx)))
    est = D.StackTransform([D.ExpTransform(), D.SigmoidTransform()], dim=1)
    tst = torch.distributions.StackTransform([torch.distributions.ExpTransform(),
                                              torch.distributions.SigmoidTransform()], dim=1)
    close(est(ex), tst(tx))
    close(est.inv(est(ex)), tx, rtol=1e-8)
    close(est.log_abs_det_jacobian(ex, est(ex)), tst.log_abs_det_jacobian(tx, tst(tx)))
    er = D.ReshapeTransform((2,), (2, 1))
    assert tuple(er(ex).shape) == (4, 2, 1) and tuple(er.inverse_shape((4, 2, 1))) == (4, 2)
    ei = D.IndependentTransform(D.ExpTransform(), 1)
    close(ei.log_abs_det_jacobian(ex, ei(ex)), torch.distributions.IndependentTransform(
        torch.distributions.ExpTransform(), 1).log_abs_det_jacobian(tx, tx.exp()))
    cached = D.ExpTransform(cache_size=1)
    y = cached(ex)
    assert cached.inv(y) is ex
    assert D.ExpTransform().inv.inv == D.ExpTransform()
    cdf = D.CumulativeDistributionTransform(D.Normal(0.0, 1.0))
    close(cdf(ex), torch.distributions.CumulativeDistributionTransform(torch.distributions.Normal(0.0, 1.0))(tx))


@pytest.mark.parametrize("constraint,values,expect", [
    ("positive", [1.0, 0.0, -1.0], [True, False, False]),
    ("nonnegative", [1.0, 0.0, -1.0], [True, True, False]),
    ("unit_interval", [0.0, 1.0, 1.5], [True, True, False]),
    ("boolean", [0.0, 1.0, 0.5], [True, True, False]),
    ("nonnegative_integer", [0.0, 2.0, 1.5], [True, True, False]),
    ("positive_integer", [0.0, 2.0, 3.0], [False, True, True]),
    ("real", [0.0, float("nan"), float("inf")], [True, False, True]),
])
def test_constraints(device, torch, constraint, values, expect):
    v = ember.tensor(values, device=device)
    got = getattr(D.constraints, constraint).check(v).tolist()
    assert got == expect
    assert got == getattr(torch.distributions.constraints, constraint).check(torch.tensor(values)).tolist()


def test_parametrised_constraints(device):
    c = D.constraints
    v = ember.tensor([0.5, 1.0, 2.0], device=device)
    assert c.interval(0.5, 1.0).check(v).tolist() == [True, True, False]
    assert c.half_open_interval(0.5, 1.0).check(v).tolist() == [True, False, False]
    assert c.greater_than(1.0).check(v).tolist() == [False, False, True]
    assert c.greater_than_eq(1.0).check(v).tolist() == [False, True, True]
    assert c.less_than(1.0).check(v).tolist() == [True, False, False]
    assert c.integer_interval(1, 2).check(v).tolist() == [False, True, True]
    assert c.simplex.check(ember.tensor([[0.5, 0.5], [0.5, 0.6]], device=device)).tolist() == [True, False]
    assert c.one_hot.check(ember.tensor([[0.0, 1.0], [1.0, 1.0]], device=device)).tolist() == [True, False]
    assert bool(c.lower_cholesky.check(ember.tensor([[1.0, 0.0], [2.0, 1.0]], device=device)))
    assert not bool(c.lower_cholesky.check(ember.tensor([[1.0, 1.0], [2.0, 1.0]], device=device)))
    assert bool(c.positive_definite.check(ember.tensor([[2.0, 1.0], [1.0, 2.0]], device=device)))
    assert not bool(c.positive_definite.check(ember.tensor([[1.0, 2.0], [2.0, 1.0]], device=device)))
    assert c.real_vector.check(ember.zeros(3, 2, device=device)).shape == (3,)
    assert c.independent(c.positive, 1).event_dim == 1
    assert c.cat([c.positive, c.real], dim=0, lengths=[1, 2]).check(
        ember.tensor([-1.0, -1.0, -1.0], device=device)).tolist() == [False, True, True]
    assert c.stack([c.positive, c.real], dim=0).check(ember.tensor([-1.0, -1.0], device=device)).tolist() == [
        False, True]
    assert c.is_dependent(c.dependent) and not c.is_dependent(c.real)
    assert repr(c.interval(0, 1)) == "Interval(lower_bound=0, upper_bound=1)"


@pytest.mark.parametrize("constraint", ["real", "positive", "unit_interval", "simplex", "lower_cholesky",
                                        "positive_definite", "corr_cholesky", "greater_than", "less_than",
                                        "interval", "real_vector"])
def test_biject_to_transform_to(device, constraint):
    c = D.constraints
    obj = {"greater_than": c.greater_than(2.0), "less_than": c.less_than(-1.0),
           "interval": c.interval(-2.0, 3.0)}.get(constraint) or getattr(c, constraint)
    shape = {"simplex": (4, 3), "lower_cholesky": (2, 3, 3), "positive_definite": (2, 3, 3),
             "corr_cholesky": (2, 3), "real_vector": (2, 3)}.get(constraint, (5,))
    x = ember.tensor(r(*shape), device=device)
    for registry in (D.biject_to, D.transform_to):
        t = registry(obj)
        y = t(x)
        assert bool(obj.check(y).all()), (constraint, y)
        if registry is D.biject_to and constraint not in ("lower_cholesky", "positive_definite"):
            np.testing.assert_allclose(to_np(t.inv(y)), to_np(x), rtol=1e-4, atol=1e-5)
    with pytest.raises(NotImplementedError):
        D.biject_to(c.boolean)


def test_utils(device, torch):
    from ember.distributions.utils import (
        broadcast_all, lazy_property, logits_to_probs, probs_to_logits, tril_matrix_to_vec, vec_to_tril_matrix,
    )
    a, b = broadcast_all(ember.zeros(2, 1, device=device), 3.0)
    assert tuple(b.shape) == (2, 1) and b.device == a.device and float(b[0, 0]) == 3.0
    with pytest.raises(ValueError):
        broadcast_all("x")
    p = ember.tensor([[0.2, 0.8]], device=device)
    close(probs_to_logits(p), torch.distributions.utils.probs_to_logits(torch.tensor([[0.2, 0.8]])), rtol=1e-6)
    close(logits_to_probs(probs_to_logits(p)), torch.tensor([[0.2, 0.8]]), rtol=1e-6)
    close(probs_to_logits(p, is_binary=True),
          torch.distributions.utils.probs_to_logits(torch.tensor([[0.2, 0.8]]), is_binary=True), rtol=1e-6)
    v = ember.arange(6.0, device=device)
    for diag in (0, -1):
        m = vec_to_tril_matrix(v, diag)
        close(m, torch.distributions.utils.vec_to_tril_matrix(torch.arange(6.0), diag))
        close(tril_matrix_to_vec(m, diag), torch.arange(6.0))

    class A:
        calls = 0

        @lazy_property
        def x(self):
            A.calls += 1
            return 5

    a = A()
    assert a.x == 5 and a.x == 5 and A.calls == 1
    assert isinstance(A.x, property)


def test_perplexity_sample_n_and_repr(device):
    d = D.Categorical(ember.tensor([0.5, 0.5], device=device))
    assert abs(float(d.perplexity()) - 2.0) < 1e-6
    with pytest.warns(FutureWarning):
        assert tuple(d.sample_n(3).shape) == (3,)
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert "probs" in repr(d)


def test_lazy_import():
    import subprocess
    import sys
    code = "import sys, ember; assert 'ember.distributions' not in sys.modules; ember.distributions.Normal"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_matrix_and_circular_sampling(device):
    loc = ember.tensor([0.5, -2.0], dtype=ember.float64, device=device)
    kappa = ember.tensor([0.7, 4.0], dtype=ember.float64, device=device)
    vm = D.VonMises(loc, kappa)
    x = vm.sample((20000,))
    assert bool(((x >= -math.pi) & (x < math.pi)).all())
    resultant = to_np(ember.cos(x - loc).mean(0))
    np.testing.assert_allclose(resultant, 1 - to_np(vm.variance), atol=0.02)
    cov = ember.tensor(spd(2), dtype=ember.float64, device=device)
    w = D.Wishart(ember.tensor(6.0, dtype=ember.float64, device=device), covariance_matrix=cov)
    s = w.rsample((20000,))
    assert bool(D.constraints.positive_definite.check(s).all())
    np.testing.assert_allclose(to_np(s.mean(0)), to_np(w.mean), rtol=0.05)
    lkj = D.LKJCholesky(3, ember.tensor(2.0, dtype=ember.float64, device=device))
    L = lkj.sample((5000,))
    assert bool(D.constraints.corr_cholesky.check(L).all())
    corr = to_np(L @ L.mT)
    np.testing.assert_allclose(corr.mean(0), np.eye(3), atol=0.03)


def test_random_primitives(device, torch):
    counts = ember.tensor([10.0, 50.0], dtype=ember.float64, device=device)
    probs = ember.tensor([0.3, 0.9], dtype=ember.float64, device=device)
    x = to_np(ember.binomial(counts.expand(20000, 2), probs.expand(20000, 2)))
    np.testing.assert_allclose(x.mean(0), [3.0, 45.0], rtol=0.02)
    assert np.all(x == np.round(x)) and x.min() >= 0 and np.all(x.max(0) <= [10, 50])
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for count, got: Long"):
        ember.binomial(ember.tensor([5], device=device), ember.tensor([0.5], device=device))
    with pytest.raises(NotImplementedError, match="_standard_gamma"):
        ember._standard_gamma(ember.tensor([1], device=device))
    a = ember.tensor([0.5, 4.0], dtype=ember.float32, device=device)
    g = ember._standard_gamma(a.expand(20000, 2))
    assert g.dtype == ember.float32
    np.testing.assert_allclose(to_np(g.mean(0)), [0.5, 4.0], rtol=0.05)
    _ = ember.manual_seed(3)
    first = ember._standard_gamma(a)
    _ = ember.manual_seed(3)
    assert ember.equal(first, ember._standard_gamma(a))
    # the gradient is PyTorch's implicit one and is itself not differentiable, as in PyTorch
    alpha = ember.tensor([1.5], dtype=ember.float64, device=device, requires_grad=True)
    sample = ember._standard_gamma(alpha)
    (grad,) = ember.autograd.grad(sample.sum(), alpha)
    expect = torch._standard_gamma_grad(torch.tensor([1.5], dtype=torch.float64), torch.tensor(to_np(sample)))
    close(grad, expect, rtol=1e-10)
