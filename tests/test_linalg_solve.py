"""The solves, factorizations and legacy names of ember.ops.linalg_solve against PyTorch on every backend, what
rows cannot say: namespaces, invariants of decompositions that are unique only up to signs, ``lobpcg``, errors and
``out=`` (the rows, every check, run in tests/test_kit.py with ember.testing.rows_linalg)."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close, to_numpy
from ember.testing.case import bad_input_test

# PyTorch warns once per process on its deprecated forms; the rows call them on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")


def _data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _pair(torch, data, device, dtype="float64", grad=False):
    e = ember.tensor(data, dtype=getattr(ember, dtype), device=device, requires_grad=grad)
    t = torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=grad)
    return e, t


def _close(e, t, **kw):
    assert_close(to_numpy(e), t.detach().numpy(), check_dtype=False, **kw)


# --------------------------------------------------------------------------- namespaces
def test_every_torch_linalg_name(torch):
    missing = [n for n in dir(torch.linalg) if not n.startswith("_") and not hasattr(ember.linalg, n)]
    assert missing == []


TOP = ["det", "logdet", "slogdet", "inverse", "svd", "qr", "solve", "matrix_power", "matrix_exp", "pinverse", "lstsq",
       "lu", "lu_solve", "lu_unpack", "cholesky", "cholesky_solve", "cholesky_inverse", "triangular_solve", "geqrf",
       "orgqr", "ormqr", "matrix_rank", "nuclear_norm", "frobenius_norm", "eig", "symeig", "pca_lowrank",
       "svd_lowrank", "chain_matmul"]


@pytest.mark.parametrize("name", TOP)
def test_top_level_and_method_names(torch, name):
    assert hasattr(ember, name) == hasattr(torch, name), name
    assert hasattr(ember.Tensor, name) == hasattr(torch.Tensor, name), name


@pytest.mark.parametrize("call", [
    lambda m, a: m.solve(a, a), lambda m, a: m.lstsq(a, a), lambda m, a: m.eig(a), lambda m, a: m.symeig(a),
    lambda m, a: m.matrix_rank(a), lambda m, a: a.solve(a), lambda m, a: a.lstsq(a), lambda m, a: a.eig(),
    lambda m, a: a.symeig()])
def test_names_removed_in_1_9_raise_as_in_pytorch(torch, device, call):
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed") as got:
        call(ember, ember.eye(2, device=device))
    with pytest.raises(RuntimeError) as want:
        call(torch, torch.eye(2))
    assert str(got.value) == str(want.value)


def test_result_types_name_their_fields(device):
    a = ember.tensor(_data(3, 3) + 3 * np.eye(3), device=device)
    assert ember.linalg.lu_factor(a)._fields == ("LU", "pivots")
    assert ember.linalg.lu_factor_ex(a)._fields == ("LU", "pivots", "info")
    assert ember.linalg.lu(a)._fields == ("P", "L", "U")
    assert ember.lu_unpack(*ember.linalg.lu_factor(a))._fields == ("P", "L", "U")
    assert ember.linalg.inv_ex(a)._fields == ("inverse", "info")
    assert ember.linalg.solve_ex(a, a)._fields == ("result", "info")
    assert ember.linalg.lstsq(a, a)._fields == ("solution", "residuals", "rank", "singular_values")
    assert ember.triangular_solve(a, a)._fields == ("solution", "cloned_coefficient")
    assert ember.geqrf(a)._fields == ("a", "tau")
    assert type(ember.lu(a)) is tuple and len(ember.lu(a)) == 2
    assert ember.lu(a, get_infos=True)._fields == ("LU", "pivots", "info")


# --------------------------------------------------------------------------- singular input: info and errors
SINGULAR = np.stack([np.eye(3), np.diag([1.0, 0.0, 2.0]), np.zeros((3, 3)), [[1.0, 2, 3], [2, 4, 6], [1, 0, 1]]])


def test_lu_factor_ex_info_matches_pytorch(torch, device):
    e, t = _pair(torch, SINGULAR, device)
    lu, pivots, info = ember.linalg.lu_factor_ex(e)
    tlu, tpivots, tinfo = torch.linalg.lu_factor_ex(t)
    assert info.dtype is ember.int32 and pivots.dtype is ember.int32
    assert info.tolist() == tinfo.tolist()
    assert pivots.tolist() == tpivots.tolist()
    _close(lu, tlu)


def test_lu_factor_raises_on_a_zero_pivot(torch, device):
    e, t = _pair(torch, SINGULAR, device)
    with pytest.raises(ember.linalg.LinAlgError) as got:
        ember.linalg.lu_factor(e)
    with pytest.raises(RuntimeError) as want:
        torch.linalg.lu_factor(t)
    assert str(got.value) == str(want.value)
    with pytest.raises(ember.linalg.LinAlgError, match=r"U\[2,2\] is zero"):
        ember.linalg.lu_factor_ex(e[1], check_errors=True)
    with pytest.raises(ember.linalg.LinAlgError, match=r"Batch element 1"):
        ember.lu(e)
    assert ember.lu(e, get_infos=True).info.tolist() == torch.linalg.lu_factor_ex(t).info.tolist()


@pytest.mark.parametrize("op", ["inv_ex", "solve_ex"])
def test_ex_forms_report_singular_matrices(torch, device, op):
    e, t = _pair(torch, SINGULAR, device)
    args = (e,) if op == "inv_ex" else (e, ember.ones(4, 3, 1, dtype=ember.float64, device=device))
    targs = (t,) if op == "inv_ex" else (t, torch.ones(4, 3, 1, dtype=torch.float64))
    res, info = getattr(ember.linalg, op)(*args)
    tres, tinfo = getattr(torch.linalg, op)(*targs)
    assert info.tolist() == tinfo.tolist()
    _close(res[0], tres[0])
    assert not np.isfinite(to_numpy(res[1:3])).all()
    with pytest.raises(ember.linalg.LinAlgError, match=f"linalg.{op}: \\(Batch element 1\\)"):
        getattr(ember.linalg, op)(*args, check_errors=True)
    with pytest.raises(RuntimeError):
        getattr(torch.linalg, op)(*targs, check_errors=True)


def test_solve_triangular_with_a_zero_on_the_diagonal_does_not_raise(torch, device):
    e, t = _pair(torch, np.diag([1.0, 0.0, 2.0]), device)
    b, tb = _pair(torch, np.ones((3, 1)), device)
    got = to_numpy(ember.linalg.solve_triangular(e, b, upper=True))
    want = torch.linalg.solve_triangular(t, tb, upper=True).numpy()
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    assert got[2, 0] == want[2, 0] == 0.5


# --------------------------------------------------------------------------- decompositions unique up to sign
def test_eig(torch, device):
    data = _data(2, 4, 4)
    e, t = _pair(torch, data, device)
    w, v = ember.linalg.eig(e)
    tw, tv = torch.linalg.eig(t)
    assert w.dtype is ember.complex128 and v.dtype is ember.complex128
    np.testing.assert_allclose(to_numpy(w), tw.numpy(), rtol=1e-7, atol=1e-9)
    wn, vn = to_numpy(w), to_numpy(v)
    np.testing.assert_allclose(data @ vn, vn * wn[..., None, :], atol=1e-9)        # A V = V diag(w)
    np.testing.assert_allclose(np.abs(vn), np.abs(tv.numpy()), atol=1e-9)           # up to a phase per column
    np.testing.assert_allclose(to_numpy(ember.linalg.eigvals(e)), torch.linalg.eigvals(t).numpy(), atol=1e-9)
    assert ember.linalg.eig(e.float()).eigenvalues.dtype is ember.complex64


def test_svd_and_pca_lowrank(torch, device):
    low = _data(6, 2) @ _data(2, 5, seed=1)  # rank 2: the randomized SVD is exact
    e, t = _pair(torch, low, device)
    u, s, v = ember.svd_lowrank(e, q=3)
    tu, ts, tv = torch.svd_lowrank(t, q=3)
    assert (u.shape, s.shape, v.shape) == (tu.shape, ts.shape, tv.shape)
    _close(s[:2], ts[:2])
    _close((u * s.unsqueeze(-2)) @ v.mT, t)
    u, s, v = ember.pca_lowrank(e.mT, q=2)
    tu, ts, tv = torch.pca_lowrank(t.mT, q=2)
    _close(s, ts)
    with pytest.raises(ValueError, match="must be non-negative integer and not greater"):
        ember.pca_lowrank(e, q=9)


def test_lu_reconstructs_batched_rectangular_input(device):
    for shape in [(2, 5, 3), (3, 5), (4, 4)]:
        a = ember.tensor(_data(*shape), device=device)
        p, lo, up = ember.linalg.lu(a)
        assert_close(to_numpy(p @ lo @ up), to_numpy(a))
        k = min(shape[-2:])
        assert lo.shape[-2:] == (shape[-2], k) and up.shape[-2:] == (k, shape[-1])


def test_geqrf_carries_no_gradient(device):
    a = ember.tensor(_data(3, 3), device=device, requires_grad=True)
    r, tau = ember.geqrf(a)
    assert not r.requires_grad and not tau.requires_grad


def test_qr_complete_tall_has_no_derivative(device):
    a = ember.tensor(_data(4, 3), dtype=ember.float64, device=device, requires_grad=True)
    q, r = ember.linalg.qr(a, "complete")
    with pytest.raises(RuntimeError, match="mode='complete' when nrows > ncols"):
        (q.sum() + r.sum()).backward()


def test_wide_qr_second_order(device):
    a = ember.tensor(_data(2, 3, 5), dtype=ember.float64, device=device, requires_grad=True)
    assert gradgradcheck(lambda x: tuple(ember.linalg.qr(x)), (a,))


def test_matrix_exp_of_a_batch_with_mixed_norms(torch, device):
    data = np.stack([_data(3, 3) * 1e-3, _data(3, 3) * 10, np.zeros((3, 3))])
    e, t = _pair(torch, data, device)
    _close(ember.linalg.matrix_exp(e), torch.linalg.matrix_exp(t), rtol=1e-10, atol=1e-12)
    a = ember.tensor(_data(2, 3, 3) * 2, dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(ember.linalg.matrix_exp, (a,))


def test_cholesky_inverse_gradient_of_the_factor(device):
    lo = ember.tensor(np.tril(_data(3, 3)) + 3 * np.eye(3), dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x: ember.cholesky_inverse(x), (lo,))  # the upper triangle is never read: gradient 0
    x = lo.detach().clone().requires_grad_(True)
    ember.cholesky_inverse(x).sum().backward()
    assert not np.triu(to_numpy(x.grad), 1).any()


# --------------------------------------------------------------------------- out=
def test_out_arguments(torch, device):
    a, ta = _pair(torch, _data(3, 3) + 3 * np.eye(3), device)
    b, tb = _pair(torch, _data(3, 2, seed=1), device)
    out = ember.empty(0, dtype=ember.float64, device=device)
    assert ember.linalg.solve_triangular(a, b, upper=True, out=out) is out
    _close(out, torch.linalg.solve_triangular(ta, tb, upper=True))
    lu_out = (ember.empty(0, dtype=ember.float64, device=device), ember.empty(0, dtype=ember.int32, device=device))
    res = ember.linalg.lu_factor(a, out=lu_out)
    assert res.LU is lu_out[0] and res.pivots is lu_out[1]
    _close(lu_out[0], torch.linalg.lu_factor(ta).LU)
    out = ember.empty(0, dtype=ember.float64, device=device)
    assert ember.cholesky_inverse(a.tril(), out=out) is out
    _close(out, torch.cholesky_inverse(ta.tril()))
    out = ember.empty(0, dtype=ember.float64, device=device)
    assert ember.linalg.householder_product(a, b[:, 0], out=out) is out
    _close(out, torch.linalg.householder_product(ta, tb[:, 0]))


@pytest.mark.filterwarnings("ignore:torch.qr is deprecated")
def test_decompositions_write_their_out_tuples(torch, device):
    """Every several-result decomposition writes each result into its tensor of ``out`` (resized from empty)
    and returns them; the values are PyTorch's (up to the signs a decomposition leaves free)."""
    a, ta = _pair(torch, _data(4, 3, seed=2), device)
    sq, tsq = _pair(torch, _data(3, 3, seed=3) @ _data(3, 3, seed=3).T + 3 * np.eye(3), device)
    calls = [("linalg.qr", a, ta, 2, lambda m, x, o: m.linalg.qr(x, out=o)),
             ("qr", a, ta, 2, lambda m, x, o: m.qr(x, out=o)),
             ("linalg.svd", a, ta, 3, lambda m, x, o: m.linalg.svd(x, full_matrices=False, out=o)),
             ("svd", a, ta, 3, lambda m, x, o: m.svd(x, out=o)),
             ("slogdet", sq, tsq, 2, lambda m, x, o: m.slogdet(x, out=o)),
             ("linalg.eigh", sq, tsq, 2, lambda m, x, o: m.linalg.eigh(x, out=o)),
             ("linalg.cholesky_ex", sq, tsq, 2, lambda m, x, o: m.linalg.cholesky_ex(x, out=o))]
    for name, x, tx, n, call in calls:
        dts = [ember.int32 if name.endswith("cholesky_ex") and i == 1 else ember.float64 for i in range(n)]
        outs = tuple(ember.empty(0, dtype=dt, device=device) for dt in dts)
        got = call(ember, x, outs)
        assert all(g is o for g, o in zip(got, outs)), name
        want = call(torch, tx, None)
        for o, w in zip(outs, want):
            _close(o.abs(), w.abs(), msg=name)
    with pytest.raises(TypeError, match="tuple of 2 Tensors"):
        ember.linalg.qr(a, out=ember.empty(0, device=device))


def test_pinv_tolerances(torch, device):
    """Singular values at or below ``max(atol, rtol * the largest)`` are dropped: ``atol`` and ``rtol`` as numbers
    or per-matrix tensors, ``rtol`` defaulting to 0 where a positive ``atol`` is given."""
    a, ta = _pair(torch, _data(2, 4, 3, seed=4), device)
    s = torch.linalg.svdvals(ta)
    mid = float(s[:, 1].mean())  # between singular values: some are dropped
    for kw in ({}, {"atol": mid}, {"atol": 100.0}, {"atol": mid, "rtol": 0.9}, {"atol": -1.0}, {"rtol": 0.7},
               {"hermitian": False, "atol": mid}):
        _close(ember.linalg.pinv(a, **kw), torch.linalg.pinv(ta, **kw), msg=str(kw))
    atol, rtol = np.array([0.0, mid]), np.array([0.6, 0.0])
    _close(ember.linalg.pinv(a, atol=ember.tensor(atol, device=device)), torch.linalg.pinv(ta, atol=torch.tensor(atol)))
    _close(ember.linalg.pinv(a, atol=ember.tensor(atol, device=device), rtol=ember.tensor(rtol, device=device)),
           torch.linalg.pinv(ta, atol=torch.tensor(atol), rtol=torch.tensor(rtol)))
    h, th = _pair(torch, _data(3, 3, seed=5) @ _data(3, 3, seed=5).T, device)
    _close(ember.linalg.pinv(h, hermitian=True, atol=1.0), torch.linalg.pinv(th, hermitian=True, atol=1.0))


# --------------------------------------------------------------------------- bad input
def _t(m, d, data, dtype="float32"):
    return m.tensor(data, dtype=getattr(m, dtype), device=d if m.__name__ == "ember" else "cpu")


def _z(m, d, *shape):
    return m.zeros(*shape, device=d if m.__name__ == "ember" else "cpu")


BAD = [
    ("solve_triangular_nonsquare", lambda m, d: m.linalg.solve_triangular(_z(m, d, 2, 3), _z(m, d, 2, 1), upper=True),
     RuntimeError, "square"),
    ("solve_triangular_shapes", lambda m, d: m.linalg.solve_triangular(_z(m, d, 2, 2), _z(m, d, 3, 1), upper=True),
     RuntimeError, "Incompatible shapes"),
    ("solve_triangular_1d", lambda m, d: m.linalg.solve_triangular(_z(m, d, 2, 2), _z(m, d, 2), upper=True),
     RuntimeError, "at least 2 dimensions"),
    ("lu_factor_int", lambda m, d: m.linalg.lu_factor(_z(m, d, 2, 2).long()), NotImplementedError,
     "not implemented for 'Long'"),
    ("lu_factor_1d", lambda m, d: m.linalg.lu_factor(_z(m, d, 3)), RuntimeError, "at least 2 dimensions"),
    ("lu_no_pivot", lambda m, d: m.linalg.lu(_z(m, d, 2, 2), pivot=False), RuntimeError,
     "without pivoting is not implemented"),
    ("lu_solve_pivots_dtype", lambda m, d: m.linalg.lu_solve(_z(m, d, 2, 2), m.ones(2, dtype=m.int64, device=d),
                                                             _z(m, d, 2, 1)),
     RuntimeError, "int32"),
    ("lu_solve_shapes", lambda m, d: m.linalg.lu_solve(*m.linalg.lu_factor(_t(m, d, [[1.0, 0], [0, 1]])),
                                                       _z(m, d, 3, 1)), RuntimeError, "Incompatible shapes"),
    ("matrix_exp_nonsquare", lambda m, d: m.linalg.matrix_exp(_z(m, d, 2, 3)), RuntimeError, "square"),
    ("lstsq_rows", lambda m, d: m.linalg.lstsq(_z(m, d, 3, 2), _z(m, d, 4, 1)), RuntimeError, "size\\(-2\\)"),
    ("lstsq_driver", lambda m, d: m.linalg.lstsq(_z(m, d, 3, 2), _z(m, d, 3, 1), driver="nope"), RuntimeError,
     "driver"),
    ("tensorinv_shape", lambda m, d: m.linalg.tensorinv(_z(m, d, 2, 3), ind=1), RuntimeError, "prod"),
    ("tensorinv_ind", lambda m, d: m.linalg.tensorinv(_z(m, d, 2, 2), ind=0), RuntimeError, "strictly positive"),
    ("householder_wide", lambda m, d: m.linalg.householder_product(_z(m, d, 2, 3), _z(m, d, 2)), RuntimeError,
     "greater than or equal"),
    ("householder_tau", lambda m, d: m.linalg.householder_product(_z(m, d, 3, 2), _z(m, d, 3)), RuntimeError,
     "tau"),
    ("cholesky_solve_shapes", lambda m, d: m.cholesky_solve(_z(m, d, 3, 1), _z(m, d, 2, 2)), RuntimeError,
     "Incompatible"),
    ("cond_norm", lambda m, d: m.linalg.cond(_t(m, d, [[1.0, 0], [0, 1]]), 3), RuntimeError, "norm type"),
    ("cond_nonsquare_fro", lambda m, d: m.linalg.cond(_z(m, d, 2, 3), "fro"), RuntimeError, "square"),
    ("eig_nonsquare", lambda m, d: m.linalg.eig(_z(m, d, 2, 3)), RuntimeError, "square"),
    ("frobenius_norm_nodim", lambda m, d: m.frobenius_norm(_z(m, d, 2, 3)), TypeError, "dim"),
]

test_bad_input = bad_input_test(BAD)


# --------------------------------------------------------------------------- lobpcg
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("generalized", [False, True])
def test_lobpcg_matches_pytorchs_eigenvalues(device, torch, largest, generalized):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values to iterate on")
    rng = np.random.default_rng(1)
    m = rng.standard_normal((24, 24))
    a = m @ m.T
    b = None
    if generalized:
        mb = rng.standard_normal((24, 24))
        b = mb @ mb.T + 24 * np.eye(24)
    E, X = ember.lobpcg(ember.tensor(a, device=device), k=3, B=None if b is None else ember.tensor(b, device=device),
                        largest=largest)
    Et, _ = torch.lobpcg(torch.tensor(a), k=3, B=None if b is None else torch.tensor(b), largest=largest)
    np.testing.assert_allclose(to_numpy(E), Et.numpy(), rtol=1e-6)
    bx = to_numpy(X) if b is None else b @ to_numpy(X)
    np.testing.assert_allclose(a @ to_numpy(X), bx * to_numpy(E), atol=1e-5 * np.abs(a).max())


def test_lobpcg_eigenvalue_gradient_and_errors(device, torch):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values to iterate on")
    d = np.diag(np.arange(1.0, 13.0))
    A = ember.tensor(d, device=device, requires_grad=True)
    E, X = ember.lobpcg(A, k=2)
    np.testing.assert_allclose(to_numpy(E), [12.0, 11.0])
    E.sum().backward()
    expected = np.zeros((12, 12))
    expected[10, 10] = expected[11, 11] = 1.0
    np.testing.assert_allclose(to_numpy(A.grad), expected, atol=1e-6)
    with pytest.raises(ValueError, match="3 x the number"):
        ember.lobpcg(ember.eye(5, dtype=ember.float64, device=device), k=2)
    with pytest.raises(AssertionError, match="square"):
        ember.lobpcg(ember.zeros(6, 5, dtype=ember.float64, device=device), k=1)
    with pytest.raises(ValueError, match="method"):
        ember.lobpcg(ember.eye(9, dtype=ember.float64, device=device), k=1, method="fast")
