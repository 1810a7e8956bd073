"""The last names of PyTorch's namespaces: device-generic streams and events, accelerator errors, layout and
memory-format types, ``cond``/``while_loop``, ``lobpcg``, ``to_dlpack``, ``addmv_``, ``Tensor.grad_dtype``,
``record_stream``, ``F.linear_cross_entropy`` (reference and chunked paths), ``nn.attention`` and
``optim.swap_in_optimizer_params_and_state``; each against PyTorch where it computes."""
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember.testing.op_table_gapfill import ROWS
from ember.testing.op_table_shape import row_test

test_row = row_test(ROWS)


def _np(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------------------------------------- errors, modules
def test_accelerator_errors_follow_pytorchs_hierarchy(torch):
    for name in ("AcceleratorError", "OutOfMemoryError"):
        cls = getattr(ember, name)
        assert issubclass(cls, RuntimeError) and cls.__name__ == name
        assert issubclass(getattr(torch, name), RuntimeError)
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError
    with pytest.raises(RuntimeError):
        raise ember.OutOfMemoryError("out of memory")


def test_cuda_pool_exhaustion_raises_out_of_memory_error():
    """The CUDA backend's allocator turns CuPy's out-of-memory error into ``ember.OutOfMemoryError``."""
    import types

    memory = pytest.importorskip("ember_cuda_cupy.memory")

    class CupyOOM(MemoryError):
        pass

    class Pool:
        def malloc(self, size):
            raise CupyOOM(f"Out of memory allocating {size} bytes")

    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(memory=types.SimpleNamespace(OutOfMemoryError=CupyOOM)))
    with pytest.raises(ember.cuda.OutOfMemoryError, match="CUDA out of memory. Tried to allocate 1024 bytes"):
        memory.PeakTracker(cp, Pool()).malloc(1024)


def test_get_device_module_and_grad_scaler():
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cuda:0")) is ember.cuda
    assert ember.get_device_module() in (ember.cpu, ember.cuda)
    with pytest.raises(RuntimeError, match="Invalid value of device"):
        ember.get_device_module(3)
    assert ember.GradScaler is ember.amp.GradScaler


def test_stream_and_event_on_cpu(torch):
    s, ts = ember.Stream("cpu"), torch.Stream("cpu")
    assert s.device_type == ts.device_type == 0 and s.device.type == ts.device.type == "cpu"
    assert s.query() and ts.query()
    s.synchronize()
    e = ember.Event("cpu")
    e.record(s)
    assert e.query() and e.device.type == torch.Event("cpu").device.type == "cpu"
    e.synchronize()
    assert isinstance(s.record_event(), ember.Event)
    with s:
        assert ember.ones(2).sum().item() == 2
    with pytest.raises(TypeError, match="priority"):
        ember.Stream("cpu", priority="high")
    with pytest.raises(TypeError, match="device"):
        ember.Event(device=1.5)


def test_record_stream(device):
    t = ember.ones(3, device=device)
    if t.device.type in ("cpu", "meta"):
        with pytest.raises(NotImplementedError, match="record_stream"):
            t.record_stream(ember.Stream("cpu"))
    with pytest.raises(RuntimeError, match="Stream"):
        t.record_stream(3)


# ------------------------------------------------------------------------------------- layout, memory_format
def test_layout_and_memory_format_constants(torch):
    assert ember.zeros(2).layout is ember.strided
    assert isinstance(ember.strided, ember.layout) and isinstance(ember.sparse_coo, ember.layout)
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        assert isinstance(getattr(ember, name), ember.memory_format)
        assert repr(getattr(ember, name)) == f"ember.{name}"
    with pytest.raises(TypeError, match="cannot create"):
        ember.layout()
    assert pickle.loads(pickle.dumps(ember.channels_last)) is ember.channels_last
    assert ember.zeros(2).layout == "strided"  # the older string spelling still compares equal


@pytest.mark.parametrize("shape,perm", [((2, 3, 4, 5), None), ((2, 3, 4, 5), (0, 2, 3, 1)), ((1, 1, 1, 1), None),
                                        ((0, 3, 4, 5), None), ((3, 4, 5), None), ((2, 3, 1, 1), (0, 2, 3, 1)),
                                        ((2, 3, 4, 5, 6), (0, 2, 3, 4, 1))])
def test_is_contiguous_answers_for_each_memory_format(device, torch, shape, perm):
    def build(lib):
        x = lib.zeros(shape)
        if perm is not None:  # the strides of a channels-last tensor, seen in NC... order
            inv = [perm.index(i) for i in range(len(perm))]
            x = x.permute(*perm).contiguous().permute(*inv)
        return x

    if perm is not None and ember.zeros(2, 3, device=device).t().stride() != (1, 3):
        pytest.skip(f"the {device} backend keeps no memory layout (its arrays report no strides)")
    e, t = build(ember).to(device), build(torch)
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        assert e.is_contiguous(memory_format=getattr(ember, name)) == \
            t.is_contiguous(memory_format=getattr(torch, name)), name


def test_memory_format_is_accepted_where_pytorch_takes_it(device):
    x = ember.arange(24.0, device=device).reshape(1, 2, 3, 4)
    for fmt in (ember.contiguous_format, ember.channels_last, ember.preserve_format):
        np.testing.assert_array_equal(_np(x.contiguous(memory_format=fmt)), _np(x))
        np.testing.assert_array_equal(_np(x.clone(memory_format=fmt)), _np(x))
        np.testing.assert_array_equal(_np(x.to(memory_format=fmt)), _np(x))
        assert ember.empty_like(x, memory_format=fmt).shape == x.shape


def test_memory_format_errors_as_pytorch(device, torch):
    x, tx = ember.zeros(2, 3, 4, device=device), torch.zeros(2, 3, 4)
    calls = [lambda m, t, f: t.contiguous(memory_format=f), lambda m, t, f: t.clone(memory_format=f),
             lambda m, t, f: m.empty_like(t, memory_format=f), lambda m, t, f: t.to(memory_format=f),
             lambda m, t, f: m.zeros_like(t, memory_format=f)]
    for call in calls:
        with pytest.raises(RuntimeError, match="required rank 4"):
            call(torch, tx, torch.channels_last)
        with pytest.raises(RuntimeError, match="required rank 4"):
            call(ember, x, ember.channels_last)
        with pytest.raises(RuntimeError, match="required rank 5"):
            call(ember, x, ember.channels_last_3d)
    with pytest.raises(TypeError, match="memory_format"):
        tx.contiguous(memory_format="channels_last")
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")


def test_set_flush_denormal_and_thread_safe_generator():
    assert ember.set_flush_denormal(True) is False and ember.set_flush_denormal(False) is False
    with pytest.raises(TypeError, match="mode"):
        ember.set_flush_denormal(1)
    assert ember.thread_safe_generator() is None  # main process (and process workers)


# ------------------------------------------------------------------------------------------------- ops
def test_addmv_inplace_at_top_level(device, torch):
    a, m, v = np.arange(2.0), np.arange(6.0).reshape(2, 3), np.ones(3)
    x = ember.tensor(a, device=device)
    r = ember.addmv_(x, ember.tensor(m, device=device), ember.tensor(v, device=device), beta=2, alpha=3)
    tx = torch.tensor(a)
    torch.addmv_(tx, torch.tensor(m), torch.tensor(v), beta=2, alpha=3)
    assert r is x
    np.testing.assert_allclose(_np(x), tx.numpy())


def test_to_dlpack_roundtrip(device, torch):
    x = ember.arange(4.0, device=device, requires_grad=True)
    if x.device.type == "meta":
        pytest.skip("meta tensors have no memory")
    cap = ember.to_dlpack(x)
    assert type(cap).__name__ == "PyCapsule"
    if x.device.type == "cpu":
        np.testing.assert_array_equal(ember.from_dlpack(cap).numpy(), [0, 1, 2, 3])
        np.testing.assert_array_equal(torch.from_dlpack(ember.to_dlpack(x.detach())).numpy(), [0, 1, 2, 3])
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.to_dlpack(3)


def test_cond_runs_the_chosen_branch_with_gradients(device, torch):
    x = ember.tensor([1.0, -2.0], device=device, requires_grad=True)
    y = ember.cond(x.sum() > 0, lambda a: a * 2, lambda a: a * 3, (x,))
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0, 3.0])
    assert ember.cond(True, lambda a, b: a + b, lambda a, b: a - b, [x, x]).shape == (2,)
    with pytest.raises(RuntimeError, match="single-element"):
        ember.cond(ember.tensor([True, False], device=device), lambda a: a, lambda a: a, (x,))
    with pytest.raises(RuntimeError, match="bool or tensor"):
        ember.cond("a", lambda a: a, lambda a: a, (x,))
    with pytest.raises(RuntimeError, match="callable"):
        ember.cond(True, 3, lambda a: a, (x,))
    with pytest.raises(RuntimeError, match="tensor leaves"):
        ember.cond(True, lambda a: a, lambda a: a, x)
    with pytest.raises(RuntimeError, match="tensor leaves"):
        ember.cond(True, lambda a: a, lambda a: a, (3,))


def test_while_loop_matches_pytorch(device, torch):
    x = np.array([1.0, 2.0, -3.0])
    i, y = ember.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2),
                            (ember.tensor(0, device=device), ember.tensor(x, device=device)))
    ti, ty = torch.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (torch.tensor(0), torch.tensor(x)))
    assert i.item() == ti.item() == 3
    np.testing.assert_allclose(_np(y), ty.numpy())
    (z,) = ember.while_loop(lambda i: i > 5, lambda i: (i - 1,), (ember.tensor(3, device=device),))
    assert z.item() == 3  # no iteration: the inputs come back
    with pytest.raises(RuntimeError, match="callable"):
        ember.while_loop(3, lambda i: (i,), (ember.tensor(0),))
    with pytest.raises(RuntimeError, match="tensor or int leaves"):
        ember.while_loop(lambda i: i < 3, lambda i: (i + 1,), ("a",))
    with pytest.raises(RuntimeError, match="number of outputs"):
        ember.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1,), (ember.tensor(0), ember.zeros(2)))
    with pytest.raises(RuntimeError, match="metadata"):
        ember.while_loop(lambda i: i < 3, lambda i: (i + 1.0,), (ember.tensor(0),))
    with pytest.raises(RuntimeError, match="cond_fn"):
        ember.while_loop(lambda i: ember.tensor([True, True]), lambda i: (i + 1,), (ember.tensor(0),))


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
    np.testing.assert_allclose(_np(E), Et.numpy(), rtol=1e-6)
    bx = _np(X) if b is None else b @ _np(X)
    np.testing.assert_allclose(a @ _np(X), bx * _np(E), atol=1e-5 * np.abs(a).max())


def test_lobpcg_eigenvalue_gradient_and_errors(device, torch):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values to iterate on")
    d = np.diag(np.arange(1.0, 13.0))
    A = ember.tensor(d, device=device, requires_grad=True)
    E, X = ember.lobpcg(A, k=2)
    np.testing.assert_allclose(_np(E), [12.0, 11.0])
    E.sum().backward()
    expected = np.zeros((12, 12))
    expected[10, 10] = expected[11, 11] = 1.0
    np.testing.assert_allclose(_np(A.grad), expected, atol=1e-6)
    with pytest.raises(ValueError, match="3 x the number"):
        ember.lobpcg(ember.eye(5, dtype=ember.float64, device=device), k=2)
    with pytest.raises(AssertionError, match="square"):
        ember.lobpcg(ember.zeros(6, 5, dtype=ember.float64, device=device), k=1)
    with pytest.raises(ValueError, match="method"):
        ember.lobpcg(ember.eye(9, dtype=ember.float64, device=device), k=1, method="fast")


# ----------------------------------------------------------------------------------------------- grad_dtype
def test_grad_dtype_casts_accumulated_gradients(device, torch):
    x = ember.ones(3, device=device, requires_grad=True)
    assert x.grad_dtype is ember.float32
    x.grad_dtype = ember.float64
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert x.grad.dtype is ember.float64
    tx = torch.ones(3, requires_grad=True)
    tx.grad_dtype = torch.float64
    (tx * 2).sum().backward()
    (tx * 2).sum().backward()
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy())
    with pytest.raises(RuntimeError, match="grad_dtype"):
        x.grad = ember.ones(3, device=device)
    with pytest.raises(RuntimeError, match="already a gradient"):
        x.grad_dtype = ember.float16
    with pytest.raises(RuntimeError, match="leaf"):
        (x * 2).grad_dtype = ember.float64
    with pytest.raises(RuntimeError, match="dtype or None"):
        x.grad_dtype = "float64"
    y = ember.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="different type"):
        y.grad = ember.ones(2, dtype=ember.float64, device=device)


def test_grad_dtype_none_accepts_a_gradient_of_any_dtype(device, torch):
    if not ember.testing.has_dtype(device, ember.float16):
        pytest.skip(f"the {device} backend has no float16")
    x = ember.ones(3, device=device, requires_grad=True)
    x.grad_dtype = None
    x.grad = ember.ones(3, dtype=ember.float16, device=device)
    assert x.grad_dtype is None and x.grad.dtype is ember.float16
    tx = torch.ones(3, requires_grad=True)
    tx.grad_dtype = None
    tx.grad = torch.ones(3, dtype=torch.float16)
    assert tx.grad_dtype is None and tx.grad.dtype is torch.float16


# ------------------------------------------------------------------------------------ linear_cross_entropy
def _lce_case(rng, probs, n=10, d=4, c=7):
    x, w, b = rng.standard_normal((n, d)), rng.standard_normal((c, d)), rng.standard_normal(c)
    if probs:
        t = rng.random((n, c))
        t /= t.sum(1, keepdims=True)
    else:
        t = rng.integers(0, c, n)
        t[3] = -100
    return x, w, b, t, rng.random(c) + 0.5


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("probs", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing,weighted", [(0.0, False), (0.2, True)])
@pytest.mark.filterwarnings("ignore:linear_cross_entropy")  # configurations the chunked path leaves to the reference
def test_linear_cross_entropy_matches_pytorch(device, torch, chunked, probs, reduction, label_smoothing, weighted):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")
    rng = np.random.default_rng(0)
    x, w, b, t, cw = _lce_case(rng, probs)
    opts = ember.nn.LinearCrossEntropyOptions(batch_chunk_size=3, chunking_method=None) if chunked else None
    X, W, B = (ember.tensor(v, device=device, requires_grad=True) for v in (x, w, b))
    tX, tW, tB = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    out = ember.nn.functional.linear_cross_entropy(
        X, W, ember.tensor(t, device=device), linear_bias=B,
        weight=ember.tensor(cw, device=device) if weighted else None, reduction=reduction,
        label_smoothing=label_smoothing, options=opts)
    ref = torch.nn.functional.linear_cross_entropy(
        tX, tW, torch.tensor(t), linear_bias=tB, weight=torch.tensor(cw) if weighted else None,
        reduction=reduction, label_smoothing=label_smoothing)
    np.testing.assert_allclose(_np(out), ref.detach().numpy(), rtol=1e-10)
    assert (type(out.grad_fn).__name__ == "LinearCrossEntropyChunkedBackward0") == (
        chunked and not probs and label_smoothing == 0)
    go = rng.standard_normal(tuple(ref.shape))
    out.backward(ember.tensor(go, device=device))
    ref.backward(torch.tensor(go))
    for e, r in ((X, tX), (W, tW), (B, tB)):
        np.testing.assert_allclose(_np(e.grad), r.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_linear_cross_entropy_reference_path_gradgradcheck(device):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")
    x = ember.randn(4, 3, dtype=ember.float64, device=device, requires_grad=True)
    w = ember.randn(5, 3, dtype=ember.float64, device=device, requires_grad=True)
    t = ember.tensor([0, 4, 2, 1], device=device)
    f = lambda a, b: ember.nn.functional.linear_cross_entropy(a, b, t)  # noqa: E731
    assert ember.autograd.gradcheck(f, (x, w))
    assert ember.autograd.gradgradcheck(f, (x, w))


def test_linear_cross_entropy_chunked_backward_once_unless_allowed(device):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")
    x = ember.randn(8, 3, device=device, requires_grad=True)
    w = ember.randn(6, 3, device=device, requires_grad=True)
    t = ember.randint(0, 6, (8,), device=device)
    F = ember.nn.functional
    loss = F.linear_cross_entropy(x, w, t, options=ember.nn.LinearCrossEntropyOptions(batch_chunk_size=2,
                                                                                        chunking_method=None))
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="allow_retain_graph"):
        loss.backward()
    g = x.grad.clone()
    x.grad = None
    loss = F.linear_cross_entropy(x, w, t, options=ember.nn.LinearCrossEntropyOptions(allow_retain_graph=True))
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(_np(x.grad), 2 * _np(g), rtol=1e-5)


def test_linear_cross_entropy_options_and_errors(torch):
    O, TO = ember.nn.LinearCrossEntropyOptions, torch.nn.LinearCrossEntropyOptions
    for kwargs in ({"acc_policy": "fast"}, {"chunking_method": "square"}, {"batch_chunk_size": 0},
                   {"chunking_method": "aspect_ratio:0"}):
        with pytest.raises(ValueError):
            TO(**kwargs)
        with pytest.raises(ValueError):
            O(**kwargs)
    for kwargs in ({}, {"chunking_method": "aspect_ratio"}, {"chunking_method": "aspect_ratio:4"},
                   {"batch_chunk_size": 16}, {"batch_chunk_size": 4096, "chunking_method": None}):
        assert O(**kwargs).chunk_size(1000, 64, 512) == TO(**kwargs)._adjust(1000, 64, 512, torch.float32) \
            .batch_chunk_size
    with pytest.raises(ValueError, match="different chunk sizes"):
        O(batch_chunk_size=3, chunking_method="aspect_ratio").chunk_size(1000, 64, 512)
    F = ember.nn.functional
    with pytest.raises(ValueError, match="reduction"):
        F.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 3), ember.tensor([0, 1]), reduction="avg")
    with pytest.raises(RuntimeError, match="linear_weight"):
        F.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 2), ember.tensor([0, 1]))
    with pytest.raises(IndexError, match="out of bounds"):
        F.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 3), ember.tensor([0, 9]), options=O())
    for kw in ({"label_smoothing": 0.1}, {}):
        t = ember.tensor([0, 1]) if kw else ember.full((2, 4), 0.25)
        with pytest.warns(UserWarning, match="options`` ignored"):
            F.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 3), t, options=O(), **kw)


def test_linear_cross_entropy_loss_module_matches_pytorch(device, torch):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")
    m = ember.nn.LinearCrossEntropyLoss(5, 10, out_features=(4, 3), bias=True).to(device)
    tm = torch.nn.LinearCrossEntropyLoss(5, 10, out_features=(4, 3), bias=True).double()
    assert m.linear.weight.shape == tuple(tm.linear.weight.shape) == (120, 5)
    with torch.no_grad():
        tm.linear.weight.copy_(torch.tensor(_np(m.linear.weight), dtype=torch.float64))
        tm.linear.bias.copy_(torch.tensor(_np(m.linear.bias), dtype=torch.float64))
    x = np.random.default_rng(0).standard_normal((2, 5))
    t = np.random.default_rng(1).integers(0, 10, (2, 4, 3))
    out = m(ember.tensor(x, dtype=ember.float32, device=device), ember.tensor(t, device=device))
    ref = tm(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # K-dimensional losses take the reference path, with a warning
        out2 = ember.nn.LinearCrossEntropyLoss(5, 10, out_features=(2,), options=ember.nn.LinearCrossEntropyOptions())
    assert out2.options is not None
    with pytest.raises(RuntimeError, match="weight shape"):
        ember.nn.LinearCrossEntropyLoss(5, 10, weight=ember.ones(3))
    with pytest.raises(RuntimeError, match="label_smoothing"):
        ember.nn.LinearCrossEntropyLoss(5, 10, label_smoothing=2.0)


# --------------------------------------------------------------------------------------------- nn.attention
def test_sdpa_kernel_sets_and_restores_the_switches(torch):
    from ember.nn.attention import SDPBackend, sdpa_kernel

    from torch.nn.attention import SDPBackend as TB
    assert {k: int(v) for k, v in SDPBackend.__members__.items()} == {k: int(v) for k, v in TB.__members__.items()}
    cuda = ember.backends.cuda
    before = (cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(), cuda.mem_efficient_sdp_enabled())
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION]) as r:
        assert r == {}
        assert (cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(), cuda.mem_efficient_sdp_enabled()) == \
            (False, True, True)
        q = ember.randn(1, 2, 3, 4)
        assert ember.nn.functional.scaled_dot_product_attention(q, q, q).shape == (1, 2, 3, 4)
    assert (cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(), cuda.mem_efficient_sdp_enabled()) == before
    with pytest.raises(AssertionError, match="SDPBackend"):
        with sdpa_kernel("math"):
            pass
    assert ember.nn.attention.can_use_flash_attention(None) is False


# ----------------------------------------------------------------------------------------------------- optim
def test_swap_in_optimizer_params_and_state_matches_pytorch(device, torch):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")

    def run(lib, dev):
        kw = {"device": dev} if dev else {}
        w = lib.ones(2, requires_grad=True, **kw)
        opt = lib.optim.SGD([w], lr=0.5, momentum=0.9)
        w.grad = lib.ones(2, **kw)
        opt.step()
        other = lib.zeros(2, requires_grad=True, **kw)
        other.grad = lib.ones(2, **kw)
        sd = opt.state_dict()
        sd["param_groups"][0]["lr"] = 0.25
        with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, sd):
            assert opt.param_groups[0]["params"][0] is other and opt.param_groups[0]["lr"] == 0.25
            opt.step()
        assert opt.param_groups[0]["params"][0] is w and opt.param_groups[0]["lr"] == 0.5
        return other.detach(), w.detach()

    for e, t in zip(run(ember, device), run(torch, None)):
        np.testing.assert_allclose(_np(e), t.numpy())


def test_swap_in_optimizer_params_and_state_checks():
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1)
    with pytest.raises(RuntimeError, match="initialized optimizer state"):
        with ember.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, opt.state_dict()):
            pass
    opt = ember.optim.Adam([w], lr=0.1)
    w.grad = ember.ones(2)
    opt.step()
    sd = opt.state_dict()
    with pytest.raises(RuntimeError, match="keys to exactly match"):
        bad = {"state": sd["state"], "param_groups": [dict(sd["param_groups"][0], extra=1)]}
        with ember.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, bad):
            pass
    with pytest.raises(RuntimeError, match="extra keys"):
        bad = {"state": {**sd["state"], 5: {}}, "param_groups": sd["param_groups"]}
        with ember.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, bad):
            pass
    with pytest.raises(RuntimeError, match="ordering"):
        with ember.optim.swap_in_optimizer_params_and_state(opt, {}, sd):
            pass
