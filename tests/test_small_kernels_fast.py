"""Small-input paths against PyTorch: mse_loss and smooth_l1_loss as one node each (values, gradients, second
order, grad_fn names and saved values, NaN and inf, the composed form where it is kept), cat and stack of many
small tensors (values, promotion, gradients, shape errors, 1-D empty tensors), the mean of small arrays (values,
dtypes, empty input, integers refused) and from_numpy (shared memory, its refusals)."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

torch = pytest.importorskip("torch")

LOSSES = [("mse_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
          ("smooth_l1_loss", {"beta": 0.0})]


def _pair(lib, device, dtype="float64", rg=True):
    x = np.array([[0.3, -2.0, 1.5], [0.25, 0.0, -0.1]])
    t = np.array([[0.0, 0.5, 0.0], [0.5, 0.0, 0.2]])
    kw = {} if lib is torch else {"device": device}
    return (lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=rg, **kw),
            lib.tensor(t, dtype=getattr(lib, dtype), requires_grad=rg, **kw))


@pytest.mark.parametrize("name,kw", LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pointwise_loss_node_values_grads_names_saved(device, name, kw, reduction):
    res = []
    for lib in (ember, torch):
        x, t = _pair(lib, device)
        r = getattr(lib.nn.functional, name)(x, t, reduction=reduction, **kw)
        node = r.grad_fn
        saved = {k: getattr(node, k) for k in ("_saved_reduction", "_saved_beta") if hasattr(node, k)}
        gx, gt = lib.autograd.grad(r.sum(), (x, t), create_graph=True)
        (ggx,) = lib.autograd.grad((gx * gx).sum() + gt.sum(), x, allow_unused=True)
        if lib is torch and ggx is not None and ggx._is_zerotensor():  # (l1's: PyTorch's lazy zeros)
            ggx = torch.zeros(ggx.shape, dtype=ggx.dtype)
        kept = [getattr(node, k, None) for k in ("_saved_self", "_saved_target")]
        res.append((r, gx, gt, ggx, type(node).__name__, saved, *kept, x, t))
    (r, gx, gt, ggx, nm, saved, ss, st, x, t), want = res
    for a, b in zip((r, gx, gt), want[:3]):
        assert_close(a, b, rtol=1e-12, atol=1e-14)
    assert (ggx is None) == (want[3] is None)
    if ggx is not None:
        assert_close(ggx, want[3], rtol=1e-12, atol=1e-14)
    assert nm == want[4] and saved == want[5]
    assert r.dtype == ember.float64
    if kw.get("beta") != 0:  # (beta=0 is l1_loss, composed, in both)
        assert ss is x and st is t and nm in ("MseLossBackward0", "SmoothL1LossBackward0")


@pytest.mark.parametrize("name,kw", LOSSES[:2])
def test_pointwise_loss_gradcheck(device, name, kw):
    x, t = _pair(ember, device)
    f = getattr(ember.nn.functional, name)
    assert ember.autograd.gradcheck(lambda a, b: f(a, b, **kw), (x, t))
    assert ember.autograd.gradgradcheck(lambda a, b: f(a, b, reduction="none", **kw), (x, t))


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "l1_loss"])
def test_pointwise_loss_nonfinite_empty_and_errors(device, name):
    vals = [np.nan, np.inf, -np.inf, 1.0, 0.0]
    out = []
    for lib in (ember, torch):
        kw = {} if lib is torch else {"device": device}
        x = lib.tensor(vals, dtype=lib.float32, requires_grad=True, **kw)
        t = lib.tensor([0.0, np.inf, 1.0, np.nan, 0.0], dtype=lib.float32, **kw)
        f = getattr(lib.nn.functional, name)
        r = f(x, t, reduction="none")
        (g,) = lib.autograd.grad(r.sum(), x)
        e = f(lib.zeros(0, requires_grad=True, **kw), lib.zeros(0, **kw))
        with pytest.raises(ValueError, match="not a valid value for reduction"):
            f(x, t, reduction="avg")
        out.append((r, g, e))
    for a, b in zip(*out):
        assert_close(a, b)  # (NaN where NaN)


def test_pointwise_loss_mixed_dtype_weight_and_broadcast_keep_the_composed_form(device):
    res = []
    for lib in (ember, torch):
        x, t = _pair(lib, device, "float32")
        r1 = lib.nn.functional.mse_loss(x, t.double())  # promoted, as PyTorch's
        with pytest.warns(UserWarning, match="different to the input size"):
            r2 = lib.nn.functional.smooth_l1_loss(x, t[0])
        g = lib.autograd.grad(r1 + r2, x)[0]
        res.append((r1, r2, g))
    for a, b in zip(*res):
        assert_close(a, b, rtol=1e-6, atol=1e-6)
    assert res[0][0].dtype == ember.float64


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_cat_stack_of_many_small_tensors(device, op):
    vals = np.arange(60, dtype=np.float64).reshape(20, 3) / 7
    out = []
    for lib in (ember, torch):
        kw = {} if lib is torch else {"device": device}
        ts = [lib.tensor(v, requires_grad=True, **kw) for v in vals]
        r = getattr(lib, op)(ts)
        r1 = getattr(lib, op)(ts, 1 if op == "stack" else -1)
        (g,) = lib.autograd.grad((r * lib.arange(r.numel(), dtype=r.dtype, **kw).reshape(r.shape)).sum(), ts[7])
        ints = getattr(lib, op)([lib.tensor([1, 2], **kw), lib.tensor([3.5, 4.0], **kw)])  # promoted
        zs = getattr(lib, op)([lib.tensor(float(i), **kw) for i in range(5)] if op == "stack" else
                              [lib.ones(2, 2, **kw), lib.zeros(0, **kw), lib.ones(1, 2, **kw)])  # 1-D empty skipped
        out.append((r, r1, g, ints, zs))
    for a, b in zip(*out):
        assert_close(a, b)
    assert out[0][3].dtype == ember.float32 and tuple(out[0][4].shape) == tuple(out[1][4].shape)


def test_cat_stack_shape_errors(device):
    a, b = ember.ones(2, 3, device=device), ember.ones(2, 4, device=device)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0. Expected size 3 "
                                           "but got size 4 for tensor number 2"):
        ember.cat([a, a, b])
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 and 1"):
        ember.cat([a, ember.ones(3, device=device)])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2, 3\] at "
                                           r"entry 0 and \[2, 4\] at entry 1"):
        ember.stack([a, b])
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        ember.stack([a, 1.0])
    with pytest.raises(ValueError, match="expected a non-empty list"):
        ember.cat([])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_mean_of_small_arrays(device, dtype):
    x0 = np.random.default_rng(0).standard_normal((4, 5)) * 10
    out = []
    for lib in (ember, torch):
        kw = {} if lib is torch else {"device": device}
        x = lib.tensor(x0, dtype=getattr(lib, dtype), **kw)
        e = lib.zeros(0, 3, dtype=getattr(lib, dtype), **kw)
        out.append((x.mean(), x.mean(1), x.mean((0, 1), keepdim=True), x.mean(0, keepdim=True), e.mean(),
                    e.mean(1)))
    for a, b in zip(*out):
        assert a.dtype == getattr(ember, dtype) and tuple(a.shape) == tuple(b.shape)
        assert_close(a, b, rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        ember.ones(3, dtype=ember.int32, device=device).mean()


def test_from_numpy_shares_memory_and_refuses():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.from_numpy(a)
    t[0, 0] = -1.0
    assert a[0, 0] == -1.0 and t.dtype == ember.float32 and t.device.type == "cpu"
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(a[:, ::-1])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type uint16"):
        ember.from_numpy(a.astype(np.uint16))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1.0])
