"""The nn ops shown as ``ember.*`` and ``Tensor.*``: each exists in PyTorch under the same namespace, takes
PyTorch's ``torch.<name>`` arguments, and gives what ``F.<name>`` (and torch) give on the same input."""
import inspect
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import registry
from ember.ops import nn as ops_nn
from ember.ops import nn_conv, nn_loss
from ember.testing import assert_close

R = np.random.default_rng(0)


def _f(*shape):
    return R.standard_normal(shape)


def _pos(*shape):
    return np.abs(R.standard_normal(shape)) + 0.1


def _unit(*shape):
    return R.uniform(0.05, 0.95, shape)


def _sign(*shape):
    return np.where(R.standard_normal(shape) > 0, 1.0, -1.0)


def _i(values):
    return np.array(values, dtype=np.int64)


# (id, torch-namespace name, inputs, top(m, *xs): the call as ember.<name> / torch.<name>, fn(F, *xs): the
# same through nn.functional, or None where the top-level form has no functional twin (relu_ compares to relu))
ROWS = [
    ("softmax", "softmax", [_f(3, 4)], lambda m, x: m.softmax(x, 1), lambda f, x: f.softmax(x, 1)),
    ("softmax_dtype", "softmax", [_f(3, 4).astype(np.float32)], lambda m, x: m.softmax(x, 0, m.float64),
     lambda f, x: f.softmax(x, 0, dtype=ember.float64)),
    ("log_softmax", "log_softmax", [_f(3, 4)], lambda m, x: m.log_softmax(x, 0), lambda f, x: f.log_softmax(x, 0)),
    ("conv1d", "conv1d", [_f(2, 3, 7), _f(4, 3, 3), _f(4)], lambda m, x, w, b: m.conv1d(x, w, b, 2, 1),
     lambda f, x, w, b: f.conv1d(x, w, b, stride=2, padding=1)),
    ("conv2d", "conv2d", [_f(1, 4, 5, 5), _f(2, 2, 3, 3), _f(2)], lambda m, x, w, b: m.conv2d(x, w, b, 1, 1, 1, 2),
     lambda f, x, w, b: f.conv2d(x, w, b, padding=1, groups=2)),
    ("conv2d_same", "conv2d", [_f(1, 2, 5, 4), _f(3, 2, 3, 3)], lambda m, x, w: m.conv2d(x, w, None, 1, "same"),
     lambda f, x, w: f.conv2d(x, w, padding="same")),
    ("conv3d", "conv3d", [_f(1, 2, 3, 3, 3), _f(2, 2, 2, 2, 2)], lambda m, x, w: m.conv3d(x, w, None, 1, 1),
     lambda f, x, w: f.conv3d(x, w, padding=1)),
    ("conv_transpose1d", "conv_transpose1d", [_f(2, 4, 3), _f(4, 1, 2)],
     lambda m, x, w: m.conv_transpose1d(x, w, None, 3, 0, 0, 2), lambda f, x, w: f.conv_transpose1d(x, w, stride=3,
                                                                                                    groups=2)),
    ("conv_transpose2d", "conv_transpose2d", [_f(1, 2, 3, 3), _f(2, 3, 3, 3), _f(3)],
     lambda m, x, w, b: m.conv_transpose2d(x, w, b, 2, 1, 1),
     lambda f, x, w, b: f.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)),
    ("conv_transpose3d", "conv_transpose3d", [_f(1, 2, 2, 2, 2), _f(2, 1, 2, 2, 2)],
     lambda m, x, w: m.conv_transpose3d(x, w, None, 1, 0, 0, 1, 2), lambda f, x, w: f.conv_transpose3d(x, w,
                                                                                                      dilation=2)),
    ("max_pool1d", "max_pool1d", [_f(2, 2, 8)], lambda m, x: m.max_pool1d(x, 2, 2, 0, 2, True),
     lambda f, x: f.max_pool1d(x, 2, 2, dilation=2, ceil_mode=True)),
    ("max_pool2d", "max_pool2d", [_f(1, 2, 4, 5)], lambda m, x: m.max_pool2d(x, 2, 1, 1),
     lambda f, x: f.max_pool2d(x, 2, 1, padding=1)),
    ("max_pool3d", "max_pool3d", [_f(1, 2, 4, 4, 4)], lambda m, x: m.max_pool3d(x, 2),
     lambda f, x: f.max_pool3d(x, 2)),
    ("avg_pool1d", "avg_pool1d", [_f(2, 3, 7)], lambda m, x: m.avg_pool1d(x, 3, 2, 1, False, False),
     lambda f, x: f.avg_pool1d(x, 3, 2, 1, count_include_pad=False)),
    ("adaptive_avg_pool1d", "adaptive_avg_pool1d", [_f(2, 3, 7)], lambda m, x: m.adaptive_avg_pool1d(x, 3),
     lambda f, x: f.adaptive_avg_pool1d(x, 3)),
    ("adaptive_max_pool1d", "adaptive_max_pool1d", [_f(2, 3, 7)], lambda m, x: m.adaptive_max_pool1d(x, 3),
     lambda f, x: f.adaptive_max_pool1d(x, 3, return_indices=True)),
    ("dropout_eval", "dropout", [_f(3, 4)], lambda m, x: m.dropout(x, 0.4, False),
     lambda f, x: f.dropout(x, 0.4, training=False)),
    ("dropout_all", "dropout", [_f(3, 4)], lambda m, x: m.dropout(x, 1.0, True), lambda f, x: f.dropout(x, 1.0)),
    ("dropout_", "dropout_", [_f(3, 4)], lambda m, x: m.dropout_(x.clone(), 1.0, True),
     lambda f, x: f.dropout(x.clone(), 1.0, inplace=True)),
    ("alpha_dropout_eval", "alpha_dropout", [_f(3, 4)], lambda m, x: m.alpha_dropout(x, 0.3, False),
     lambda f, x: f.alpha_dropout(x, 0.3)),
    ("alpha_dropout_", "alpha_dropout_", [_f(3, 4)], lambda m, x: m.alpha_dropout_(x.clone(), 0.3, False),
     lambda f, x: f.alpha_dropout(x.clone(), 0.3, inplace=True)),
    ("feature_dropout_all", "feature_dropout", [_f(2, 3, 2, 2)], lambda m, x: m.feature_dropout(x, 1.0, True),
     lambda f, x: f.dropout2d(x, 1.0)),
    ("feature_dropout_", "feature_dropout_", [_f(2, 3, 2, 2)], lambda m, x: m.feature_dropout_(x.clone(), 0.5, False),
     lambda f, x: f.dropout2d(x, 0.5, training=False)),
    ("layer_norm", "layer_norm", [_f(2, 3, 4), _f(4), _f(4)], lambda m, x, w, b: m.layer_norm(x, [4], w, b, 1e-4, True),
     lambda f, x, w, b: f.layer_norm(x, (4,), w, b, 1e-4)),
    ("group_norm", "group_norm", [_f(2, 4, 3), _f(4), _f(4)], lambda m, x, w, b: m.group_norm(x, 2, w, b, 1e-5, True),
     lambda f, x, w, b: f.group_norm(x, 2, w, b)),
    ("batch_norm_eval", "batch_norm", [_f(4, 3, 2), _f(3), _f(3), _f(3), _pos(3)],
     lambda m, x, w, b, rm, rv: m.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, False),
     lambda f, x, w, b, rm, rv: f.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-5)),
    ("batch_norm_train", "batch_norm", [_f(4, 3, 2), _f(3), _f(3)],
     lambda m, x, w, b: m.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
     lambda f, x, w, b: f.batch_norm(x, None, None, w, b, True)),
    ("instance_norm", "instance_norm", [_f(2, 3, 5), _f(3), _f(3)],
     lambda m, x, w, b: m.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
     lambda f, x, w, b: f.instance_norm(x, None, None, w, b)),
    ("embedding", "embedding", [_f(5, 3), _i([[0, 4, 1], [1, 1, 2]])], lambda m, w, i: m.embedding(w, i),
     lambda f, w, i: f.embedding(i, w)),
    ("embedding_padding", "embedding", [_f(5, 3), _i([0, 4, 1])], lambda m, w, i: m.embedding(w, i, 1),
     lambda f, w, i: f.embedding(i, w, 1)),
    ("embedding_bag_sum", "embedding_bag", [_f(6, 3), _i([0, 2, 4, 5, 1, 3]), _i([0, 2, 2, 5])],
     lambda m, w, i, o: m.embedding_bag(w, i, o, False, 0), lambda f, w, i, o: f.embedding_bag(i, w, o, mode="sum")),
    ("embedding_bag_mean", "embedding_bag", [_f(6, 3), _i([0, 2, 4, 5, 1, 3]), _i([0, 2, 2, 5])],
     lambda m, w, i, o: m.embedding_bag(w, i, o, False, 1), lambda f, w, i, o: f.embedding_bag(i, w, o)),
    ("embedding_bag_max", "embedding_bag", [_f(6, 3), _i([0, 2, 4, 5, 1, 3]), _i([0, 2, 2, 5])],
     lambda m, w, i, o: m.embedding_bag(w, i, o, False, 2, False, None, False, 1),
     lambda f, w, i, o: f.embedding_bag(i, w, o, mode="max", padding_idx=1)),
    ("cosine_similarity", "cosine_similarity", [_f(3, 4), _f(3, 4)], lambda m, a, b: m.cosine_similarity(a, b, 0, 1e-8),
     lambda f, a, b: f.cosine_similarity(a, b, 0)),
    ("pairwise_distance", "pairwise_distance", [_f(3, 4), _f(3, 4)],
     lambda m, a, b: m.pairwise_distance(a, b, 3.0, 1e-6, True), lambda f, a, b: f.pairwise_distance(a, b, 3.0,
                                                                                                     keepdim=True)),
    ("pixel_shuffle", "pixel_shuffle", [_f(1, 8, 2, 3)], lambda m, x: m.pixel_shuffle(x, 2),
     lambda f, x: f.pixel_shuffle(x, 2)),
    ("pixel_unshuffle", "pixel_unshuffle", [_f(1, 2, 4, 6)], lambda m, x: m.pixel_unshuffle(x, 2),
     lambda f, x: f.pixel_unshuffle(x, 2)),
    ("prelu", "prelu", [_f(2, 3, 4), _f(3)], lambda m, x, w: m.prelu(x, w), lambda f, x, w: f.prelu(x, w)),
    ("selu", "selu", [_f(3, 4)], lambda m, x: m.selu(x), lambda f, x: f.selu(x)),
    ("selu_", "selu_", [_f(3, 4)], lambda m, x: m.selu_(x.clone()), lambda f, x: f.selu(x.clone(), inplace=True)),
    ("celu", "celu", [_f(3, 4)], lambda m, x: m.celu(x, 0.7), lambda f, x: f.celu(x, 0.7)),
    ("celu_", "celu_", [_f(3, 4)], lambda m, x: m.celu_(x.clone(), 0.7), lambda f, x: f.celu(x.clone(), 0.7, True)),
    ("threshold", "threshold", [_f(3, 4)], lambda m, x: m.threshold(x, 0.1, -2.0),
     lambda f, x: f.threshold(x, 0.1, -2.0)),
    ("threshold_", "threshold_", [_f(3, 4)], lambda m, x: m.threshold_(x.clone(), 0.1, -2.0),
     lambda f, x: f.threshold(x.clone(), 0.1, -2.0, inplace=True)),
    ("relu_", "relu_", [_f(3, 4)], lambda m, x: m.relu_(x.clone()), lambda f, x: f.relu(x.clone(), inplace=True)),
    ("hardshrink", "hardshrink", [_f(3, 4)], lambda m, x: m.hardshrink(x, 0.3), lambda f, x: f.hardshrink(x, 0.3)),
    ("bilinear", "bilinear", [_f(3, 4), _f(3, 5), _f(2, 4, 5), _f(2)], lambda m, a, b, w, c: m.bilinear(a, b, w, c),
     lambda f, a, b, w, c: f.bilinear(a, b, w, c)),
    ("ctc_loss_mean", "ctc_loss", [_f(6, 2, 4), _i([[1, 2, 0], [3, 1, 2]])],
     lambda m, x, t: m.ctc_loss(x.log_softmax(2), t, [6, 5], [2, 3], 0, 1, False),
     lambda f, x, t: f.ctc_loss(f.log_softmax(x, 2), t, [6, 5], [2, 3])),
    ("ctc_loss_none", "ctc_loss", [_f(6, 2, 4), _i([[1, 2, 0], [3, 1, 2]]), _i([6, 5]), _i([2, 3])],
     lambda m, x, t, il, tl: m.ctc_loss(x.log_softmax(2), t, il, tl, 0, 0),
     lambda f, x, t, il, tl: f.ctc_loss(f.log_softmax(x, 2), t, il, tl, reduction="none")),
    ("binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits", [_f(3, 4), _unit(3, 4), _pos(4), _pos(4)],
     lambda m, x, t, w, pw: m.binary_cross_entropy_with_logits(x, t, w, pw, 2),
     lambda f, x, t, w, pw: f.binary_cross_entropy_with_logits(x, t, w, reduction="sum", pos_weight=pw)),
    ("kl_div", "kl_div", [_f(3, 4), _unit(3, 4)], lambda m, x, t: m.kl_div(x, t, 1),
     lambda f, x, t: f.kl_div(x, t, reduction="mean")),
    ("kl_div_log_target", "kl_div", [_f(3, 4), _f(3, 4)], lambda m, x, t: m.kl_div(x, t, 0, log_target=True),
     lambda f, x, t: f.kl_div(x, t, reduction="none", log_target=True)),
    ("hinge_embedding_loss", "hinge_embedding_loss", [_f(3, 4), _sign(3, 4)],
     lambda m, x, y: m.hinge_embedding_loss(x, y, 0.5, 0), lambda f, x, y: f.hinge_embedding_loss(x, y, 0.5,
                                                                                                   reduction="none")),
    ("margin_ranking_loss", "margin_ranking_loss", [_f(5), _f(5), _sign(5)],
     lambda m, a, b, y: m.margin_ranking_loss(a, b, y, 0.2, 2),
     lambda f, a, b, y: f.margin_ranking_loss(a, b, y, 0.2, reduction="sum")),
    ("poisson_nll_loss", "poisson_nll_loss", [_f(3, 4), _pos(3, 4) * 3],
     lambda m, x, t: m.poisson_nll_loss(x, t, True, True, 1e-8, 1),
     lambda f, x, t: f.poisson_nll_loss(x, t, True, True, eps=1e-8)),
    ("cosine_embedding_loss", "cosine_embedding_loss", [_f(3, 4), _f(3, 4), _sign(3)],
     lambda m, a, b, y: m.cosine_embedding_loss(a, b, y, 0.1, 1),
     lambda f, a, b, y: f.cosine_embedding_loss(a, b, y, 0.1)),
    ("triplet_margin_loss", "triplet_margin_loss", [_f(3, 4), _f(3, 4), _f(3, 4)],
     lambda m, a, p, n: m.triplet_margin_loss(a, p, n, 1.0, 2, 1e-6, True, 0),
     lambda f, a, p, n: f.triplet_margin_loss(a, p, n, swap=True, reduction="none")),
    ("channel_shuffle", "channel_shuffle", [_f(2, 6, 3)], lambda m, x: m.channel_shuffle(x, 3),
     lambda f, x: f.channel_shuffle(x, 3)),
    ("native_channel_shuffle", "native_channel_shuffle", [_f(2, 6, 3)], lambda m, x: m.native_channel_shuffle(x, 2),
     lambda f, x: f.native_channel_shuffle(x, 2)),
    ("constant_pad_nd", "constant_pad_nd", [_f(2, 3)], lambda m, x: m.constant_pad_nd(x, [1, 2], 0.5),
     lambda f, x: f.pad(x, (1, 2), value=0.5)),
    ("conv_tbc", "conv_tbc", [_f(5, 2, 3), _f(3, 3, 4), _f(4)], lambda m, x, w, b: m.conv_tbc(x, w, b, 1),
     lambda f, x, w, b: f.conv_tbc(x, w, b, 1)),
    ("convolution", "convolution", [_f(1, 2, 5, 5), _f(3, 2, 3, 3), _f(3)],
     lambda m, x, w, b: m.convolution(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
     lambda f, x, w, b: f.conv2d(x, w, b, padding=1)),
    ("convolution_transposed", "convolution", [_f(1, 2, 3, 3), _f(2, 3, 3, 3)],
     lambda m, x, w: m.convolution(x, w, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
     lambda f, x, w: f.conv_transpose2d(x, w, None, 2, 1, 1)),
    ("embedding_renorm_", "embedding_renorm_", [_f(5, 3), _i([0, 2, 2])],
     lambda m, w, i: m.embedding_renorm_(w.clone(), i, 0.5, 2.0),
     lambda f, w, i: (lambda c: (f.embedding(i, c, max_norm=0.5), c)[1])(w.clone())),
    ("feature_alpha_dropout", "feature_alpha_dropout", [_f(2, 3, 4)],
     lambda m, x: m.feature_alpha_dropout(x, 0.5, False), lambda f, x: f.feature_alpha_dropout(x, 0.5, False)),
    ("feature_alpha_dropout_", "feature_alpha_dropout_", [_f(2, 3, 4)],
     lambda m, x: m.feature_alpha_dropout_(x.clone(), 0.5, False),
     lambda f, x: f.feature_alpha_dropout(x.clone(), 0.5, False, True)),
    ("max_pool1d_with_indices", "max_pool1d_with_indices", [_f(2, 3, 8)],
     lambda m, x: m.max_pool1d_with_indices(x, 2, 2), lambda f, x: f.max_pool1d(x, 2, 2, return_indices=True)),
    ("native_batch_norm", "native_batch_norm", [_f(4, 3, 2), _f(3), _f(3)],
     lambda m, x, w, b: m.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5),
     lambda f, x, w, b: f.batch_norm(x, None, None, w, b, True)),
    ("native_layer_norm", "native_layer_norm", [_f(2, 3, 4), _f(4), _f(4)],
     lambda m, x, w, b: m.native_layer_norm(x, [4], w, b, 1e-5), lambda f, x, w, b: f.layer_norm(x, [4], w, b)),
    ("native_group_norm", "native_group_norm", [_f(2, 4, 3), _f(4), _f(4)],
     lambda m, x, w, b: m.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5), lambda f, x, w, b: f.group_norm(x, 2, w, b)),
    ("native_dropout", "native_dropout", [_f(3, 4)], lambda m, x: m.native_dropout(x, 0.5, False),
     lambda f, x: f.dropout(x, 0.5, False)),
    ("pdist", "pdist", [_f(5, 3)], lambda m, x: m.pdist(x, 1.5), lambda f, x: f.pdist(x, 1.5)),
    ("rms_norm", "rms_norm", [_f(2, 3, 4), _f(4)], lambda m, x, w: m.rms_norm(x, [4], w, 1e-5),
     lambda f, x, w: f.rms_norm(x, [4], w, 1e-5)),
    ("rrelu", "rrelu", [_f(3, 4)], lambda m, x: m.rrelu(x, 0.1, 0.3, False), lambda f, x: f.rrelu(x, 0.1, 0.3)),
    ("rrelu_", "rrelu_", [_f(3, 4)], lambda m, x: m.rrelu_(x.clone(), 0.1, 0.3),
     lambda f, x: f.rrelu(x.clone(), 0.1, 0.3, inplace=True)),
]

# (id, Tensor method, inputs, call(x, *rest, m) as a method, the same through nn.functional)
METHOD_ROWS = [
    ("softmax", "softmax", [_f(3, 4)], lambda m, x: x.softmax(1), lambda f, x: f.softmax(x, 1)),
    ("softmax_dtype", "softmax", [_f(3, 4).astype(np.float32)], lambda m, x: x.softmax(0, m.float64),
     lambda f, x: f.softmax(x, 0, dtype=ember.float64)),
    ("log_softmax", "log_softmax", [_f(3, 4)], lambda m, x: x.log_softmax(dim=-1), lambda f, x: f.log_softmax(x, -1)),
    ("hardshrink", "hardshrink", [_f(3, 4)], lambda m, x: x.hardshrink(0.3), lambda f, x: f.hardshrink(x, 0.3)),
    ("prelu", "prelu", [_f(2, 3, 4), _f(3)], lambda m, x, w: x.prelu(w), lambda f, x, w: f.prelu(x, w)),
]

NN_MODULES = (ops_nn, nn_conv, nn_loss)


def _nn_exports(ns):
    """Names of namespace ``ns`` whose function the nn op modules define, with the in-place forms derived from them."""
    defined = {id(v) for m in NN_MODULES for v in vars(m).values() if getattr(v, "__module__", None) == m.__name__}
    names = {n for n, f in registry.NAMESPACES[ns].items() if id(f) in defined}
    return names | {n + "_" for n in names if n + "_" in registry.NAMESPACES[ns]}


def _pair(arrays, device, torch):
    return ([ember.tensor(a, device=device) for a in arrays], [torch.tensor(a) for a in arrays])


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_torch_form_matches_functional_and_torch(row, device, torch):
    _, name, arrays, top, fn = row
    assert hasattr(torch, name), f"torch has no {name}"
    assert inspect.unwrap(getattr(ember, name)) is registry.NAMESPACES["torch"][name]  # (behind its check)
    e, t = _pair(arrays, device, torch)
    got, ref, want = _flat(top(ember, *e)), _flat(fn(F, *e)), _flat(top(torch, *t))
    assert len(got) == len(want)
    assert_close(got[0], ref[0], msg=f"ember.{name} vs F.{name}")
    for g, w in zip(got, want):
        assert_close(g, w, msg=f"ember.{name} vs torch.{name}")
    for g, r in zip(got[1:], ref[1:]):
        assert_close(g, r)


@pytest.mark.parametrize("row", METHOD_ROWS, ids=[r[0] for r in METHOD_ROWS])
def test_tensor_method_matches_functional_and_torch(row, device, torch):
    _, name, arrays, call, fn = row
    assert hasattr(torch.Tensor, name), f"torch.Tensor has no {name}"
    assert inspect.unwrap(getattr(ember.Tensor, name)) is registry.NAMESPACES["Tensor"][name]
    e, t = _pair(arrays, device, torch)
    got = call(ember, *e)
    assert_close(got, fn(F, *e), msg=f"Tensor.{name} vs F.{name}")
    assert_close(got, call(torch, *t), msg=f"Tensor.{name} vs torch.Tensor.{name}")


def test_every_nn_export_is_tested_and_in_torch(torch):
    tested_top = {r[1] for r in ROWS}
    tested_methods = {r[1] for r in METHOD_ROWS}
    top, methods = _nn_exports("torch") | {"relu_"}, _nn_exports("Tensor")
    assert top == tested_top
    assert methods == tested_methods
    assert [n for n in sorted(top) if not hasattr(torch, n)] == []
    assert [n for n in sorted(methods) if not hasattr(torch.Tensor, n)] == []


def test_functional_names_torch_shows_are_shown(torch):
    """Every nn.functional name PyTorch also has as ``torch.<name>`` / ``Tensor.<name>`` is there in ember too."""
    for name in registry.NAMESPACES["nn.functional"]:
        assert hasattr(ember, name) == hasattr(torch, name), name
        # relu, sigmoid, tanh: pointwise ops; Tensor.mish and Tensor.unfold (a sliding view) are not these
        if name not in ("relu", "sigmoid", "tanh", "mish", "unfold"):
            assert hasattr(ember.Tensor, name) == hasattr(torch.Tensor, name), name
    for name in ("relu_", "selu_", "celu_", "threshold_", "dropout_", "alpha_dropout_", "feature_dropout_"):
        assert hasattr(torch, name) and hasattr(ember, name), name
        assert hasattr(ember.Tensor, name) == hasattr(torch.Tensor, name), name


@pytest.mark.parametrize("top, fn", [
    (lambda x: ember.dropout(x, 0.5, True), lambda x: F.dropout(x, 0.5)),
    (lambda x: ember.alpha_dropout(x, 0.5, True), lambda x: F.alpha_dropout(x, 0.5, True)),
    (lambda x: ember.feature_dropout(x, 0.5, True), lambda x: F.dropout2d(x, 0.5)),
], ids=["dropout", "alpha_dropout", "feature_dropout"])
def test_random_dropout_forms_draw_as_functional(top, fn, device):
    x = ember.tensor(_pos(4, 6, 2, 2), device=device)
    ember.manual_seed(7)
    a = top(x)
    ember.manual_seed(7)
    assert_close(a, fn(x))
    ember.manual_seed(8)
    assert top(x).ne(a).any().item()  # another draw, another mask


def test_inplace_forms_write_their_input(device):
    x = ember.tensor(_f(3, 4), device=device)
    y = x.clone()
    assert ember.selu_(y) is y
    assert_close(y, F.selu(x))
    z = x.clone()
    assert ember.dropout_(z, 1.0, True) is z
    assert not z.ne(0).any().item()


def test_signature_errors_match_torch(torch):
    x = ember.randn(3)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        ember.feature_dropout(x, 0.5, True)
    with pytest.raises(TypeError):
        ember.softmax(x)  # dim is required at top level, as in torch
    with pytest.raises(TypeError):
        torch.softmax(torch.randn(3))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        ember.kl_div(x, x, 3)


def test_embedding_padding_idx_gradient(device, torch):
    w = _f(5, 3)
    idx = _i([0, 1, 1, 4])
    ew = ember.tensor(w, device=device, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ember.embedding(ew, ember.tensor(idx, device=device), 1).sum().backward()
    torch.embedding(tw, torch.tensor(idx), 1).sum().backward()
    assert_close(ew.grad, tw.grad)
    assert not ew.grad[1].ne(0).any().item()
