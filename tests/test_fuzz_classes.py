"""Classes of disagreement with PyTorch that the differential fuzzer (:mod:`ember.testing.fuzz`) found, each swept
over its ops, forms and dtypes against PyTorch 2.13: the same calls compute (same shapes, dtypes and values) and
the same ones raise (the same exception class)."""
# ruff: noqa: B023 - each case's lambdas are called at once, inside the loop iteration that makes them
import itertools
import warnings

import numpy as np
import pytest

import ember
from ember.testing.compare import has_dtype

torch = pytest.importorskip("torch")


def _have(device, names):
    """The dtypes of ``names`` that ``device``'s backend has."""
    return [d for d in names if has_dtype(device, getattr(ember, d))]


def _outcome(fn):
    """What ``fn()`` gives: ``("ok", value)`` or the exception's class name."""
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - the refusal is the outcome compared
        return (type(exc).__name__,)


# --------------------------------------------------------------------------- setitem with a tensor of another dtype
SET_INDEXES = ["(range(2), i)", "(0, i)", "([0, 1], i)", "(slice(None), i)", "mk", "(mk, 0)", "(0, mk3)",
               "(Ellipsis, mk3)", "(mk, m.tensor([1]))"]
SET_VALUES = ["m.tensor([True, False])", "m.tensor(1.5)", "m.tensor([2.5])", "m.tensor([1, 2], dtype=m.int32)", "True",
              "m.tensor(7)"]


def _setitem(m, index, value, dtype, device=None):
    x = m.zeros(2, 3, dtype=getattr(m, dtype))
    env = {"m": m, "x": x if device is None else x.to(device), "i": m.tensor([2, 0]), "mk": m.tensor([True, False]),
           "mk3": m.tensor([True, False, True])}
    v = eval(value, env)  # noqa: S307 - the value forms of the table above
    env["v"] = v.to(device) if device is not None and isinstance(v, ember.Tensor) else v
    exec(f"x[{index}] = v", env)  # noqa: S102 - the index forms of the table above
    return env["x"].tolist()


def test_setitem_refuses_a_tensor_of_another_dtype_as_pytorch(device):
    """``x[index] = value`` with an advanced index and a tensor value of another dtype raises PyTorch's
    RuntimeError (its index_put_ requires one dtype), except where PyTorch fills through masked_fill (a one-element
    value and one bool mask), which casts; numbers always cast.  Before: 60 of the 162 cases differed."""
    for index, value, dtype in itertools.product(SET_INDEXES, SET_VALUES, ("int64", "float32", "bool")):
        want = _outcome(lambda: _setitem(torch, index, value, dtype))
        got = _outcome(lambda: _setitem(ember, index, value, dtype, device))
        assert got == want, (index, value, dtype, got, want)


# --------------------------------------------------------------------------- in-place abs of a complex tensor
ABS_FORMS = {"abs_": lambda m, x: x.abs_(), "absolute_": lambda m, x: x.absolute_(),
             "torch.abs_": lambda m, x: m.abs_(x), "abs_empty": lambda m, x: x[:0].abs_()}


@pytest.mark.parametrize("form", sorted(ABS_FORMS))
def test_inplace_abs_refuses_complex(form, device):
    """The in-place abs forms refuse complex tensors with PyTorch's RuntimeError (the result would be real),
    leaving the input as it was, and compute every other dtype."""
    data = np.array([[-1.5, 0.0, 2.0], [3.0, -0.5, 1.0]])
    for dtype in ("float32", "float64", "int64", "int16", "complex64", "complex128"):
        if not has_dtype(device, getattr(ember, dtype)):
            continue
        x, t = ember.tensor(data, device=device).to(getattr(ember, dtype)), torch.tensor(data).to(getattr(torch, dtype))
        want, got = _outcome(lambda: ABS_FORMS[form](torch, t)), _outcome(lambda: ABS_FORMS[form](ember, x))
        assert got[0] == want[0], (dtype, got, want)
        np.testing.assert_array_equal(x.cpu().numpy(), t.numpy(), err_msg=dtype)


# --------------------------------------------------------------------------- products with an empty dimension
SHAPES = [(0,), (3,), (0, 0), (3, 0), (0, 3), (2, 3, 0), (2, 0, 4), (2, 0, 0), (0, 2, 3), (1, 0, 3), (3, 0, 0),
          (2, 1, 3, 0)]
PRODUCTS = {"matmul": lambda m, a, b: m.matmul(a, b), "bmm": lambda m, a, b: m.bmm(a, b),
            "mm": lambda m, a, b: a.mm(b), "einsum": lambda m, a, b: m.einsum("...ij,...jk->...ik", a, b)}


@pytest.mark.parametrize("op", sorted(PRODUCTS))
def test_products_with_an_empty_dimension(op, device):
    """Matrix products where a dimension is empty (a zero-length contraction, stack or side) compute as
    PyTorch's, forward and backward, or raise as PyTorch does (the flattening GEMM paths could not reshape an
    empty stack: 41 of 780 cases differed before)."""
    def run(m, sa, sb, dev=None):
        a, b = (m.ones(s, dtype=m.float64) for s in (sa, sb))
        if dev is not None:
            a, b = a.to(dev), b.to(dev)
        a.requires_grad_(), b.requires_grad_()
        r = PRODUCTS[op](m, a, b)
        r.sum().backward()
        return tuple(r.shape), tuple(a.grad.shape), tuple(b.grad.shape), float(r.detach().sum())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (PyTorch's warning on float() of a tensor)
        for sa, sb in itertools.product(SHAPES, SHAPES):
            if 0 in sa + sb:
                want, got = _outcome(lambda: run(torch, sa, sb)), _outcome(lambda: run(ember, sa, sb, device))
                assert got == want, (sa, sb, got, want)


# --------------------------------------------------------------------------- alpha= and value= in the result dtype
SCALED = {"add": lambda m, x, a, b, v: m.add(x, a, alpha=v), "sub": lambda m, x, a, b, v: m.sub(x, a, alpha=v),
          "add_": lambda m, x, a, b, v: x.clone().add_(a, alpha=v),
          "sub_": lambda m, x, a, b, v: x.clone().sub_(a, alpha=v),
          "addcmul": lambda m, x, a, b, v: m.addcmul(x, a, b, value=v),
          "addcmul_": lambda m, x, a, b, v: x.clone().addcmul_(a, b, value=v),
          "addcdiv": lambda m, x, a, b, v: m.addcdiv(x, a, b, value=v)}
SCALED_DTYPES = ("bfloat16", "float16", "float32", "float64", "int64", "uint8")


@pytest.mark.parametrize("op", sorted(SCALED))
def test_alpha_and_value_scale_in_the_result_dtype(op, device):
    """``alpha``/``value`` is rounded to the result dtype and scales the operand in that dtype, as PyTorch's
    kernels do: an integer operand times 0.3 beside a bfloat16 input stays bfloat16 (ember's result was float32),
    a float16 operand beside a bfloat16 input is scaled in float32 (521 of 7168 dtype and value cases differed
    before, 124 after, all within the half-precision rounding tolerance)."""
    def run(m, dx, da, db, v, dev=None):
        x, a, b = (m.tensor(d, dtype=getattr(m, t)) for d, t in (([[1.5, 2, 3]] * 2, dx), ([[0.7, 3, 1]] * 2, da),
                                                                  ([2.5, 1, 2], db)))
        if dev is not None:
            x, a, b = x.to(dev), a.to(dev), b.to(dev)
        r = SCALED[op](m, x, a, b, v)
        return str(r.dtype).split(".")[-1], np.asarray(r.cpu().double().tolist())

    for dx, da, db, v in itertools.product(SCALED_DTYPES, SCALED_DTYPES, ("float32", "int64"), (0.3, 3)):
        if not all(has_dtype(device, getattr(ember, d)) for d in (dx, da, db)):
            continue
        want, got = _outcome(lambda: run(torch, dx, da, db, v)), _outcome(lambda: run(ember, dx, da, db, v, device))
        assert got[0] == want[0], (dx, da, db, v, got, want)
        if want[0] == "ok":
            assert got[1][0] == want[1][0], (dx, da, db, v, got, want)
            np.testing.assert_allclose(got[1][1], want[1][1], rtol=2e-2 if "16" in got[1][0] else 1e-6,
                                       err_msg=str((dx, da, db, v)))


# --------------------------------------------------------------------------- a number where PyTorch requires a tensor
NUMBER_FIRST = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "less_equal", "greater_equal", "not_equal",
                "fmod", "remainder", "add", "mul", "sub", "div", "pow", "maximum", "atan2", "bitwise_and", "xlogy"]


@pytest.mark.parametrize("name", NUMBER_FIRST)
def test_number_as_input_as_pytorch(name, device):
    """A Python number as the first operand of a binary function: refused with TypeError where PyTorch has no
    overload taking one there (the comparisons and fmod computed it: 37 of 264 cases differed), computed where
    it has one; a number as the second operand is always taken."""
    for number, dtype in itertools.product((2, 2.5, True), ("float32", "int64", "bool")):
        for first in (True, False):
            def run(m, dev=None):
                t = m.tensor([1.5, 2.5, 0.0]).to(getattr(m, dtype))
                t = t if dev is None else t.to(dev)
                r = getattr(m, name)(number, t) if first else getattr(m, name)(t, number)
                return str(r.dtype).split(".")[-1], str(r.cpu().tolist())  # (nan as text: equal)
            want, got = _outcome(lambda: run(torch)), _outcome(lambda: run(ember, device))
            if want[0] != "ok" and got[0] != "ok":
                continue  # (both refuse: which rule answers first is another class)
            assert got == want, (number, dtype, first, got, want)


# --------------------------------------------------------------------------- gradient's coordinates
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_coordinates_dtype_as_pytorch(edge_order, device):
    """``gradient`` with coordinate tensors gives PyTorch's dtype: its coefficients come from the coordinates in
    their float dtype (integer coordinates' true division: the default float), promoted with the input's (float16
    input and int64 coordinates give float32; ember kept float16: 34 of 72 cases differed).  Values within
    the half-precision tolerance (PyTorch rounds its bfloat16 coefficients first)."""
    for dx, dc in itertools.product(("float16", "bfloat16", "float32", "float64", "int64", "int32"),
                                    ("int64", "int32", "float16", "bfloat16", "float32", "float64")):
        if not all(has_dtype(device, getattr(ember, d)) for d in (dx, dc)):
            continue

        def run(m, dev=None):
            x = m.tensor([[1.0, 2], [4, 3], [9, 5], [16, 8]]).to(getattr(m, dx))
            c = m.tensor([0, 1, 3, 6]).to(getattr(m, dc))
            x, c = (x, c) if dev is None else (x.to(dev), c.to(dev))
            r = m.gradient(x, spacing=(c,), dim=0, edge_order=edge_order)[0]
            return str(r.dtype).split(".")[-1], np.asarray(r.cpu().double().tolist())

        want, got = run(torch), run(ember, device)
        assert got[0] == want[0], (dx, dc, got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=3e-2, atol=3e-2, err_msg=f"{dx} {dc}")


# --------------------------------------------------------------------------- reductions of an empty input
EMPTY_REDUCTIONS = {
    "median": lambda m, x: m.median(x), "nanmedian": lambda m, x: m.nanmedian(x),
    "median_dim": lambda m, x: m.median(x, -1)[0], "amax": lambda m, x: m.amax(x, -1), "sum": lambda m, x: x.sum(0),
    "mean": lambda m, x: x.mean(0), "prod": lambda m, x: x.prod(0), "logsumexp": lambda m, x: m.logsumexp(x, 0),
    "cumsum": lambda m, x: x.cumsum(0), "sort": lambda m, x: m.sort(x, -1)[0], "norm": lambda m, x: x.norm(),
    "kthvalue": lambda m, x: m.kthvalue(x, 1, -1)[0], "topk": lambda m, x: m.topk(x, 0, -1)[0]}


@pytest.mark.parametrize("name", sorted(EMPTY_REDUCTIONS))
def test_reductions_of_empty_input_stay_in_the_graph(name, device):
    """A reduction of an empty input that requires grad gives PyTorch's result: requires_grad (median and nanmedian
    of all elements dropped it), shape, dtype and an empty gradient of the input's shape, or PyTorch's refusal."""
    for shape, dtype in itertools.product(((0, 3), (3, 0)), _have(device, ("float32", "bfloat16"))):
        def run(m, dev=None):
            x = m.zeros(shape, dtype=getattr(m, dtype))
            x = (x if dev is None else x.to(dev)).requires_grad_()
            r = EMPTY_REDUCTIONS[name](m, x)
            if r.requires_grad:
                r.sum().backward()
            return r.requires_grad, tuple(r.shape), str(r.dtype).split(".")[-1], x.grad is None or tuple(x.grad.shape)

        want, got = _outcome(lambda: run(torch)), _outcome(lambda: run(ember, device))
        assert got == want, (shape, dtype, got, want)


# --------------------------------------------------------------------------- dist of two dtypes
@pytest.mark.parametrize("p", [2, 1, 0, float("inf")])
def test_dist_promotes_its_operands_first(p, device):
    """``dist`` is the norm of ``input - other`` after PyTorch's promotion: a uint8 or int64 operand beside a
    floating one computes (ember refused it: 20 of the 64 dtype pairs differed), two integer ones raise norm's
    RuntimeError, a bool one the subtraction's; result dtype and value as PyTorch's."""
    names = _have(device, ("float32", "float64", "float16", "bfloat16", "int64", "uint8", "bool", "complex64"))
    for a, b in itertools.product(names, names):
        def run(m, dev=None):
            x, y = m.tensor([3.0, 1.0, 2.0]).to(getattr(m, a)), m.tensor([1.0, 0.0, 2.0]).to(getattr(m, b))
            x, y = (x, y) if dev is None else (x.to(dev), y.to(dev))
            r = m.dist(x, y, p)
            return str(r.dtype).split(".")[-1], round(float(r), 2)

        want, got = _outcome(lambda: run(torch)), _outcome(lambda: run(ember, device))
        assert got == want, (a, b, got, want)
