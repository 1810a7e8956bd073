"""Semantics that follow PyTorch where ember used to differ: complex sampling, ``out=`` of composites, the
packed-sequence overloads of the recurrent functions, writes through diagonal views on every backend, the
hub's one downloader and the names of activation nodes."""
import math

import numpy as np
import pytest

import ember

N = 40000


def _moments(z):
    """Mean and variance of each part, E|z|^2 and the parts' covariance of complex samples ``z`` (NumPy)."""
    re, im = z.real.astype(np.float64), z.imag.astype(np.float64)
    return np.array([re.mean(), im.mean(), re.var(), im.var(), (np.abs(z) ** 2).mean(),
                     ((re - re.mean()) * (im - im.mean())).mean()])


COMPLEX_DRAWS = [
    ("randn", lambda m, d, dev: m.randn(N, dtype=d, device=dev)),
    ("randn_like", lambda m, d, dev: m.randn_like(m.zeros(N, dtype=d, device=dev))),
    ("randn_out", lambda m, d, dev: m.randn(N, out=m.empty(N, dtype=d, device=dev))),
    ("normal_", lambda m, d, dev: m.empty(N, dtype=d, device=dev).normal_()),
    ("normal_2_3", lambda m, d, dev: m.empty(N, dtype=d, device=dev).normal_(2.0, 3.0)),
    ("normal_size", lambda m, d, dev: m.normal(1.0, 2.0, (N,), dtype=d, device=dev)),
    ("normal_tensor_mean", lambda m, d, dev: m.normal(m.full((N,), 1 + 2j, dtype=d, device=dev), 2.0)),
    ("rand", lambda m, d, dev: m.rand(N, dtype=d, device=dev)),
    ("rand_like", lambda m, d, dev: m.rand_like(m.zeros(N, dtype=d, device=dev))),
    ("uniform_", lambda m, d, dev: m.empty(N, dtype=d, device=dev).uniform_(2.0, 3.0)),
]


@pytest.mark.parametrize("name,draw", COMPLEX_DRAWS, ids=[c[0] for c in COMPLEX_DRAWS])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_sampling_moments(name, draw, dtype, device, torch):
    z = draw(ember, getattr(ember, dtype), device)
    ref = draw(torch, getattr(torch, dtype), "cpu")
    assert z.dtype is getattr(ember, dtype) and tuple(z.shape) == (N,)
    got, want = _moments(z.cpu().numpy()), _moments(ref.numpy())
    scale = max(1.0, abs(want[4]))  # the sampling error of each moment is a few scale / sqrt(N)
    np.testing.assert_allclose(got, want, atol=12 * scale / math.sqrt(N))
    assert float(z.imag.abs().max()) > 0.1


def test_complex_sampling_reproducible(device):
    ember.manual_seed(7)
    a = ember.randn(50, dtype=ember.complex64, device=device)
    ember.manual_seed(7)
    b = ember.randn(50, dtype=ember.complex64, device=device)
    assert ember.equal(a, b)
    g1, g2 = ember.Generator(device).manual_seed(3), ember.Generator(device).manual_seed(3)
    x = ember.empty(50, dtype=ember.complex128, device=device).normal_(generator=g1)
    y = ember.empty(50, dtype=ember.complex128, device=device).normal_(generator=g2)
    assert ember.equal(x, y) and not ember.equal(x.real, x.imag)


def test_complex_sampling_errors(device, torch):
    std = ember.ones(3, dtype=ember.complex64, device=device)
    with pytest.raises(RuntimeError, match="non-complex"):
        ember.normal(ember.zeros(3, device=device), std)
    with pytest.raises(RuntimeError, match="non-complex"):
        torch.normal(torch.zeros(3), torch.ones(3, dtype=torch.complex64))
    t = ember.zeros(3, dtype=ember.complex64, device=device)
    for fill in (lambda t: t.exponential_(), lambda t: t.cauchy_(), lambda t: t.log_normal_()):
        with pytest.raises((RuntimeError, NotImplementedError)):
            fill(t)
    assert t.abs().sum().item() == 0 and t._version == 0


# --------------------------------------------------------------------------- F.normalize(out=)
@pytest.mark.parametrize("out_shape,out_dtype", [((3, 4), "float32"), ((0,), "float32"), ((3, 4), "float64")])
@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize_out(out_shape, out_dtype, p, dim, device, torch):
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    out = ember.zeros(out_shape, dtype=getattr(ember, out_dtype), device=device)
    tout = torch.zeros(out_shape, dtype=getattr(torch, out_dtype))
    r = ember.nn.functional.normalize(ember.tensor(x, device=device), p, dim, out=out)
    tr = torch.nn.functional.normalize(torch.tensor(x), p, dim, out=tout)
    assert r is out and tr is tout
    ember.testing.assert_close(out, tout)
    assert out._version > 0


def test_normalize_out_errors(device, torch):
    x = ember.randn(3, 4, device=device)
    out = ember.zeros(3, 4, dtype=ember.int64, device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.nn.functional.normalize(x, out=out)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.nn.functional.normalize(torch.randn(3, 4), out=torch.zeros(3, 4, dtype=torch.int64))
    assert out.abs().sum().item() == 0 and out._version == 0
    xr = x.clone().requires_grad_()
    out = ember.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.nn.functional.normalize(xr, out=out)
    assert out.abs().sum().item() == 0 and xr.grad is None
    with ember.no_grad():
        r = ember.nn.functional.normalize(xr, out=out)
    assert r is out and not r.requires_grad
    ember.testing.assert_close(out, ember.nn.functional.normalize(x))


# --------------------------------------------------------------------------- torch.lstm/gru/rnn_* on packed data
RECURRENT = [("lstm", 4), ("gru", 3), ("rnn_tanh", 1), ("rnn_relu", 1)]


def _recurrent_weights(gates, inp, hidden, layers, dirs, bias, proj, rng):
    real_h = proj or hidden
    ws = []
    for layer in range(layers):
        for _ in range(dirs):
            in_size = inp if layer == 0 else real_h * dirs
            ws += [rng.uniform(-0.5, 0.5, (gates * hidden, in_size)), rng.uniform(-0.5, 0.5, (gates * hidden, real_h))]
            if bias:
                ws += [rng.uniform(-0.5, 0.5, gates * hidden), rng.uniform(-0.5, 0.5, gates * hidden)]
            if proj:
                ws.append(rng.uniform(-0.5, 0.5, (proj, hidden)))
    return ws


PACKED_CASES = [(name, gates, *shape) for name, gates in RECURRENT
                for shape in ((1, False, True, 0), (2, True, True, 0), (2, False, False, 0))]
PACKED_CASES.append(("lstm", 4, 1, True, True, 2))  # projections


@pytest.mark.parametrize("name,gates,layers,bidirectional,bias,proj", PACKED_CASES)
def test_recurrent_packed_overload(name, gates, layers, bidirectional, bias, proj, device, torch):
    rng = np.random.default_rng(3)
    inp, hidden, dirs = 3, 4, 2 if bidirectional else 1
    batch_sizes = np.array([3, 3, 2, 1, 1])
    data = rng.standard_normal((int(batch_sizes.sum()), inp))
    real_h = proj or hidden
    h0 = rng.standard_normal((layers * dirs, 3, real_h))
    c0 = rng.standard_normal((layers * dirs, 3, hidden))
    ws = _recurrent_weights(gates, inp, hidden, layers, dirs, bias, proj, rng)
    results = []
    for m, dev in ((ember, device), (torch, "cpu")):
        leaves = [m.tensor(a, dtype=m.float64, device=dev, requires_grad=True) for a in [data, h0, c0, *ws]]
        x, h, c, *w = leaves
        bs = m.tensor(batch_sizes, dtype=m.int64)
        hx = (h, c) if name == "lstm" else h
        outs = getattr(m, name)(x, bs, hx, w, bias, layers, 0.0, False, bidirectional)
        assert len(outs) == (3 if name == "lstm" else 2)
        loss = sum(((o * o).sum() if i else (o.sin() * o).sum()) for i, o in enumerate(outs))
        loss.backward()
        results.append((outs, [t.grad for t in leaves if t is not c or name == "lstm"]))
    (eo, eg), (to, tg) = results
    for a, b in zip(eo, to):
        ember.testing.assert_close(a, b)
    for a, b in zip(eg, tg):
        ember.testing.assert_close(a, b)


def test_recurrent_packed_matches_module(device, torch):
    """``torch.lstm`` on a PackedSequence's data and batch_sizes computes what ``nn.LSTM`` does with it."""
    m = ember.nn.LSTM(3, 4, num_layers=2, bidirectional=True).to(device)
    seqs = [ember.randn(n, 3, device=device) for n in (5, 3, 2)]
    p = ember.nn.utils.rnn.pack_sequence(seqs)
    h = ember.randn(4, 3, 4, device=device)
    c = ember.randn(4, 3, 4, device=device)
    out, (hn, cn) = m(p, (h, c))
    data, hn2, cn2 = ember.lstm(data=p.data, batch_sizes=p.batch_sizes, hx=(h, c), params=list(m.parameters()),
                                has_biases=True, num_layers=2, dropout=0.0, train=False, bidirectional=True)
    for a, b in ((out.data, data), (hn, hn2), (cn, cn2)):
        assert ember.equal(a, b)


def test_recurrent_packed_errors(device):
    w = [ember.randn(4, 3, device=device), ember.randn(4, 4, device=device)]
    h = ember.zeros(1, 2, 4, device=device)
    x = ember.randn(3, 3, device=device)
    with pytest.raises(RuntimeError, match="rnn_tanh.*Long"):
        ember.rnn_tanh(x, ember.tensor([2.0, 1.0]), h, w, False, 1, 0.0, False, False)
    with pytest.raises(RuntimeError, match="rnn_tanh.*non-increasing"):
        ember.rnn_tanh(x, ember.tensor([1, 2]), h, w, False, 1, 0.0, False, False)
    with pytest.raises(RuntimeError, match="rnn_tanh.*sum to 4 rows.*3"):
        ember.rnn_tanh(x, ember.tensor([2, 2]), h, w, False, 1, 0.0, False, False)
    with pytest.raises(TypeError, match="gru"):
        ember.gru(x, ember.tensor([2, 1]), h, w, False, 1, 0.0, False, False, False)


@pytest.mark.parametrize("name,gates", RECURRENT, ids=[r[0] for r in RECURRENT])
@pytest.mark.parametrize("batch_first", [False, True])
def test_recurrent_padded_overload(name, gates, batch_first, device, torch):
    rng = np.random.default_rng(4)
    data = rng.standard_normal((2, 5, 3) if batch_first else (5, 2, 3))
    h0, c0 = rng.standard_normal((2, 2, 4)), rng.standard_normal((2, 2, 4))
    ws = _recurrent_weights(gates, 3, 4, 1, 2, True, 0, rng)
    outs = []
    for m, dev in ((ember, device), (torch, "cpu")):
        x, h, c, *w = [m.tensor(a, dtype=m.float64, device=dev) for a in [data, h0, c0, *ws]]
        outs.append(getattr(m, name)(x, (h, c) if name == "lstm" else h, w, True, 1, 0.0, False, True, batch_first))
    for a, b in zip(*outs):
        ember.testing.assert_close(a, b)


# --------------------------------------------------------------------------- writes through diagonal (and other) views
def _set0(t, v):
    t[0] = v


DIAGONAL_WRITES = [
    ("fill_", lambda m, x: x.diagonal().fill_(1)),
    ("add_", lambda m, x: x.diagonal().add_(1)),
    ("setitem", lambda m, x: _set0(x.diagonal(), 5)),
    ("setitem_slice", lambda m, x: x.diagonal().__setitem__(slice(1, None), m.tensor([7.0, 8.0, 9.0],
                                                                                     device=x.device))),
    ("iadd", lambda m, x: x.diagonal().__iadd__(2)),
    ("offset", lambda m, x: x.diagonal(1).mul_(3)),
    ("negative_offset_copy_", lambda m, x: x.diagonal(-2).copy_(m.tensor([4.0, 5.0], device=x.device))),
    ("of_transpose", lambda m, x: x.t().diagonal(1).zero_()),
    ("of_slice", lambda m, x: x[1:, :3].diagonal().fill_(6)),
    ("then_select", lambda m, x: x.diagonal()[2].fill_(7)),
    ("then_slice", lambda m, x: x.diagonal()[::2].neg_()),
    ("twice", lambda m, x: x.view(2, 2, 4).diagonal(0, 0, 1).diagonal().fill_(3)),
    ("batched", lambda m, x: x.view(2, 2, 4).diagonal(0, 1, 2)[1].fill_(9)),
    ("out", lambda m, x: m.add(m.ones(4, device=x.device), 1, out=x.diagonal())),
    ("fill_diagonal_", lambda m, x: x.fill_diagonal_(2)),
    # the other views arrays without strides cannot express: windows and as_strided (without overlap)
    ("unfold", lambda m, x: x.unfold(1, 2, 2).mul_(-1)),
    ("unfold_of_t", lambda m, x: x.t().unfold(1, 2, 3)[1:, :, 0].fill_(0.5)),
    ("as_strided", lambda m, x: x.as_strided((2, 3), (1, 5), 2).fill_(-2)),
    ("as_strided_select", lambda m, x: x.as_strided((2, 3), (1, 5), 2)[1].add_(10)),
]


@pytest.mark.parametrize("name,write", DIAGONAL_WRITES, ids=[w[0] for w in DIAGONAL_WRITES])
def test_diagonal_view_writes_reach_base(name, write, device, torch):
    x = ember.arange(16.0, device=device).view(4, 4).clone()
    tx = torch.arange(16.0).view(4, 4).clone()
    v0 = x._version
    write(ember, x)
    write(torch, tx)
    ember.testing.assert_close(x, tx)
    assert x._version > v0
    ember.testing.assert_close(x.diagonal(), tx.diagonal())


def test_diagonal_view_write_gradients(device, torch):
    grads = []
    for m, dev in ((ember, device), (torch, "cpu")):
        w = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], dtype=m.float64, device=dev,
                     requires_grad=True)
        s = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, device=dev, requires_grad=True)
        x = w * 2
        x.diagonal().mul_(s)
        x.diagonal(1).add_(1)
        (x * x).sum().backward()
        grads.append((x.detach(), w.grad, s.grad))
    for a, b in zip(*grads):
        ember.testing.assert_close(a, b)


# --------------------------------------------------------------------------- one downloader: ember.hub's
def _local_server():
    import os
    import sys

    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins", "ember_vision",
                          "tests")
    sys.path.insert(0, folder)
    try:
        import local_server
    finally:
        sys.path.remove(folder)
    return local_server


def test_hub_download_resumes_and_checks(tmp_path, capsys):
    import hashlib
    import importlib.util

    blob = bytes(range(256)) * 40
    digest = hashlib.sha256(blob).hexdigest()
    dst = tmp_path / "w" / f"blob-{digest[:8]}.bin"
    dst.parent.mkdir()
    (tmp_path / "w" / (dst.name + ".partial")).write_bytes(blob[:1000])
    with _local_server().serve({"blob.bin": blob}) as (url, httpd):
        ember.hub.download_url_to_file(url + "blob.bin", str(dst), digest[:8], progress=True)
        assert dst.read_bytes() == blob and httpd.ranges == ["bytes=1000-"]
        assert sorted(p.name for p in dst.parent.iterdir()) == [dst.name]
        if importlib.util.find_spec("tqdm") is not None:
            assert dst.name in capsys.readouterr().err  # the progress bar
        other = tmp_path / "w" / "other.bin"
        (tmp_path / "w" / "other.bin.partial").write_bytes(blob)  # complete already: nothing more arrives
        ember.hub.download_url_to_file(url + "blob.bin", str(other), progress=False)
        assert other.read_bytes() == blob and httpd.ranges[-1] == f"bytes={len(blob)}-"
        with pytest.raises(RuntimeError, match='invalid hash value \\(expected "00000000".*wrong checksum'):
            ember.hub.download_url_to_file(url + "blob.bin", str(tmp_path / "w" / "bad.bin"), "00000000")
        with pytest.raises(RuntimeError, match="HTTP 404"):
            ember.hub.download_url_to_file(url + "missing.bin", str(tmp_path / "w" / "missing.bin"))
    assert sorted(p.name for p in dst.parent.iterdir()) == sorted([dst.name, "other.bin"])


def test_vision_weights_load_through_the_hub(device, tmp_path):
    import hashlib

    models = pytest.importorskip("ember_vision.models")
    state = {"w": ember.arange(6.0, device=device).view(2, 3), "b": ember.ones(3, device=device)}
    ember.save(state, str(tmp_path / "tmp.pth"))
    data = (tmp_path / "tmp.pth").read_bytes()
    name = f"net-{hashlib.sha256(data).hexdigest()[:8]}.pth"
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / (name + ".partial")).write_bytes(data[:100])  # what an interrupted ember.hub download left
    with _local_server().serve({name: data}) as (url, httpd):
        got = models.load_state_dict_from_url(url + name, model_dir=str(cache), progress=False)
        assert httpd.ranges == ["bytes=100-"]
        again = ember.hub.load_state_dict_from_url(url + name, model_dir=str(cache), check_hash=True)
        assert len(httpd.ranges) == 1  # cached
    for k in state:
        assert got[k].device.type == "cpu" and ember.equal(got[k], state[k].cpu())
        assert ember.equal(again[k].cpu(), got[k])
    (cache / name).write_bytes(data[:-1] + b"x")
    with pytest.raises(RuntimeError, match=f"{name} has the wrong checksum.*starting with {name[4:12]}"):
        models.load_state_dict_from_url("https://example.invalid/" + name, model_dir=str(cache))


# --------------------------------------------------------------------------- activation nodes named as PyTorch's
ACTIVATIONS = [
    ("leaky_relu", lambda m, x: m.nn.functional.leaky_relu(x, 0.1)),
    ("hardtanh", lambda m, x: m.nn.functional.hardtanh(x, -0.5, 0.7)),
    ("relu6", lambda m, x: m.nn.functional.relu6(x * 4)),
    ("elu", lambda m, x: m.nn.functional.elu(x, 0.7)),
    ("selu", lambda m, x: m.nn.functional.selu(x)),
    ("celu", lambda m, x: m.nn.functional.celu(x, 0.6)),
    ("torch.celu", lambda m, x: m.celu(x)),
    ("torch.selu", lambda m, x: m.selu(x)),
    ("hardswish", lambda m, x: m.nn.functional.hardswish(x * 4)),
    ("hardsigmoid", lambda m, x: m.nn.functional.hardsigmoid(x * 4)),
    ("silu", lambda m, x: m.nn.functional.silu(x)),
    ("mish", lambda m, x: m.nn.functional.mish(x)),
    ("gelu", lambda m, x: m.nn.functional.gelu(x)),
    ("gelu_tanh", lambda m, x: m.nn.functional.gelu(x, approximate="tanh")),
    ("softplus", lambda m, x: m.nn.functional.softplus(x, 2.0, 1.0)),
    ("threshold", lambda m, x: m.nn.functional.threshold(x, 0.1, 2.0)),
    ("torch.threshold", lambda m, x: m.threshold(x, -0.1, 0.5)),
    ("logsigmoid", lambda m, x: m.nn.functional.logsigmoid(x)),
    ("softshrink", lambda m, x: m.nn.functional.softshrink(x, 0.3)),
    ("hardshrink", lambda m, x: m.nn.functional.hardshrink(x, 0.3)),
    ("rrelu_eval", lambda m, x: m.nn.functional.rrelu(x, 0.1, 0.3)),
    ("prelu", lambda m, x: m.nn.functional.prelu(x, m.tensor([0.25, -0.5, 2.0], dtype=x.dtype, device=x.device))),
    ("glu", lambda m, x: m.nn.functional.glu(x[:, :2], 1)),
    ("sigmoid", lambda m, x: m.nn.functional.sigmoid(x)),
    ("softsign", lambda m, x: m.nn.functional.softsign(x)),
    ("modules", lambda m, x: m.nn.ELU()(m.nn.SiLU()(m.nn.GELU()(m.nn.Mish()(m.nn.LeakyReLU()(x)))))),
]

INPLACE_ACTIVATIONS = [
    ("leaky_relu_", lambda m, x: m.nn.functional.leaky_relu(x, 0.1, inplace=True)),
    ("F.leaky_relu_", lambda m, x: m.nn.functional.leaky_relu_(x, 0.2)),
    ("elu_", lambda m, x: m.nn.functional.elu(x, inplace=True)),
    ("F.elu_", lambda m, x: m.nn.functional.elu_(x, 0.5)),
    ("selu_", lambda m, x: m.nn.functional.selu(x, inplace=True)),
    ("torch.selu_", lambda m, x: m.selu_(x)),
    ("celu_", lambda m, x: m.nn.functional.celu(x, 0.5, inplace=True)),
    ("torch.celu_", lambda m, x: m.celu_(x, 0.5)),
    ("threshold_", lambda m, x: m.nn.functional.threshold(x, 0.1, 2.0, inplace=True)),
    ("torch.threshold_", lambda m, x: m.threshold_(x, 0.1, 2.0)),
    ("rrelu_", lambda m, x: m.nn.functional.rrelu(x, inplace=True)),
    ("F.rrelu_", lambda m, x: m.nn.functional.rrelu_(x)),
    ("torch.rrelu_", lambda m, x: m.rrelu_(x)),
    ("hardtanh_", lambda m, x: m.nn.functional.hardtanh(x, inplace=True)),
    ("relu6_", lambda m, x: m.nn.functional.relu6(x, inplace=True)),
    ("hardswish_", lambda m, x: m.nn.functional.hardswish(x, inplace=True)),
    ("hardsigmoid_", lambda m, x: m.nn.functional.hardsigmoid(x, inplace=True)),
    ("silu_", lambda m, x: m.nn.functional.silu(x, inplace=True)),
    ("mish_", lambda m, x: m.nn.functional.mish(x, inplace=True)),
]


def _act_input(m, dev):
    vals = [[-2.5, -0.7, -0.2], [0.05, 0.4, 1.3], [3.5, -4.0, 2.2], [-0.05, 0.8, -1.6]]
    return m.tensor(vals, dtype=m.float64, device=dev, requires_grad=True)


@pytest.mark.parametrize("name,fn", ACTIVATIONS + INPLACE_ACTIVATIONS,
                         ids=[a[0] for a in ACTIVATIONS + INPLACE_ACTIVATIONS])
def test_activation_grad_fn_names(name, fn, device, torch):
    ex, tx = _act_input(ember, device), _act_input(torch, "cpu")
    if name in dict(INPLACE_ACTIVATIONS):
        ex, tx = ex * 1, tx * 1
    ey, ty = fn(ember, ex), fn(torch, tx)
    assert type(ey.grad_fn).__name__ == type(ty.grad_fn).__name__
    assert ey.grad_fn.name() == ty.grad_fn.name()
    if not name.startswith(("rrelu", "F.rrelu", "torch.rrelu")):
        ember.testing.assert_close(ey, ty)


@pytest.mark.parametrize("name,fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_gradients(name, fn, device, torch):
    ex, tx = _act_input(ember, device), _act_input(torch, "cpu")
    ey, ty = fn(ember, ex), fn(torch, tx)
    ember.testing.assert_close(ey, ty)
    (ey * ey.detach().sin()).sum().backward()
    (ty * ty.detach().sin()).sum().backward()
    ember.testing.assert_close(ex.grad, tx.grad)
    x = _act_input(ember, device)
    assert ember.autograd.gradcheck(lambda v: fn(ember, v), (x,))
    assert ember.autograd.gradgradcheck(lambda v: fn(ember, v), (x,))


@pytest.mark.parametrize("training", [False, True])
def test_rrelu_node_gradient(training, device):
    x = _act_input(ember, device)
    y = ember.nn.functional.rrelu(x, 0.1, 0.3, training=training)
    y.sum().backward()
    slope = y.detach() / x.detach()
    neg = x.detach() < 0
    assert type(y.grad_fn).__name__ == "RreluWithNoiseBackward0"
    assert ember.allclose(x.grad, ember.where(neg, slope, ember.ones_like(slope)))
    assert bool(((slope[neg] >= 0.1 - 1e-12) & (slope[neg] <= 0.3 + 1e-12)).all())


def test_activation_errors(device, torch):
    x = ember.randn(2, 3, device=device)
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        ember.nn.functional.glu(x, 1)
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        torch.nn.functional.glu(torch.randn(2, 3), 1)
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        ember.nn.functional.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        ember.nn.functional.gelu(x, approximate="erf")
    y = x.clone()
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal"):
        ember.nn.functional.rrelu_(y, 0.5, 0.2)
    assert ember.equal(x, y)
