"""Reductions against PyTorch on every backend: named results, errors, ``unique``, in-place and ``out=`` forms
(the rows of ember.testing.rows_reduction, every check, run in tests/test_kit.py)."""
import pytest

import ember
from ember.testing import assert_close

pytest.importorskip("torch")


def test_max_returns_named_tuple(device):
    x = ember.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], device=device)
    r = x.max(1)
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    v, i = ember.min(x, 0, keepdim=True)
    assert v.tolist() == [[1.0, 0.0, 2.0]] and i.tolist() == [[0, 1, 0]]
    assert ember.max(x, ember.full_like(x, 4.0)).tolist() == [[4.0, 5.0, 4.0], [7.0, 4.0, 4.0]]


def test_reduction_errors(device):
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.ones(2, 3, device=device).sum(2)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        ember.ones(2, dtype=ember.int64, device=device).mean()
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):  # PyTorch raises RuntimeError for amax
        ember.ones(0, device=device).amax()


def test_unique_mode_and_closeness(device, torch):
    x = ember.tensor([3, 1, 3, 2, 1, 3], device=device)
    u, inv, cnt = ember.unique(x, return_inverse=True, return_counts=True)
    tu, tinv, tcnt = torch.unique(torch.tensor([3, 1, 3, 2, 1, 3]), return_inverse=True, return_counts=True)
    assert (u.tolist(), inv.tolist(), cnt.tolist()) == (tu.tolist(), tinv.tolist(), tcnt.tolist())
    m = ember.tensor([[1, 2, 2], [3, 3, 1]], device=device).mode(1)
    assert m.values.tolist() == [2, 3]
    w = ember.tensor([1.0, 2.0, 2.0, 3.0], device=device, requires_grad=True)
    w.mode().values.backward()
    assert w.grad.tolist() == [0.0, 0.0, 1.0, 0.0]  # to the last index of the mode, as in PyTorch
    a = ember.tensor([1.0, 2.0], device=device)
    assert ember.allclose(a, a + 1e-9) and not ember.allclose(a, a + 1e-3)
    assert ember.equal(a, a.clone()) and not ember.equal(a, a[:1])
    assert ember.isclose(a, ember.tensor([1.0, 2.1], device=device)).tolist() == [True, False]


@pytest.mark.parametrize("data,dim", [
    ([[2, 1, 2], [0, 5, 0], [2, 1, 2], [0, 5, 0], [0, 5, 1]], None),
    ([[2, 1, 2], [0, 5, 0], [2, 1, 2], [0, 5, 0], [0, 5, 1]], 0),
    ([[2, 1, 2], [0, 5, 0], [2, 1, 2], [0, 5, 0], [0, 5, 1]], 1),
    ([[3.5, float("nan"), 3.5], [float("nan"), -1.0, -1.0]], None),
    ([1, 1, 2, 2, 3, 1, 1, 2], 0),
    (7, None),
    ([], None),
])
def test_unique_and_unique_consecutive_match_torch(device, torch, data, dim):
    x, t = ember.tensor(data, device=device), torch.tensor(data)
    for name in ("unique", "unique_consecutive"):
        got = getattr(ember, name)(x, return_inverse=True, return_counts=True, dim=dim)
        want = getattr(torch, name)(t, return_inverse=True, return_counts=True, dim=dim)
        for g, w, part in zip(got, want, ("values", "inverse", "counts")):
            assert_close(g, w, rtol=0, atol=0, msg=f"{name} {part}")


def test_inplace_variants_match_out_of_place(device):
    x = ember.tensor([0.5, -1.5, 2.0], device=device)
    for name in ("exp", "tanh", "sigmoid", "abs", "neg", "floor"):
        y = x.clone()
        r = getattr(y, name + "_")()
        assert r is y and y._version == 1
        assert ember.allclose(y, getattr(x, name)())
    z = x.clone()
    z.clamp_(min=0.0)
    assert z.tolist() == [0.5, 0.0, 2.0]
    w = ember.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.exp_()
    v = w * 1
    v.tanh_()
    v.sum().backward()
    assert ember.allclose(w.grad, 1 - ember.tanh(ember.ones(2, device=device)) ** 2)


# Bad input: each call must fail in ember as in PyTorch (same exception class), naming the op.
BAD = [
    ("sum", lambda m, d: m.ones(2, 3, device=d).sum(3)),
    ("sum", lambda m, d: m.ones(2, 3, device=d).sum((0, 0))),
    ("mean", lambda m, d: m.ones(2, dtype=m.int64, device=d).mean()),
    ("amax", lambda m, d: m.ones(0, 3, device=d).amax(0)),
    ("max", lambda m, d: m.ones(2, 0, device=d).max(1)),
    ("argmax", lambda m, d: m.ones(2, device=d).argmax(2)),
    ("var", lambda m, d: m.ones(3, dtype=m.int64, device=d).var()),
    ("std", lambda m, d: m.ones(2, 3, device=d).std(-3)),
    ("logsumexp", lambda m, d: m.ones(2, device=d).logsumexp(1)),
    ("cumsum", lambda m, d: m.ones(2, device=d).cumsum(1)),
    ("topk", lambda m, d: m.ones(3, device=d).topk(4)),
    ("norm", lambda m, d: m.ones(3, dtype=m.int64, device=d).norm()),
    ("vector_norm", lambda m, d: m.linalg.vector_norm(m.ones(3, dtype=m.int64, device=d))),
    ("matrix_norm", lambda m, d: m.linalg.matrix_norm(m.ones(3, device=d))),
    ("matrix_norm", lambda m, d: m.linalg.matrix_norm(m.ones(3, 3, device=d), "bad")),
    ("median", lambda m, d: m.ones(2, device=d).median(2)),
    ("nanmean", lambda m, d: m.ones(2, dtype=m.int64, device=d).nanmean()),
    ("diff", lambda m, d: m.ones((), device=d).diff()),
    ("diff", lambda m, d: m.ones(3, device=d).diff(n=-1)),
    ("diff", lambda m, d: m.ones(2, 3, device=d).diff(prepend=m.ones(3, device=d))),
    ("diff", lambda m, d: m.ones(2, 3, device=d).diff(append=m.ones(3, 1, device=d))),
    ("diff", lambda m, d: m.ones(2, 3, device=d).diff(dim=2)),
    ("histc", lambda m, d: m.ones(3, dtype=m.int64, device=d).histc()),
    ("histc", lambda m, d: m.ones(3, device=d).histc(bins=0)),
    ("histc", lambda m, d: m.ones(3, device=d).histc(4, min=3, max=1)),
    ("histc", lambda m, d: m.ones(3, device=d).histc(4, min=0, max=float("inf"))),
    ("histc", lambda m, d: m.tensor([1.0, float("nan")], device=d).histc(4)),
    ("bincount", lambda m, d: m.ones(3, device=d).bincount()),
    ("bincount", lambda m, d: m.tensor([1, -1], device=d).bincount()),
    ("bincount", lambda m, d: m.ones(2, 2, dtype=m.int64, device=d).bincount()),
    ("bincount", lambda m, d: m.ones(2, dtype=m.int64, device=d).bincount(minlength=-1)),
    ("bincount", lambda m, d: m.ones(2, dtype=m.int64, device=d).bincount(m.ones(3, device=d))),
    ("searchsorted", lambda m, d: m.searchsorted(m.ones(2, 3, device=d), m.ones(3, 1, device=d))),
    ("searchsorted", lambda m, d: m.searchsorted(m.ones(2, 3, device=d), m.ones(2, device=d))),
    ("searchsorted", lambda m, d: m.searchsorted(m.ones(2, 3, device=d), 1.0)),
    ("searchsorted", lambda m, d: m.searchsorted(m.ones((), device=d), m.ones(2, device=d))),
    ("searchsorted", lambda m, d: m.searchsorted(m.ones(3, device=d), m.ones(2, device=d), side="left", right=True)),
    ("searchsorted", lambda m, d: m.searchsorted(m.ones(3, device=d), m.ones(2, device=d), side="middle")),
    ("searchsorted", lambda m, d: m.searchsorted(m.ones(3, device=d), m.ones(2, device=d),
                                                 sorter=m.ones(3, device=d))),
    ("searchsorted", lambda m, d: m.searchsorted(m.ones(3, device=d), m.ones(2, device=d),
                                                 sorter=m.zeros(2, dtype=m.int64, device=d))),
    ("searchsorted", lambda m, d: m.searchsorted(m.ones(3, dtype=m.bool, device=d), m.ones(2, dtype=m.bool,
                                                                                               device=d))),
    ("bucketize", lambda m, d: m.bucketize(m.ones(2, device=d), m.ones(2, 2, device=d))),
    ("quantile", lambda m, d: m.ones(3, device=d).quantile(1.5)),
    ("quantile", lambda m, d: m.ones(3, device=d).quantile(m.tensor([0.5, -0.5], device=d))),
    ("quantile", lambda m, d: m.ones(3, device=d).quantile(m.ones(1, 1, device=d))),
    ("quantile", lambda m, d: m.ones(3, dtype=m.int64, device=d).quantile(0.5)),
    ("quantile", lambda m, d: m.ones(3, device=d).quantile(m.ones(1, dtype=m.float64, device=d))),
    ("quantile", lambda m, d: m.ones(3, device=d).quantile(0.5, interpolation="cubic")),
    ("quantile", lambda m, d: m.ones(0, device=d).quantile(0.5)),
    ("quantile", lambda m, d: m.ones(2, 3, device=d).quantile(0.5, dim=2)),
    ("nanquantile", lambda m, d: m.ones(3, device=d).nanquantile(-0.1)),
]


@pytest.mark.parametrize("op,call", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_like_torch(op, call, device, torch):
    with pytest.raises(Exception) as te:
        call(torch, "cpu")
    with pytest.raises(Exception) as ee:
        call(ember, device)
    assert isinstance(ee.value, type(te.value)) or issubclass(type(te.value), type(ee.value)), \
        (type(ee.value), type(te.value))
    assert op in str(ee.value) or "Dimension out of range" in str(ee.value), str(ee.value)


def test_no_gradient_through_indices_and_predicates(device):
    x = ember.randn(2, 3, device=device, requires_grad=True)
    for r in (x.argmax(1), x.max(1).indices, x.sort(1).indices, x > 0, x.isnan(), ember.unique(x.detach())):
        assert not r.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.argmax().float().sum().backward()


OUT = [  # (name, call(m, x, out=...)) on a 2x3 float tensor
    ("nansum", lambda m, x, **o: m.nansum(x, 1, **o)),
    ("nanmean", lambda m, x, **o: m.nanmean(x, **o)),
    ("diff", lambda m, x, **o: m.diff(x, 1, 0, **o)),
    ("histc", lambda m, x, **o: m.histc(x, 4, -1, 1, **o)),
    ("searchsorted", lambda m, x, **o: m.searchsorted(x[0], x, right=True, **o)),
    ("bucketize", lambda m, x, **o: m.bucketize(x, x[0], **o)),
    ("quantile", lambda m, x, **o: m.quantile(x, 0.3, 1, **o)),
    ("nanquantile", lambda m, x, **o: m.nanquantile(x, 0.7, **o)),
]


@pytest.mark.parametrize("name,call", OUT, ids=[o[0] for o in OUT])
def test_out_argument(name, call, device, torch):
    data = [[-0.5, 0.25, 0.75], [0.5, float("nan"), 2.5]]
    want = call(torch, torch.tensor(data))
    out = ember.empty(0, dtype=getattr(ember, str(want.dtype).split(".")[-1]), device=device)
    assert call(ember, ember.tensor(data, device=device), out=out) is out
    assert_close(out, want)
