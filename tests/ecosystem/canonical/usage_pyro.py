"""pyro's canonical usage (SVI on a conjugate model, distributions), run by the ecosystem harness under PyTorch and
under ember where the sdist lacks the chosen tests. The analytic posterior is the expected value in both runs."""
import math


import torch
import pyro
dist = pyro.distributions


def test_svi_finds_conjugate_posterior():
    pyro.set_rng_seed(0)
    pyro.clear_param_store()
    data = torch.tensor([1.2, 0.8, 1.5, 1.1, 0.9, 1.3])

    def model(x):
        mu = pyro.sample("mu", dist.Normal(0.0, 1.0))
        with pyro.plate("data", len(x)):
            pyro.sample("obs", dist.Normal(mu, 1.0), obs=x)

    def guide(x):
        loc = pyro.param("loc", torch.tensor(0.0))
        scale = pyro.param("scale", torch.tensor(1.0), constraint=dist.constraints.positive)
        pyro.sample("mu", dist.Normal(loc, scale))

    svi = pyro.infer.SVI(model, guide, pyro.optim.Adam({"lr": 0.05}), pyro.infer.Trace_ELBO(num_particles=8))
    for _ in range(400):
        svi.step(data)
    n = len(data)
    # the posterior is N(sum(x) / (n + 1), 1 / (n + 1)); SVI's noisy steps land near it
    assert abs(pyro.param("loc").item() - data.sum().item() / (n + 1)) < 0.2
    assert abs(pyro.param("scale").item() - math.sqrt(1 / (n + 1))) < 0.15


def test_distribution_log_probs():
    assert abs(dist.Normal(0.0, 2.0).log_prob(torch.tensor(1.0)).item()
               - (-math.log(2 * math.sqrt(2 * math.pi)) - 1 / 8)) < 1e-6
    assert abs(dist.Poisson(3.0).log_prob(torch.tensor(2.0)).item() - (2 * math.log(3) - 3 - math.log(2))) < 1e-6
    d = dist.Normal(torch.zeros(3), 1.0).to_event(1)
    assert d.event_shape == (3,) and d.log_prob(torch.zeros(3)).shape == ()


def test_trace_records_sites():
    def model():
        a = pyro.sample("a", dist.Bernoulli(0.3))
        return pyro.sample("b", dist.Normal(a, 1.0))

    tr = pyro.poutine.trace(model).get_trace()
    assert [n for n, s in tr.nodes.items() if s["type"] == "sample"] == ["a", "b"]
