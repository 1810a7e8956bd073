"""ember.nn.functional: forward and gradients against torch.nn.functional, and float64 gradcheck/gradgradcheck."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close, to_numpy

from nn_helpers import TOL

R = np.random.default_rng(0)


def _arr(shape, dtype="float64", lo=None):
    a = R.standard_normal(shape)
    if lo is not None:
        a = np.abs(a) + lo
    return a.astype(dtype)


def _int(shape, high):
    return R.integers(0, high, shape)


# (id, function(F, *tensors) -> tensor, inputs: list of arrays (float: differentiable), gradgrad?)
ROWS = [
    ("conv1d", lambda f, x, w, b: f.conv1d(x, w, b, stride=2, padding=1), [(2, 3, 7), (4, 3, 3), (4,)], True),
    ("conv2d_groups_dil", lambda f, x, w: f.conv2d(x, w, None, 1, 2, 2, 2), [(1, 4, 6, 5), (2, 2, 3, 2)], True),
    ("conv2d_stride", lambda f, x, w, b: f.conv2d(x, w, b, (2, 1), (1, 0)), [(2, 2, 5, 5), (3, 2, 3, 3), (3,)], True),
    ("conv3d", lambda f, x, w: f.conv3d(x, w, padding=1), [(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)], False),
    ("conv_transpose2d", lambda f, x, w, b: f.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
     [(1, 2, 3, 3), (2, 3, 3, 3), (3,)], True),
    ("conv_transpose1d_groups", lambda f, x, w: f.conv_transpose1d(x, w, stride=3, groups=2),
     [(2, 4, 3), (4, 1, 2)], False),
    ("max_pool2d", lambda f, x: f.max_pool2d(x, 2, 1, padding=1), [(1, 2, 4, 5)], True),
    ("max_pool1d_dil", lambda f, x: f.max_pool1d(x, 2, 2, dilation=2, ceil_mode=True), [(2, 2, 8)], False),
    ("max_pool3d", lambda f, x: f.max_pool3d(x, 2), [(1, 2, 4, 4, 4)], False),
    ("avg_pool2d", lambda f, x: f.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [(1, 2, 5, 6)], True),
    ("avg_pool2d_div", lambda f, x: f.avg_pool2d(x, 2, divisor_override=3), [(1, 2, 4, 4)], False),
    ("avg_pool3d", lambda f, x: f.avg_pool3d(x, 2, 1), [(1, 1, 3, 3, 3)], False),
    ("adaptive_avg_pool2d", lambda f, x: f.adaptive_avg_pool2d(x, (2, 3)), [(2, 2, 5, 7)], True),
    ("adaptive_max_pool2d", lambda f, x: f.adaptive_max_pool2d(x, 3), [(2, 2, 7, 5)], True),
    ("adaptive_max_pool1d", lambda f, x: f.adaptive_max_pool1d(x, 4), [(2, 2, 9)], False),
    ("softmax", lambda f, x: f.softmax(x, 1), [(3, 5)], True),
    ("log_softmax", lambda f, x: f.log_softmax(x, -1), [(2, 3, 4)], True),
    ("softmin", lambda f, x: f.softmin(x, 0), [(3, 4)], False),
    ("sigmoid", lambda f, x: f.sigmoid(x), [(3, 4)], True),
    ("tanh", lambda f, x: f.tanh(x), [(3, 4)], True),
    ("softplus", lambda f, x: f.softplus(x, 2.0, 1.0), [(3, 4)], True),
    ("hardtanh", lambda f, x: f.hardtanh(x, -0.5, 0.7), [(3, 4)], False),
    ("elu", lambda f, x: f.elu(x, 0.7), [(3, 4)], True),
    ("selu", lambda f, x: f.selu(x), [(3, 4)], False),
    ("celu", lambda f, x: f.celu(x, 1.3), [(3, 4)], False),
    ("leaky_relu", lambda f, x: f.leaky_relu(x, 0.2), [(3, 4)], False),
    ("prelu", lambda f, x, w: f.prelu(x, w), [(2, 3, 4), (3,)], False),
    ("silu", lambda f, x: f.silu(x), [(3, 4)], True),
    ("mish", lambda f, x: f.mish(x), [(3, 4)], True),
    ("gelu_tanh", lambda f, x: f.gelu(x, approximate="tanh"), [(3, 4)], True),
    ("hardswish", lambda f, x: f.hardswish(x), [(3, 4)], False),
    ("logsigmoid", lambda f, x: f.logsigmoid(x), [(3, 4)], True),
    ("glu", lambda f, x: f.glu(x, 1), [(2, 6)], True),
    ("linear", lambda f, x, w, b: f.linear(x, w, b), [(2, 3, 4), (5, 4), (5,)], True),
    ("bilinear", lambda f, x, y, w, b: f.bilinear(x, y, w, b), [(3, 2), (3, 4), (5, 2, 4), (5,)], True),
    ("pad_constant", lambda f, x: f.pad(x, (1, 2, 0, 1), value=0.5), [(1, 2, 3, 3)], False),
    ("pad_reflect", lambda f, x: f.pad(x, (2, 1, 1, 2), mode="reflect"), [(1, 2, 4, 4)], False),
    ("pad_replicate", lambda f, x: f.pad(x, (2, 1), mode="replicate"), [(1, 2, 4)], False),
    ("pad_circular", lambda f, x: f.pad(x, (1, 2, 2, 1), mode="circular"), [(1, 1, 3, 4)], False),
    ("pad_reflect_widest", lambda f, x: f.pad(x, (3, 3), mode="reflect"), [(1, 2, 4)], False),
    ("pad_circular_whole", lambda f, x: f.pad(x, (4, 4), mode="circular"), [(1, 2, 4)], False),
    ("pad_replicate_long", lambda f, x: f.pad(x, (5, 0), mode="replicate"), [(1, 2, 4)], False),
    ("unfold", lambda f, x: f.unfold(x, (2, 3), padding=1, stride=2), [(2, 2, 4, 5)], False),
    ("fold", lambda f, x: f.fold(x, (4, 5), 2, stride=(1, 2)), [(2, 8, 6)], False),
    ("interpolate_nearest", lambda f, x: f.interpolate(x, scale_factor=1.5), [(1, 2, 4, 4)], False),
    ("interpolate_linear", lambda f, x: f.interpolate(x, size=7, mode="linear"), [(1, 2, 4)], False),
    ("interpolate_bilinear", lambda f, x: f.interpolate(x, scale_factor=(2, 1.5), mode="bilinear",
                                                        align_corners=True), [(1, 2, 3, 4)], False),
    ("interpolate_nearest_1d_size", lambda f, x: f.interpolate(x, size=7), [(2, 3, 5)], False),
    ("interpolate_nearest_3d_down", lambda f, x: f.interpolate(x, size=(2, 3, 1)), [(1, 2, 3, 5, 4)], False),
    ("interpolate_linear_scale", lambda f, x: f.interpolate(x, scale_factor=0.6, mode="linear"), [(2, 1, 6)],
     False),
    ("interpolate_trilinear", lambda f, x: f.interpolate(x, size=(3, 4, 2), mode="trilinear"), [(1, 2, 2, 3, 3)],
     False),
    ("interpolate_area", lambda f, x: f.interpolate(x, size=(3, 2), mode="area"), [(1, 2, 5, 4)], False),
    ("pixel_shuffle", lambda f, x: f.pixel_shuffle(x, 3), [(1, 9, 2, 2)], False),
    ("batch_norm_train", lambda f, x, w, b: f.batch_norm(x, None, None, w, b, True), [(4, 3, 2), (3,), (3,)], True),
    ("layer_norm", lambda f, x, w, b: f.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)], True),
    ("group_norm", lambda f, x: f.group_norm(x, 2), [(2, 4, 3)], True),
    ("instance_norm", lambda f, x: f.instance_norm(x), [(2, 3, 5)], False),
    ("normalize", lambda f, x: f.normalize(x, dim=-1), [(3, 4)], True),
    ("normalize_p1", lambda f, x: f.normalize(x, p=1, dim=0), [(3, 4)], False),
    ("cosine_similarity", lambda f, x, y: f.cosine_similarity(x, y, dim=1), [(3, 4), (3, 4)], True),
    ("pairwise_distance", lambda f, x, y: f.pairwise_distance(x, y), [(3, 4), (3, 4)], True),
    ("sdpa", lambda f, q, k, v: f.scaled_dot_product_attention(q, k, v), [(2, 3, 4), (2, 5, 4), (2, 5, 2)], True),
    ("sdpa_causal", lambda f, q, k, v: f.scaled_dot_product_attention(q, k, v, is_causal=True),
     [(1, 4, 3), (1, 4, 3), (1, 4, 2)], False),
]

LOSSES = [
    ("mse", lambda f, x, y: f.mse_loss(x, y), [(3, 4), (3, 4)]),
    ("l1_sum", lambda f, x, y: f.l1_loss(x, y, reduction="sum"), [(3, 4), (3, 4)]),
    ("smooth_l1", lambda f, x, y: f.smooth_l1_loss(x, y, beta=0.5, reduction="none"), [(3, 4), (3, 4)]),
    ("huber", lambda f, x, y: f.huber_loss(x, y, delta=0.7), [(3, 4), (3, 4)]),
    # weighted: 'mean' divides by the weights' sum for squared and absolute errors, by the count for Huber
    ("mse_weight", lambda f, x, y, w: f.mse_loss(x, y, weight=w.abs() + 0.1), [(3, 4), (3, 4), (3, 4)]),
    ("mse_weight_none", lambda f, x, y, w: f.mse_loss(x, y, reduction="none", weight=w), [(3, 4), (3, 4), (3, 4)]),
    ("l1_weight", lambda f, x, y, w: f.l1_loss(x, y, weight=w.abs() + 0.1), [(3, 4), (3, 4), (3, 4)]),
    ("l1_weight_sum", lambda f, x, y, w: f.l1_loss(x, y, reduction="sum", weight=w), [(3, 4), (3, 4), (3, 4)]),
    ("huber_weight", lambda f, x, y, w: f.huber_loss(x, y, delta=0.7, weight=w.abs() + 0.1),
     [(3, 4), (3, 4), (3, 4)]),
    ("huber_weight_sum", lambda f, x, y, w: f.huber_loss(x, y, reduction="sum", weight=w), [(3, 4), (3, 4), (3, 4)]),
    ("bce", lambda f, x, y, w: f.binary_cross_entropy(f.sigmoid(x), f.sigmoid(y), w), [(3, 4), (3, 4), (4,)]),
    ("bce_logits", lambda f, x, y, pw: f.binary_cross_entropy_with_logits(x * 30, f.sigmoid(y), pos_weight=pw),
     [(3, 4), (3, 4), (4,)]),
    ("kl_div", lambda f, x, y: f.kl_div(f.log_softmax(x, 1), f.softmax(y, 1), reduction="batchmean"),
     [(3, 4), (3, 4)]),
    ("kl_div_log_target", lambda f, x, y: f.kl_div(x, y, reduction="sum", log_target=True), [(3, 4), (3, 4)]),
    ("margin_ranking", lambda f, x, y, t: f.margin_ranking_loss(x, y, t.sign(), margin=0.1), [(5,), (5,), (5,)]),
    ("hinge_embedding", lambda f, x, t: f.hinge_embedding_loss(x, t.sign(), margin=0.5), [(5,), (5,)]),
    ("cosine_embedding", lambda f, x, y, t: f.cosine_embedding_loss(x, y, t.sign(), margin=0.2),
     [(4, 3), (4, 3), (4,)]),
    ("triplet", lambda f, a, p, n: f.triplet_margin_loss(a, p, n, margin=2.0, swap=True), [(4, 3), (4, 3), (4, 3)]),
    ("poisson_nll", lambda f, x, y: f.poisson_nll_loss(x, y.abs() * 3, full=True), [(3, 4), (3, 4)]),
    ("poisson_nll_lin", lambda f, x, y: f.poisson_nll_loss(x.abs() + 0.1, y.abs(), log_input=False), [(3, 4), (3, 4)]),
    ("gaussian_nll", lambda f, x, y, v: f.gaussian_nll_loss(x, y, v.abs() + 0.1, full=True), [(3, 4), (3, 4), (3,)]),
]

# class-index losses: (id, fn(f, logits, target, weight)); target int64 (N,) or (N, d); -100 entries are ignored
CLASS_LOSSES = [
    ("ce", lambda f, x, t, w: f.cross_entropy(x, t)),
    ("ce_weight_ignore", lambda f, x, t, w: f.cross_entropy(x, t, w, ignore_index=2)),
    ("ce_smoothing", lambda f, x, t, w: f.cross_entropy(x, t, w, label_smoothing=0.2)),
    ("ce_smoothing_ignore_sum", lambda f, x, t, w: f.cross_entropy(x, t, None, ignore_index=1, reduction="sum",
                                                                   label_smoothing=0.1)),
    ("ce_none", lambda f, x, t, w: f.cross_entropy(x, t, w, reduction="none", label_smoothing=0.3)),
    ("nll", lambda f, x, t, w: f.nll_loss(f.log_softmax(x, 1), t, w)),
    ("nll_ignore_none", lambda f, x, t, w: f.nll_loss(f.log_softmax(x, 1), t, ignore_index=0, reduction="none")),
]


CONSTANT = {"bce": {2}, "bce_logits": {2}}  # inputs (weights) that are not differentiated


def _run(torch, fn, arrays, device, dtype, const=()):
    rg = [a.dtype.kind == "f" and i not in const for i, a in enumerate(arrays)]
    e_in = [ember.tensor(a.astype(dtype) if a.dtype.kind == "f" else a, device=device, requires_grad=r)
            for a, r in zip(arrays, rg)]
    t_in = [torch.tensor(a.astype(dtype) if a.dtype.kind == "f" else a, requires_grad=r) for a, r in zip(arrays, rg)]
    eo, to = fn(F, *e_in), fn(torch.nn.functional, *t_in)
    tol = TOL[dtype]
    assert_close(eo, to, **tol)
    g = R.standard_normal(tuple(to.shape)).astype(dtype)
    eo.backward(ember.tensor(g, device=device))
    to.backward(torch.tensor(g))
    for i, (e, t) in enumerate(zip(e_in, t_in)):
        if t.requires_grad:
            assert_close(e.grad, t.grad, msg=f"grad of input {i}", **tol)
    return e_in


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes,_gg", ROWS, ids=[r[0] for r in ROWS])
def test_functional_matches_torch(torch, device, dtype, name, fn, shapes, _gg):
    _run(torch, fn, [_arr(s) for s in shapes], device, dtype)


@pytest.mark.parametrize("name,fn,shapes,gg", ROWS, ids=[r[0] for r in ROWS])
def test_functional_gradcheck(device, name, fn, shapes, gg):
    if "max_pool" in name or "adaptive_max" in name:
        arrays = [R.permutation(np.prod(s)).reshape(s).astype("float64") / 7 for s in shapes]  # no ties
    else:
        arrays = [_arr(s) for s in shapes]
    inputs = tuple(ember.tensor(a, device=device, requires_grad=True) for a in arrays)

    def f(*xs):
        return fn(F, *xs)

    assert gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)
    if gg:
        assert gradgradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes", LOSSES, ids=[r[0] for r in LOSSES])
def test_loss_matches_torch(torch, device, dtype, name, fn, shapes):
    _run(torch, fn, [_arr(s) for s in shapes], device, dtype, CONSTANT.get(name, ()))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("spatial", [False, True])
@pytest.mark.parametrize("name,fn", CLASS_LOSSES, ids=[r[0] for r in CLASS_LOSSES])
def test_class_losses_match_torch(torch, device, dtype, spatial, name, fn):
    shape, tshape = ((3, 4, 2, 3), (3, 2, 3)) if spatial else ((6, 4), (6,))
    x, t, w = _arr(shape), _int(tshape, 4), _arr((4,), lo=0.1)
    t.reshape(-1)[:2] = [2, 1]
    e_in = _run(torch, lambda f, x_, w_: fn(f, x_, ember.tensor(t, device=device) if f is F else torch.tensor(t),
                                            w_), [x, w], device, dtype, {1})
    assert e_in[0].grad is not None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_probabilities(torch, device, dtype):
    x, p, w = _arr((5, 4)), _arr((5, 4)), _arr((4,), lo=0.1)
    for kw in ({}, {"label_smoothing": 0.25}, {"reduction": "sum"}):
        _run(torch, lambda f, a, b, c, kw=kw: f.cross_entropy(a, f.softmax(b, 1), c, **kw), [x, p, w], device, dtype,
             {2})


def test_loss_gradcheck(device):
    for name, fn, shapes in LOSSES:
        const = CONSTANT.get(name, ())
        inputs = tuple(ember.tensor(_arr(s), device=device, requires_grad=i not in const) for i, s in enumerate(shapes))
        assert gradcheck(lambda *xs, fn=fn: fn(F, *xs), inputs)
    t = ember.tensor([0, 3, 1, 1], device=device)
    x = ember.tensor(_arr((4, 5)), device=device, requires_grad=True)
    w = ember.tensor(_arr((5,), lo=0.1), device=device)
    assert gradgradcheck(lambda a: F.cross_entropy(a, t, w, ignore_index=1, label_smoothing=0.1), (x,))


def test_softmax_is_stable(device):
    x = ember.tensor([[1000.0, 0.0, -1000.0]], device=device)
    np.testing.assert_allclose(to_numpy(F.softmax(x, 1)), [[1.0, 0.0, 0.0]])
    np.testing.assert_allclose(to_numpy(F.log_softmax(x, 1)), [[0.0, -1000.0, -2000.0]])
    assert np.isfinite(to_numpy(F.sigmoid(ember.tensor([-1e4, 1e4], device=device)))).all()
    big = ember.tensor([800.0], device=device, requires_grad=True)
    F.binary_cross_entropy_with_logits(big, ember.tensor([0.0], device=device)).backward()
    assert np.isfinite(to_numpy(big.grad)).all()


def test_one_hot_and_embedding_functional(torch, device):
    idx = np.array([[0, 3], [2, 1]])
    np.testing.assert_array_equal(to_numpy(F.one_hot(ember.tensor(idx, device=device), 5)),
                                  torch.nn.functional.one_hot(torch.tensor(idx), 5).numpy())
    assert F.one_hot(ember.tensor(idx, device=device)).shape == (2, 2, 4)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(ember.tensor(idx, device=device), 3)
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(ember.tensor([5], device=device), ember.zeros(3, 2, device=device))


def test_dropout_functional_respects_training_flag(device):
    x = ember.ones(100, device=device)
    assert F.dropout(x, 0.2, False) is x                 # the seeds: pass self.training
    y = to_numpy(F.dropout(x, 0.2, True))
    assert (y == 0).any() and np.allclose(y[y > 0], 1.25)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)


def _unwarned(fn, *args):
    """``fn(*args)`` with its warnings (PyTorch's broadcast warning of the losses) silenced."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


@pytest.mark.parametrize("call,msg", [
    (lambda d: F.conv2d(ember.zeros(1, 3, 8, 8, device=d), ember.zeros(6, 1, 5, 5, device=d)),
     "expected input[1, 3, 8, 8] to have 1 channels, but got 3 channels instead"),
    (lambda d: F.conv2d(ember.zeros(3, 8, device=d), ember.zeros(6, 1, 5, 5, device=d)),
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 8]"),
    (lambda d: F.conv2d(ember.zeros(1, 1, 3, 3, device=d), ember.zeros(6, 1, 5, 5, device=d)),
     "Kernel size can't be greater than actual input size"),
    (lambda d: F.linear(ember.zeros(2, 3, device=d), ember.zeros(4, 5, device=d)),
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)"),
    (lambda d: F.max_pool2d(ember.zeros(1, 1, 4, 4, device=d), 2, padding=2), "pad should be at most half"),
    (lambda d: F.cross_entropy(ember.zeros(2, 3, device=d), ember.tensor([0, 3], device=d)),
     "Target 3 is out of bounds"),
    (lambda d: _unwarned(F.mse_loss, ember.zeros(2, device=d), ember.zeros(3, device=d)),
     "size of tensor a (2) must match the size of tensor b (3)"),
    (lambda d: F.mse_loss(ember.zeros(3, device=d), ember.zeros(3, device=d), weight=ember.ones(2, device=d)),
     "Weights and input must have the same size."),
    (lambda d: F.l1_loss(ember.zeros(3, device=d), ember.zeros(3, device=d), reduction="avg",
                         weight=ember.ones(3, device=d)),
     "Invalid reduction mode: avg. Expected one of 'none', 'mean', 'sum'."),
    (lambda d: F.embedding_bag(ember.tensor([[0, 1]], device=d), ember.zeros(3, 2, device=d), mode="max",
                               scale_grad_by_freq=True),
     "max mode does not support scaling the gradient by the frequency"),
    (lambda d: F.pad(ember.zeros(1, 2, device=d), (3, 3), mode="reflect"), "Padding size should be less"),
    (lambda d: F.layer_norm(ember.zeros(2, 3, device=d), (4,)), "expected input with shape [*, 4]"),
])
def test_bad_input_errors(device, call, msg):
    with pytest.raises((RuntimeError, ValueError, IndexError)) as info:
        call(device)
    assert msg in str(info.value)
