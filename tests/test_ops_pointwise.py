"""Pointwise ops against PyTorch on every backend: operators, errors, ``out=`` and in-place forms (the rows of
ember.testing.rows_pointwise, every check, run in tests/test_kit.py)."""
import pytest

import ember
from ember.testing import assert_close

pytest.importorskip("torch")


def test_operators_and_inplace_forms(device, torch):
    a, b = ember.tensor([5, -3, 7], device=device), ember.tensor([2, 2, -3], device=device)
    ta, tb = torch.tensor([5, -3, 7]), torch.tensor([2, 2, -3])
    for f in (lambda x, y: x // y, lambda x, y: x % y, lambda x, y: x & y, lambda x, y: x | y,
              lambda x, y: x ^ y, lambda x, y: ~x, lambda x, y: x << 1, lambda x, y: x >> 1, lambda x, y: x / y):
        assert f(a, b).tolist() == f(ta, tb).tolist()
        assert str(f(a, b).dtype).split(".")[-1] == str(f(ta, tb).dtype).split(".")[-1]
    x = ember.ones(3, device=device)
    x += 2
    x *= ember.tensor([1.0, 2.0, 3.0], device=device)
    x -= 1
    x /= 2
    assert x.tolist() == [1.0, 2.5, 4.0]


def test_comparison_is_not_differentiable(device):
    x = ember.randn(3, device=device, requires_grad=True)
    assert not (x > 0).requires_grad and (x > 0).dtype is ember.bool


def test_bad_inputs(device):
    with pytest.raises(RuntimeError, match="bitwise_and"):
        ember.ones(2, device=device) & ember.ones(2, device=device)
    with pytest.raises(RuntimeError, match="boolean masks"):
        ember.ones(2, device=device).masked_fill(ember.ones(2, device=device), 0)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        ember.ones(2, device=device).clamp()
    with pytest.raises(ValueError, match="rounding_mode"):
        ember.div(ember.ones(2, device=device), 2, rounding_mode="up")


def test_temporaries_reused_only_when_unshared(device):
    import numpy as np

    n = 1 << 16
    a, b = ember.randn(n, device=device), ember.randn(n, device=device)
    expect = ember.add(ember.mul(a, b), 1.0)
    assert ember.equal(a * b + 1.0, expect)
    x = a * b
    y = x + 1.0  # x is named: it must not change
    assert ember.equal(y, expect) and ember.equal(x, ember.mul(a, b))
    host = np.ones(n, dtype=np.float32)
    if device == "cpu":
        ember.from_numpy(host) * 2.0  # shares memory with host: never written
        assert (host == 1.0).all()
    base = ember.ones(2, n, device=device)
    base[0] * 1.0  # a view of base, left alone
    assert bool((base == 1).all())
    ints = ember.ones(n, dtype=ember.int64, device=device)
    assert (ints * 3 / 2).dtype is ember.float32 and (ints * 3 + 2.5).dtype is ember.float32
    w = ember.randn(n, device=device, requires_grad=True)
    ((w * 2.0) * 3.0 - 1.0).sum().backward()
    assert bool((w.grad == 6.0).all())


# Bad input for the special functions: ember raises PyTorch's exception type with a message naming the op.
BAD = [
    ("logaddexp_int", lambda m, d: m.logaddexp(m.ones(2, dtype=m.int64, device=d), m.ones(2, dtype=m.int64, device=d)),
     NotImplementedError, "logaddexp"),
    ("logaddexp2_bool", lambda m, d: m.logaddexp2(m.ones(2, dtype=m.bool, device=d), m.ones(2, dtype=m.bool, device=d)),
     NotImplementedError, "logaddexp2"),
    ("hypot_number", lambda m, d: m.hypot(m.ones(2, device=d), 2.0), TypeError, "hypot"),
    ("xlogy_numbers", lambda m, d: m.xlogy(2.0, 3.0), TypeError, "xlogy"),
    ("addcmul_number", lambda m, d: m.addcmul(m.ones(2, device=d), 2.0, m.ones(2, device=d)), TypeError, "addcmul"),
    ("addcmul_bool", lambda m, d: m.addcmul(*[m.ones(2, dtype=m.bool, device=d)] * 3), NotImplementedError, "addcmul"),
    ("addcdiv_int", lambda m, d: m.addcdiv(*[m.ones(2, dtype=m.int64, device=d)] * 3), RuntimeError, "addcdiv"),
    ("addcmul_broadcast", lambda m, d: m.ones(2, device=d).addcmul_(m.ones(3, 2, device=d), m.ones(2, device=d)),
     RuntimeError, "addcmul_"),
    ("addcdiv_int_self", lambda m, d: m.ones(2, dtype=m.int64, device=d).addcdiv_(m.ones(2, device=d),
                                                                                   m.ones(2, device=d)),
     RuntimeError, "addcdiv_"),
    ("erfinv_int_self", lambda m, d: m.ones(2, dtype=m.int64, device=d).erfinv_(), RuntimeError, "erfinv_"),
    ("logit_leaf", lambda m, d: m.full((2,), 0.5, device=d, requires_grad=True).logit_(), RuntimeError,
     "leaf Variable"),
]


@pytest.mark.parametrize("name,call,exc,pattern", BAD, ids=[b[0] for b in BAD])
def test_bad_special_input(name, call, exc, pattern, device, torch):
    with pytest.raises(exc):
        call(torch, "cpu")
    with pytest.raises(exc, match=pattern):
        call(ember, device)


def test_bad_special_input_leaves_input_untouched(device):
    x = ember.ones(2, dtype=ember.int64, device=device)
    with pytest.raises(RuntimeError):
        x.addcdiv_(ember.ones(2, device=device), ember.full((2,), 3.0, device=device))
    assert x.tolist() == [1, 1] and x._version == 0


OUT = [  # (name, call(m, x, y, out=...)) on x in (-1, 1) and y > 0
    ("erfc", lambda m, x, y, **o: m.erfc(x, **o)),
    ("erfinv", lambda m, x, y, **o: m.erfinv(x, **o)),
    ("xlogy", lambda m, x, y, **o: m.xlogy(x, y, **o)),
    ("logaddexp", lambda m, x, y, **o: m.logaddexp(x, y, **o)),
    ("logaddexp2", lambda m, x, y, **o: m.logaddexp2(x, y, **o)),
    ("hypot", lambda m, x, y, **o: m.hypot(x, y, **o)),
    ("logit", lambda m, x, y, **o: m.logit(y / 3, 0.1, **o)),
    ("addcmul", lambda m, x, y, **o: m.addcmul(x, x, y, value=2, **o)),
    ("addcdiv", lambda m, x, y, **o: m.addcdiv(x, x, y, value=-1, **o)),
]


@pytest.mark.parametrize("name,call", OUT, ids=[o[0] for o in OUT])
def test_out_argument(name, call, device, torch):
    data = [[-0.5, 0.25, 0.75], [0.5, 1.5, 2.5]]
    x, y = (ember.tensor(v, device=device) for v in data)
    out = ember.empty(0, device=device)
    r = call(ember, x, y, out=out)
    assert r is out
    assert_close(out, call(torch, *(torch.tensor(v) for v in data)))


INPLACE = [  # (name, in-place call, out-of-place call) on x in (-1, 1) and y > 0
    ("erfc_", lambda x, y: x.erfc_(), lambda x, y: x.erfc()),
    ("erfinv_", lambda x, y: x.erfinv_(), lambda x, y: x.erfinv()),
    ("xlogy_", lambda x, y: x.xlogy_(y), lambda x, y: x.xlogy(y)),
    ("hypot_", lambda x, y: x.hypot_(y), lambda x, y: x.hypot(y)),
    ("logit_", lambda x, y: x.logit_(0.2), lambda x, y: x.logit(0.2)),
    ("addcmul_", lambda x, y: x.addcmul_(x, y, value=0.5), lambda x, y: x.addcmul(x, y, value=0.5)),
    ("addcdiv_", lambda x, y: x.addcdiv_(x, y, value=-2), lambda x, y: x.addcdiv(x, y, value=-2)),
]


@pytest.mark.parametrize("name,inplace,outplace", INPLACE, ids=[e[0] for e in INPLACE])
def test_special_inplace_forms(name, inplace, outplace, device):
    x = ember.tensor([[-0.5, 0.25, 0.75], [0.1, -0.9, 0.4]], device=device)
    y = ember.tensor([0.5, 1.5, 2.5], device=device)
    want = outplace(x, y)
    base = x.clone()
    view = base[1]
    assert inplace(base, y) is base and base._version > 0
    assert_close(base, want)
    assert_close(view, want[1])
    w = x.clone().requires_grad_(True)
    z = w * 1
    inplace(z, y)
    (g,) = ember.autograd.grad(z.sum(), w)
    (g_ref,) = ember.autograd.grad(outplace(w, y).sum(), w)
    assert_close(g, g_ref)


def test_erf_family_fallbacks_match_torch(device, torch):
    """The array-API-only erf/erfc/erfinv (for libraries without them) on this device's array library."""
    import numpy as np

    from ember.kernels.pointwise import fallbacks

    backend = ember.ones(1, device=device)._dev.backend
    fns = fallbacks(backend.xp)

    def run(name, host):
        return backend.to_numpy(fns[name](backend.from_numpy(host, 0)))

    y = np.concatenate([np.linspace(-0.999, 0.999, 41), 1 - np.logspace(-15, -2, 8), [0.0, 1.0, -1.0, 1.5]])
    assert_close(run("erfinv", y), torch.erfinv(torch.tensor(y)), rtol=1e-7, atol=0)
    x = np.linspace(-6.0, 6.0, 49)
    for name in ("erf", "erfc"):
        assert_close(run(name, x), getattr(torch, name)(torch.tensor(x)), rtol=1e-10, atol=1e-15)
    y32 = np.linspace(-0.99, 0.99, 23, dtype=np.float32)
    assert_close(run("erfinv", y32), torch.erfinv(torch.tensor(y32)), rtol=1e-6, atol=1e-7)


def test_xlogy_gradient_at_zero_like_torch(device, torch):
    """At x == 0 the gradient in x is log(y), but 0 where y <= 0 (PyTorch's convention, not -inf or NaN)."""
    data = ([0.0, 0.0, 0.0, 2.0], [0.0, -1.0, 3.0, 3.0])
    x = ember.tensor(data[0], device=device, requires_grad=True)
    tx = torch.tensor(data[0], requires_grad=True)
    (g,) = ember.autograd.grad(ember.xlogy(x, ember.tensor(data[1], device=device)).sum(), x)
    (tg,) = torch.autograd.grad(torch.xlogy(tx, torch.tensor(data[1])).sum(), tx)
    assert_close(g, tg)
