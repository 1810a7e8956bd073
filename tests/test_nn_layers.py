"""Every layer against torch.nn with the same weights: outputs, input and parameter gradients."""
import numpy as np
import pytest

import ember
from ember import nn

from ember.testing import to_numpy
from nn_helpers import compare_module

# (id, builder(nn) -> module, input shapes); the builder runs once with ember.nn and once with torch.nn
LAYERS = [
    ("linear", lambda n: n.Linear(5, 3), [(4, 5)]),
    ("linear_3d_nobias", lambda n: n.Linear(5, 3, bias=False), [(2, 4, 5)]),
    ("bilinear", lambda n: n.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
    ("conv1d", lambda n: n.Conv1d(2, 3, 3, stride=2, padding=1), [(2, 2, 9)]),
    ("conv2d", lambda n: n.Conv2d(3, 4, 3), [(2, 3, 7, 6)]),
    ("conv2d_stride_pad_dil", lambda n: n.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
     [(2, 2, 9, 7)]),
    ("conv2d_groups", lambda n: n.Conv2d(4, 6, 3, groups=2, padding=1), [(2, 4, 5, 5)]),
    ("conv2d_same", lambda n: n.Conv2d(2, 3, 4, padding="same", dilation=2), [(1, 2, 8, 7)]),
    ("conv2d_reflect", lambda n: n.Conv2d(2, 3, 3, padding=2, padding_mode="reflect"), [(1, 2, 6, 5)]),
    ("conv2d_circular", lambda n: n.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), [(1, 2, 6, 5)]),
    ("conv2d_replicate", lambda n: n.Conv2d(2, 3, 3, padding=1, padding_mode="replicate"), [(1, 2, 5, 5)]),
    ("conv2d_unbatched", lambda n: n.Conv2d(2, 3, 3), [(2, 5, 5)]),
    ("conv3d", lambda n: n.Conv3d(2, 2, 2, stride=(1, 2, 1)), [(1, 2, 4, 5, 3)]),
    ("conv_transpose1d", lambda n: n.ConvTranspose1d(2, 3, 3, stride=2, padding=1, output_padding=1), [(2, 2, 5)]),
    ("conv_transpose2d", lambda n: n.ConvTranspose2d(4, 2, 3, stride=2, groups=2), [(2, 4, 3, 4)]),
    ("conv_transpose2d_dil", lambda n: n.ConvTranspose2d(2, 3, 2, padding=1, dilation=2), [(1, 2, 4, 4)]),
    ("maxpool1d", lambda n: n.MaxPool1d(3, 2, padding=1), [(2, 3, 9)]),
    ("maxpool2d", lambda n: n.MaxPool2d(2), [(2, 3, 6, 6)]),
    ("maxpool2d_ceil", lambda n: n.MaxPool2d(3, 2, padding=1, ceil_mode=True), [(2, 2, 8, 7)]),
    ("maxpool2d_dil", lambda n: n.MaxPool2d(2, 1, dilation=2), [(1, 2, 6, 6)]),
    ("avgpool1d", lambda n: n.AvgPool1d(3, 2, padding=1), [(2, 3, 8)]),
    ("avgpool2d", lambda n: n.AvgPool2d(2), [(2, 3, 6, 6)]),
    ("avgpool2d_pad_exclude", lambda n: n.AvgPool2d(3, 2, padding=1, count_include_pad=False), [(2, 2, 7, 6)]),
    ("avgpool2d_ceil", lambda n: n.AvgPool2d(3, 2, padding=1, ceil_mode=True), [(2, 2, 8, 7)]),
    ("adaptive_avg1d", lambda n: n.AdaptiveAvgPool1d(3), [(2, 3, 7)]),
    ("adaptive_avg2d", lambda n: n.AdaptiveAvgPool2d((3, 2)), [(2, 3, 7, 5)]),
    ("adaptive_max2d", lambda n: n.AdaptiveMaxPool2d((3, 2)), [(2, 3, 7, 5)]),
    ("upsample_nearest", lambda n: n.Upsample(scale_factor=2), [(1, 2, 3, 4)]),
    ("upsample_nearest_size", lambda n: n.Upsample(size=(5, 7)), [(1, 2, 3, 4)]),
    ("upsample_bilinear", lambda n: n.Upsample(scale_factor=2, mode="bilinear"), [(1, 2, 3, 4)]),
    ("upsample_bilinear_ac", lambda n: n.Upsample(size=(5, 6), mode="bilinear", align_corners=True), [(1, 2, 3, 4)]),
    ("pixel_shuffle", lambda n: n.PixelShuffle(2), [(2, 8, 3, 3)]),
    ("pixel_unshuffle", lambda n: n.PixelUnshuffle(2), [(2, 2, 4, 6)]),
    ("batchnorm1d", lambda n: n.BatchNorm1d(4), [(6, 4)]),
    ("batchnorm1d_3d", lambda n: n.BatchNorm1d(3, momentum=None), [(4, 3, 5)]),
    ("batchnorm2d", lambda n: n.BatchNorm2d(3), [(4, 3, 5, 5)]),
    ("batchnorm2d_noaffine", lambda n: n.BatchNorm2d(3, affine=False, track_running_stats=False), [(4, 3, 2, 2)]),
    ("layernorm", lambda n: n.LayerNorm((4, 5)), [(3, 4, 5)]),
    ("groupnorm", lambda n: n.GroupNorm(2, 4), [(3, 4, 5, 2)]),
    ("instancenorm2d", lambda n: n.InstanceNorm2d(3, affine=True), [(2, 3, 4, 5)]),
    ("instancenorm2d_track", lambda n: n.InstanceNorm2d(3, track_running_stats=True), [(2, 3, 4, 5)]),
    ("flatten", lambda n: n.Flatten(), [(2, 3, 4)]),
    ("unflatten", lambda n: n.Unflatten(1, (2, 3)), [(4, 6)]),
    ("identity", lambda n: n.Identity(3, unused=True), [(2, 3)]),
    ("prelu", lambda n: n.PReLU(3), [(2, 3, 4)]),
    ("zeropad2d", lambda n: n.ZeroPad2d((1, 2, 0, 3)), [(1, 2, 3, 3)]),
    ("reflectionpad2d", lambda n: n.ReflectionPad2d(2), [(1, 2, 4, 4)]),
    ("replicationpad1d", lambda n: n.ReplicationPad1d((3, 1)), [(1, 2, 4)]),
    ("fold", lambda n: n.Fold((4, 5), 2), [(2, 12, 12)]),
    ("unfold", lambda n: n.Unfold(2, padding=1, stride=2), [(2, 3, 4, 5)]),
]

ACTIVATIONS = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Hardtanh",
               "Hardsigmoid", "Hardswish", "Softplus", "Softsign", "LogSigmoid", "Tanhshrink", "Softshrink",
               "Hardshrink", "GELU"]
ACT_ROWS = [(name, (lambda c: lambda n: getattr(n, c)())(name), [(3, 7)]) for name in ACTIVATIONS] + [
    ("GELU_tanh", lambda n: n.GELU(approximate="tanh"), [(3, 7)]),
    ("Softmax", lambda n: n.Softmax(dim=1), [(3, 7)]),
    ("LogSoftmax", lambda n: n.LogSoftmax(dim=-1), [(2, 3, 7)]),
    ("Softmin", lambda n: n.Softmin(dim=0), [(3, 7)]),
    ("Threshold", lambda n: n.Threshold(0.1, 20.0), [(3, 7)]),
    ("Softplus_beta", lambda n: n.Softplus(beta=2, threshold=1), [(3, 7)]),
    ("GLU", lambda n: n.GLU(), [(3, 8)]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,build,shapes", LAYERS + ACT_ROWS, ids=[r[0] for r in LAYERS + ACT_ROWS])
def test_layer_matches_torch(torch, device, dtype, name, build, shapes):
    if name == "GELU" and not hasattr(ember, "erf"):
        pytest.skip("exact GELU needs ember.erf")
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    torch.manual_seed(0)
    emod, tmod = build(nn), build(torch.nn)
    compare_module(torch, emod, tmod, inputs, device, dtype)
    # buffers (running statistics) follow PyTorch too
    for (k, b), (k2, tb) in zip(emod.named_buffers(), tmod.named_buffers()):
        assert k == k2
        np.testing.assert_allclose(to_numpy(b), to_numpy(tb), rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", ["batchnorm2d", "batchnorm1d"])
def test_batchnorm_eval_uses_running_stats(torch, device, name):
    build = dict((r[0], r[1]) for r in LAYERS)[name]
    shape = dict((r[0], r[2]) for r in LAYERS)[name][0]
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    emod, tmod = build(nn), build(torch.nn)
    for _ in range(2):
        compare_module(torch, emod, tmod.train(), [x], device, "float32")
    emod.eval()
    tmod.eval()
    compare_module(torch, emod, tmod, [x + 1], device, "float32")
    assert int(emod.num_batches_tracked.item()) == 2


def test_maxpool_return_indices_and_unpool(torch, device):
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 5)).astype("float32")
    e, t = ember.tensor(x, device=device), torch.tensor(x)
    eo, ei = nn.MaxPool2d(2, return_indices=True, ceil_mode=True)(e)
    to, ti = torch.nn.MaxPool2d(2, return_indices=True, ceil_mode=True)(t)
    np.testing.assert_array_equal(to_numpy(ei), to_numpy(ti))
    assert ei.dtype == ember.int64
    eu = nn.MaxUnpool2d(2)(eo, ei, output_size=(6, 5))
    tu = torch.nn.MaxUnpool2d(2)(to, ti, output_size=(6, 5))
    np.testing.assert_allclose(to_numpy(eu), to_numpy(tu))
    _, eai = nn.AdaptiveMaxPool2d(3, return_indices=True)(e)
    _, tai = torch.nn.AdaptiveMaxPool2d(3, return_indices=True)(t)
    np.testing.assert_array_equal(to_numpy(eai), to_numpy(tai))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding(torch, device, dtype):
    idx = np.array([[1, 2, 4], [4, 3, 0]])
    for kw in ({}, {"padding_idx": 4}):
        torch.manual_seed(0)
        emod, tmod = nn.Embedding(6, 3, **kw), torch.nn.Embedding(6, 3, **kw)
        tmod = tmod.to(getattr(torch, dtype))
        emod.load_state_dict({"weight": ember.tensor(to_numpy(tmod.weight.detach()))})
        emod.to(device=device, dtype=getattr(ember, dtype))
        eo, to = emod(ember.tensor(idx, device=device)), tmod(torch.tensor(idx))
        np.testing.assert_allclose(to_numpy(eo.detach()), to_numpy(to.detach()))
        eo.sum().backward()
        to.sum().backward()
        np.testing.assert_allclose(to_numpy(emod.weight.grad), to_numpy(tmod.weight.grad))
    assert not np.any(to_numpy(nn.Embedding(5, 2, padding_idx=1).weight)[1])


def test_embedding_from_pretrained_max_norm_and_bag(torch, device):
    w = np.random.default_rng(0).standard_normal((5, 3)).astype("float32") * 3
    e = nn.Embedding.from_pretrained(ember.tensor(w, device=device), max_norm=1.0)
    t = torch.nn.Embedding.from_pretrained(torch.tensor(w), max_norm=1.0)
    idx = np.array([0, 2, 2])
    np.testing.assert_allclose(to_numpy(e(ember.tensor(idx, device=device))), to_numpy(t(torch.tensor(idx))), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(e.weight), to_numpy(t.weight.detach()), rtol=1e-5)
    assert not e.weight.requires_grad
    for mode in ("sum", "mean", "max"):
        eb = nn.EmbeddingBag.from_pretrained(ember.tensor(w, device=device), freeze=False, mode=mode, padding_idx=2)
        tb = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), freeze=False, mode=mode, padding_idx=2)
        inp, offs = np.array([0, 1, 4, 2, 3, 2]), np.array([0, 2, 5, 5])
        got = eb(ember.tensor(inp, device=device), ember.tensor(offs, device=device))
        want = tb(torch.tensor(inp), torch.tensor(offs))
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-6)
        (got * ember.arange(12.0, device=device).reshape(4, 3)).sum().backward()
        (want * torch.arange(12.0).reshape(4, 3)).sum().backward()
        np.testing.assert_allclose(to_numpy(eb.weight.grad), to_numpy(tb.weight.grad), rtol=1e-6, err_msg=mode)


def test_dropout_modes(device):
    x = ember.ones(200, 50, device=device)
    d = nn.Dropout(0.3)
    y = to_numpy(d(x))
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.7], rtol=1e-6)
    assert 0.6 < (y > 0).mean() < 0.8
    d.eval()
    assert d(x) is x
    y2 = to_numpy(nn.Dropout2d(0.5)(ember.ones(8, 30, 3, 3, device=device)))
    per_channel = y2.reshape(8, 30, 9)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    a = to_numpy(nn.AlphaDropout(0.2)(ember.randn(20000, device=device)))
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05


@pytest.mark.parametrize("build,shape,msg", [
    (lambda: nn.Conv2d(3, 6, 5), (1, 4, 32, 32), "expected input with 3 channels"),
    (lambda: nn.Conv2d(3, 6, 5), (4, 32), "3D (unbatched) or 4D (batched)"),
    (lambda: nn.Linear(10, 2), (3, 7), "expected input of shape [*, 10], got [3, 7]"),
    (lambda: nn.BatchNorm2d(3), (2, 3, 4), "expected 4D input (got 3D input)"),
    (lambda: nn.BatchNorm1d(3), (2, 4), "expected input with 3 channels"),
    (lambda: nn.LayerNorm(5), (2, 4), "expected input with shape [*, 5]"),
    (lambda: nn.MaxPool2d(2), (3,), "3D or 4D"),
])
def test_wrong_input_shape_names_layer(device, build, shape, msg):
    m = build()
    with pytest.raises((RuntimeError, ValueError)) as info:
        m(ember.zeros(shape, device=device))
    assert msg in str(info.value)


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_bag_scale_grad_by_freq(torch, device, mode, padding_idx):
    """Each weight row's gradient divided by how often its index occurs in the input.  The reference is PyTorch's
    ``embedding`` with ``scale_grad_by_freq``, reduced per bag: PyTorch 2.13's own CPU ``embedding_bag`` divides
    some rows by another index's count (pytorch/pytorch#190063)."""
    w = np.random.default_rng(2).standard_normal((6, 4))
    inp, offs = np.array([1, 2, 1, 4, 1, 3, 0, 0, 3]), np.array([0, 3, 5])
    g = np.random.default_rng(3).standard_normal((3, 4))
    ew = ember.tensor(w, device=device, requires_grad=True)
    got = nn.functional.embedding_bag(ember.tensor(inp, device=device), ew, ember.tensor(offs, device=device),
                                      mode=mode, scale_grad_by_freq=True, padding_idx=padding_idx)
    tw = torch.tensor(w, requires_grad=True)
    rows = torch.nn.functional.embedding(torch.tensor(inp), tw, padding_idx=padding_idx, scale_grad_by_freq=True)
    bag = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2])
    if padding_idx is not None:
        rows = rows * (torch.tensor(inp) != padding_idx).unsqueeze(1)
    want = torch.zeros(3, 4, dtype=rows.dtype).index_add(0, bag, rows)
    if mode == "mean":
        kept = torch.ones(len(inp)) if padding_idx is None else (torch.tensor(inp) != padding_idx).double()
        want = want / torch.zeros(3, dtype=kept.dtype).index_add(0, bag, kept).clamp(min=1).unsqueeze(1)
    np.testing.assert_allclose(to_numpy(got), want.detach().numpy(), rtol=1e-12)
    got.backward(ember.tensor(g, device=device))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(to_numpy(ew.grad), tw.grad.numpy(), rtol=1e-12)
    # the module passes the setting on, and shows it as PyTorch's does
    bag = nn.EmbeddingBag.from_pretrained(ember.tensor(w, device=device), freeze=False, mode=mode,
                                          scale_grad_by_freq=True, padding_idx=padding_idx)
    bag(ember.tensor(inp, device=device), ember.tensor(offs, device=device)).backward(ember.tensor(g, device=device))
    np.testing.assert_allclose(to_numpy(bag.weight.grad), tw.grad.numpy(), rtol=1e-12)
    assert repr(bag) == repr(torch.nn.EmbeddingBag.from_pretrained(tw, mode=mode, scale_grad_by_freq=True,
                                                                   padding_idx=padding_idx))


@pytest.mark.parametrize("make", [
    lambda m: m.Embedding(6, 3), lambda m: m.Embedding(6, 3, 2, 1.5, 1.0, True, True),
    lambda m: m.EmbeddingBag(6, 3, 1.5, 1.0, True, "sum", padding_idx=2), lambda m: m.LSTM(4, 5),
    lambda m: m.LSTM(4, 5, 2, False, True, 0.5, True, 3), lambda m: m.RNN(4, 5, nonlinearity="relu"),
    lambda m: m.GRU(4, 5, 2, dropout=0.25)])
def test_embedding_and_recurrent_reprs_are_torch_s(torch, make):
    assert repr(make(nn)) == repr(make(torch.nn))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_forms(torch, device, mode):
    """2-D input, include_last_offset, empty bags, per-sample weights: values and weight gradients as PyTorch."""
    w = np.random.default_rng(1).standard_normal((6, 4))
    inp, offs = np.array([5, 0, 3, 3, 1, 4, 2]), np.array([0, 3, 3, 6, 7])
    cases = [(inp.reshape(-1, 7)[:, :6].reshape(2, 3), None, {}),
             (inp, offs, {"include_last_offset": True}),
             (inp, offs[:-1], {"padding_idx": 3})]
    if mode == "sum":
        cases.append((inp, offs[:-1], {"per_sample_weights": np.linspace(0.5, 2.0, 7)}))
    for i, o, kw in cases:
        ew = ember.tensor(w, device=device, requires_grad=True)
        tw = torch.tensor(w, requires_grad=True)
        psw = kw.pop("per_sample_weights", None)
        got = nn.functional.embedding_bag(
            ember.tensor(i, device=device), ew, None if o is None else ember.tensor(o, device=device), mode=mode,
            per_sample_weights=None if psw is None else ember.tensor(psw, device=device), **kw)
        want = torch.nn.functional.embedding_bag(
            torch.tensor(i), tw, None if o is None else torch.tensor(o), mode=mode,
            per_sample_weights=None if psw is None else torch.tensor(psw), **kw)
        np.testing.assert_allclose(to_numpy(got), want.detach().numpy(), rtol=1e-12, err_msg=f"{mode} {kw}")
        g = np.arange(want.numel(), dtype=np.float64).reshape(tuple(want.shape))
        got.backward(ember.tensor(g, device=device))
        want.backward(torch.tensor(g))
        np.testing.assert_allclose(to_numpy(ew.grad), tw.grad.numpy(), rtol=1e-12, err_msg=f"{mode} {kw}")
