"""A transformer step's kernels on their fast paths, against PyTorch: clip_grad_norm_'s sums of squares as one
dot each (non-finite and overflowing gradients, float32 and float64), and ember-onednn's primitives called
again with other arrays, the same arrays and arrays in place (a memory object is pointed again only at a new
address)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().cpu().numpy()


def _params(lib, arrays, device=None):
    """Parameters holding ``arrays`` as their gradients (``lib``: ember or torch)."""
    ps = []
    for a in arrays:
        p = lib.nn.Parameter(lib.zeros(a.shape, dtype=getattr(lib, str(a.dtype)), **(
            {"device": device} if device else {})))
        p.grad = lib.tensor(a, **({"device": device} if device else {}))
        ps.append(p)
    return ps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["plain", "clipped", "inf", "nan", "overflow", "one element"])
def test_clip_grad_norm_matches_torch(device, dtype, case):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(dtype) for s in ((7, 5), (5,), (3, 4, 2), (1,))]
    max_norm = 1e9 if case == "plain" else 0.5
    if case == "inf":
        arrays[1][2] = np.inf
    elif case == "nan":
        arrays[2][0, 1, 1] = np.nan
    elif case == "overflow":  # (squares beyond float32's range: an infinite norm, the gradients scaled by 0)
        arrays[0] *= 1e30
    elif case == "one element":
        arrays = arrays[3:]
    ps, tps = _params(ember, arrays, device), _params(torch, arrays)
    with np.errstate(all="ignore"):
        got = ember.nn.utils.clip_grad_norm_(ps, max_norm)
        want = torch.nn.utils.clip_grad_norm_(tps, max_norm)
    assert got.dtype == ember.float32 if dtype == np.float32 else got.dtype == ember.float64
    tol = dict(rtol=2e-6) if dtype == np.float32 else dict(rtol=1e-13)
    np.testing.assert_allclose(_np(got), want.numpy(), **tol)
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(_np(p.grad), tp.grad.numpy(), **tol)


def test_clip_grad_norm_keeps_the_error_for_a_non_finite_norm(device):
    ps = _params(ember, [np.array([1.0, np.inf], np.float32)], device)
    with pytest.raises(RuntimeError, match="non-finite"):
        ember.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(_np(ps[0].grad), [1.0, np.inf])  # (left untouched)


def test_clip_grad_norm_of_non_contiguous_gradients_matches_torch(device):
    a = np.random.default_rng(2).standard_normal((6, 8)).astype(np.float32)
    p, tp = _params(ember, [a], device)[0], _params(torch, [a])[0]
    p.grad, tp.grad = ember.tensor(a.T.copy(), device=device).t(), torch.tensor(a.T.copy()).t()
    got = ember.nn.utils.clip_grad_norm_([p], 0.1)
    want = torch.nn.utils.clip_grad_norm_([tp], 0.1)
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=2e-6)
    np.testing.assert_allclose(_np(p.grad), tp.grad.numpy(), rtol=2e-6)


def _onednn_layer_norm():
    try:
        from ember_onednn import layer_norm
    except (ImportError, OSError):  # (not installed, or no oneDNN library)
        pytest.skip("ember-onednn is not available")
    return layer_norm


def test_onednn_primitive_called_again_with_other_arrays_matches_torch():
    # the same primitive (one geometry) over new, repeated and alternating arrays: each call reads its own
    onednn_ln = _onednn_layer_norm()
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((64, 128)).astype(np.float32) for _ in range(3)]
    w, b = rng.standard_normal(128).astype(np.float32), rng.standard_normal(128).astype(np.float32)
    kernel = onednn_ln.kernels(lambda name: None)["layer_norm"]
    for x in (xs[0], xs[1], xs[1], xs[0], xs[2], xs[0]):
        y, mean, rstd = kernel(x, w, b, 1, 1e-5)
        want = torch.nn.functional.layer_norm(torch.tensor(x), (128,), torch.tensor(w), torch.tensor(b))
        np.testing.assert_allclose(y, want.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(mean[:, 0], x.mean(1), rtol=1e-5, atol=1e-6)


def test_onednn_matmul_into_a_reused_buffer_matches_torch(device):
    # products whose outputs come back on the same pages call after call, their operands changing in between
    rng = np.random.default_rng(4)
    for _ in range(3):
        a = rng.standard_normal((256, 128)).astype(np.float32)
        w = rng.standard_normal((96, 128)).astype(np.float32)
        got = F.linear(ember.tensor(a, device=device), ember.tensor(w, device=device))
        want = torch.nn.functional.linear(torch.tensor(a), torch.tensor(w))
        np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-4, atol=1e-4)
        del got


def _embedding_both(w, idx, g, device, **kw):
    """``(ember, torch)`` pairs of embedding's value, weight gradient and node for the output gradient ``g``."""
    ew = ember.tensor(w, device=device, requires_grad=True)
    ey = F.embedding(ember.tensor(idx, device=device), ew, **kw)
    ey.backward(ember.tensor(g, device=device))
    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.embedding(torch.tensor(idx), tw, **kw)
    ty.backward(torch.tensor(g))
    return (_np(ey), _np(ew.grad), ey.grad_fn), (ty.detach().numpy(), tw.grad.numpy(), ty.grad_fn)


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_node_value_gradient_and_name_match_torch(device, dtype, padding_idx):
    rng = np.random.default_rng(6)
    w = rng.standard_normal((9, 5)).astype(dtype)
    idx = np.array([[1, 2, 2, 8], [0, 8, 2, 2], [3, 3, 3, 1]], np.int64)  # (repeated rows: their gradients add)
    g = rng.standard_normal((3, 4, 5)).astype(dtype)
    (y, gw, node), (ty, tgw, tnode) = _embedding_both(w, idx, g, device, padding_idx=padding_idx)
    np.testing.assert_array_equal(y, ty)
    np.testing.assert_allclose(gw, tgw, rtol=1e-6)
    assert node.name() == tnode.name() == "EmbeddingBackward0"
    assert node._saved_padding_idx == tnode._saved_padding_idx
    assert node._saved_weight_sym_argsize_0 == tnode._saved_weight_sym_argsize_0 == 9


@pytest.mark.parametrize("sparse", [False, True])
def test_embedding_node_saves_its_flags_as_torch(device, sparse):
    torch = pytest.importorskip("torch")
    w = np.arange(12.0).reshape(4, 3)
    nodes = [F.embedding(ember.tensor([1, 3], device=device), ember.tensor(w, requires_grad=True, device=device),
                         sparse=sparse, padding_idx=-1).grad_fn,
             torch.nn.functional.embedding(torch.tensor([1, 3]), torch.tensor(w, requires_grad=True), sparse=sparse,
                                           padding_idx=-1).grad_fn]
    assert [(n.name(), n._saved_sparse, n._saved_padding_idx, n._saved_scale_grad_by_freq) for n in nodes] == \
        [("EmbeddingBackward0", sparse, 3, False)] * 2
    assert ember.embedding(ember.tensor(w, requires_grad=True, device=device), ember.tensor([0], device=device),
                           sparse=sparse).grad_fn._saved_sparse is sparse


def test_embedding_node_of_int32_and_empty_indices_matches_torch(device):
    w = np.arange(12.0).reshape(4, 3)
    for idx in (np.array([3, 0, 3], np.int32), np.zeros((2, 0), np.int64)):
        g = np.ones(idx.shape + (3,))
        (y, gw, _), (ty, tgw, _) = _embedding_both(w, idx, g, device)
        assert y.shape == ty.shape
        np.testing.assert_array_equal(y, ty)
        np.testing.assert_array_equal(gw, tgw)


def test_embedding_node_second_order_by_gradcheck(device):
    # the gradient with ember ops where a graph of it is built, through the padded form (a padding row that no
    # index reads: where one does, its gradient is 0 by definition, not the numerical one)
    w = ember.tensor(np.random.default_rng(7).standard_normal((5, 3)), device=device, requires_grad=True)
    idx = ember.tensor([[0, 4], [4, 1]], device=device)
    f = lambda w: F.embedding(idx, w, padding_idx=2) ** 2  # noqa: E731
    assert ember.autograd.gradcheck(f, (w,))
    assert ember.autograd.gradgradcheck(f, (w,))


@pytest.mark.parametrize("bad", [[0, 5], [0, -1], [-7, 2]])
def test_embedding_node_refuses_out_of_range_indices_as_torch(device, bad):
    w = ember.zeros(5, 2, device=device, requires_grad=True)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ember.tensor(bad, device=device), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        torch.nn.functional.embedding(torch.tensor(bad), torch.zeros(5, 2))
    with pytest.raises(AssertionError, match="Padding_idx"):
        F.embedding(ember.tensor([0], device=device), w, padding_idx=5)


def test_embedding_max_norm_and_freq_scaling_keep_the_composed_form_and_match_torch(device):
    rng = np.random.default_rng(8)
    w = rng.standard_normal((6, 4)) * 3
    idx = np.array([1, 1, 5, 0])
    g = rng.standard_normal((4, 4))
    for kw in ({"max_norm": 1.0}, {"scale_grad_by_freq": True}):
        (y, gw, node), (ty, tgw, _) = _embedding_both(w, idx, g, device, **kw)
        np.testing.assert_allclose(y, ty, rtol=1e-12)
        np.testing.assert_allclose(gw, tgw, rtol=1e-12)


def test_embedding_node_keeps_its_indices_and_refuses_them_changed_as_torch(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        w = lib.ones(4, 2, device=dev, requires_grad=True)
        idx = lib.tensor([1, 3, 1], device=dev)
        y = lib.nn.functional.embedding(idx, w)
        assert y.grad_fn._saved_indices.tolist() == [1, 3, 1]
        idx.add_(0)  # (a new version)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("name,kw", [("AdamW", {}), ("AdamW", {"amsgrad": True, "maximize": True}),
                                     ("Adam", {"weight_decay": 0.1}), ("NAdam", {}), ("RAdam", {}),
                                     ("Adamax", {})])
def test_adam_family_updates_match_torch(device, name, kw):
    # the moments' and the step's temporaries reused in place: each trajectory still PyTorch's to rounding
    rng = np.random.default_rng(9)
    shapes = ((64,), (48, 64), (3,))
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(5)]
    got = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        ps = [lib.nn.Parameter(lib.tensor(a, device=dev)) for a in init]
        opt = getattr(lib.optim, name)(ps, lr=0.01, **kw)
        for step in grads:
            for p, g in zip(ps, step):
                p.grad = lib.tensor(g, device=dev)
            opt.step()
        got.append([_np(p) for p in ps] + [_np(v) for p in ps for k, v in sorted(opt.state[p].items())])
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("form", ["causal", "full mask", "transposed", "mask grows the input", "tensor value"])
def test_masked_fill_of_large_inputs_matches_torch(device, dtype, form):
    # 4096 elements and up with a mask broadcasting to the input: the CPU backend's copy-then-write form
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((8, 4, 16, 16)) * 5).astype(dtype)
    mask = np.triu(np.ones((16, 16), bool), 1)[None, None]
    value = -np.inf if dtype.startswith("float") else True if dtype == "bool" else -7
    if form == "full mask":
        mask = rng.random(x.shape) < 0.3
    elif form == "transposed":
        x = x.transpose(0, 1, 3, 2)
    elif form == "mask grows the input":  # (out of place, the result takes the broadcast shape)
        x, mask = x[:1], np.broadcast_to(mask, (3, 4, 16, 16)).copy()
    ex, tx = ember.tensor(np.ascontiguousarray(x), device=device), torch.tensor(np.ascontiguousarray(x))
    if form == "transposed":
        ex, tx = ember.tensor(x.transpose(0, 1, 3, 2).copy(), device=device).transpose(2, 3), \
            torch.tensor(x.transpose(0, 1, 3, 2).copy()).transpose(2, 3)
    ev, tv = value, value
    if form == "tensor value":
        ev, tv = ember.tensor(value, dtype=ex.dtype, device=device), torch.tensor(value, dtype=tx.dtype)
    got = ex.masked_fill(ember.tensor(mask, device=device), ev)
    want = tx.masked_fill(torch.tensor(mask), tv)
    assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[6:] == str(want.dtype)[6:]
    np.testing.assert_array_equal(_np(got), want.numpy())
    np.testing.assert_array_equal(_np(ex), tx.numpy())  # (the input untouched)


def test_masked_fill_gradient_of_attention_scores_matches_torch(device):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 2, 32, 32)).astype(np.float32)
    g = rng.standard_normal(a.shape).astype(np.float32)
    g[0, 0, 0, 5] = np.nan  # (at a masked position: softmax's backward spreads it over its row, as PyTorch's)
    mask = np.triu(np.ones((32, 32), bool), 1)
    got = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(a, device=dev, requires_grad=True)
        y = x.masked_fill(lib.tensor(mask, device=dev), float("-inf")).softmax(-1)
        y.backward(lib.tensor(g, device=dev))
        got.append((_np(y), _np(x.grad)))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=2e-5, atol=1e-6)
