"""A transformer step's kernels on their fast paths, against PyTorch: softmax along rows (the CPU backend's
float32 form exponentiates a matrix whose maximum is at most 64 without a shift, shifts one above it by that
maximum, and rows far below by their own; its backward spreads the row sums by repeat), log-softmax through
cross-entropy on the same rows, and ember-onednn's calls (arrays handed over by address: C-contiguous,
transposed, read-only and sliced operands; gelu's forward falling back where its result is not finite)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().cpu().numpy()


def _tol(dtype):
    return dict(rtol=3e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-15)


def _grad_tol(dtype):  # (a softmax gradient's g - sum(g * y) cancels: float32's error is absolute, ~1e-7 of g)
    return dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-14)


def _softmax_both(a, g, device, dim=-1):
    """``(ember, torch)`` pairs of softmax's value and gradient of ``a`` for the output gradient ``g``."""
    x = ember.tensor(a, device=device, requires_grad=True)
    y = F.softmax(x, dim=dim)
    y.backward(ember.tensor(g, device=device))
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.softmax(tx, dim=dim)
    ty.backward(torch.tensor(g))
    return (_np(y), _np(x.grad)), (ty.detach().numpy(), tx.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["unshifted", "top above 64", "rows far below", "most rows far below",
                                  "masked", "odd rows"])
def test_softmax_rows_value_and_gradient_match_torch(device, dtype, case):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 4, 17, 33)).astype(dtype) * 3
    if case == "top above 64":        # (shifted by the matrix's maximum)
        a[0, 0, 0, 0] = 90
    elif case == "rows far below":    # (these rows by their own maximum)
        a[1, 2] -= 60
    elif case == "most rows far below":  # (every row by its own)
        a[:12] -= 45
    elif case == "masked":            # -inf entries and one row with no finite entry: NaN, as PyTorch's
        a = np.where(np.triu(np.ones((17, 33), bool), 1), -np.inf, a)
        a[2, 1, 5] = -np.inf
    elif case == "odd rows":          # rows of 7
        a = a[..., :7] * 5
    g = rng.standard_normal(a.shape).astype(dtype)
    (y, gx), (ty, tgx) = _softmax_both(a, g, device)
    assert y.dtype == ty.dtype and gx.shape == tgx.shape
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ty))
    np.testing.assert_allclose(y, ty, **_tol(dtype))
    np.testing.assert_allclose(gx, tgx, **_grad_tol(dtype))


def test_softmax_rows_non_finite_match_torch(device):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 4, 32)).astype(np.float32)
    a[3, 1, 4] = np.nan      # its row NaN
    a[5, 2, 0] = np.inf      # its row NaN (inf - inf)
    g = rng.standard_normal(a.shape).astype(np.float32)
    (y, gx), (ty, tgx) = _softmax_both(a, g, device)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ty))
    np.testing.assert_array_equal(np.isnan(gx), np.isnan(tgx))
    np.testing.assert_allclose(y, ty, **_tol(np.float32))
    np.testing.assert_allclose(gx, tgx, **_grad_tol(np.float32))


def test_softmax_of_a_transposed_input_and_along_another_dim(device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((48, 96)).astype(np.float32) * 4
    g = rng.standard_normal((96, 48)).astype(np.float32)
    x = ember.tensor(a, device=device, requires_grad=True)
    y = F.softmax(x.t(), dim=-1)
    y.backward(ember.tensor(g, device=device))
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.softmax(tx.t(), dim=-1)
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(_np(y), ty.detach().numpy(), **_tol(np.float32))
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), **_grad_tol(np.float32))
    (y0, gx0), (ty0, tgx0) = _softmax_both(a, g.T.copy(), device, dim=0)
    np.testing.assert_allclose(y0, ty0, **_tol(np.float32))
    np.testing.assert_allclose(gx0, tgx0, **_grad_tol(np.float32))


def test_softmax_leaves_its_input_untouched(device):
    a = np.random.default_rng(3).standard_normal((128, 40)).astype(np.float32)
    a[7] -= 80   # a row recomputed by its own maximum
    x = ember.tensor(a.copy(), device=device)
    F.softmax(x, dim=-1)
    F.log_softmax(x, dim=-1)
    F.cross_entropy(x, ember.zeros(128, dtype=ember.int64, device=device))
    np.testing.assert_array_equal(_np(x), a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shift", [0.0, 70.0, -50.0])
def test_cross_entropy_log_softmax_rows_match_torch(device, dtype, shift):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((600, 65)) * 4 + shift).astype(dtype)
    a[::9] -= 35
    t = rng.integers(0, 65, 600)
    x = ember.tensor(a, device=device, requires_grad=True)
    loss = F.cross_entropy(x, ember.tensor(t, device=device))
    loss.backward()
    tx = torch.tensor(a, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(tx, torch.tensor(t))
    tl.backward()
    np.testing.assert_allclose(_np(loss), tl.detach().numpy(), rtol=2e-6 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), **_grad_tol(dtype))
    lp = F.log_softmax(x, dim=-1)
    np.testing.assert_allclose(_np(lp), torch.log_softmax(tx, -1).detach().numpy(), rtol=2e-6, atol=2e-5)


@pytest.mark.parametrize("form", ["contiguous", "transposed", "read-only", "sliced"])
def test_matmul_operands_by_address_match_torch(device, form):
    """Products large enough for ember-onednn (where it is installed) with operands of every layout it is
    handed: the address of each array's first element is what the primitive reads."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((1024, 64)).astype(np.float32)
    b = rng.standard_normal((192, 64)).astype(np.float32)
    ea, eb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    ta, tb = torch.tensor(a), torch.tensor(b)
    if form == "contiguous":
        eb, tb = eb.t().contiguous(), tb.t().contiguous()
    elif form == "transposed":
        eb, tb = eb.t(), tb.t()
    elif form == "read-only":
        ro = np.ascontiguousarray(b.T)
        ro.setflags(write=False)
        eb = ember.from_numpy(ro).to(device) if device != "cpu" else ember.from_numpy(ro)
        tb = torch.tensor(ro)
    else:
        ea, ta = ember.tensor(np.pad(a, ((0, 0), (3, 5))), device=device)[:, 3:67], torch.tensor(a)
        eb, tb = eb.t(), tb.t()
    np.testing.assert_allclose(_np(ea @ eb), (ta @ tb).numpy(), rtol=1e-4, atol=1e-4)


def test_gelu_forward_of_non_finite_input_matches_torch(device):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 256)).astype(np.float32)
    a[1, 2], a[3, 4], a[5, 6] = np.inf, -np.inf, np.nan
    y = _np(F.gelu(ember.tensor(a, device=device)))
    ty = torch.nn.functional.gelu(torch.tensor(a.astype(np.float64))).numpy().astype(np.float32)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ty))
    np.testing.assert_allclose(y, ty, rtol=1e-5, atol=3e-6)   # (the array-API backend's float32 erf: ~2e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("form", ["3-d", "transposed input", "no bias", "2-d odd"])
def test_linear_value_and_gradients_match_torch(device, dtype, form):
    """nn.Linear's forward is the ``linear`` kernel (ember-onednn adds the bias in the GEMM where installed)."""
    rng = np.random.default_rng(7)
    shape, n = {"3-d": ((32, 32, 64), 192), "transposed input": ((64, 1000), 130), "no bias": ((16, 64, 64), 256),
                "2-d odd": ((999, 67), 131)}[form]
    a = rng.standard_normal(shape).astype(dtype)
    k = shape[0] if form == "transposed input" else shape[-1]
    w, b = rng.standard_normal((n, k)).astype(dtype), rng.standard_normal(n).astype(dtype)
    out = []
    for lib, make in ((ember, lambda v: ember.tensor(v, device=device, requires_grad=True)),
                      (torch, lambda v: torch.tensor(v, requires_grad=True))):
        x, wt, bt = make(a), make(w), None if form == "no bias" else make(b)
        y = lib.nn.functional.linear(x.t() if form == "transposed input" else x, wt, bt)
        g = np.random.default_rng(8).standard_normal(tuple(y.shape)).astype(dtype)
        y.backward(make(g).detach())
        out.append([_np(y), _np(x.grad), _np(wt.grad)] + ([] if bt is None else [_np(bt.grad)]))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for ours, theirs in zip(*out):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, **tol)


def test_linear_on_meta_tensors_has_its_shape():
    x = ember.empty((8, 5, 64), device="meta")
    y = ember.nn.functional.linear(x, ember.empty((96, 64), device="meta"), ember.empty(96, device="meta"))
    assert y.shape == (8, 5, 96) and y.device.type == "meta"


def _sdpa_both(device, dtype, q_shape, kv_shape, mask=None, **kw):
    """``(ember, torch)`` lists of scaled_dot_product_attention's output and the gradients of q, k and v."""
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s).astype(dtype) for s in (q_shape, kv_shape, kv_shape)]
    out = []
    for lib, make in ((ember, lambda a: ember.tensor(a, device=device)), (torch, torch.tensor)):
        q, k, v = (make(a).requires_grad_() for a in arrays)
        m = None if mask is None else make(mask)
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
        g = make(np.random.default_rng(10).standard_normal(tuple(y.shape)).astype(dtype))
        y.backward(g)
        out.append([_np(y), _np(q.grad), _np(k.grad), _np(v.grad)])
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["causal", "plain", "float mask", "bool mask", "wide head"])
def test_sdpa_value_and_gradients_match_torch(device, dtype, case):
    q_shape, kv_shape, mask, kw = (3, 4, 17, 16), (3, 4, 23, 16), None, {}
    if case == "causal":
        kv_shape, kw = q_shape, {"is_causal": True}
    elif case == "float mask":
        mask = np.random.default_rng(11).standard_normal((17, 23)).astype(dtype)
    elif case == "bool mask":   # (composed ops)
        mask = np.random.default_rng(11).random((4, 17, 23)) > 0.3
    elif case == "wide head":   # a head wider than the keys: the scale on the scores
        q_shape, kv_shape = (2, 5, 40), (2, 7, 40)
    ours, theirs = _sdpa_both(device, dtype, q_shape, kv_shape, mask, **kw)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, **tol)


def test_sdpa_is_one_node_with_torch_name_and_second_order(device):
    rng = np.random.default_rng(12)
    q, k, v = (ember.tensor(rng.standard_normal((2, 2, 5, 4)), device=device, requires_grad=True) for _ in range(3))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert type(y.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert ember.autograd.gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                                    (q, k, v))
    q, k, v = (t[:1, :2, :4, :3].detach().requires_grad_() for t in (q, k, v))
    assert ember.autograd.gradgradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c), (q, k, v))


def test_softmax_backward_kernels_agree():
    """The CPU kernel table's softmax gradient (ember-onednn's primitive where installed) against the shared
    kernel's formula, with non-finite gradients and a zero-probability entry's product with inf as NaN."""
    k = ember.backend.get_backend("cpu").kernels
    rng = np.random.default_rng(13)
    y = rng.random((300, 33)).astype(np.float32)
    y[:, 5] = 0
    y /= y.sum(-1, keepdims=True)
    g = rng.standard_normal(y.shape).astype(np.float32)
    g[7, 5], g[9, 2] = np.inf, np.nan
    ty = torch.tensor(y)
    want = torch._softmax_backward_data(torch.tensor(g), ty, 1, torch.float32).numpy()
    got = k["softmax_backward"](g, y, 1)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    t = np.ascontiguousarray(g.T).T   # a column-major gradient
    np.testing.assert_allclose(k["softmax_backward"](t, y, -1), want, rtol=2e-5, atol=1e-6)


def _qkv(device, q_shape, kv_shape, seed=14):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.standard_normal(s).astype(np.float32), device=device, requires_grad=True)
            for s in (q_shape, kv_shape, kv_shape)]


def _composed(fn, *args):
    """``fn(*args)`` with a handler watching (attention's composed ops, as a tracer sees them), and the ops'
    names."""
    names = []
    with ember.dispatch.intercept(lambda kind, Op, a, run: names.append(getattr(Op, "__name__", Op)) or run(*a)):
        return fn(*args), names


def test_sdpa_composed_ops_equal_the_node_and_build_the_mask_once(device):
    q, k, v = _qkv(device, (2, 3, 9, 8), (2, 3, 9, 8))
    mask = ember.tensor(np.random.default_rng(15).standard_normal((9, 9)).astype(np.float32), device=device)
    # the causal mask is made and added once, a float mask added once: nothing built for the node is left over
    for kw, counts in ((dict(is_causal=True), (1, 1, 1)), (dict(attn_mask=mask), (0, 0, 1))):
        y = F.scaled_dot_product_attention(q, k, v, **kw)
        assert type(y.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
        y2, names = _composed(lambda a, b, c, kw=kw: F.scaled_dot_product_attention(a, b, c, **kw), q, k, v)
        assert type(y2.grad_fn).__name__ != type(y.grad_fn).__name__
        np.testing.assert_array_equal(_np(y2), _np(y))
        assert (names.count("full"), names.count("TriuBackward0"), names.count("AddBackward0")) == counts
    q, k, v = _qkv(device, (2, 5, 40), (2, 7, 40))  # a head wider than the keys: the scale on the scores
    np.testing.assert_array_equal(_np(_composed(F.scaled_dot_product_attention, q, k, v)[0]),
                                  _np(F.scaled_dot_product_attention(q, k, v)))


def test_sdpa_create_graph_gradients_equal_the_plain_backward(device):
    for q_shape, kv_shape in (((2, 3, 9, 8), (2, 3, 11, 8)), ((2, 5, 40), (2, 7, 40))):  # scale on q, on scores
        q, k, v = _qkv(device, q_shape, kv_shape)
        y = F.scaled_dot_product_attention(q, k, v)
        g = ember.tensor(np.random.default_rng(16).standard_normal(tuple(y.shape)).astype(np.float32), device=device)
        plain = ember.autograd.grad(y, (q, k, v), g, retain_graph=True)
        graph = ember.autograd.grad(y, (q, k, v), g, create_graph=True)
        assert all(t.grad_fn is not None for t in graph)
        for a, b in zip(plain, graph):
            np.testing.assert_array_equal(_np(b), _np(a))


def test_mha_without_weights_is_sdpa_and_matches_its_composed_ops(device):
    ember.manual_seed(0)
    mha = ember.nn.MultiheadAttention(16, 2, batch_first=True).to(device)
    x = ember.tensor(np.random.default_rng(17).standard_normal((3, 6, 16)).astype(np.float32), device=device)
    mask = ember.nn.Transformer.generate_square_subsequent_mask(6, device=device)
    run = lambda t: mha(t, t, t, attn_mask=mask, need_weights=False)[0]  # noqa: E731
    y = run(x)
    y2, names = _composed(run, x)
    np.testing.assert_array_equal(_np(y2), _np(y))
    assert "SoftmaxBackward0" in names
    tm = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    with torch.no_grad():
        for p, t in zip(mha.parameters(), tm.parameters()):
            t.copy_(torch.tensor(_np(p)))
    tx = torch.tensor(_np(x))
    want = tm(tx, tx, tx, attn_mask=torch.tensor(_np(mask)), need_weights=False)[0]
    np.testing.assert_allclose(_np(y), want.detach().numpy(), rtol=2e-5, atol=2e-6)


def test_sdpa_refuses_a_mask_with_is_causal_as_pytorch(device):
    q, k, v = _qkv(device, (2, 4, 3), (2, 4, 3))
    msgs = []
    for lib, args in ((ember, (q, k, v)), (torch, [torch.tensor(_np(t)) for t in (q, k, v)])):
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.scaled_dot_product_attention(*args, attn_mask=lib.zeros(4, 4), is_causal=True)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_sdpa_refuses_inputs_below_two_dims_as_pytorch(device):
    msgs = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.scaled_dot_product_attention(lib.ones(2, 3, device=dev), lib.tensor(1.0, device=dev),
                                                          lib.ones(2, 3, device=dev))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
