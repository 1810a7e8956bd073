"""Complex linear algebra against PyTorch on every backend: the values of each op on complex128 input, the
gradients of a real loss of its outputs (PyTorch's conjugate Wirtinger convention), complex64 values, float64
gradcheck over real and imaginary parts, PyTorch's refusal of losses that depend on the free phases of
eigen- and singular vectors, LAPACK's geqrf and LDL factorization (complex symmetric; the Hermitian one refuses).

Decompositions whose vectors carry a free phase (``eigh``, ``svd``, ``eig``) are compared through quantities that
do not depend on it, as PyTorch's own tests do: eigenvalues, singular values, ``|V|^2``, ``U[:, :k] Vh[:k]`` and
projectors ``v v^H``.  QR and LU are LAPACK's exact conventions (real ``R`` diagonal, ``|re| + |im|`` pivots),
so their factors are compared as they are.
"""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close, to_numpy

torch = pytest.importorskip("torch")

# PyTorch warns once per process on its deprecated forms (triangular_solve); the cases call them on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")

_RNG = np.random.default_rng(42)


def c(*shape):
    """Standard complex normal data."""
    return _RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)


def hpd(n, batch=()):
    """A well-conditioned Hermitian positive-definite matrix (batch)."""
    a = c(*batch, n, n)
    return a @ np.swapaxes(a.conj(), -1, -2) + n * np.eye(n)


def upper(n):
    return np.triu(c(n, n)) + 3 * np.eye(n)


A, A2, B = c(4, 4), c(2, 3, 3), c(4, 2)
TALL, WIDE, H = c(5, 3), c(3, 5), hpd(4)
W4 = _RNG.random((4, 4))  # weights that make |V|^2 losses see every entry


def weighted(m, v):
    """``|V|^2`` weighted entry by entry: free of the phases of ``V``'s columns."""
    return v.abs() ** 2 * m.tensor(W4, dtype=v.real.dtype, device=v.device)


def projector(v, k=1):
    """``V[:, :k] V[:, :k]^H``: independent of the phases of ``V``'s columns."""
    return v[..., :k] @ v[..., :k].mH


# name: (inputs, call(m, *tensors) -> tuple of outputs free of gauge choices)
CASES = {
    "matmul": ([A, B], lambda m, a, b: (a @ b,)),
    "inv": ([A], lambda m, a: (m.linalg.inv(a),)),
    "inv_batch": ([A2], lambda m, a: (m.linalg.inv(a),)),
    "inv_ex": ([A], lambda m, a: (m.linalg.inv_ex(a).inverse,)),
    "det": ([A2], lambda m, a: (m.linalg.det(a),)),
    "slogdet": ([A], lambda m, a: tuple(m.linalg.slogdet(a))),
    "logdet": ([H], lambda m, a: (m.logdet(a),)),
    "solve": ([A, B], lambda m, a, b: (m.linalg.solve(a, b),)),
    "solve_right": ([A, B], lambda m, a, b: (m.linalg.solve(a, b.mT, left=False),)),
    "solve_ex": ([A, B], lambda m, a, b: (m.linalg.solve_ex(a, b).result,)),
    "tensorsolve": ([c(2, 3, 6), c(2, 3)], lambda m, a, b: (m.linalg.tensorsolve(a, b),)),
    "tensorinv": ([c(4, 2, 2)], lambda m, a: (m.linalg.tensorinv(a, ind=1),)),
    "matrix_power": ([A], lambda m, a: (m.linalg.matrix_power(a, -2),)),
    "cholesky": ([H], lambda m, a: (m.linalg.cholesky(a),)),
    "cholesky_upper": ([H], lambda m, a: (m.linalg.cholesky(a, upper=True),)),
    "cholesky_ex": ([hpd(3, (2,))], lambda m, a: (m.linalg.cholesky_ex(a).L,)),
    "cholesky_solve": ([B, H], lambda m, b, a: (m.cholesky_solve(b, m.linalg.cholesky(a)),)),
    "cholesky_solve_upper": ([B, H], lambda m, b, a: (m.cholesky_solve(b, m.linalg.cholesky(a, upper=True), True),)),
    "cholesky_inverse": ([H], lambda m, a: (m.cholesky_inverse(m.linalg.cholesky(a)),)),
    "qr": ([A], lambda m, a: tuple(m.linalg.qr(a))),
    "qr_tall": ([TALL], lambda m, a: tuple(m.linalg.qr(a))),
    "qr_wide": ([WIDE], lambda m, a: tuple(m.linalg.qr(a))),
    "eigh": ([H], lambda m, a: (lambda w, v: (w, weighted(m, v), projector(v, 2)))(*m.linalg.eigh(a))),
    "eigh_upper": ([H], lambda m, a: (lambda w, v: (w, projector(v)))(*m.linalg.eigh(a, UPLO="U"))),
    "eigvalsh": ([H], lambda m, a: (m.linalg.eigvalsh(a),)),
    "svd": ([A], lambda m, a: (lambda u, s, vh: (s, weighted(m, u), u[:, :2] @ vh[:2]))(
        *m.linalg.svd(a))),
    "svd_tall": ([TALL], lambda m, a: (lambda u, s, vh: (s, u @ vh, u[:, :1] @ vh[:1]))(
        *m.linalg.svd(a, full_matrices=False))),
    "svd_wide": ([WIDE], lambda m, a: (lambda u, s, vh: (s, u @ vh, u[:, :1] @ vh[:1]))(
        *m.linalg.svd(a, full_matrices=False))),
    "svdvals": ([TALL], lambda m, a: (m.linalg.svdvals(a),)),
    "eig": ([A], lambda m, a: (lambda w, v: (w, weighted(m, v)))(*m.linalg.eig(a))),
    "eig_of_real": ([A.real], lambda m, a: (lambda w, v: (w, weighted(m, v)))(*m.linalg.eig(a))),
    "eigvals": ([A2], lambda m, a: (m.linalg.eigvals(a),)),
    "pinv": ([TALL], lambda m, a: (m.linalg.pinv(a),)),
    "pinv_wide": ([WIDE], lambda m, a: (m.linalg.pinv(a),)),
    "pinv_hermitian": ([H], lambda m, a: (m.linalg.pinv(a, hermitian=True),)),
    "lstsq": ([TALL, c(5, 2)], lambda m, a, b: (m.linalg.lstsq(a, b).solution,)),
    "matrix_exp": ([A * 0.5], lambda m, a: (m.linalg.matrix_exp(a),)),
    "lu": ([A], lambda m, a: tuple(m.linalg.lu(a))),
    "lu_tall": ([TALL], lambda m, a: tuple(m.linalg.lu(a))),
    "lu_wide": ([WIDE], lambda m, a: tuple(m.linalg.lu(a))),
    "lu_factor": ([A2], lambda m, a: tuple(m.linalg.lu_factor(a))),
    "lu_unpack": ([A], lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a)))),
    "lu_solve": ([A, B], lambda m, a, b: (m.linalg.lu_solve(*m.linalg.lu_factor(a), b),)),
    "lu_solve_adjoint": ([A, B], lambda m, a, b: (m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True),)),
    "lu_solve_right": ([A, B], lambda m, a, b: (m.linalg.lu_solve(*m.linalg.lu_factor(a), b.mT, left=False),)),
    "lu_solve_right_adjoint": ([A, B], lambda m, a, b: (
        m.linalg.lu_solve(*m.linalg.lu_factor(a), b.mT, left=False, adjoint=True),)),
    "solve_triangular": ([upper(4), B], lambda m, a, b: (m.linalg.solve_triangular(a, b, upper=True),)),
    "solve_triangular_right_unit": ([upper(4), B], lambda m, a, b: (
        m.linalg.solve_triangular(a.mT, b.mT, upper=False, left=False, unitriangular=True),)),
    "triangular_solve": ([B, upper(4)], lambda m, b, a: (m.triangular_solve(b, a).solution,)),
    "triangular_solve_transpose": ([B, upper(4)], lambda m, b, a: (m.triangular_solve(b, a, transpose=True).solution,)),
    "householder_product": ([TALL, c(3) * 0.5], lambda m, a, t: (m.linalg.householder_product(a, t),)),
    "ormqr": ([TALL, c(3) * 0.5, c(5, 2)], lambda m, a, t, o: (m.ormqr(a, t, o), m.ormqr(a, t, o.mT, False, True))),
    "vector_norm": ([A], lambda m, a: (m.linalg.vector_norm(a, 3), m.linalg.vector_norm(a, dim=0))),
    "matrix_norm": ([A], lambda m, a: tuple(m.linalg.matrix_norm(a, o) for o in ("fro", "nuc", 2, -2, 1, -1))),
    "norm": ([A], lambda m, a: (m.linalg.norm(a), m.linalg.norm(a, 2, (0, 1)))),
    "cond": ([A], lambda m, a: (m.linalg.cond(a), m.linalg.cond(a, -2))),
    "matrix_rank": ([A, H], lambda m, a, h: (m.linalg.matrix_rank(a), m.linalg.matrix_rank(h, hermitian=True))),
    "cross": ([c(2, 3), c(2, 3)], lambda m, a, b: (m.linalg.cross(a, b),)),
    "vecdot": ([c(2, 3), c(2, 3)], lambda m, a, b: (m.linalg.vecdot(a, b),)),
    "multi_dot": ([A, B], lambda m, a, b: (m.linalg.multi_dot([a, a, b]),)),
}


def _loss(outs, weights):
    """A real loss that reads the real and imaginary parts of every floating output with its own weight."""
    total = 0
    for o, (wr, wi) in zip(outs, weights):
        if not (o.is_floating_point() or o.is_complex()):
            continue
        if o.is_complex():
            total = total + (o.real * wr).sum() + (o.imag * wi).sum()
        else:
            total = total + (o * wr).sum()
    return total


def _run(m, name, device=None, dtype="complex128"):
    inputs, call = CASES[name]
    kw = {} if device is None else {"device": device}
    ts = [m.tensor(x, dtype=getattr(m, dtype) if np.iscomplexobj(x) else m.float64,
                   requires_grad=True, **kw) for x in inputs]
    outs = call(m, *ts)
    return ts, outs


def _host(t):
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else to_numpy(t)


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_are_torch(name, device):
    ets, eouts = _run(ember, name, device)
    tts, touts = _run(torch, name)
    assert len(eouts) == len(touts)
    weights = []
    rng = np.random.default_rng(7)
    for e, t in zip(eouts, touts):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (name, e.dtype, t.dtype)
        assert_close(_host(e), _host(t), rtol=1e-9, atol=1e-9, check_dtype=False)
        shape = tuple(t.shape)
        weights.append((rng.random(shape), rng.random(shape)))
    if not any(t.requires_grad for t in touts):
        return
    _loss(eouts, [tuple(ember.tensor(w, device=device) for w in p) for p in weights]).backward()
    _loss(touts, [tuple(torch.tensor(w) for w in p) for p in weights]).backward()
    for e, t in zip(ets, tts):
        assert (e.grad is None) == (t.grad is None), name
        if t.grad is not None:
            assert e.grad.dtype is e.dtype
            assert_close(_host(e.grad), _host(t.grad), rtol=1e-8, atol=1e-9, check_dtype=False)


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "solve", "cholesky", "qr_tall", "eigh", "svd", "eig",
                                  "pinv", "lstsq", "matrix_exp", "lu", "solve_triangular", "matrix_norm"])
def test_complex64_values_are_torch(name, device):
    _, eouts = _run(ember, name, device, "complex64")
    _, touts = _run(torch, name, None, "complex64")
    for e, t in zip(eouts, touts):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (name, e.dtype, t.dtype)
        assert_close(_host(e), _host(t), rtol=2e-4, atol=2e-4, check_dtype=False)


def _gauge_free_eigh(m, a):
    w, v = m.linalg.eigh(a + a.mH)
    return w, projector(v)


# complex128 functions of complex128 inputs whose derivatives hold for every perturbation (Hermitian inputs are
# built inside the call, so finite differences stay on the matrices the op is defined for)
GRADCHECK = {
    "inv": (lambda m, a: m.linalg.inv(a), [(3, 3)]),
    "det": (lambda m, a: m.linalg.det(a), [(2, 3, 3)]),
    "slogdet": (lambda m, a: tuple(m.linalg.slogdet(a)), [(3, 3)]),
    "solve": (lambda m, a, b: m.linalg.solve(a, b), [(3, 3), (3, 2)]),
    "cholesky": (lambda m, a: m.linalg.cholesky(a @ a.mH + 3 * m.eye(3, dtype=a.dtype, device=a.device)), [(3, 3)]),
    "qr": (lambda m, a: tuple(m.linalg.qr(a)), [(4, 3)]),
    "eigh": (_gauge_free_eigh, [(3, 3)]),
    "svd": (lambda m, a: (lambda u, s, vh: (s, u[:, :1] @ vh[:1]))(*m.linalg.svd(a, full_matrices=False)),
            [(4, 3)]),
    "eig": (lambda m, a: (lambda w, v: (w, v.abs()))(*m.linalg.eig(a)), [(3, 3)]),
    "pinv": (lambda m, a: m.linalg.pinv(a), [(3, 2)]),
    "matrix_exp": (lambda m, a: m.linalg.matrix_exp(a), [(3, 3)]),
    "lu_factor": (lambda m, a: m.linalg.lu_factor(a).LU, [(3, 3)]),
    "solve_triangular": (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False), [(3, 3), (3, 2)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_complex128(name, device):
    fn, shapes = GRADCHECK[name]
    rng = np.random.default_rng(3)
    data = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
    if name == "solve_triangular":
        data[0] = np.tril(data[0]) + 3 * np.eye(3)
    inputs = [ember.tensor(x, dtype=ember.complex128, device=device, requires_grad=True) for x in data]
    assert gradcheck(lambda *ts: fn(ember, *ts), inputs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["inv", "det", "solve", "cholesky", "qr", "eigh", "svd", "matrix_exp"])
def test_gradgradcheck_complex128(name, device):
    fn, shapes = GRADCHECK[name]
    rng = np.random.default_rng(5)
    inputs = [ember.tensor(rng.standard_normal(s) + 1j * rng.standard_normal(s), dtype=ember.complex128,
                           device=device, requires_grad=True) for s in shapes]
    assert gradgradcheck(lambda *ts: fn(ember, *ts), inputs)


@pytest.mark.parametrize("op, message", [
    (lambda m, a: m.linalg.eigh(a)[1].real.sum(), "eigenvectors in the complex case"),
    (lambda m, a: m.linalg.svd(a)[0].real.sum(), "singular vectors in the complex case"),
    (lambda m, a: m.linalg.eig(a)[1].real.sum(), "eigenvectors in the complex case"),
])
def test_phase_dependent_losses_raise_as_torch(op, message, device):
    e = ember.tensor(H, device=device, requires_grad=True)
    t = torch.tensor(H, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        op(torch, t).backward()
    with pytest.raises(RuntimeError, match=message):
        op(ember, e).backward()
    assert e.grad is None


def test_complex_hermitian_upper_triangle_is_read(device):
    # eigh and cholesky with the upper triangle: the Hermitian matrix it defines, not its transpose
    a = np.triu(H) + np.tril(c(4, 4), -1)  # the strict lower triangle is garbage
    e, t = ember.tensor(a, device=device), torch.tensor(a)
    assert_close(_host(ember.linalg.eigh(e, "U")[0]), _host(torch.linalg.eigh(t, "U")[0]), check_dtype=False)
    assert_close(_host(projector(ember.linalg.eigh(e, "U")[1])), _host(projector(torch.linalg.eigh(t, "U")[1])),
                 check_dtype=False)
    assert_close(_host(ember.linalg.cholesky(e, upper=True)), _host(torch.linalg.cholesky(t, upper=True)),
                 check_dtype=False)
    assert_close(_host(ember.linalg.cholesky(e.mH)), _host(torch.linalg.cholesky(t.mH)), check_dtype=False)


@pytest.mark.parametrize("data", [TALL, WIDE, A2])
def test_geqrf_is_lapacks(data, device):
    # LAPACK's ?geqrf exactly: real diagonal of R, complex tau, reflectors below the diagonal
    got, want = ember.geqrf(ember.tensor(data, device=device)), torch.geqrf(torch.tensor(data))
    for e, t in zip(got, want):
        assert_close(_host(e), _host(t), rtol=1e-10, atol=1e-12, check_dtype=False)


@pytest.mark.parametrize("zero_corner", [False, True])
def test_ldl_of_complex_symmetric_input_is_lapacks(zero_corner, device):
    # ?sytf2's Bunch-Kaufman pivoting with |re| + |im| sizes (a zero corner forces a 2x2 block)
    a = c(5, 5)
    a = a + a.T
    if zero_corner:
        a[0, 0] = 0
    b = c(5, 2)
    got = ember.linalg.ldl_factor(ember.tensor(a, device=device))
    want = torch.linalg.ldl_factor(torch.tensor(a))
    assert got.pivots.tolist() == want.pivots.tolist()
    assert_close(_host(got.LD), _host(want.LD), rtol=1e-10, atol=1e-12, check_dtype=False)
    x = ember.linalg.ldl_solve(*got, ember.tensor(b, device=device))
    assert_close(_host(x), _host(torch.linalg.ldl_solve(*want, torch.tensor(b))), rtol=1e-10, atol=1e-12,
                 check_dtype=False)


def test_hermitian_ldl_of_complex_input(device):
    # (LAPACK's ?hetrf and ?hetrs; swept in tests/test_fuzz_classes4.py)
    got = ember.linalg.ldl_factor(ember.tensor(H, device=device), hermitian=True)
    want = torch.linalg.ldl_factor(torch.tensor(H), hermitian=True)
    assert_close(_host(got.LD), want.LD.numpy(), rtol=1e-10, atol=1e-12)
    assert got.pivots.tolist() == want.pivots.tolist()


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_fields_of_complex_input_are_torch(driver, device):
    # residuals and singular values are real; which fields are empty depends on the driver, as in PyTorch
    b = c(5, 2)
    got = ember.linalg.lstsq(ember.tensor(TALL, device=device), ember.tensor(b, device=device), driver=driver)
    want = torch.linalg.lstsq(torch.tensor(TALL), torch.tensor(b), driver=driver)
    for e, t in zip(got, want):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert_close(_host(e), _host(t), rtol=1e-9, atol=1e-9, check_dtype=False)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6)])
def test_low_rank_svd_of_complex_input_is_exact_at_its_rank(shape, device):
    # a rank-2 matrix: U diag(S) V^H rebuilds it and S (and its gradient) are PyTorch's singular values
    a = c(shape[0], 2) @ c(2, shape[1])
    e = ember.tensor(a, device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    for u, s, v in (ember.svd_lowrank(e, q=2), ember.pca_lowrank(e, q=2, center=False)):
        assert_close(_host(u @ (s.to(u.dtype).unsqueeze(-1) * v.mH)), a, rtol=1e-9, atol=1e-9)
        assert_close(_host(s), _host(torch.linalg.svdvals(t)[:2]), rtol=1e-9, atol=1e-9, check_dtype=False)
    ember.svd_lowrank(e, q=2)[1].sum().backward()
    torch.linalg.svdvals(t)[:2].sum().backward()
    assert_close(_host(e.grad), _host(t.grad), rtol=1e-8, atol=1e-9, check_dtype=False)
