"""Tiny-input paths of an actor-critic step against PyTorch, with the checks of the general paths: Categorical of
one distribution (log_prob of checked values by one indexing op, entropy by one dot product, no clamp of logits
made from probabilities) under hooks, anomaly mode, retain_graph and create_graph, validation on and off and
inside vmap; tensor() of numbers and flat lists; the CPU backend's Python-float softmax, log_softmax and
multinomial of a few elements (NaN and inf rows, gradients, the same draws as the shared kernel)."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")


def _both(device):
    return ((ember, device), (torch, "cpu"))


@pytest.mark.parametrize("given", ["probs", "logits"])
def test_one_categorical_log_prob_entropy_hooks_anomaly_second_order(device, given):
    x0 = np.array([0.3, -1.2, 0.8])
    res = []
    for lib, dev in _both(device):
        x = lib.tensor(x0, device=dev, dtype=lib.float64, requires_grad=True)
        p = lib.softmax(x, -1)
        hooked = []
        p.register_hook(lambda g, hooked=hooked: hooked.append(1) or g * 2)
        d = lib.distributions.Categorical(**{given: p if given == "probs" else p.log()})
        with lib.autograd.detect_anomaly():
            lp = d.log_prob(lib.tensor(2, device=dev))  # 0-d value: the indexing path
            lps = d.log_prob(lib.tensor([[0, 2], [1, 1]], device=dev))  # sample-shaped values, one repeated
            ent = d.entropy()
            loss = lp + lps.sum() + 0.5 * ent
            (g,) = lib.autograd.grad(loss, x, create_graph=True, retain_graph=True)
            (gg,) = lib.autograd.grad(g.pow(2).sum(), x)
        res.append((lp, lps, ent, g, gg, lib.tensor(float(len(hooked)))))
    for a, b in zip(*res):
        assert_close(a, b, rtol=1e-9, atol=1e-12)
    assert res[0][0].shape == () and res[0][1].shape == (2, 2)


def test_one_categorical_gradcheck_and_graph_freed(device):
    def f(x):
        d = ember.distributions.Categorical(ember.softmax(x, -1))
        return d.log_prob(ember.tensor([1, 0], device=device)).sum() + d.entropy()

    x = ember.tensor([0.2, -0.4, 1.1], device=device, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(f, (x,)) and ember.autograd.gradgradcheck(f, (x,))
    y = f(x)
    y.backward()
    with pytest.raises(RuntimeError, match="a second time"):
        y.backward()


def test_logits_with_minus_inf_keep_the_clamp(device):
    res = []
    for lib, dev in _both(device):
        logits = lib.tensor([0.0, -float("inf"), 1.0], device=dev, requires_grad=True)
        d = lib.distributions.Categorical(logits=logits)
        ent = d.entropy()  # 0 * -inf would be NaN without the clamp
        ent.backward()
        assert d.probs is not None  # (read, then expanded: the copy is still one built from logits)
        res.append((ent, logits.grad, d.expand((2,)).entropy()))
    for a, b in zip(*res):
        assert_close(a, b)
    assert not ember.isnan(res[0][1]).any() and not ember.isnan(res[0][2]).any()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_categorical_float32_float64_and_batched_unchanged(device, dtype):
    p0 = np.array([0.1, 0.6, 0.3])
    res = []
    for lib, dev in _both(device):
        p = lib.tensor(p0, device=dev, dtype=getattr(lib, dtype), requires_grad=True)
        one = lib.distributions.Categorical(p)
        batched = lib.distributions.Categorical(p.expand(2, 3))  # the general path, for the same values
        out = (one.log_prob(lib.tensor(1, device=dev)), one.entropy(),
               batched.log_prob(lib.tensor([1, 2], device=dev)), batched.entropy())
        sum(o.sum() for o in out).backward()
        res.append(out + (p.grad,))
    for a, b in zip(*res):
        assert a.dtype == getattr(ember, dtype)
        assert_close(a, b)


def test_one_categorical_out_of_range_values(device):
    for lib, dev in _both(device):
        p = lib.tensor([0.25, 0.75], device=dev)
        with pytest.raises(ValueError, match="support"):  # checked: the indexing path is never reached
            lib.distributions.Categorical(p, validate_args=True).log_prob(lib.tensor(-1, device=dev))
        with pytest.raises(RuntimeError, match="out of bounds"):  # unchecked: gather refuses, never wraps
            lib.distributions.Categorical(p, validate_args=False).log_prob(lib.tensor(-1, device=dev))


def test_one_categorical_inside_vmap(device):
    probs = ember.softmax(ember.tensor([[0.1, 0.5], [2.0, -1.0], [0.0, 0.3]], device=device), -1)
    values = ember.tensor([1, 0, 1], device=device)

    def f(p, v):
        d = ember.distributions.Categorical(p)
        return d.log_prob(v) + d.entropy()

    expected = ember.stack([f(p, v) for p, v in zip(probs, values)])
    assert_close(ember.func.vmap(f)(probs, values), expected)


_NUMBERS = [1, 2.5, True, 1 + 2j, [0.1, -0.2, 0.3, 0.5], [1, 2], [True, 1], [1, 2.5], [True, False], [1, 1j], [1e300]]


@pytest.mark.parametrize("dtype", [None, "float32", "int64"])
def test_tensor_of_numbers_and_flat_lists(device, dtype):
    for data in _NUMBERS:
        out = []
        for lib, dev in _both(device):
            kw = {} if dtype is None else {"dtype": getattr(lib, dtype)}
            try:
                out.append(lib.tensor(data, device=dev, **kw))
            except Exception as e:  # (a complex number to a real dtype: both refuse)
                out.append(type(e))
        if isinstance(out[1], type):
            assert isinstance(out[0], type), data
            continue
        assert str(out[0].dtype).split(".")[-1] == str(out[1].dtype).split(".")[-1], data
        assert_close(out[0], out[1])


def test_tensor_of_numbers_requires_grad_and_no_aliasing(device):
    data = [0.5, 1.5]
    t = ember.tensor(data, device=device, dtype=ember.float64, requires_grad=True)
    data[0] = 9.0
    assert t.requires_grad and t.is_leaf and t.tolist() == [0.5, 1.5]
    (t * t).sum().backward()
    assert t.grad.tolist() == [1.0, 3.0]
    with pytest.warns(UserWarning, match="clone"):  # a tensor still takes the general path, with its warning
        ember.tensor(t)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tiny_softmax_log_softmax_against_pytorch(device, dtype):
    rng = np.random.default_rng(3)
    special = [[float("nan"), 1.0], [1.0, float("nan")], [float("inf"), 1.0], [-float("inf"), -float("inf")],
               [-float("inf"), 1.0], [1e30, -1e30]]
    for shape, dim in [((2,), -1), ((1, 2), 1), ((3, 4), 0), ((2, 2, 3), -1), ((), 0), ((17,), 0), ((4, 5), -1)]:
        x0, w0 = rng.standard_normal(shape), rng.standard_normal(shape)
        res = []
        for lib, dev in _both(device):
            x = lib.tensor(x0, device=dev, dtype=getattr(lib, dtype), requires_grad=True)
            y, ly = lib.nn.functional.softmax(x, dim=dim), lib.log_softmax(x, dim)
            with lib.no_grad():
                rows = [lib.softmax(lib.tensor(r, device=dev, dtype=x.dtype), -1) for r in special]
                rows += [lib.log_softmax(lib.tensor(r, device=dev, dtype=x.dtype), -1) for r in special]
            ((y * lib.tensor(w0, device=dev, dtype=x.dtype)).sum() + ly.sum()).backward()
            res.append((y, ly, x.grad, lib.stack(rows)))
        for a, b in zip(*res):
            assert a.dtype == getattr(ember, dtype)
            assert_close(a, b)  # (NaN entries equal)


def test_tiny_softmax_checks_second_order_and_out(device):
    x = ember.tensor([0.5, -1.0, 2.0], device=device, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: ember.softmax(t, 0) * ember.log_softmax(t, -1), (x,))
    for lib, dev in _both(device):
        with pytest.raises(IndexError):
            lib.softmax(lib.tensor([1.0, 2.0], device=dev), 1)
        with pytest.raises(RuntimeError):  # integer input: no kernel, as in PyTorch
            lib.softmax(lib.tensor([1, 2], device=dev), 0)
    out = ember.empty(2, device=device)
    ember.softmax(ember.tensor([0.0, 0.0], device=device), 0, out=out)
    assert out.tolist() == [0.5, 0.5]


def test_one_categorical_sample(device):
    ember.manual_seed(0)
    d = ember.distributions.Categorical(ember.tensor([0.2, 0.0, 0.8], device=device))
    draws = ember.stack([d.sample() for _ in range(400)])
    assert d.sample().shape == () and draws.dtype == ember.int64
    assert (draws != 1).all() and 0.7 < (draws == 2).float().mean().item() < 0.9
    assert d.sample((2, 3)).shape == (2, 3)
    ember.manual_seed(1)
    first = [d.sample().item() for _ in range(20)]
    ember.manual_seed(1)
    assert [d.sample().item() for _ in range(20)] == first
    with pytest.raises(RuntimeError, match="probability tensor"):
        ember.multinomial(ember.tensor([0.5, float("nan")], device=device), 1)
