"""The top-level and ``Tensor`` forms of the linear-algebra ops (``ember.det``, ``Tensor.inverse``, ``ember.svd``,
...) and the newer ``ember.linalg`` names (``multi_dot``, ``vecdot``, ``matrix_rank``, ``vander``, ``diagonal``,
``cholesky_ex``) against PyTorch: values, and gradients by gradcheck in float64."""
import inspect

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.testing import assert_close, to_numpy


def _data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _pair(torch, data, device, dtype="float64", grad=False):
    e = ember.tensor(data, dtype=getattr(ember, dtype), device=device, requires_grad=grad)
    t = torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=grad)
    return e, t


def _well(n, batch=(), seed=0):
    """Well-conditioned square matrices."""
    return _data(*batch, n, n, seed=seed) + 3 * np.eye(n)


def _spd(n, batch=(), seed=0):
    a = _data(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _close(e, t, **kw):
    assert_close(to_numpy(e), t.detach().numpy(), check_dtype=False, **kw)


# --------------------------------------------------------------------------- namespaces
# (name, namespaces ember must show it in): each checked against torch's own namespaces
NAMES = [
    ("det", ("torch", "Tensor", "linalg")), ("slogdet", ("torch", "Tensor", "linalg")),
    ("logdet", ("torch", "Tensor")), ("inverse", ("torch", "Tensor")), ("cholesky", ("torch", "Tensor", "linalg")),
    ("qr", ("torch", "Tensor", "linalg")), ("svd", ("torch", "Tensor", "linalg")),
    ("pinverse", ("torch", "Tensor")), ("matrix_power", ("torch", "Tensor", "linalg")),
    ("multi_dot", ("linalg",)), ("vecdot", ("linalg",)), ("matrix_rank", ("linalg",)),
    ("vander", ("torch", "linalg")), ("diagonal", ("torch", "Tensor", "linalg")), ("cholesky_ex", ("linalg",)),
    ("matmul", ("torch", "Tensor", "linalg")), ("cross", ("torch", "Tensor", "linalg")),
    ("vector_norm", ("linalg",)), ("matrix_norm", ("linalg",)), ("norm", ("torch", "Tensor", "linalg")),
    ("addmm_", ("Tensor",)), ("baddbmm_", ("Tensor",)), ("addbmm_", ("Tensor",)), ("addmv_", ("Tensor",)),
    ("addr_", ("Tensor",)),
]


# names torch still has but that only raise (removed in 1.9), and torch's top-level in-place functions
NOT_COMPARED = {("torch", "matrix_rank"), ("torch", "addmm_"), ("torch", "addmv_"), ("torch", "addr_"),
                ("torch", "baddbmm_"), ("torch", "addbmm_")}


@pytest.mark.parametrize("name,namespaces", NAMES, ids=[n for n, _ in NAMES])
def test_names_where_torch_has_them(torch, name, namespaces):
    places = {"torch": (ember, torch), "Tensor": (ember.Tensor, torch.Tensor), "linalg": (ember.linalg, torch.linalg)}
    for ns, (e, t) in places.items():
        if (ns, name) in NOT_COMPARED:
            continue
        assert hasattr(t, name) == (ns in namespaces), f"the table disagrees with torch on {ns}.{name}"
        assert hasattr(e, name) == hasattr(t, name), f"ember {'lacks' if hasattr(t, name) else 'has'} {ns}.{name}"


# --------------------------------------------------------------------------- top-level forms
def test_det_logdet_slogdet(torch, device):
    data = _well(3, (2,))
    data[1] = -data[1]  # one matrix with a negative determinant: logdet is NaN there
    e, t = _pair(torch, data, device)
    _close(ember.det(e), torch.det(t))
    _close(e.det(), t.det())
    _close(ember.logdet(e), torch.logdet(t))
    assert np.isnan(to_numpy(e.logdet())[1])
    sign, logabs = ember.slogdet(e)
    ts = torch.slogdet(t)
    _close(sign, ts.sign)
    _close(e.slogdet().logabsdet, ts.logabsdet)
    assert type(ember.slogdet(e)).__name__ == "slogdet"
    assert ember.logdet(ember.zeros(2, 2, dtype=ember.float64, device=device)).item() == -np.inf


def test_det_logdet_gradients(device):
    a = ember.tensor(_well(3), dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(ember.det, (a,))
    assert gradcheck(lambda x: x.logdet(), (a,))
    assert gradcheck(lambda x: ember.slogdet(x).logabsdet, (a,))


def test_inverse(torch, device):
    e, t = _pair(torch, _well(3, (2,)), device)
    _close(ember.inverse(e), torch.inverse(t))
    _close(e.inverse(), t.inverse())
    out = ember.empty(2, 3, 3, dtype=ember.float64, device=device)
    assert ember.inverse(e, out=out) is out
    _close(out, torch.inverse(t))
    a = ember.tensor(_well(3), dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x: x.inverse(), (a,))
    with pytest.raises(ember.linalg.LinAlgError, match="singular"):
        ember.zeros(2, 2, device=device).inverse()


def test_cholesky_upper(torch, device):
    e, t = _pair(torch, _spd(3, (2,)), device)
    _close(ember.cholesky(e), torch.linalg.cholesky(t))
    _close(ember.cholesky(e, True), torch.linalg.cholesky(t, upper=True))
    _close(e.cholesky(upper=True), torch.linalg.cholesky(t).mT)
    a = ember.tensor(_data(3, 3), dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x: ember.cholesky(x @ x.mT + 3 * ember.eye(3, dtype=x.dtype, device=x.device), True),
                     (a,))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("some", [True, False])
def test_qr_some(torch, device, shape, some):
    e, t = _pair(torch, _data(*shape), device)
    q, r = ember.qr(e, some)
    tq, tr = torch.linalg.qr(t, "reduced" if some else "complete")
    assert q.shape == tq.shape and r.shape == tr.shape
    _close(q @ r, t)
    # QR is unique up to the signs of R's diagonal
    k = min(shape[-2:])
    signs = (r.diagonal(0, -2, -1).sign() * ember.tensor(tr.diagonal(0, -2, -1).sign().numpy(), device=device))
    _close(r[..., :k, :] * signs.unsqueeze(-1), tr[..., :k, :])
    assert not to_numpy(r[..., k:, :]).any()
    assert type(e.qr(some=some)).__name__ == "qr"


def test_qr_gradient(device):
    a = ember.tensor(_data(4, 3), dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x: tuple(ember.qr(x)), (a,))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("some", [True, False])
def test_svd_returns_v(torch, device, shape, some):
    e, t = _pair(torch, _data(*shape), device)
    u, s, v = ember.svd(e, some)
    tu, ts, tv = torch.svd(t, some)
    assert (u.shape, s.shape, v.shape) == (tu.shape, ts.shape, tv.shape)
    _close(s, ts)
    k = s.shape[-1]
    _close((u[..., :k] * s.unsqueeze(-2)) @ v[..., :k].mT, t)   # V, not Vh: input = U diag(S) V^T
    assert_close(to_numpy(v.mT @ v), np.broadcast_to(np.eye(v.shape[-1]), v.shape[:-2] + (v.shape[-1],) * 2),
                 check_dtype=False)
    assert type(e.svd()).__name__ == "svd" and e.svd()._fields == ("U", "S", "V")


def test_svd_without_uv(torch, device):
    e, t = _pair(torch, _data(2, 4, 3), device)
    u, s, v = e.svd(compute_uv=False)
    tu, ts, tv = t.svd(compute_uv=False)
    assert u.shape == tu.shape == (2, 4, 4) and v.shape == tv.shape == (2, 3, 3)
    assert not to_numpy(u).any() and not to_numpy(v).any()
    _close(s, ts)


def test_svd_gradient(device):
    a = ember.tensor(_data(4, 3), dtype=ember.float64, device=device, requires_grad=True)
    # U and V are determined up to sign: check functions of them that are not
    assert gradcheck(lambda x: ember.svd(x).S, (a,))
    assert gradcheck(lambda x: (lambda u, s, v: (u * s.unsqueeze(-2)) @ v.mT)(*ember.svd(x)), (a,))
    assert gradcheck(lambda x: (lambda u, s, v: u @ u.mT)(*ember.svd(x)), (a,))


def test_pinverse(torch, device):
    e, t = _pair(torch, _data(4, 3), device)
    _close(ember.pinverse(e), torch.pinverse(t))
    _close(e.pinverse(), t.pinverse())
    low = np.outer(_data(4), _data(3))  # rank 1: rcond decides which singular values count
    e, t = _pair(torch, low, device)
    _close(e.pinverse(1e-3), t.pinverse(1e-3))
    a = ember.tensor(_data(4, 3), dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(ember.pinverse, (a,))


@pytest.mark.parametrize("n", [-2, 0, 1, 3])
def test_matrix_power(torch, device, n):
    e, t = _pair(torch, _well(3, (2,)), device)
    _close(ember.matrix_power(e, n), torch.matrix_power(t, n))
    _close(e.matrix_power(n), t.matrix_power(n))
    a = ember.tensor(_well(3), dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x: x.matrix_power(n), (a,))


# --------------------------------------------------------------------------- ember.linalg names
@pytest.mark.parametrize("shapes", [[(2, 3), (3, 4)], [(3,), (3, 5), (5, 2), (2,)], [(10, 100), (100, 5), (5, 50)],
                                    [(1, 4), (4, 6), (6, 3), (3, 2)]])
def test_multi_dot(torch, device, shapes):
    pairs = [_pair(torch, _data(*s, seed=i), device) for i, s in enumerate(shapes)]
    r = ember.linalg.multi_dot([e for e, _ in pairs])
    _close(r, torch.linalg.multi_dot([t for _, t in pairs]))
    assert r.shape == torch.linalg.multi_dot([t for _, t in pairs]).shape
    leaves = [ember.tensor(_data(*s, seed=i), dtype=ember.float64, device=device, requires_grad=True)
              for i, s in enumerate(shapes)]
    assert gradcheck(lambda *xs: ember.linalg.multi_dot(xs), tuple(leaves))


def test_multi_dot_bad_input(device):
    with pytest.raises(RuntimeError, match="at least 2 tensors"):
        ember.linalg.multi_dot([ember.ones(2, 2, device=device)])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ember.linalg.multi_dot([ember.ones(2, 3, device=device), ember.ones(2, 3, device=device)])
    with pytest.raises(RuntimeError, match="must be 2D"):
        ember.linalg.multi_dot([ember.ones(2, device=device), ember.ones(2, device=device),
                                ember.ones(2, device=device)])


def test_vecdot(torch, device):
    (x, tx), (y, ty) = _pair(torch, _data(4, 3), device), _pair(torch, _data(3, seed=1), device)
    _close(ember.linalg.vecdot(x, y), torch.linalg.vecdot(tx, ty))
    (x, tx), (y, ty) = _pair(torch, _data(3, 4), device), _pair(torch, _data(3, 1, seed=1), device)
    _close(ember.linalg.vecdot(x, y, dim=0), torch.linalg.vecdot(tx, ty, dim=0))
    xs = ember.tensor(_data(2, 3), dtype=ember.float64, device=device, requires_grad=True)
    ys = ember.tensor(_data(3, seed=1), dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(ember.linalg.vecdot, (xs, ys))
    (i, ti), (j, tj) = _pair(torch, np.arange(6).reshape(2, 3), device, "int64"), _pair(torch, [1, 2, 3], device,
                                                                                         "int64")
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        torch.linalg.vecdot(ti, tj)
    with pytest.raises(RuntimeError, match="linalg.vecdot: Expected a floating point"):
        ember.linalg.vecdot(i, j)
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.linalg.vecdot(ember.ones(2, device=device), ember.ones(2, dtype=ember.float64, device=device))


def test_matrix_rank(torch, device):
    data = np.stack([_data(4, 3), np.outer(_data(4), _data(3)), np.zeros((4, 3))])
    e, t = _pair(torch, data, device)
    r = ember.linalg.matrix_rank(e)
    assert r.dtype is ember.int64
    assert r.tolist() == torch.linalg.matrix_rank(t).tolist() == [3, 1, 0]
    sym = _spd(3) - 3.5 * np.eye(3)
    e, t = _pair(torch, sym, device)
    assert ember.linalg.matrix_rank(e, hermitian=True).item() == torch.linalg.matrix_rank(t, hermitian=True).item()
    # tolerances: atol alone makes rtol 0; tol is NumPy's atol
    e, t = _pair(torch, np.diag([10.0, 1.0, 1e-3]), device)
    for kw in [dict(atol=0.5), dict(rtol=0.05), dict(atol=0.5, rtol=0.2), dict(atol=0.0)]:
        assert ember.linalg.matrix_rank(e, **kw).item() == torch.linalg.matrix_rank(t, **kw).item(), kw
    assert ember.linalg.matrix_rank(e, 2.0).item() == torch.linalg.matrix_rank(t, 2.0).item() == 1


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_linalg_vander(torch, device, dtype):
    e, t = _pair(torch, np.array([[1, 2, 3, 5], [0, -1, 2, 4]]), device, dtype)
    assert ember.linalg.vander(e).tolist() == torch.linalg.vander(t).tolist()
    assert ember.linalg.vander(e, N=3).tolist() == torch.linalg.vander(t, N=3).tolist()
    assert ember.linalg.vander(e).dtype is getattr(ember, dtype)
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        ember.linalg.vander(e, N=1)


def test_linalg_vander_gradient(device):
    x = ember.tensor([0.0, 1.5, -2.0], dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x: ember.linalg.vander(x, N=4), (x,))


@pytest.mark.parametrize("N,increasing", [(None, False), (2, False), (4, True), (0, False), (1, True)])
def test_torch_vander(torch, device, N, increasing):
    e, t = _pair(torch, np.array([1, 2, 3]), device, "int64")
    r, tr = ember.vander(e, N, increasing), torch.vander(t, N, increasing)
    assert r.shape == tr.shape and r.tolist() == tr.tolist()


def test_linalg_diagonal(torch, device):
    e, t = _pair(torch, _data(2, 3, 4), device)
    _close(ember.linalg.diagonal(e), torch.linalg.diagonal(t))
    _close(ember.linalg.diagonal(e, offset=1, dim1=0, dim2=2), torch.linalg.diagonal(t, offset=1, dim1=0, dim2=2))
    d = ember.linalg.diagonal(e)
    e[0, 0, 0] = 7.0  # a view, as in PyTorch
    assert d[0, 0].item() == 7.0
    a = ember.tensor(_data(2, 3, 3), dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x: ember.linalg.diagonal(x, offset=-1), (a,))


def test_cholesky_ex(torch, device):
    data = np.stack([_spd(3), np.array([[1.0, 2, 0], [2, 1, 0], [0, 0, 1]]), -np.eye(3)])
    e, t = _pair(torch, data, device)
    lo, info = ember.linalg.cholesky_ex(e)
    tl, tinfo = torch.linalg.cholesky_ex(t)
    assert info.dtype is ember.int32 and info.tolist() == tinfo.tolist() == [0, 2, 1]
    _close(lo[0], tl[0])
    e, t = _pair(torch, _spd(3, (2,)), device)
    lo, info = ember.linalg.cholesky_ex(e, upper=True)
    _close(lo, torch.linalg.cholesky_ex(t, upper=True).L)
    assert info.tolist() == [0, 0]
    with pytest.raises(ember.linalg.LinAlgError, match="positive-definite"):
        ember.linalg.cholesky_ex(-ember.eye(2, device=device), check_errors=True)


def test_linalg_cross_defaults_to_last_dim(torch, device):
    # in a 3x3 the first dimension of size 3 (ember.cross) and the last one (ember.linalg.cross) differ
    (a, ta), (b, tb) = _pair(torch, _data(3, 3), device), _pair(torch, _data(3, 3, seed=1), device)
    _close(ember.linalg.cross(a, b), torch.linalg.cross(ta, tb))
    _close(ember.cross(a, b), torch.cross(ta, tb, dim=0))
    _close(ember.linalg.cross(a, b, dim=0), torch.linalg.cross(ta, tb, dim=0))


@pytest.mark.parametrize("name", ["addmm", "addmv", "addr", "baddbmm", "addbmm"])
def test_inplace_product_forms(torch, device, name):
    shapes = {"addmm": [(2, 4), (2, 3), (3, 4)], "addmv": [(2,), (2, 3), (3,)], "addr": [(2, 3), (2,), (3,)],
              "baddbmm": [(2, 2, 4), (2, 2, 3), (2, 3, 4)], "addbmm": [(2, 4), (3, 2, 5), (3, 5, 4)]}[name]
    pairs = [_pair(torch, _data(*s, seed=i), device) for i, s in enumerate(shapes)]
    (e, t), rest = pairs[0], pairs[1:]
    r = getattr(e, name + "_")(*[x for x, _ in rest], beta=0.5, alpha=2)
    getattr(t, name + "_")(*[x for _, x in rest], beta=0.5, alpha=2)
    assert r is e
    _close(e, t)


def test_norms_come_from_ops_linalg():
    from ember.ops import linalg

    shown = inspect.unwrap  # the namespace shows each function behind its __torch_function__ check
    assert shown(ember.linalg.vector_norm) is linalg.vector_norm
    assert shown(ember.linalg.matrix_norm) is linalg.matrix_norm
    assert shown(ember.linalg.norm) is linalg.linalg_norm
    assert shown(ember.linalg.svdvals) is linalg.svdvals


def test_norms_out(torch, device):
    e, t = _pair(torch, _data(3, 4), device)
    out = ember.empty(3, dtype=ember.float64, device=device)
    assert ember.linalg.vector_norm(e, 3, dim=1, out=out) is out
    _close(out, torch.linalg.vector_norm(t, 3, dim=1))
    out = ember.empty((), dtype=ember.float64, device=device)
    assert ember.linalg.matrix_norm(e, "nuc", out=out) is out
    _close(out, torch.linalg.matrix_norm(t, "nuc"))
