"""A reinforcement-learning episode's loss compiled whole (the actor-critic row of bench_programs): a loop of
single observations through a small MLP, Categorical log_prob and entropy, the values concatenated, the
log-probabilities stacked and a smooth-L1 value loss.  The compiled function has no graph break, and its loss,
gradients and Adam steps equal eager ember's and PyTorch's over several episodes (the later ones replayed).
Argument validation is off, as the first ``torch.compile`` turns it off in PyTorch (checking the values is
data-dependent: a graph break)."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
STEPS = 12
OBS = RNG.standard_normal((STEPS, 4)).astype(np.float32)
ACTIONS = RNG.integers(0, 2, STEPS)
RETURNS = RNG.standard_normal(STEPS).astype(np.float32)


def _policy(lib):
    nn, F = lib.nn, lib.nn.functional

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine = nn.Linear(4, 16)
            self.action_head = nn.Linear(16, 2)
            self.value_head = nn.Linear(16, 1)

        def forward(self, x):
            x = F.relu(self.affine(x))
            return F.softmax(self.action_head(x), dim=-1), self.value_head(x)

    return Policy()


def _episode_loss(lib, model, states, acts, R):
    log_probs, values, entropy = [], [], 0.0
    for s, a in zip(states, acts):
        probs, v = model(s)
        dist = lib.distributions.Categorical(probs, validate_args=False)  # (torch.compile turns validation off)
        log_probs.append(dist.log_prob(a))
        entropy = entropy + dist.entropy()
        values.append(v)
    values = lib.cat(values)
    policy_loss = -(lib.stack(log_probs) * (R - values.detach())).sum()
    return policy_loss + lib.nn.functional.smooth_l1_loss(values, R) - 0.01 * entropy


def _contender(lib, dev, weights):
    model = _policy(lib).to(dev)
    model.load_state_dict({k: lib.tensor(v, device=dev) for k, v in weights.items()})
    states = [lib.tensor(o.tolist(), device=dev) for o in OBS]
    acts = [lib.tensor(int(a), device=dev) for a in ACTIONS]
    return model, lib.optim.Adam(model.parameters(), lr=3e-2), states, acts, lib.tensor(RETURNS, device=dev)


def test_compiled_episode_equals_eager_and_pytorch(device):
    weights = {k: v.detach().numpy() for k, v in _policy(ember).state_dict().items()}
    runs = {"eager": _contender(ember, device, weights), "compiled": _contender(ember, device, weights),
            "torch": _contender(torch, "cpu", weights)}
    compiled = ember.compile(lambda *a: _episode_loss(ember, *a), fullgraph=True)  # (a graph break raises)
    for _ in range(3):  # the first call captures, the others replay (after an optimizer step changed the weights)
        out = {}
        for name, (model, opt, states, acts, R) in runs.items():
            lib = torch if name == "torch" else ember
            loss = compiled(model, states, acts, R) if name == "compiled" else _episode_loss(lib, model, states,
                                                                                            acts, R)
            opt.zero_grad()
            loss.backward()
            out[name] = [loss] + [p.grad for p in model.parameters()]
            opt.step()
        for a, b, c in zip(out["eager"], out["compiled"], out["torch"]):
            assert_close(b, a, rtol=1e-6, atol=1e-6)
            assert_close(a, c, rtol=1e-4, atol=1e-5)
    for a, b in zip(runs["eager"][0].parameters(), runs["compiled"][0].parameters()):
        assert_close(b, a, rtol=1e-6, atol=1e-6)
    assert len(compiled._compiled.cache) == 1  # one capture; the later episodes were replays
