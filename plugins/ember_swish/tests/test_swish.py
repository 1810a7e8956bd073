"""ember-swish against the public API and the conformance kit."""
import pytest

import ember
from ember.testing import check_op

torch = pytest.importorskip("torch")


def _sample(device):
    return ember.tensor([[-2.0, -0.5, 0.0], [0.3, 1.0, 3.0]], device=device, requires_grad=True)


@pytest.mark.parametrize("name, ref", [
    ("swish", torch.nn.functional.silu),
    ("mish", torch.nn.functional.mish),
])
def test_op_matches_torch_and_passes_the_kit(device, name, ref):
    op = getattr(ember.ops.swish, name)
    x = _sample(device)
    check_op(op, [(x,), (x[:, 1:],)], devices=[device])
    got = op(x)
    want = ref(torch.tensor(x.detach().cpu().numpy()))
    assert got.device.type == device
    ember.testing.assert_close(got, want)
    assert getattr(x, name)().grad_fn is not None


def test_backward_matches_torch(device):
    x = _sample(device)
    t = torch.tensor(x.detach().cpu().numpy(), requires_grad=True)
    ember.ops.swish.mish(x).sum().backward()
    torch.nn.functional.mish(t).sum().backward()
    ember.testing.assert_close(x.grad, t.grad)


def test_module(device):
    x = _sample(device)
    assert ember.ops.swish.Swish is ember.nn.Swish
    ember.testing.assert_close(ember.nn.Swish()(x), ember.ops.swish.swish(x))
    assert isinstance(ember.nn.Sequential(ember.nn.Swish()), ember.nn.Module)
