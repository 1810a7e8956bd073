"""ember-se through the public API and the conformance kit."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close, check_op

torch = pytest.importorskip("torch")


def _torch_se(x, w1, b1, w2, b2):
    s = x.mean((2, 3))
    gate = torch.sigmoid(torch.relu(s @ w1.T + b1) @ w2.T + b2)
    return x * gate[:, :, None, None]


def _args(device, requires_grad=True):
    rng = np.random.RandomState(0)
    shapes = [(2, 3, 2, 2), (2, 3), (2,), (3, 2), (3,)]
    return [ember.tensor(rng.randn(*s), dtype=ember.float64, device=device, requires_grad=requires_grad)
            for s in shapes]


def test_op_matches_torch_and_passes_the_kit(device):
    args = _args(device)
    check_op(ember.ops.se.squeeze_excite, [tuple(args)], devices=[device])
    want = _torch_se(*[torch.tensor(a.detach().cpu().numpy()) for a in args])
    assert_close(ember.ops.se.squeeze_excite(*args), want)


def test_module_trains(device):
    block = ember.nn.SqueezeExcitation(4, reduction=2).to(device)
    assert ember.ops.se.SqueezeExcitation is ember.nn.SqueezeExcitation
    x = ember.randn(2, 4, 3, 3, device=device)
    out = block(x)
    assert out.shape == x.shape and out.device.type == device
    out.sum().backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in block.parameters())
    assert len(list(block.parameters())) == 4


def test_bad_shapes_are_clear(device):
    x, w1, b1, w2, b2 = _args(device, requires_grad=False)
    with pytest.raises(ValueError, match=r"squeeze_excite: weights of shapes \[2, 3\] and \[2, 2\] do not fit 3"):
        ember.ops.se.squeeze_excite(x, w1, b1, w2[:2], b2)
    with pytest.raises(ValueError, match=r"expected input of shape \(N, C, \*spatial\), got \[2, 3\]"):
        ember.ops.se.squeeze_excite(x[:, :, 0, 0], w1, b1, w2, b2)
