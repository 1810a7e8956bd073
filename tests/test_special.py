"""``ember.special`` against ``torch.special``: every name ember shows exists there and computes the same."""
import pytest

import ember
from ember.autograd import gradcheck
from ember.testing import assert_close

torch = pytest.importorskip("torch")

SHOWN = sorted(n for n in dir(ember.special) if not n.startswith("_"))

CALLS = {
    "softmax": lambda m, x: m.special.softmax(x, 1), "log_softmax": lambda m, x: m.special.log_softmax(x, 1),
    "logsumexp": lambda m, x: m.special.logsumexp(x, 1), "xlogy": lambda m, x: m.special.xlogy(x, x + 2),
    "ndtri": lambda m, x: m.special.ndtri(x.sigmoid()), "erfinv": lambda m, x: m.special.erfinv(x.tanh()),
    "logit": lambda m, x: m.special.logit(x.sigmoid()), "log1p": lambda m, x: m.special.log1p(x.abs()),
}


def test_every_shown_name_is_a_torch_special_name():
    assert len(SHOWN) >= 15
    assert [n for n in SHOWN if not hasattr(torch.special, n)] == []


@pytest.mark.parametrize("name", SHOWN)
def test_values_and_gradients_against_torch(name, device):
    call = CALLS.get(name, lambda m, x: getattr(m.special, name)(x))
    data = [[-1.5, -0.25, 0.0], [0.3, 0.9, 2.0]]
    x = ember.tensor(data, dtype=ember.float64, device=device, requires_grad=True)
    assert_close(call(ember, x), call(torch, torch.tensor(data, dtype=torch.float64)))
    if name != "round":
        assert gradcheck(lambda t: call(ember, t), (x,))
