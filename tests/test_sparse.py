"""Sparse tensors (COO and CSR) against PyTorch: construction, conversion, structure, arithmetic, products,
reductions, softmax and the gradients to values and to the dense operands; a GCN's sparse usage trained for a
few steps with PyTorch's losses."""
import copy

import numpy as np
import pytest

import ember
from fakegpu import registered

torch = pytest.importorskip("torch")
# PyTorch warns that its sparse invariant checks are off and that CSR support is in beta
pytestmark = pytest.mark.filterwarnings("ignore:Sparse:UserWarning")

IDX = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]      # (0, 2) appears twice: uncoalesced
VAL = [3.0, 4.0, 5.0, -1.0, 2.0]


def np_of(t):
    return (t.to_dense() if t.layout != "strided" else t).detach().cpu().numpy()


def close(e, t, atol=1e-5):
    np.testing.assert_allclose(np_of(e), t.to_dense().detach().numpy() if t.is_sparse or t.layout != torch.strided
                               else t.detach().numpy(), rtol=1e-5, atol=atol)


def leaf(m, data, device, grad=True, dtype=None):
    dev = device if m is ember else "cpu"
    return m.tensor(data, dtype=dtype or m.float64, device=dev, requires_grad=grad)


def pair(device, idx=IDX, val=VAL, size=(3, 3)):
    """The same COO tensor in ember and PyTorch, with leaf values that require grad."""
    ve, vt = leaf(ember, val, device), leaf(torch, val, device)
    return ember.sparse_coo_tensor(idx, ve, size), torch.sparse_coo_tensor(torch.tensor(idx), vt, size), ve, vt


def dense_pair(device, shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).tolist()
    return leaf(ember, data, device), leaf(torch, data, device)


def test_construction_and_structure(device):
    se, st, _, _ = pair(device)
    assert se.layout is ember.sparse_coo and se.is_sparse and not se.is_sparse_csr
    assert (se.shape, se.dtype, se.device.type) == (ember.Size([3, 3]), ember.float64, ember.device(device).type)
    assert (se.sparse_dim(), se.dense_dim(), se._nnz(), se.is_coalesced()) == (2, 0, 5, st.is_coalesced())
    close(se, st)
    ce, ct = se.coalesce(), st.coalesce()
    assert ce.is_coalesced() and ce._nnz() == ct._nnz() == 4
    assert ce.indices().tolist() == ct.indices().tolist()
    np.testing.assert_allclose(ce.values().detach().cpu().numpy(), ct.values().detach().numpy())
    assert se._indices().tolist() == IDX and se._values().tolist() == VAL
    inferred = ember.sparse_coo_tensor(IDX, VAL)
    assert inferred.shape == torch.sparse_coo_tensor(IDX, VAL).shape
    cast = ember.sparse_coo_tensor(np.array(IDX, dtype=np.int32), ember.ones(5), (3, 3), dtype=ember.int64)
    assert cast.dtype == ember.int64 and cast.to_dense().sum().item() == 5


def test_to_sparse_from_dense(device):
    data = [[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[2.0, 3.0], [0.0, 0.0]]]
    xe, xt = leaf(ember, data, device), leaf(torch, data, device)
    for args in ((), (1,), (2,)):
        se, st = xe.to_sparse(*args), xt.to_sparse(*args)
        assert se.is_coalesced() and se.sparse_dim() == st.sparse_dim() and se.dense_dim() == st.dense_dim()
        assert se.indices().tolist() == st.indices().tolist()
        np.testing.assert_allclose(se.values().detach().cpu().numpy(), st.values().detach().numpy())
        close(se, st)
    assert xe.to_sparse().to_sparse() is not None and xe.to_dense() is xe
    assert xe.sparse_dim() == 0 and xe.dense_dim() == 3 and not xe.is_sparse and xe.layout is ember.strided


def test_to_dense_gradient_reaches_values(device):
    se, st, ve, vt = pair(device)
    we, wt = dense_pair(device, (3, 3))
    (se.to_dense() * we).sum().backward()
    (st.to_dense() * wt).sum().backward()
    np.testing.assert_allclose(ve.grad.cpu().numpy(), vt.grad.numpy())


@pytest.mark.parametrize("call", [
    lambda m, s, d: m.mm(s, d), lambda m, s, d: m.spmm(s, d), lambda m, s, d: m.sparse.mm(s, d),
    lambda m, s, d: m.matmul(s, d), lambda m, s, d: s @ d, lambda m, s, d: d.t() @ s.t(),
    lambda m, s, d: m.mm(d.t(), s), lambda m, s, d: s.matmul(d[:, 0]),
], ids=["mm", "spmm", "sparse.mm", "matmul", "@", "dense@sparse.t", "dense@sparse", "matvec"])
def test_products_with_a_dense_operand(device, call):
    se, st, ve, vt = pair(device)
    de, dt = dense_pair(device, (3, 4))
    ye, yt = call(ember, se, de), call(torch, st, dt)
    assert ye.layout is ember.strided
    close(ye, yt)
    ge, gt = dense_pair(device, tuple(yt.shape), seed=1)
    (ye * ge.detach()).sum().backward()
    (yt * gt.detach()).sum().backward()
    np.testing.assert_allclose(ve.grad.cpu().numpy(), vt.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(de.grad.cpu().numpy(), dt.grad.numpy(), rtol=1e-6)


def test_sparse_times_sparse(device):
    se, st, ve, vt = pair(device)
    ye, yt = ember.sparse.mm(se, se.t()), torch.sparse.mm(st, st.t())
    assert ye.layout is ember.sparse_coo
    close(ye, yt)
    ye.to_dense().sum().backward()
    yt.to_dense().sum().backward()
    np.testing.assert_allclose(ve.grad.cpu().numpy(), vt.grad.numpy())


@pytest.mark.parametrize("fn", ["addmm", "sparse.addmm"])
def test_addmm(device, fn):
    se, st, ve, vt = pair(device)
    de, dt = dense_pair(device, (3, 2))
    ie, it = dense_pair(device, (3, 2), seed=2)
    f = {"addmm": lambda m: m.addmm, "sparse.addmm": lambda m: m.sparse.addmm}[fn]
    ye, yt = f(ember)(ie, se, de, beta=0.5, alpha=2.0), f(torch)(it, st, dt, beta=0.5, alpha=2.0)
    close(ye, yt)
    ye.pow(2).sum().backward()
    yt.pow(2).sum().backward()
    for a, b in ((ve, vt), (de, dt), (ie, it)):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-6)


def test_sum(device):
    se, st, ve, vt = pair(device)
    close(ember.sparse.sum(se), torch.sparse.sum(st))
    close(se.sum(), st.sum())
    for dim in (0, 1, (0, 1)):
        ye, yt = ember.sparse.sum(se, dim), torch.sparse.sum(st, dim)
        assert str(ye.layout).split(".")[1] == str(yt.layout).split(".")[1]  # sparse while a sparse dim remains
        close(ye, yt)
    ember.sparse.sum(se, 0).to_dense().pow(2).sum().backward()
    torch.sparse.sum(st, 0).to_dense().pow(2).sum().backward()
    np.testing.assert_allclose(ve.grad.cpu().numpy(), vt.grad.numpy())


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(device, fn, dim):
    se, st, ve, vt = pair(device)
    # PyTorch 2.13's backward of a negative dim is wrong (its gradient differs from dim % ndim's): the
    # reference takes the wrapped dim
    ye, yt = getattr(ember.sparse, fn)(se, dim), getattr(torch.sparse, fn)(st, dim % 2)
    assert ye.indices().tolist() == yt.coalesce().indices().tolist()
    np.testing.assert_allclose(ye.values().detach().cpu().numpy(), yt.coalesce().values().detach().numpy(),
                               rtol=1e-6)
    ye.values().mul(ember.arange(4, device=device)).sum().backward()
    yt.coalesce().values().mul(torch.arange(4)).sum().backward()
    np.testing.assert_allclose(ve.grad.cpu().numpy(), vt.grad.numpy(), atol=1e-12)


def test_hybrid_softmax_along_a_dense_dim(device):
    idx, val = [[0, 2]], [[1.0, 2.0], [0.5, -1.0]]
    se = ember.sparse_coo_tensor(idx, leaf(ember, val, device), (3, 2))
    st = torch.sparse_coo_tensor(idx, leaf(torch, val, device), (3, 2))
    for dim in (0, 1):
        close(ember.sparse.softmax(se, dim), torch.sparse.softmax(st, dim))


def test_addition_and_scalars(device):
    se, st, ve, vt = pair(device)
    de, dt = dense_pair(device, (3, 3))
    close(de + se, dt + st)
    close(ember.add(de, se, alpha=2), torch.add(dt, st, alpha=2))
    both_e, both_t = se + se.coalesce(), st + st.coalesce()
    assert both_e.layout is ember.sparse_coo
    close(both_e, both_t)
    close(se.coalesce() + se.coalesce(), st.coalesce() + st.coalesce())
    assert (se.coalesce() + se.coalesce()).is_coalesced()
    acc_e, acc_t = de.detach().clone(), dt.detach().clone()
    acc_e += se
    acc_t += st
    close(acc_e, acc_t)
    close(se * 2.5, st * 2.5)
    close(3 * se, 3 * st)
    close(se / 2, st / 2)
    close(-se, -st)
    close(se * de, st * dt)
    (de + se * 2).pow(2).sum().backward()
    (dt + st * 2).pow(2).sum().backward()
    np.testing.assert_allclose(ve.grad.cpu().numpy(), vt.grad.numpy())
    np.testing.assert_allclose(de.grad.cpu().numpy(), dt.grad.numpy())


def test_transpose_to_detach_and_leaf_grad(device):
    se, st, _, _ = pair(device)
    close(se.t(), st.t())
    assert not se.t().is_coalesced()
    close(se.transpose(0, 1), st.transpose(0, 1))
    f32 = se.to(ember.float32)
    assert f32.dtype == ember.float32 and f32.layout is ember.sparse_coo
    assert se.to("cpu").device.type == "cpu"
    d = se.detach()
    assert not d.requires_grad and d.grad_fn is None and se.requires_grad
    leaf_e = ember.sparse_coo_tensor([[0, 2], [1, 0]], [1.0, 2.0], (3, 3), requires_grad=True)
    leaf_t = torch.sparse_coo_tensor([[0, 2], [1, 0]], [1.0, 2.0], (3, 3), requires_grad=True)
    assert leaf_e.is_leaf and leaf_e.requires_grad
    (leaf_e.to_dense() * ember.arange(9.0).reshape(3, 3)).sum().backward()
    (leaf_t.to_dense() * torch.arange(9.0).reshape(3, 3)).sum().backward()
    assert leaf_e.grad.layout is ember.sparse_coo
    close(leaf_e.grad, leaf_t.grad)
    dup_e = ember.sparse_coo_tensor(IDX, VAL, (3, 3), requires_grad=True)
    dup_t = torch.sparse_coo_tensor(IDX, VAL, (3, 3), requires_grad=True)
    (dup_e.to_dense() * ember.arange(9.0).reshape(3, 3)).sum().backward()
    (dup_t.to_dense() * torch.arange(9.0).reshape(3, 3)).sum().backward()
    assert dup_e.grad.coalesce().indices().tolist() == dup_t.grad.coalesce().indices().tolist()
    close(dup_e.grad, dup_t.grad)
    plain = ember.sparse_coo_tensor([[0]], [1.0], (2,)).requires_grad_()
    assert plain.requires_grad


def _sparse_leaf(m, device, layout):
    dev = device if m is ember else "cpu"
    values = m.tensor([1.0, 2.0, 3.0, 4.0], dtype=m.float64, device=dev)
    s = m.sparse_coo_tensor(m.tensor([[0, 1, 2, 2], [1, 0, 0, 2]], device=dev), values, (3, 3))
    s = (s if layout == "coo" else s.to_sparse_csr()).requires_grad_()
    return s, values, m.arange(6.0, dtype=m.float64, device=dev).reshape(3, 2).requires_grad_()


def _same_grad(e, t):
    assert str(e.layout).split(".")[1] == str(t.layout).split(".")[1]
    if t.layout == torch.sparse_coo:
        assert e.coalesce().indices().tolist() == t.coalesce().indices().tolist()
    elif t.layout == torch.sparse_csr:
        assert (e.crow_indices().tolist(), e.col_indices().tolist()) == (t.crow_indices().tolist(),
                                                                           t.col_indices().tolist())
    close(e, t, atol=1e-12)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_autograd_grad_reaches_a_sparse_leaf(device, layout):
    """autograd.grad(out, sparse_leaf) gives what .backward() leaves in .grad: the leaf's pattern through
    sparse.mm and to_dense, a dense gradient through mm, their sum when both are used; new_zeros and zeros_like
    keep the layout, and requires_grad_() leaves the values the tensor was built from alone."""
    cases = {
        "sparse.mm": lambda m, s, d: m.sparse.mm(s, d).pow(2).sum(),
        "to_dense": lambda m, s, d: (s.to_dense() * d.sum()).sum(),
        "mm": lambda m, s, d: m.mm(s, d).sum(),
        "mixed": lambda m, s, d: m.sparse.mm(s, d).sum() + m.mm(s, d).sum(),
    }
    for name, fn in cases.items():
        (se, ve, de), (st, vt, dt) = _sparse_leaf(ember, device, layout), _sparse_leaf(torch, device, layout)
        assert not ve.requires_grad and not vt.requires_grad
        second = name == "sparse.mm" and layout == "coo"  # (PyTorch's CSR gradient cannot build a graph)
        ge, gde = ember.autograd.grad(fn(ember, se, de), [se, de], create_graph=second)
        gt, gdt = torch.autograd.grad(fn(torch, st, dt), [st, dt], create_graph=second)
        _same_grad(ge, gt)
        close(gde, gdt, atol=1e-12)
        if second:  # a second order reaches the dense operand through the sparse gradient's values
            assert ge.requires_grad
            close(ember.autograd.grad(ge.values().sum(), de)[0], torch.autograd.grad(gt.values().sum(), dt)[0])
    (se, _, de), (st, _, dt) = _sparse_leaf(ember, device, layout), _sparse_leaf(torch, device, layout)
    assert ember.autograd.grad(de.sum(), [de, se], allow_unused=True)[1] is None
    _same_grad(ember.autograd.grad(de.sum(), [de, se], materialize_grads=True)[1],
               torch.autograd.grad(dt.sum(), [dt, st], materialize_grads=True)[1])
    _same_grad(ember.zeros_like(se), torch.zeros_like(st))
    assert se.new_zeros(2, 2).layout is se.layout and ember.zeros_like(se, layout=ember.strided).layout is ember.strided
    with pytest.raises(RuntimeError, match="not have been used"):
        ember.autograd.grad(de.sum(), [de, se])


def test_gradcheck_through_products_and_softmax(device):
    idx = [[0, 1, 1, 2], [2, 0, 2, 1]]
    dense = ember.randn(3, 2, dtype=ember.float64, device=device, requires_grad=True)
    values = ember.randn(4, dtype=ember.float64, device=device, requires_grad=True)

    def f(v, d):
        s = ember.sparse_coo_tensor(idx, v, (3, 3))
        return ember.sparse.softmax(s, 1).to_dense() @ d + ember.spmm(s.t(), d)

    assert ember.autograd.gradcheck(f, (values, dense))
    assert ember.autograd.gradgradcheck(f, (values, dense))


def test_to_sparse_gradient_reaches_the_dense_input(device):
    xe, xt = dense_pair(device, (3, 3))
    we, wt = dense_pair(device, (3, 2), seed=3)
    ember.sparse.mm(xe.relu().to_sparse(), we).sum().backward()
    torch.sparse.mm(xt.relu().to_sparse(), wt).sum().backward()
    np.testing.assert_allclose(xe.grad.cpu().numpy(), xt.grad.numpy())


def test_sparse_tensors_stay_on_their_device():
    with registered(2):
        dev = "fakegpu:1"
        v = ember.tensor(VAL, device=dev, requires_grad=True)
        s = ember.sparse_coo_tensor(IDX, v, (3, 3))
        d = ember.ones(3, 2, device=dev, requires_grad=True)
        y = ember.spmm(s, d) + ember.mm(d.t(), s.t()).t() + ember.sparse.softmax(s, 1).to_dense() @ d
        y.sum().backward()
        assert {str(t.device) for t in (s, s.coalesce().indices(), s.to_sparse_csr(), y, v.grad, d.grad)} == {dev}
        moved = s.to("cpu")
        assert str(moved.device) == str(moved._indices().device) == "cpu"
        with pytest.raises(RuntimeError, match="same device"):
            ember.spmm(s, ember.ones(3, 2))


def test_sparse_mask(device):
    se, st, _, _ = pair(device)
    xe, xt = dense_pair(device, (3, 3))
    ye, yt = xe.sparse_mask(se), xt.sparse_mask(st)
    assert ye._indices().tolist() == yt._indices().tolist() and ye.is_coalesced() == yt.is_coalesced()
    np.testing.assert_allclose(ye._values().detach().cpu().numpy(), yt._values().detach().numpy())
    ye.to_dense().pow(2).sum().backward()
    yt.to_dense().pow(2).sum().backward()
    np.testing.assert_allclose(xe.grad.cpu().numpy(), xt.grad.numpy())
    with pytest.raises(NotImplementedError, match="sparse_mask"):
        xe.sparse_mask(xe)


def test_legacy_constructors(device):
    with pytest.warns(UserWarning, match="deprecated"):
        e = ember.sparse.FloatTensor(ember.LongTensor(IDX), ember.tensor(VAL), ember.Size([3, 3]))
    with pytest.warns(UserWarning, match="deprecated"):
        t = torch.sparse.FloatTensor(torch.LongTensor(IDX), torch.tensor(VAL), torch.Size([3, 3]))
    assert e.dtype == ember.float32 and e.layout is ember.sparse_coo
    close(e, t)
    empty = ember.sparse.DoubleTensor(2, 3)
    assert (empty.shape, empty.dtype, empty._nnz()) == (ember.Size([2, 3]), ember.float64, 0)


def test_csr(device):
    crow, col, val = [0, 2, 2, 4], [0, 2, 1, 2], [1.0, 2.0, 3.0, 4.0]
    ve, vt = leaf(ember, val, device), leaf(torch, val, device)
    ce, ct = ember.sparse_csr_tensor(crow, col, ve, (3, 3)), torch.sparse_csr_tensor(crow, col, vt, (3, 3))
    assert ce.layout is ember.sparse_csr and ce.is_sparse_csr and not ce.is_sparse
    assert ce.crow_indices().tolist() == crow and ce.col_indices().tolist() == col and ce._nnz() == 4
    close(ce, ct)
    de, dt = dense_pair(device, (3, 2))
    ye, yt = ce @ de, ct @ dt
    close(ye, yt)
    ye.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(ve.grad.cpu().numpy(), vt.grad.numpy())
    np.testing.assert_allclose(de.grad.cpu().numpy(), dt.grad.numpy())
    se, st, _, _ = pair(device)
    for e, t in ((se.to_sparse_csr(), st.to_sparse_csr()), (de.to_sparse_csr(), dt.to_sparse_csr())):
        assert e.crow_indices().tolist() == t.crow_indices().tolist()
        assert e.col_indices().tolist() == t.col_indices().tolist()
        close(e, t)
    pe, pt = ce @ ce, ct @ ct
    assert pe.layout is ember.sparse_csr and pt.layout == torch.sparse_csr
    close(pe, pt)
    back = ce.to_sparse()
    assert back.layout is ember.sparse_coo and back.indices().tolist() == ct.to_sparse().indices().tolist()


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda s: s.exp(), NotImplementedError, "exp.*sparse_coo"),
    (lambda s: s.view(9), NotImplementedError, "view.*sparse_coo"),
    (lambda s: s[0], NotImplementedError, "sparse_coo"),
    (lambda s: ember.relu(s), NotImplementedError, "relu.*sparse_coo"),
    (lambda s: s.numpy(), NotImplementedError, "numpy.*sparse_coo"),
    (lambda s: s.indices(), RuntimeError, "uncoalesced"),
    (lambda s: s.to_sparse_csr().sum(0), NotImplementedError, "sum.*sparse_csr"),
    (lambda s: ember.mm(s, ember.ones(2, 2, dtype=ember.float64)), RuntimeError, "cannot be multiplied"),
    (lambda s: ember.addmm(s, s, ember.ones(3, 3, dtype=ember.float64)), RuntimeError, "addmm"),
    (lambda s: s + 1, NotImplementedError, "add"),
    (lambda s: s.add_(s), NotImplementedError, "add_.*sparse_coo"),
    (lambda s: copy.deepcopy(s), NotImplementedError, "sparse_coo"),
    (lambda s: ember.nn.Parameter(s), NotImplementedError, "Parameter.*sparse_coo"),
    (lambda s: s.as_subclass(ember.Tensor), NotImplementedError, "as_subclass.*sparse_coo"),
    (lambda s: s + ember.ones(3, 3, dtype=ember.float64), RuntimeError, r"add\(sparse, dense\) is not supported"),
    (lambda s: ember.ones(2).indices(), RuntimeError, "Strided"),
    (lambda s: ember.sparse_coo_tensor([[0, 3]], [1.0, 2.0], (3,)), RuntimeError, "inconsistent"),
    (lambda s: ember.sparse_coo_tensor([[0, 1]], [1.0], (3,)), RuntimeError, "same nnz"),
])
def test_unsupported_and_bad_input_raise(device, call, exc, pattern):
    se, st, ve, _ = pair(device)
    before = ve.detach().clone()
    with pytest.raises(exc, match=pattern):
        call(se)
    assert ve.tolist() == before.tolist()


def _graph(m, device, n=12, feats=6, seed=0):
    """A small graph in GCN's format: row-normalised sparse features and D^-1/2 (I + A) D^-1/2 as COO."""
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, n, size=(2, 30)).astype(np.int32)
    content = (rng.random((n, feats)) < 0.4).astype(np.float32)
    dev = device if m is ember else "cpu"
    features = m.tensor(content, device=dev)
    scale = 1 / m.sum(features, dim=1)
    scale[scale == float("inf")] = 0
    features = m.diag(scale).to_sparse() @ features
    adj = m.sparse_coo_tensor(edges, m.ones(edges.shape[1]), (n, n), dtype=m.int64).to(dev)
    adj = m.eye(n, device=dev) + adj
    degree = m.sqrt(1 / m.sum(adj, dim=1))
    degree[degree == float("inf")] = 0
    degree = m.diag(degree).to_sparse()
    adj = degree @ adj @ degree
    return features.to_sparse(), m.tensor(rng.integers(0, 3, n), device=dev), adj.to_sparse()


def _graph_conv(m):
    """A graph convolution layer: ``adj @ (x @ kernel)``, the product with the adjacency a sparse one."""
    class GraphConv(m.nn.Module):
        def __init__(self, kernel):
            super().__init__()
            self.kernel = m.nn.Parameter(kernel)

        def forward(self, x, adj):
            return m.spmm(adj, m.mm(x, self.kernel))
    return GraphConv


def test_gcn_training_matches_pytorch(device):
    losses = {}
    for m in (ember, torch):
        features, labels, adj = _graph(m, device)
        dev = device if m is ember else "cpu"
        rng = np.random.default_rng(1)
        layers = [_graph_conv(m)(m.tensor(rng.standard_normal(shape) * 0.3, dtype=m.float32, device=dev))
                  for shape in ((6, 8), (8, 3))]
        opt = m.optim.Adam([p for layer in layers for p in layer.parameters()], lr=0.05)
        losses[m] = []
        for _ in range(5):
            hidden = m.relu(layers[0](features, adj))
            out = m.nn.functional.log_softmax(layers[1](hidden, adj), dim=1)
            loss = m.nn.functional.nll_loss(out, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[m].append(loss.item())
    np.testing.assert_allclose(losses[ember], losses[torch], rtol=1e-5)
    assert losses[ember][-1] < losses[ember][0]


def test_bmm_of_a_batched_coo_tensor_and_its_gradients(device):
    x = np.array([[[0., 0.], [1., 2.], [0., 0.]], [[3., 0.], [0., 0.], [0., 5.]]])
    d = np.arange(12.).reshape(2, 2, 3)
    got = {}
    for m in (ember, torch):
        dev = device if m is ember else "cpu"
        leaf_s = m.tensor(x, device=dev).to_sparse().requires_grad_()  # a leaf: its gradient is dense
        ds = m.tensor(d, device=dev, requires_grad=True)
        y = m.bmm(leaf_s, ds)
        y.pow(2).sum().backward()
        v = m.tensor(x, device=dev).to_sparse().values().clone().requires_grad_()
        s = m.sparse_coo_tensor(m.tensor(x, device=dev).to_sparse().indices(), v, (2, 3, 2))
        m.bmm(s, ds.detach()).pow(2).sum().backward()  # values that record a gradient get its stored entries
        got[m] = (y, leaf_s.grad, ds.grad, v.grad)
        assert str(leaf_s.grad.layout).endswith("strided")
    for a, b in zip(got[ember], got[torch]):
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().numpy())
    for m in (ember, torch):
        s = m.tensor(x, dtype=m.float32).to_sparse()
        for bad in ((s, m.ones(2, 3, 3)), (s, m.ones(3, 2, 3)), (m.ones(2, 4, 3), s),
                    (m.tensor(x, dtype=m.float32).to_sparse(dense_dim=1), m.ones(2, 2, 3)),
                    (s, m.ones(2, 2, 3, dtype=m.float64))):
            with pytest.raises(RuntimeError, match="bmm_sparse|expected scalar type Float but found Double"):
                m.bmm(*bad)
        with pytest.raises(RuntimeError, match="sparse_dim\\(\\)!=2 is not supported"):
            s.to_sparse_csr()


def test_hybrid_coo_against_pytorch(device):
    x = [[[0., 0.], [1., 2.], [0., 0.]], [[3., 0.], [0., 0.], [0., 5.]]]
    built = {}
    for m in (ember, torch):
        dev = device if m is ember else "cpu"
        s = m.tensor(x, device=dev).to_sparse(dense_dim=1)
        ctor = m.sparse_coo_tensor([[0, 1, 1], [1, 0, 2]], m.tensor([[1., 2.], [3., 0.], [0., 5.]], device=dev))
        built[m] = (s, ctor, s * 2, s + s, m.sparse.sum(s, 2), m.sparse.sum(s, (0, 2)), m.sparse.sum(s),
                    s.to_sparse_csc(), m.zeros(2, 3, 2, layout=m.sparse_coo, device=dev))
        with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 sparse and 0 dense dimensions, "
                                               r"but got 2 sparse and 1 dense dimensions"):
            s.t()
        with pytest.raises(RuntimeError, match="sparse transpose: transposed dimensions must be sparse"):
            s.transpose(0, 2)
    for e, t in zip(built[ember], built[torch]):
        assert str(e.layout) == str(t.layout).replace("torch", "ember") and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.to_dense().cpu().numpy(), t.to_dense().numpy())
        if e.layout is not ember.strided and ember.device(device).type == "cpu":
            assert repr(e) == repr(t).replace("torch", "ember")  # empty parts say their size, indices no dtype


def test_a_sparse_tensor_built_from_recorded_values_is_no_leaf(device):
    for m in (ember, torch):
        v = m.tensor([1.0, 2.0], device=device if m is ember else "cpu", requires_grad=True)
        s = m.sparse_coo_tensor([[0, 1], [1, 0]], v, (2, 2))
        assert s.requires_grad and not s.is_leaf
        m.sparse.mm(s, m.ones(2, 1, device=v.device)).sum().backward()
        with pytest.warns(UserWarning, match="not a leaf"):
            assert s.grad is None
        assert v.grad.tolist() == [1.0, 1.0]
