"""Special functions and the pointwise ops around them against PyTorch on every backend: the names shown,
the in-place forms in both namespaces, and PyTorch's errors (the rows of ember.testing.rows_special, every
check, run in tests/test_kit.py)."""
import numpy as np
import pytest

import ember
from ember.testing import kit
from ember.testing.case import bad_input_test

torch = pytest.importorskip("torch")



def test_rows_are_in_the_conformance_kit():
    assert "ember.testing.rows_special" in kit.TABLES


SPECIAL_NAMES = [n for n in dir(torch.special) if not n.startswith("_") and callable(getattr(torch.special, n))
                 and n not in ("Tensor",)]
TOP_NAMES = ("lgamma", "digamma", "polygamma", "mvlgamma", "i0", "igamma", "igammac", "sgn", "copysign", "heaviside",
             "signbit", "sinc", "gcd", "lcm", "frexp", "ldexp", "float_power", "nextafter", "deg2rad", "rad2deg",
             "positive", "isneginf", "isposinf", "isreal", "rsub", "fix", "fmax", "fmin")


def test_every_torch_special_function_is_shown():
    assert len(SPECIAL_NAMES) > 50
    assert [n for n in SPECIAL_NAMES if not callable(getattr(ember.special, n, None))] == []


@pytest.mark.parametrize("ns", ["torch", "Tensor"])
def test_pointwise_names_and_inplace_forms_where_torch_has_them(ns):
    ref, mine = (torch, ember) if ns == "torch" else (torch.Tensor, ember.Tensor)
    names = [n for n in TOP_NAMES if hasattr(ref, n)]
    inplace = [n + "_" for n in TOP_NAMES + ("sin", "abs", "clamp", "clamp_min", "clip", "logit", "xlogy",
                                             "nan_to_num", "eq", "ne", "lt", "le", "gt", "ge", "greater", "less",
                                             "greater_equal", "less_equal", "not_equal", "bitwise_left_shift",
                                             "bitwise_right_shift") if hasattr(ref, n + "_")]
    assert len(names) >= 20 and len(inplace) >= 10
    assert [n for n in names + inplace if not callable(getattr(mine, n, None))] == []


def test_torch_inplace_writes_into_its_argument(device):
    x = ember.tensor([0.25, 1.0], device=device)
    assert ember.sin_(x) is x and x.tolist() == pytest.approx(np.sin([0.25, 1.0]).tolist())
    y = ember.tensor([4, 6], device=device)
    assert ember.gcd_(y, ember.tensor([6, 4], device=device)) is y and y.tolist() == [2, 2]


def test_inplace_history_and_grad(device):
    a = ember.tensor([0.5, 2.0], dtype=ember.float64, device=device, requires_grad=True)
    b = a * 1
    ember.sinc_(b)
    b.lgamma_()
    b.sum().backward()
    ta = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)
    tb = ta * 1
    torch.sinc_(tb)
    tb.lgamma_()
    tb.sum().backward()
    assert a.grad.tolist() == pytest.approx(ta.grad.tolist())


def test_no_gradient_where_torch_has_none(device):
    x = ember.tensor([0.5, 1.5], dtype=ember.float64, device=device, requires_grad=True)
    for f in (ember.special.bessel_j0, ember.special.airy_ai, ember.special.modified_bessel_k0,
              lambda t: ember.special.chebyshev_polynomial_t(t, 3), ember.signbit):
        assert not f(x).requires_grad
    # heaviside's result requires grad in PyTorch (a node without a formula), and its backward is refused
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        ember.heaviside(x, x).sum().backward()
    assert ember.special.i0(x).requires_grad and ember.copysign(x, -1.0).requires_grad
    s = ember.tensor([2.0, 3.0], dtype=ember.float64, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for 'zeta'"):
        ember.special.zeta(s, x).sum().backward()
    with pytest.raises(RuntimeError, match="igamma: input"):
        ember.special.gammainc(s, x).sum().backward()
    assert s.grad is None


def test_frexp_returns_mantissa_and_int32_exponent(device):
    m, e = ember.frexp(ember.tensor([3.0, -0.5, 0.0], device=device))
    assert e.dtype is ember.int32 and e.tolist() == [2, 0, 0] and m.tolist() == [0.75, -0.5, 0.0]


def test_missing_scipy_names_the_extra(monkeypatch):
    from ember.kernels import special

    monkeypatch.setattr(special, "LIBRARIES", ("ember_no_such_special_module",))
    table = special.kernels(np)
    with pytest.raises(ImportError, match=r'pip install "ember\[special\]"'):
        table["lgamma"](np.ones(2))
    assert table["sinc"](np.zeros(1)).tolist() == [1.0]  # the formulas need no SciPy


def _t(m, device, data, **kw):
    return m.tensor(data, device=device if m is ember else "cpu", **kw)


BAD = [
    ("polygamma_negative_n", lambda m, d: m.polygamma(-1, _t(m, d, [1.0])), RuntimeError, "negative n"),
    ("mvlgamma_bool", lambda m, d: m.mvlgamma(_t(m, d, [True]), 1), RuntimeError, "boolean"),
    ("mvlgamma_p", lambda m, d: m.mvlgamma(_t(m, d, [2.0]), 0), RuntimeError, "p has to be"),
    ("gcd_float", lambda m, d: m.gcd(_t(m, d, [1.0]), _t(m, d, [2.0])), NotImplementedError, "gcd"),
    ("gcd_scalar", lambda m, d: m.gcd(_t(m, d, [1]), 2), TypeError, "gcd"),
    ("lcm_bool", lambda m, d: m.lcm(_t(m, d, [True]), _t(m, d, [True])), NotImplementedError, "Bool"),
    ("igamma_int", lambda m, d: m.igamma(_t(m, d, [1]), _t(m, d, [2])), NotImplementedError, "igamma"),
    ("gammainc_scalar", lambda m, d: m.special.gammainc(_t(m, d, [1.0]), 2.0), TypeError, "gammainc|igamma"),
    ("nextafter_int", lambda m, d: m.nextafter(_t(m, d, [1]), _t(m, d, [2])), NotImplementedError, "nextafter"),
    ("heaviside_dtypes", lambda m, d: m.heaviside(_t(m, d, [1.0]), _t(m, d, [1])), RuntimeError, "different dtypes"),
    ("heaviside_scalar", lambda m, d: m.heaviside(_t(m, d, [1.0]), 0.5), TypeError, "heaviside"),
    ("frexp_int", lambda m, d: m.frexp(_t(m, d, [1])), RuntimeError, "floating"),
    ("ldexp_scalar", lambda m, d: m.ldexp(_t(m, d, [1.0]), 3), TypeError, "ldexp"),
    ("float_power_inplace", lambda m, d: _t(m, d, [1.0]).float_power_(2), RuntimeError, "float_power_"),
    ("fmax_scalar", lambda m, d: m.fmax(_t(m, d, [1.0]), 2.0), TypeError, "fmax"),
    ("positive_bool", lambda m, d: m.positive(_t(m, d, [True])), RuntimeError, "bool"),
    ("copysign_number_first", lambda m, d: m.copysign(2, _t(m, d, [1.0])), TypeError, "copysign"),
    ("lgamma_not_tensor", lambda m, d: m.lgamma([1.0]), TypeError, "lgamma"),
    ("special_not_tensor", lambda m, d: m.special.bessel_j0(1.0), TypeError, "bessel_j0"),
    ("inplace_int_result_float", lambda m, d: _t(m, d, [1, 2]).lgamma_(), RuntimeError, "lgamma_"),
    ("inplace_leaf", lambda m, d: m.sin_(_t(m, d, [1.0], requires_grad=True)), RuntimeError, "leaf|in-place"),
]
test_bad_input = bad_input_test(BAD)


def test_failed_inplace_leaves_input_untouched(device):
    x = ember.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError):
        x.digamma_()
    assert x.tolist() == [1, 2] and x.dtype is ember.int64
