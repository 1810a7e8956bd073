"""ember.utils.checkpoint: gradients equal an unchecked run's, RNG replayed (dropout), PyTorch's warnings."""
import warnings

import numpy as np
import pytest

import ember
from ember.utils.checkpoint import checkpoint, checkpoint_sequential


def _net(device):
    ember.manual_seed(3)
    return ember.nn.Sequential(ember.nn.Linear(5, 16), ember.nn.Tanh(), ember.nn.Dropout(0.3), ember.nn.Linear(16, 16),
                               ember.nn.ReLU(), ember.nn.Dropout(0.3), ember.nn.Linear(16, 3)).to(device)


def _grads(net, x):
    return [p.grad.detach().clone() for p in net.parameters()] + [x.grad.detach().clone()]


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradients_equal_an_unchecked_run_with_dropout(device, reentrant):
    net = _net(device)
    x = ember.randn(4, 5, device=device, requires_grad=True)
    ember.manual_seed(7)
    plain = net(x)
    plain.square().sum().backward()
    want = _grads(net, x)
    net.zero_grad()
    x.grad = None
    ember.manual_seed(7)
    out = checkpoint(net, x, use_reentrant=reentrant)
    assert ember.equal(out, plain) and out.grad_fn is not None
    out.square().sum().backward()
    for a, b in zip(want, _grads(net, x)):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-6, atol=1e-7)


def test_parameters_get_gradients_when_no_input_requires_grad(device):
    net = _net(device).eval()
    x = ember.randn(4, 5, device=device)
    checkpoint(net, x, use_reentrant=False).sum().backward()
    got = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    net(x).sum().backward()
    for a, p in zip(got, net.parameters()):
        np.testing.assert_allclose(a.cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-6, atol=1e-7)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(net, x, use_reentrant=True)
    assert out.grad_fn is None  # PyTorch's reentrant variant: no gradient flows


def test_several_outputs_kwargs_and_non_tensor_arguments(device):
    a = ember.randn(3, device=device, requires_grad=True)
    b = ember.randn(3, device=device, requires_grad=True)

    def fn(x, scale, y=None):
        return (x * y).sin() * scale, "tag", x.exp()

    s, tag, e = checkpoint(fn, a, 2.0, y=b, use_reentrant=False)
    assert tag == "tag"
    (s.sum() + e.sum()).backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    s2, _, e2 = fn(a, 2.0, y=b)
    (s2.sum() + e2.sum()).backward()
    assert ember.allclose(ga, a.grad) and ember.allclose(gb, b.grad)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: y"):
        checkpoint(fn, a, 2.0, y=b, use_reentrant=True)


def test_checkpoint_sequential_matches(device):
    net = _net(device).eval()
    x = ember.randn(4, 5, device=device, requires_grad=True)
    out = checkpoint_sequential(net, 3, x, use_reentrant=False)
    assert ember.allclose(out, net(x))
    out.sum().backward()
    got = _grads(net, x)
    net.zero_grad()
    x.grad = None
    net(x).sum().backward()
    for a, b in zip(got, _grads(net, x)):
        assert ember.allclose(a, b, rtol=1e-6, atol=1e-7)


def test_warnings_as_pytorch(device):
    x = ember.randn(3, device=device, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, x)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t * 2, x, use_reentrant=True, debug=True)
    y = ember.randn(3, device=device)

    def mutates(t, buf):
        buf.add_(1)
        return t * buf

    with pytest.warns(UserWarning, match="modified one of its inputs in place"):
        checkpoint(mutates, x, y, use_reentrant=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(lambda t: t * 2, x, use_reentrant=False)


def test_against_pytorch_checkpoint(device, torch):
    import torch.utils.checkpoint as tcp

    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 6)).astype(np.float32)
    xs = rng.standard_normal((2, 6)).astype(np.float32)
    ew, ex = ember.tensor(w, device=device, requires_grad=True), ember.tensor(xs, device=device, requires_grad=True)
    tw, tx = torch.tensor(w, requires_grad=True), torch.tensor(xs, requires_grad=True)
    checkpoint(lambda a: (a @ ew).tanh() @ ew, ex, use_reentrant=False).pow(2).sum().backward()
    tcp.checkpoint(lambda a: (a @ tw).tanh() @ tw, tx, use_reentrant=False).pow(2).sum().backward()
    np.testing.assert_allclose(ew.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ex.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
