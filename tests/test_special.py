"""``ember.special`` against ``torch.special``: every name ember shows exists there and computes the same."""
import pytest

import ember
from ember.autograd import gradcheck
from ember.testing import assert_close

torch = pytest.importorskip("torch")

SHOWN = sorted(n for n in dir(ember.special) if not n.startswith("_"))



def _at_degree_4(name):
    return lambda m, x: getattr(m.special, name)(x.tanh(), 4)


def _positive(name):
    return lambda m, x: getattr(m.special, name)(x.abs() + 0.5)


CALLS = {
    "softmax": lambda m, x: m.special.softmax(x, 1), "log_softmax": lambda m, x: m.special.log_softmax(x, 1),
    "logsumexp": lambda m, x: m.special.logsumexp(x, 1), "xlogy": lambda m, x: m.special.xlogy(x, x + 2),
    "ndtri": lambda m, x: m.special.ndtri(x.sigmoid()), "erfinv": lambda m, x: m.special.erfinv(x.tanh()),
    "logit": lambda m, x: m.special.logit(x.sigmoid()), "log1p": lambda m, x: m.special.log1p(x.abs()),
    "gammaln": lambda m, x: m.special.gammaln(x.abs() + 0.5), "digamma": lambda m, x: m.special.digamma(x.abs() + 0.5),
    "psi": lambda m, x: m.special.psi(x.abs() + 0.5), "polygamma": lambda m, x: m.special.polygamma(2, x.abs() + 0.5),
    "multigammaln": lambda m, x: m.special.multigammaln(x.abs() + 1.5, 2),
    "gammainc": lambda m, x: m.special.gammainc(x.detach() * 0 + 1.5, x.abs() + 0.5),
    "gammaincc": lambda m, x: m.special.gammaincc(x.detach() * 0 + 1.5, x.abs() + 0.5),
    "zeta": lambda m, x: m.special.zeta(x.detach() * 0 + 2.5, x.abs() + 0.5),
    "xlog1py": lambda m, x: m.special.xlog1py(x, x.abs()),
    **{n: _at_degree_4(n) for n in (
        "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
        "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
        "legendre_polynomial_p")},
    **{n: _positive(n) for n in (
        "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
        "scaled_modified_bessel_k1")},
}
# no gradient in PyTorch either: rounding, the Bessel family of torch.special, the polynomial families
NO_GRAD = {"round", "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "spherical_bessel_j0"} | {n for n in CALLS if "polynomial" in n}


def test_every_shown_name_is_a_torch_special_name():
    assert len(SHOWN) >= 15
    assert [n for n in SHOWN if not hasattr(torch.special, n)] == []


@pytest.mark.parametrize("name", SHOWN)
def test_values_and_gradients_against_torch(name, device):
    call = CALLS.get(name, lambda m, x: getattr(m.special, name)(x))
    data = [[-1.5, -0.25, 0.0], [0.3, 0.9, 2.0]]
    x = ember.tensor(data, dtype=ember.float64, device=device, requires_grad=True)
    assert_close(call(ember, x), call(torch, torch.tensor(data, dtype=torch.float64)), rtol=1e-6, atol=1e-7)
    if name not in NO_GRAD:
        assert gradcheck(lambda t: call(ember, t), (x,))
