"""More classes of disagreement with PyTorch found by the differential fuzzer's long runs (:mod:`ember.testing.fuzz`,
seeds 2-7), each swept over its ops, forms and dtypes against PyTorch 2.13: the same calls compute the same values
and the same ones raise the same exception class."""
# ruff: noqa: B023 - each case's lambdas are called at once, inside the loop iteration that makes them
import itertools

import numpy as np
import pytest

import ember
from test_fuzz_classes import _have, _outcome

torch = pytest.importorskip("torch")


# --------------------------------------------------------------------------- searching boundaries that hold NaN
NAN = float("nan")
BOUNDARIES = [[1.0, NAN, 3.0], [NAN, 0.5, 2.0, NAN], [NAN], [NAN, NAN, NAN], [-1.0, 0.0, 2.0, NAN, NAN],
              [[0.0, NAN, 4.0, 5.0], [NAN, NAN, 1.0, 2.0]]]
VALUES = [[0.5, 2.0, NAN, 4.0], [-2.0, 0.0, 3.0, 1.0]]
SEARCHES = {
    "searchsorted": lambda m, b, v, right: m.searchsorted(b, v, right=right),
    "searchsorted_side": lambda m, b, v, right: m.searchsorted(b, v, side="right" if right else "left"),
    "searchsorted_sorter": lambda m, b, v, right: m.searchsorted(
        b.flip(-1), v, right=right, sorter=(b.shape[-1] - 1 - m.arange(b.shape[-1], device=b.device)).expand(
            b.shape).contiguous()),
    "bucketize": lambda m, b, v, right: m.bucketize(v, b, right=right),
    "bucketize_number": lambda m, b, v, right: m.bucketize(2.0, b, right=right),
}


def _search(m, name, b, v, right, dtype, device=None):
    dt = getattr(m, dtype)
    bt, vt = m.tensor(b, dtype=dt), m.tensor(v, dtype=dt)
    if device is not None:
        bt, vt = bt.to(device), vt.to(device)
    if bt.dim() == 2:
        vt = vt[:, :bt.shape[-1]]
    return SEARCHES[name](m, bt, vt, right).tolist()


def test_search_with_nan_boundaries_as_pytorch(device):
    """searchsorted and bucketize with NaN among the boundaries give PyTorch's insertion points (its binary search
    steps past a NaN, which compares false both ways; NumPy's search sorts NaN last), and bfloat16 boundaries
    search as the float32 values they hold.  Before: 191 of the 224 cases differed."""
    for name, b, right, dtype in itertools.product(SEARCHES, BOUNDARIES, (False, True),
                                                   _have(device, ("float32", "float64", "float16", "bfloat16"))):
        if name.startswith("bucketize") and np.ndim(b) > 1:
            continue  # (bucketize takes 1-d boundaries in both libraries)
        want = _outcome(lambda: _search(torch, name, b, VALUES, right, dtype))
        got = _outcome(lambda: _search(ember, name, b, VALUES, right, dtype, device))
        assert got == want, (name, b, right, dtype, got, want)


def test_search_of_random_rows_with_nan_as_pytorch(device):
    """Random sorted rows with NaN entries (1-d and one row per value row), values equal to boundaries among
    them, both sides: PyTorch's insertion points."""
    rng = np.random.RandomState(0)
    for _ in range(40):
        b = np.sort(rng.randn(2, rng.randint(0, 8)).round(1), axis=-1)
        b[rng.rand(*b.shape) < 0.3] = np.nan
        v = np.concatenate([b[:, :2], rng.randn(2, 4).round(1)], axis=1) if b.shape[1] >= 2 else rng.randn(2, 4)
        for rows, right in itertools.product((b[0], b), (False, True)):
            want = torch.searchsorted(torch.tensor(rows), torch.tensor(v), right=right)
            got = ember.searchsorted(ember.tensor(rows, device=device), ember.tensor(v, device=device), right=right)
            assert got.tolist() == want.tolist(), (rows, v, right)


# --------------------------------------------------------------------------- ldl_solve's argument checks
def _ldl_solve(m, pivots, b_dtype, n, device=None):
    a = m.tensor([[0.0, 1.0, 0.5], [1.0, 0.0, 2.0], [0.5, 2.0, 1.0]])[:n, :n]
    b = m.ones(n, 2, dtype=getattr(m, b_dtype))
    if device is not None:
        a, b = a.to(device), b.to(device)
    ld, piv = m.linalg.ldl_factor(a)
    if pivots is not None:
        piv = m.tensor(pivots, dtype=m.int32, device=piv.device)[:n]
    return m.linalg.ldl_solve(ld, piv, b).tolist()


def test_ldl_solve_checks_as_pytorch(device):
    """ldl_solve refuses a right-hand side of another dtype than LD and pivots outside 1..n in absolute value
    (RuntimeError, as PyTorch; ember promoted B and read pivot 0 as a 2x2 block), and solves 0x0 systems (ember's
    kernel failed on them).  Before: 13 of the 27 cases differed."""
    pivot_forms = [None, [0, 0, 0], [1, 1, 1], [4, 4, 4], [-4, -4, -4], [-1, -1, 3], [-2, -2, 3], [2, 1, 0]]
    for pivots, b_dtype, n in itertools.product(pivot_forms, ("float32", "float64", "int64"), (0, 3)):
        if n == 0 and pivots is not None:
            continue
        want = _outcome(lambda: _ldl_solve(torch, pivots, b_dtype, n))
        got = _outcome(lambda: _ldl_solve(ember, pivots, b_dtype, n, device))
        if want[0] == "ok" and got[0] == "ok":
            np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
        else:
            assert got == want, (pivots, b_dtype, n, got, want)


def _search_pair(m, name, b_dtype, v_dtype, empty, device=None):
    b = m.tensor([0.0, 1.0, 2.0, 3.0], device=device).to(getattr(m, b_dtype))
    v = m.tensor([[0.5, 2.0], [3.0, 1.0]], device=device).to(getattr(m, v_dtype))[:, :0 if empty else 2]
    return (m.bucketize(v, b) if name == "bucketize" else m.searchsorted(b, v)).tolist()


def test_search_dtype_pairs_as_pytorch(device):
    """searchsorted and bucketize over pairs of boundary and value dtypes, values empty or not: complex or bool on
    either side raises PyTorch's NotImplementedError unless the values are empty, whose empty result PyTorch gives
    before its dtype check (ember compared complex values when only the values were complex, or only the
    boundaries in bucketize, and refused empty bool values).  Before: 24 of the 144 cases differed."""
    names = _have(device, ("float32", "float16", "int64", "uint8", "bool", "complex64"))
    for name, b_dtype, v_dtype, empty in itertools.product(("searchsorted", "bucketize"), names, names, (0, 1)):
        want = _outcome(lambda: _search_pair(torch, name, b_dtype, v_dtype, empty))
        got = _outcome(lambda: _search_pair(ember, name, b_dtype, v_dtype, empty, device))
        assert got == want, (name, b_dtype, v_dtype, empty, got, want)


# --------------------------------------------------------------------------- lerp with numbers
LERP_FORMS = {"function": lambda m, x, e, w: m.lerp(x, e, w), "method": lambda m, x, e, w: x.lerp(e, w),
              "inplace": lambda m, x, e, w: x.clone().lerp_(e, w) if isinstance(x, m.Tensor) else x.lerp_(e, w)}


def test_lerp_takes_numbers_only_for_the_weight_as_pytorch(device):
    """lerp's input and end must be tensors in every form (PyTorch's overloads take a number only for the weight:
    TypeError otherwise; ember computed with a number end).  Before: 8 of the 36 cases differed."""
    def make(m, kind, dev=None):
        t = m.tensor([[0.0, 1.0, 2.0]], device=dev)
        return {"tensor": t, "number": 2.0, "0d": m.tensor(0.25, device=dev)}[kind]

    kinds = ("tensor", "number", "0d")
    for form, xk, ek, wk in itertools.product(LERP_FORMS, ("tensor", "number"), kinds, ("number", "0d")):
        want = _outcome(lambda: LERP_FORMS[form](torch, make(torch, xk), make(torch, ek), make(torch, wk)).tolist())
        got = _outcome(lambda: LERP_FORMS[form](ember, make(ember, xk, device), make(ember, ek, device),
                                                make(ember, wk, device)).tolist())
        if form != "function" and xk == "number":  # (a float has no lerp method in either library)
            assert got == want == ("AttributeError",)
            continue
        assert got == want, (form, xk, ek, wk, got, want)


# --------------------------------------------------------------------------- adaptive pooling's output size
def _adaptive(m, kind, d, size, device=None):
    x = m.ones((1, 2) + (4,) * d, device=device)
    return tuple(getattr(m.nn.functional, f"adaptive_{kind}_pool{d}d")(x, size).shape)


def test_adaptive_pooling_refuses_negative_sizes_as_pytorch(device):
    """A negative output size (every entry, or one of a tuple) raises PyTorch's RuntimeError in each adaptive
    pooling (ember's average pools returned an empty result).  Before: 3 of the 34 cases differed."""
    for kind, d, size in itertools.product(("avg", "max"), (1, 2, 3), ("-5", "(-1,)", "(2, -1)", "1", "3", "None")):
        s = eval(size)  # noqa: S307 - the sizes of the table above
        if isinstance(s, tuple):
            s = (s + (2,) * d)[:d]
        elif s is None:  # (the 1-d pools take no None in either library)
            if d == 1:
                continue
            s = (None,) + (2,) * (d - 1)
        want = _outcome(lambda: _adaptive(torch, kind, d, s))
        got = _outcome(lambda: _adaptive(ember, kind, d, s, device))
        assert got == want, (kind, d, size, got, want)


# --------------------------------------------------------------------------- cartesian_prod of two dtypes
def test_cartesian_prod_refuses_two_dtypes_as_pytorch(device):
    """cartesian_prod of tensors of different dtypes raises meshgrid's RuntimeError, as in PyTorch (ember promoted
    them); one dtype computes.  Before: 20 of the 25 pairs differed."""
    names = _have(device, ("float32", "float64", "int64", "bool", "float16"))
    for a, b in itertools.product(names, names):
        want = _outcome(lambda: torch.cartesian_prod(torch.tensor([1, 0]).to(getattr(torch, a)),
                                                     torch.tensor([2, 1, 0]).to(getattr(torch, b))).tolist())
        got = _outcome(lambda: ember.cartesian_prod(ember.tensor([1, 0], device=device).to(getattr(ember, a)),
                                                    ember.tensor([2, 1, 0], device=device).to(getattr(ember, b))
                                                    ).tolist())
        assert got == want, (a, b, got, want)


# --------------------------------------------------------------------------- histogramdd's range
def test_histogramdd_refuses_a_non_finite_range_as_pytorch(device):
    """histogramdd raises PyTorch's RuntimeError where a dimension's range (given, or the data's minimum and
    maximum) is not finite, and computes where a finite given range leaves the inf outside (ember binned over an
    infinite range).  Before: 6 of the 12 cases differed."""
    inf, nan = float("inf"), float("nan")
    for bad, rng, dtype in itertools.product((inf, -inf, nan), (None, [0.0, 1.0, 0.0, 3.0]), ("float32", "float64")):
        def hist(m, dev=None):
            x = m.tensor([[0.0, 1.0], [bad, 2.0], [0.5, 2.5]], dtype=getattr(m, dtype), device=dev)
            return m.histogramdd(x, bins=[2, 3], range=rng).hist.tolist()
        assert _outcome(lambda: hist(ember, device)) == _outcome(lambda: hist(torch)), (bad, rng, dtype)


# --------------------------------------------------------------------------- pdist of fewer than two rows
def test_pdist_checks_its_dtype_only_with_a_pair_as_pytorch(device):
    """pdist of half-precision input gives the empty result for fewer than two rows (PyTorch's kernel and its
    dtype check run only when there is a pair) and raises NotImplementedError otherwise.  Before: 2 of the 12
    cases differed."""
    for rows, dtype in itertools.product((0, 1, 3), _have(device, ("float16", "bfloat16", "float32", "float64"))):
        def dist(m, dev=None):
            return m.pdist(m.ones(rows, 3, device=dev).to(getattr(m, dtype))).tolist()
        assert _outcome(lambda: dist(ember, device)) == _outcome(lambda: dist(torch)), (rows, dtype)
