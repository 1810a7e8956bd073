"""Complex dtypes against PyTorch on every backend: promotion, creation, printing, views of
the parts, Wirtinger gradients and the errors of ordering ops (the rows of ember.testing.rows_complex, every
check, run in tests/test_kit.py)."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close

torch = pytest.importorskip("torch")


DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex32", "complex64", "complex128"]


def test_promote_types_table_is_torch():
    for a in DTYPES:
        for b in DTYPES:
            got = ember.promote_types(getattr(ember, a), getattr(ember, b))
            assert got.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[6:], (a, b)


@pytest.mark.parametrize("operands", [
    ("float64", 1j), ("float32", 1j), ("int32", 1j), ("complex64", 2.5), ("complex64", "float64[0d]"),
    ("complex128", "float32"), ("int64", "complex64[0d]"), ("bool", 1j),
])
def test_result_type_is_torch(operands, device):
    def make(m, o):
        if not isinstance(o, str):
            return o
        name, zero = o.split("[")[0], o.endswith("[0d]")
        return m.ones(() if zero else (2,), dtype=getattr(m, name))

    assert ember.result_type(*(make(ember, o) for o in operands)).name == \
        str(torch.result_type(*(make(torch, o) for o in operands)))[6:]


def test_default_complex_dtype_follows_default_float():
    assert ember.tensor([1 + 2j]).dtype is ember.complex64
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1 + 2j]).dtype is ember.complex128
        assert (ember.ones(2) * 1j).dtype is ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128 and ember.chalf is ember.complex32


def test_creation_and_interop(device):
    z = ember.tensor([[1 + 2j, -3j]], device=device)
    assert z.dtype is ember.complex64 and z.is_complex() and ember.is_complex(z)
    assert z.tolist() == [[(1 + 2j), -3j]] and z[0, 1].item() == -3j
    a = np.array([1 + 1j, 2 - 1j])
    t = ember.from_numpy(a)
    assert t.dtype is ember.complex128
    a[0] = 5
    assert t[0].item() == 5  # shares memory
    assert ember.zeros(2, dtype=ember.cdouble, device=device).dtype is ember.complex128
    assert_close(ember.tensor([1.5 - 2j], dtype=ember.complex128, device=device).cpu(),
                 torch.tensor([1.5 - 2j], dtype=torch.complex128))


@pytest.mark.parametrize("data", [[1 + 2j, 3 - 1j], [[-1.1312 + 2.4717j, 10.8523 - 16.9014j]], [0.1 + 2j],
                                  [[1 + 2j], [3 - 1j]], 4 + 1j, [[1e5 + 1j, 2]]])
def test_printing_is_torch(data):
    assert repr(ember.tensor(data)).replace("ember", "torch") == repr(torch.tensor(data))
    assert repr(ember.tensor(data, dtype=ember.complex128)).replace("ember", "torch") == \
        repr(torch.tensor(data, dtype=torch.complex128))


def test_parts_are_views_with_setters(device):
    z = ember.tensor([1 + 2j, 3 - 4j], device=device)
    re, im = z.real, z.imag
    v = z._version
    re[0] = 10
    assert z[0].item() == 10 + 2j and z._version > v
    z.imag = ember.tensor([0.5, 0.5], device=device)
    assert z.tolist() == [10 + 0.5j, 3 + 0.5j] and im.tolist() == [0.5, 0.5]
    z.real = ember.zeros(2, device=device)
    assert z.tolist() == [0.5j, 0.5j]
    pairs = ember.view_as_real(z)
    pairs[1, 0] = 7
    assert z[1].item() == 7 + 0.5j
    x = ember.ones(2, device=device)
    assert x.real is x and ember.conj(x) is x and ember.resolve_conj(x) is x and ember.resolve_neg(x) is x
    assert not z.is_conj() and not ember.is_neg(z)


def test_view_as_complex_shares_and_round_trips(device):
    x = ember.arange(6.0, device=device).reshape(3, 2)
    z = ember.view_as_complex(x)
    assert z.tolist() == [1j, 2 + 3j, 4 + 5j]
    assert_close(ember.view_as_real(z), x)


def test_inplace_real_part_write_keeps_history(device):
    z = ember.tensor([1 + 2j, 3 - 4j], dtype=ember.complex128, device=device, requires_grad=True)
    w = z * 1
    w.real.mul_(3)
    tz = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex128, requires_grad=True)
    tw = tz * 1
    tw.real.mul_(3)
    (g,) = ember.autograd.grad((w.abs() ** 2).sum(), z)
    (tg,) = torch.autograd.grad((tw.abs() ** 2).sum(), tz)
    assert_close(g, tg)


UNARY = ["exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal", "rsqrt", "square", "abs", "neg",
         "angle", "conj", "conj_physical", "sum", "mean"]


@pytest.mark.parametrize("name", UNARY)
def test_wirtinger_gradient_of_real_loss(name, device):
    """``autograd.grad`` of ``(f(z).abs() ** 2).sum()`` is PyTorch's for complex ``z``."""
    data = np.array([[0.3 + 0.8j, -1.2 + 0.4j, 0.7 - 0.9j]])
    z = ember.tensor(data, device=device, requires_grad=True)
    tz = torch.tensor(data, requires_grad=True)
    (g,) = ember.autograd.grad((getattr(ember, name)(z).abs() ** 2).sum(), z)
    (tg,) = torch.autograd.grad((getattr(torch, name)(tz).abs() ** 2).sum(), tz)
    assert_close(g, tg)


def test_sgn_gradient_of_complex_input(device):
    """``sgn(z) = z / |z|`` has PyTorch's gradient on complex input (0 at 0), and differentiates again."""
    data, w = np.array([0.3 + 0.8j, -1.2 + 0.4j, 0j]), np.array([2 - 1j, 1 + 1j, 3 + 3j])
    z = ember.tensor(data, device=device, requires_grad=True)
    tz = torch.tensor(data, requires_grad=True)
    (g,) = ember.autograd.grad((ember.sgn(z) * ember.tensor(w, device=device)).real.sum(), z)
    (tg,) = torch.autograd.grad((torch.sgn(tz) * torch.tensor(w)).real.sum(), tz)
    assert_close(g, tg)
    z = ember.tensor(data[:2], device=device, requires_grad=True)
    assert gradcheck(ember.sgn, (z,)) and gradgradcheck(ember.sgn, (z,))


def test_gradcheck_on_complex_inputs(device):
    z = ember.randn(5, dtype=ember.float64, device=device)
    z = ember.complex(z, z.flip(0)).detach().requires_grad_()
    assert gradcheck(lambda t: (t * t).exp() / (t + 3), (z,))
    assert gradgradcheck(lambda t: t.sin() * t.conj(), (z,))
    m = ember.complex(ember.randn(3, 3, dtype=ember.float64), ember.randn(3, 3, dtype=ember.float64))
    assert gradcheck(lambda a: a @ m.to(device) @ a.mH, (ember.randn(2, 3, dtype=ember.float64, device=device)
                                                         .to(ember.complex128).requires_grad_(),))


def test_gradcheck_catches_a_missing_conjugate(device):
    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * 2 * z  # should be g * conj(2 z)

    z = ember.tensor([0.5 + 1j, -1 + 0.25j], dtype=ember.complex128, device=device, requires_grad=True)
    with pytest.raises(ember.autograd.GradcheckError, match="Jacobian mismatch"):
        gradcheck(Square.apply, (z,))


def test_real_input_gets_real_gradient(device):
    x = ember.tensor([0.5, -1.0], device=device, requires_grad=True)
    y = (x * (1 + 2j)).exp().abs().sum() + ember.fft.fft(x).real.sum()
    y.backward()
    tx = torch.tensor([0.5, -1.0], requires_grad=True)
    ((tx * (1 + 2j)).exp().abs().sum() + torch.fft.fft(tx).real.sum()).backward()
    assert x.grad.dtype is ember.float32
    assert_close(x.grad, tx.grad)


BAD = [
    ("lt", lambda m, d: m.ones(2, dtype=m.cfloat, device=d) < 1, NotImplementedError, "not implemented for"),
    ("ge", lambda m, d: m.ge(m.ones(2, dtype=m.cfloat, device=d), m.ones(2, device=d)), NotImplementedError,
     "not implemented for"),
    ("max", lambda m, d: m.ones(2, dtype=m.cfloat, device=d).max(), NotImplementedError,
     "not implemented for .ComplexFloat"),
    ("max_dim", lambda m, d: m.ones(2, dtype=m.cfloat, device=d).max(0), RuntimeError, "complex"),
    ("amin", lambda m, d: m.ones(2, dtype=m.cfloat, device=d).amin(), NotImplementedError,
     "not implemented for .ComplexFloat"),
    ("argmax", lambda m, d: m.ones(2, dtype=m.cfloat, device=d).argmax(), RuntimeError, "complex"),
    ("maximum", lambda m, d: m.maximum(m.ones(2, dtype=m.cfloat, device=d), m.ones(2, device=d)), RuntimeError,
     "complex"),
    ("clamp", lambda m, d: m.ones(2, dtype=m.cfloat, device=d).clamp(0, 1), NotImplementedError, "complex"),
    ("sort", lambda m, d: m.ones(2, dtype=m.cfloat, device=d).sort(), RuntimeError, "complex"),
    ("imag_real", lambda m, d: m.ones(2, device=d).imag, RuntimeError, "non-complex"),
    ("view_as_real_real", lambda m, d: m.view_as_real(m.ones(2, device=d)), RuntimeError, "complex tensors"),
    ("view_as_complex_int", lambda m, d: m.view_as_complex(m.ones(2, 2, dtype=m.int64, device=d)), RuntimeError,
     "float and double"),
    ("view_as_complex_size", lambda m, d: m.view_as_complex(m.ones(3, 3, device=d)), RuntimeError,
     "last dimension of size 2"),
    ("complex_dtypes", lambda m, d: m.complex(m.ones(2, device=d), m.ones(2, dtype=m.float64, device=d)),
     RuntimeError, "scalar type"),
    ("complex_ints", lambda m, d: m.complex(m.ones(2, dtype=m.int64, device=d), m.ones(2, device=d)), RuntimeError,
     "Float or Double"),
    ("complex_shapes", lambda m, d: m.complex(m.ones(2, device=d), m.ones(3, device=d)), RuntimeError, "size"),
    ("polar_ints", lambda m, d: m.polar(m.ones(2, dtype=m.int64, device=d), m.ones(2, device=d)), RuntimeError,
     "Float or Double"),
    ("mH_1d", lambda m, d: m.ones(2, dtype=m.cfloat, device=d).mH, RuntimeError, "matrices"),
    ("adjoint_1d", lambda m, d: m.ones(2, device=d).adjoint(), RuntimeError, "matrices"),
]


@pytest.mark.parametrize("name,call,exc,pattern", BAD, ids=[b[0] for b in BAD])
def test_bad_input(name, call, exc, pattern, device):
    with pytest.raises(exc, match=pattern):
        call(ember, device)
    with pytest.raises(exc):
        call(torch, "cpu")


def test_chalf_is_a_clear_error(device):
    with pytest.raises(RuntimeError, match="complex32"):
        ember.ones(2, device=device).chalf()


@pytest.mark.parametrize("lead", [(3,), (2, 3)], ids=["2d", "3d"])
def test_linear_complex_gradients_are_the_adjoint(torch, device, lead):
    r = np.random.default_rng(7)

    def c(*shape):
        return r.standard_normal(shape) + 1j * r.standard_normal(shape)

    arrays = (c(*lead, 4), c(2, 4), c(2))
    grads = {}
    for lib in (ember, torch):
        ts = [lib.tensor(a, device=device if lib is ember else "cpu", requires_grad=True) for a in arrays]
        (lib.nn.functional.linear(*ts).abs() ** 2).sum().backward()
        grads[lib] = [t.grad for t in ts]
    for a, e in zip(grads[ember], grads[torch]):
        assert_close(a.cpu().numpy(), e.numpy(), rtol=1e-12, atol=1e-12)
    ts = [ember.tensor(a, device=device, requires_grad=True) for a in arrays]
    assert gradcheck(lambda x, w, b: ember.nn.functional.linear(x, w, b), ts)
