"""nn's layers, hooks and paths against PyTorch (the rows of its functions, every check, run in
tests/test_kit.py with ember.testing.rows_nn): the layers against PyTorch's with the same weights; Module hooks
and state-dict hooks against PyTorch's call order and arguments; PyTorch's module paths; ``nn.attention``'s
switches; bad input with PyTorch's exception types."""
import importlib
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import assert_close
from ember.testing.case import bad_input_test


R = np.random.default_rng(7)


def _np(*shape, positive=False):
    a = R.standard_normal(shape)
    return np.abs(a) + 0.1 if positive else a


def _same_weights(e_mod, t_mod):
    e_mod.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()})


class Const:
    """An input that is not differentiated (targets, random draws)."""

    def __init__(self, a):
        self.a = a


def _to(m, a, device):
    if isinstance(a, Const):
        return _to(m, a.a, device)
    if isinstance(a, np.ndarray):
        return ember.tensor(a, device=device) if m is ember else m.tensor(a)
    return a


# (id, constructor(nn), inputs as arrays (float ones differentiated), call(module, *inputs))
MODULES = [
    ("RMSNorm", lambda nn: nn.RMSNorm(4), [_np(2, 3, 4)], None),
    ("RMSNorm_eps", lambda nn: nn.RMSNorm([3, 4], eps=1e-3), [_np(2, 3, 4)], None),
    ("RMSNorm_no_affine", lambda nn: nn.RMSNorm(4, elementwise_affine=False), [_np(3, 4)], None),
    ("SyncBatchNorm", lambda nn: nn.SyncBatchNorm(3), [_np(4, 3, 5)], None),
    ("CrossMapLRN2d", lambda nn: nn.CrossMapLRN2d(3, 1e-1, 0.75, 2), [_np(2, 5, 3, 3)], None),
    ("RReLU_eval", lambda nn: nn.RReLU(0.1, 0.3).eval(), [_np(3, 4)], None),
    ("Softmax2d", lambda nn: nn.Softmax2d(), [_np(2, 3, 2, 2)], None),
    ("ChannelShuffle", lambda nn: nn.ChannelShuffle(2), [_np(2, 4, 3)], None),
    ("FeatureAlphaDropout_eval", lambda nn: nn.FeatureAlphaDropout(0.2).eval(), [_np(2, 3, 4)], None),
    ("LPPool1d", lambda nn: nn.LPPool1d(2, 3, 2), [_np(2, 3, 8, positive=True)], None),
    ("LPPool2d", lambda nn: nn.LPPool2d(1.5, 2), [_np(1, 2, 4, 6, positive=True)], None),
    ("LPPool3d", lambda nn: nn.LPPool3d(2, 2, ceil_mode=True), [_np(1, 2, 3, 4, 5, positive=True)], None),
    ("AdaptiveMaxPool3d", lambda nn: nn.AdaptiveMaxPool3d((2, None, 3)), [_np(1, 2, 4, 5, 6)], None),
    ("MaxUnpool3d", lambda nn: nn.MaxUnpool3d(2), [_np(1, 2, 4, 4, 4)],
     lambda mod, m, x: mod(*m.nn.functional.max_pool3d(x, 2, return_indices=True))),
    ("FractionalMaxPool2d", lambda nn: nn.FractionalMaxPool2d(2, output_size=(3, 4), return_indices=True),
     [_np(2, 3, 7, 8), Const(R.random((2, 3, 2)))], lambda mod, m, x, u: m.nn.functional.fractional_max_pool2d(
         x, 2, (3, 4), _random_samples=u)),
    ("FractionalMaxPool3d", lambda nn: nn.FractionalMaxPool3d(2, output_ratio=(0.6, 0.5, 0.5)),
     [_np(1, 2, 6, 6, 6)], None),
    ("ConstantPad3d", lambda nn: nn.ConstantPad3d((1, 0, 2, 1, 0, 1), 0.5), [_np(1, 2, 2, 3, 2)], None),
    ("ReflectionPad3d", lambda nn: nn.ReflectionPad3d(1), [_np(1, 2, 3, 3, 3)], None),
    ("ReplicationPad3d", lambda nn: nn.ReplicationPad3d((1, 2, 0, 1, 2, 0)), [_np(1, 2, 3, 3, 3)], None),
    ("ZeroPad1d", lambda nn: nn.ZeroPad1d((2, 1)), [_np(2, 3, 4)], None),
    ("ZeroPad3d", lambda nn: nn.ZeroPad3d(1), [_np(1, 1, 2, 2, 2)], None),
    ("CircularPad1d", lambda nn: nn.CircularPad1d(2), [_np(2, 3, 4)], None),
    ("CircularPad3d", lambda nn: nn.CircularPad3d((1, 0, 1, 1, 0, 1)), [_np(1, 1, 3, 3, 3)], None),
    ("MultiMarginLoss", lambda nn: nn.MultiMarginLoss(p=2, margin=0.5), [_np(4, 5), np.array([0, 3, 4, 1])], None),
    ("SoftMarginLoss", lambda nn: nn.SoftMarginLoss(), [_np(3, 4), Const(np.sign(_np(3, 4)))], None),
    ("MultiLabelSoftMarginLoss", lambda nn: nn.MultiLabelSoftMarginLoss(reduction="sum"),
     [_np(3, 4), Const((R.random((3, 4)) > 0.5) * 1.0)], None),
    ("MultiLabelMarginLoss", lambda nn: nn.MultiLabelMarginLoss(),
     [_np(2, 4), np.array([[3, 0, -1, 1], [1, 2, 3, 0]])], None),
    ("TripletMarginWithDistanceLoss", lambda nn: nn.TripletMarginWithDistanceLoss(margin=0.3),
     [_np(3, 4), _np(3, 4), _np(3, 4)], None),
    ("NLLLoss2d", lambda nn: nn.NLLLoss2d(), [_np(2, 3, 2, 2), R.integers(0, 3, (2, 2, 2))], None),
]


def _leaves(m, device, arrays):
    out = []
    for a in arrays:
        t = _to(m, a, device)
        if t.is_floating_point() and not isinstance(a, Const):
            t.requires_grad_(True)
        out.append(t)
    return out


# PyTorch's CrossMapLRN2d backward is the textbook LRN gradient, not the derivative of its own forward (whose running
# sum keeps channel 0 in later windows); ember's is the derivative of the forward (gradchecked below)
_OWN_BACKWARD = {"CrossMapLRN2d"}


def test_cross_map_lrn2d_gradient(device):
    m = ember.nn.CrossMapLRN2d(3, 0.1, 0.75, 2)
    x = ember.tensor(_np(1, 5, 2, 2), device=device, requires_grad=True)
    assert ember.autograd.gradcheck(m, (x,))
    with pytest.raises(ValueError, match="Expected input to be 4D"):
        m(ember.ones(5, 2, 2, device=device))


def test_nll_loss_2d_is_deprecated():
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        ember.nn.NLLLoss2d()


@pytest.mark.parametrize("row", MODULES, ids=[m[0] for m in MODULES])
def test_module_against_torch(row, device, torch):
    _, make, arrays, call = row
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # NLLLoss2d's deprecation (tested below)
        t_mod, e_mod = make(torch.nn).double(), make(ember.nn).double().to(device)
    _same_weights(e_mod, t_mod)
    assert repr(e_mod) == repr(t_mod)
    if call is None:
        def call(mod, m, *xs):
            return mod(*xs)
    te, tt = _leaves(ember, device, arrays), _leaves(torch, "cpu", arrays)
    if "Fractional" in row[0] and len(arrays) == 1:  # the same draws in both
        u = R.random((1, 2, 3))
        t_mod._random_samples, e_mod._random_samples = torch.tensor(u), ember.tensor(u, device=device)
    ye, yt = call(e_mod, ember, *te), call(t_mod, torch, *tt)
    ye, yt = (ye if isinstance(ye, tuple) else (ye,)), (yt if isinstance(yt, tuple) else (yt,))
    for a, b in zip(ye, yt):
        assert_close(a, b)
    if row[0] in _OWN_BACKWARD:
        return
    ge = ember.autograd.grad(ye[0].sum(), [x for x in te if x.requires_grad] + list(e_mod.parameters()))
    gt = torch.autograd.grad(yt[0].sum(), [x for x in tt if x.requires_grad] + list(t_mod.parameters()))
    for a, b in zip(ge, gt):
        assert_close(a, b)


def test_adaptive_log_softmax_with_loss(device, torch):
    torch.manual_seed(0)
    t_mod = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True).double()
    e_mod = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True).double().to(device)
    _same_weights(e_mod, t_mod)
    x, t = _np(5, 8), np.array([0, 4, 9, 2, 7])
    xe = ember.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    oe, ot = e_mod(xe, ember.tensor(t, device=device)), t_mod(xt, torch.tensor(t))
    assert_close(oe.output, ot.output)
    assert_close(oe.loss, ot.loss)
    oe.loss.backward()
    ot.loss.backward()
    assert_close(xe.grad, xt.grad)
    assert_close(e_mod.head.weight.grad, t_mod.head.weight.grad)
    assert_close(e_mod.log_prob(xe.detach()), t_mod.log_prob(xt.detach()))
    assert_close(e_mod.predict(xe.detach()), t_mod.predict(xt.detach()))
    one = e_mod(xe[1], ember.tensor(4, device=device))
    assert one.output.shape == ()
    assert abs(one.output.item() - ot.output[1].item()) < 1e-10
    with pytest.raises(RuntimeError, match="Target values should be in"):
        e_mod(xe, ember.tensor([0, 10, 1, 1, 1], device=device))
    with pytest.raises(ValueError, match="cutoffs should be a sequence"):
        ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])


def test_gumbel_softmax(device):
    logits = ember.tensor([[0.0, 1.0, 2.0, -1.0]], device=device).expand(4000, 4)
    soft = F.gumbel_softmax(logits, tau=0.5)
    assert_close(soft.sum(-1), ember.ones(4000, dtype=soft.dtype, device=device))
    hard = F.gumbel_softmax(logits.requires_grad_(False).clone().requires_grad_(), tau=1.0, hard=True)
    assert sorted(set(hard.sum(-1).tolist())) == [1.0] and set(hard.flatten().tolist()) <= {0.0, 1.0}
    freq = hard.detach().mean(0).cpu().numpy()
    want = np.exp([0.0, 1.0, 2.0, -1.0]) / np.exp([0.0, 1.0, 2.0, -1.0]).sum()
    assert np.abs(freq - want).max() < 0.04  # Gumbel-max samples from softmax(logits)
    hard.sum().backward()  # the straight-through gradient is the soft sample's: it sums to zero per row


def test_random_ops_in_training_mode(device):
    x = ember.randn(200, 50, device=device, dtype=ember.float64)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    neg = x < 0
    slopes = (y[neg] / x[neg]).cpu().numpy()
    assert slopes.min() >= 0.1 - 1e-12 and slopes.max() <= 0.3 + 1e-12 and slopes.std() > 0.02
    assert_close(y[~neg], x[~neg])
    z = F.feature_alpha_dropout(ember.ones(20, 30, 4, device=device), 0.5, training=True)
    per_channel = z.cpu().numpy().std(-1)
    assert per_channel.max() < 1e-6  # whole channels kept or dropped
    out, mask = ember.native_dropout(ember.ones(1000, device=device), 0.25, True)
    assert mask.dtype == ember.bool and np.allclose(out[mask].cpu().numpy(), 4 / 3) and 650 < int(mask.sum()) < 850
    fx = F.fractional_max_pool2d(ember.randn(2, 3, 9, 9, device=device), 2, output_size=4)
    assert fx.shape == (2, 3, 4, 4)


def test_lazy_modules(device, torch):
    lin = ember.nn.LazyLinear(3)
    assert isinstance(lin.weight, ember.nn.UninitializedParameter) and lin.has_uninitialized_params()
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        _ = lin.weight.shape
    y = lin.to(device)(ember.ones(2, 5, device=device))
    assert type(lin) is ember.nn.Linear and lin.in_features == 5 and y.shape == (2, 3)
    assert type(lin.weight) is ember.nn.Parameter and lin.weight.device == y.device
    for name, x, cls, shape in [
        ("LazyConv2d", ember.ones(1, 6, 5, 5), "Conv2d", (4, 3, 3, 3)),
        ("LazyConvTranspose1d", ember.ones(6, 5), "ConvTranspose1d", (6, 4, 3)),
        ("LazyBatchNorm1d", ember.randn(4, 3), "BatchNorm1d", (3,)),
        ("LazyInstanceNorm2d", ember.randn(3, 4, 4), "InstanceNorm2d", None),
    ]:
        kw = {"groups": 2} if cls == "Conv2d" else {}
        args = (4, 3) if cls == "Conv2d" else (4, 3) if cls == "ConvTranspose1d" else ()
        mod = getattr(ember.nn, name)(*args, **kw)
        mod(x)
        assert type(mod).__name__ == cls
        if shape is not None:
            assert tuple(next(mod.parameters()).shape) == shape
    # a state dict materialises the placeholders (as PyTorch's)
    lazy = ember.nn.LazyConv1d(2, 3)
    lazy.load_state_dict(ember.nn.Conv1d(4, 2, 3).state_dict())
    assert lazy(ember.ones(1, 4, 5)).shape == (1, 2, 3) and lazy.in_channels == 4
    t = torch.nn.LazyLinear(3)
    t(torch.ones(2, 5))
    assert [tuple(p.shape) for p in t.parameters()] == [tuple(p.shape) for p in lin.parameters()]


def test_buffer_and_uninitialized(device):
    m = ember.nn.Module()
    m.steps = ember.nn.Buffer(ember.zeros(2, device=device))
    m.scratch = ember.nn.Buffer(ember.ones(1, device=device), persistent=False)
    assert [n for n, _ in m.named_buffers()] == ["steps", "scratch"]
    assert list(m.state_dict()) == ["steps"]
    assert isinstance(m.steps, ember.nn.Buffer) and not isinstance(ember.ones(1), ember.nn.Buffer)
    p = ember.nn.UninitializedParameter()
    p.materialize((2, 3), dtype=ember.float64)
    assert type(p) is ember.nn.Parameter and p.shape == (2, 3) and p.dtype == ember.float64 and p.requires_grad
    b = ember.nn.UninitializedBuffer()
    b.materialize(4)
    assert type(b) is ember.Tensor and b.shape == (4,)
    assert ember.nn.parameter.is_lazy(ember.nn.UninitializedParameter())


def test_sync_batch_norm_convert(device):
    net = ember.nn.Sequential(ember.nn.Conv2d(2, 3, 1), ember.nn.BatchNorm2d(3),
                              ember.nn.Sequential(ember.nn.BatchNorm1d(4)))
    bn = net[1]
    conv = ember.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert type(conv[1]) is ember.nn.SyncBatchNorm and type(conv[2][0]) is ember.nn.SyncBatchNorm
    assert conv[1].weight is bn.weight and conv[1].running_mean is bn.running_mean
    with pytest.raises(ValueError, match="expected at least 2D input"):
        conv[1](ember.ones(3))


# --------------------------------------------------------------------------- Module API against PyTorch
def _hook_log(m, device):
    """The calls and arguments of every kind of hook, through a forward, a backward, a save and a load."""
    log = []
    dev = device if m is ember else "cpu"
    seq = m.nn.Sequential(m.nn.Linear(2, 3), m.nn.Tanh(), m.nn.Linear(3, 1)).double().to(dev)
    with m.no_grad():
        for i, p in enumerate(seq.parameters()):
            p.copy_(m.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (i + 1)))

    def grads(gs):
        return [None if g is None else np.round(g.detach().cpu().numpy(), 10).tolist() for g in gs]

    seq[0].register_full_backward_pre_hook(lambda mod, go: log.append(("pre0", grads(go))))
    seq[0].register_full_backward_hook(lambda mod, gi, go: log.append(("full0", grads(gi), grads(go))))
    seq[2].register_full_backward_pre_hook(lambda mod, go: log.append(("pre2", grads(go))))
    seq[2].register_full_backward_hook(lambda mod, gi, go: log.append(("full2", grads(gi), grads(go))))
    seq.register_forward_pre_hook(lambda mod, args: log.append(("fpre", len(args))))
    seq.register_forward_hook(lambda mod, args, out: log.append(("fpost", tuple(out.shape))))
    x = m.tensor(np.array([[0.5, -1.0], [2.0, 0.25]]), device=dev, requires_grad=True)
    seq(x).sum().backward()
    seq.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("sd_pre", prefix, keep_vars)))
    seq[0].register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("sd_pre0", prefix)))
    seq.register_state_dict_post_hook(lambda mod, sd, prefix, meta: log.append(("sd_post", prefix, list(sd))))
    seq[2].register_state_dict_post_hook(lambda mod, sd, prefix, meta: log.append(("sd_post2", prefix, list(sd))))
    sd = seq.state_dict(prefix="net.")
    log.append(("keys", list(sd)))
    sd = seq.state_dict()
    seq.register_load_state_dict_pre_hook(
        lambda mod, state, prefix, meta, strict, missing, unexpected, errors: log.append(("ld_pre", prefix, strict)))
    seq[2].register_load_state_dict_pre_hook(
        lambda mod, state, prefix, meta, strict, missing, unexpected, errors: log.append(("ld_pre2", prefix)))

    def forgive(mod, keys):
        log.append(("ld_post", list(keys.missing_keys), list(keys.unexpected_keys)))
        keys.missing_keys.clear()

    seq.register_load_state_dict_post_hook(forgive)
    del sd["2.bias"]
    r = seq.load_state_dict(sd)
    log.append(("result", list(r.missing_keys), list(r.unexpected_keys)))
    return log


def test_hooks_match_torch(device, torch):
    got, want = _hook_log(ember, device), _hook_log(torch, device)
    assert got == want


def test_register_backward_hook(device, torch):
    """The deprecated hook runs on the grad_fn of the module's output with that node's gradients."""
    def run(m):
        log = []
        dev = device if m is ember else "cpu"
        act = m.nn.Tanh()
        act.register_backward_hook(lambda mod, gi, go: log.append(([g.tolist() for g in gi], [g.tolist() for g in go])))
        x = m.tensor([0.5, -1.0], dtype=m.float64, device=dev, requires_grad=True)
        with pytest.warns(FutureWarning, match="forward contains multiple autograd Nodes"):
            y = act(x)  # the hook will not see x's AccumulateGrad among the node's inputs: PyTorch warns
        y.sum().backward()
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
            act.register_full_backward_hook(lambda *a: None)
        return log, x.grad.tolist()

    assert run(ember) == run(torch)
    lin = ember.nn.Linear(2, 2).to(device)
    seen = []
    lin.register_backward_hook(lambda mod, gi, go: seen.append((mod, len(go))))
    x = ember.ones(3, 2, device=device, requires_grad=True)
    with pytest.warns(FutureWarning, match="non-full backward hook"):
        y = lin(x)
    y.sum().backward()
    assert seen == [(lin, 1)]
    full = ember.nn.ReLU()
    full.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both"):
        full.register_backward_hook(lambda *a: None)


def test_state_dict_post_hook_must_return_none():
    m = ember.nn.Linear(2, 2)
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd)
    with pytest.raises(RuntimeError, match="must return None"):
        m.state_dict()


def test_submodule_parameter_buffer_access(device, torch):
    def build(m):
        net = m.nn.Sequential(m.nn.Linear(2, 3), m.nn.Sequential(m.nn.BatchNorm1d(3)))
        return net

    for m in (ember, torch):
        net = build(m)
        assert net.get_submodule("1.0") is net[1][0]
        assert net.get_parameter("0.weight") is net[0].weight
        assert net.get_buffer("1.0.running_mean") is net[1][0].running_mean
        net.set_submodule("1.0", m.nn.Identity())
        assert type(net[1][0]).__name__ == "Identity"
        net.set_submodule("1.extra", m.nn.ReLU())
        assert hasattr(net[1], "extra")
        with pytest.raises(AttributeError, match="has no attribute `missing`"):
            net.set_submodule("1.missing", m.nn.ReLU(), strict=True)
        with pytest.raises(AttributeError, match="is not an nn.Module"):
            net.set_submodule("0.weight", m.nn.ReLU())
        with pytest.raises(ValueError, match="without a target name"):
            net.set_submodule("", m.nn.ReLU())
        with pytest.raises(ValueError, match="is not an nn.Module"):
            net.set_submodule("0", 3)
        with pytest.raises(AttributeError, match="is not an nn.Parameter"):
            net.get_parameter("1")
    assert "set_submodule" in dir(ember.nn.Module)


class _Counter(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ember.nn.Linear(2, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x)

    def get_extra_state(self):
        return {"calls": self.calls}

    def set_extra_state(self, state):
        self.calls = state["calls"]


def test_extra_state_to_empty_compile(device):
    a, b = _Counter(), _Counter()
    a(ember.ones(1, 2))
    sd = a.state_dict()
    assert sd["_extra_state"] == {"calls": 1} and list(sd) == ["_extra_state", "lin.weight", "lin.bias"]
    b.load_state_dict(sd)
    assert b.calls == 1
    assert "_extra_state" not in ember.nn.Linear(2, 2).state_dict()
    with pytest.raises(RuntimeError, match="should never be called"):
        ember.nn.Linear(2, 2).get_extra_state()
    net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    out = net.to_empty(device=device)
    assert out is net and net[0].weight.device.type == ember.device(device).type
    assert [tuple(p.shape) for p in net.parameters()] == [(4, 3), (4,), (4,), (4,)]
    assert isinstance(net[0].weight, ember.nn.Parameter) and net[0].weight.requires_grad
    assert net[1].num_batches_tracked.dtype == ember.int64
    assert net.compile() is None and net[0](ember.ones(2, 3, device=device)).shape == (2, 4)


def test_softmax_implicit_dim_warns(device):
    x = ember.randn(2, 3, device=device)
    for fn in (F.softmax, F.log_softmax, F.softmin):
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {fn.__name__} has been deprecated"):
            y = fn(x)
        assert_close(y, fn(x, 1))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        ember.nn.Softmax()(x)
    with pytest.raises(TypeError):
        ember.softmax(x)  # torch.softmax requires dim
    assert_close(x.softmax(-1), F.softmax(x, -1))


def test_init_deprecated_forms():
    for name in ("dirac", "eye", "uniform", "normal"):
        with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
            getattr(ember.nn.init, name)(ember.empty(3, 3, 3) if name == "dirac" else ember.empty(3, 3))


# --------------------------------------------------------------------------- PyTorch's module paths
_PATHS = ["activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv", "distance", "dropout",
          "flatten", "fold", "instancenorm", "lazy", "linear", "loss", "module", "normalization", "padding",
          "pixelshuffle", "pooling", "rnn", "sparse", "transformer", "upsampling", "utils"]


@pytest.mark.parametrize("path", _PATHS)
def test_torch_module_paths(path, torch):
    """``ember.nn.modules.<path>.<Class>`` for every class of ``torch.nn.modules.<path>`` that ember.nn has."""
    theirs = getattr(torch.nn.modules, path)
    ours = importlib.import_module(f"ember.nn.modules.{path}")
    names = [n for n in dir(theirs) if isinstance(getattr(theirs, n), type)
             and getattr(theirs, n).__module__.startswith("torch.nn") and hasattr(ember.nn, n)]
    assert [n for n in names if getattr(ours, n, None) is not getattr(ember.nn, n)] == []


def test_pickled_model_paths():
    import ember.nn.modules.activation as act
    import ember.nn.modules.linear as lin
    assert act.MultiheadAttention is ember.nn.MultiheadAttention
    assert issubclass(lin.NonDynamicallyQuantizableLinear, ember.nn.Linear)
    assert type(ember.nn.MultiheadAttention(4, 2).out_proj) is lin.NonDynamicallyQuantizableLinear
    from ember.nn.modules.utils import _pair, _triple, consume_prefix_in_state_dict_if_present
    assert _pair(3) == (3, 3) and _triple((1, 2, 3)) == (1, 2, 3)
    sd = {"module.a": 1, "b": 2}
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert sd == {"a": 1, "b": 2}


# --------------------------------------------------------------------------- bad input
def _t(m, d, *shape):
    return m.ones(*shape, dtype=m.float64, device=d if m is ember else "cpu")


BAD = [
    ("channel_shuffle_groups", lambda m, d: m.channel_shuffle(_t(m, d, 1, 3, 2), 2), RuntimeError,
     "Number of channels must be divisible by groups. Got 3 channels and 2 groups"),
    ("pdist_3d", lambda m, d: m.pdist(_t(m, d, 2, 3, 4)), RuntimeError, "pdist only supports 2D tensors, got: 3D"),
    ("rrelu_bounds", lambda m, d: m.nn.functional.rrelu(_t(m, d, 3), 0.5, 0.2), RuntimeError,
     "Lower bound should be less than or equal to the upper bound"),
    ("rms_norm_shape", lambda m, d: m.nn.functional.rms_norm(_t(m, d, 2, 3), [4]), RuntimeError,
     r"rms_norm: Given normalized_shape=\[4\]"),
    ("grid_sample_mode", lambda m, d: m.nn.functional.grid_sample(_t(m, d, 1, 1, 2, 2), _t(m, d, 1, 1, 1, 2),
                                                                  "cubic", align_corners=False), ValueError,
     "expected mode to be 'bilinear', 'nearest' or 'bicubic'"),
    ("grid_sample_padding", lambda m, d: m.nn.functional.grid_sample(_t(m, d, 1, 1, 2, 2), _t(m, d, 1, 1, 1, 2),
                                                                     padding_mode="wrap", align_corners=False),
     ValueError, "expected padding_mode"),
    ("grid_sample_batch", lambda m, d: m.nn.functional.grid_sample(_t(m, d, 2, 1, 2, 2), _t(m, d, 1, 1, 1, 2),
                                                                   align_corners=False), RuntimeError,
     "expected grid and input to have same batch size"),
    ("grid_sample_last", lambda m, d: m.nn.functional.grid_sample(_t(m, d, 1, 1, 2, 2), _t(m, d, 1, 1, 1, 3),
                                                                  align_corners=False), RuntimeError,
     "expected grid to have size 2 in last dimension"),
    ("grid_sample_bicubic_3d", lambda m, d: m.nn.functional.grid_sample(_t(m, d, 1, 1, 2, 2, 2),
                                                                        _t(m, d, 1, 1, 1, 1, 3), "bicubic",
                                                                        align_corners=False), RuntimeError,
     "bicubic interpolation only supports 4D input"),
    ("affine_grid_theta", lambda m, d: m.nn.functional.affine_grid(_t(m, d, 1, 3, 3), (1, 1, 2, 2), False),
     ValueError, "Expected a batch of 2D affine matrices of shape Nx2x3"),
    ("affine_grid_size", lambda m, d: m.nn.functional.affine_grid(_t(m, d, 1, 2, 3), (1, 1, 2), False),
     NotImplementedError, "affine_grid only supports 4D and 5D sizes"),
    ("multi_margin_p", lambda m, d: m.nn.functional.multi_margin_loss(_t(m, d, 2, 3), m.zeros(2, dtype=m.long), p=3),
     ValueError, "only p == 1 and p == 2 supported"),
    ("fractional_no_size", lambda m, d: m.nn.functional.fractional_max_pool2d(_t(m, d, 1, 1, 4, 4), 2),
     ValueError, "requires specifying either an output_size or an output_ratio"),
    ("fractional_too_big", lambda m, d: m.nn.functional.fractional_max_pool2d(_t(m, d, 1, 1, 4, 4), 3, 3),
     RuntimeError, "too large relative to input"),
    ("conv_tbc_channels", lambda m, d: m.conv_tbc(_t(m, d, 3, 1, 2), _t(m, d, 2, 3, 4), _t(m, d, 4)), RuntimeError,
     "conv_tbc: Input dim 2"),
    ("triplet_distance_margin", lambda m, d: m.nn.functional.triplet_margin_with_distance_loss(
        _t(m, d, 2, 3), _t(m, d, 2, 3), _t(m, d, 2, 3), margin=0.0), ValueError, "margin to be greater than 0"),
    ("conv2d_input_size", lambda m, d: m.nn.grad.conv2d_input((1, 2, 6, 5), _t(m, d, 3, 2, 3, 2),
                                                               _t(m, d, 1, 3, 4, 2)), RuntimeError,
     r"grad_output\[2:\] shape\[4, 2\] must be equal to output size 4 4"),
    ("softmax2d_dims", lambda m, d: m.nn.Softmax2d()(_t(m, d, 3, 3)), ValueError, "Softmax2d"),
    ("multi_margin_weight_module", lambda m, d: m.nn.MultiMarginLoss(weight=_t(m, d, 2, 2)), ValueError,
     "weight"),
]

test_bad_input = bad_input_test(BAD)


def test_failed_calls_leave_inputs_untouched(device):
    x = ember.ones(1, 3, 2, device=device, requires_grad=True)
    before = x.detach().clone()
    with pytest.raises(RuntimeError):
        ember.channel_shuffle(x, 2)
    with pytest.raises(RuntimeError):
        F.rrelu_(x.detach().clone(), 0.5, 0.2)
    assert_close(x.detach(), before)
    assert x.grad is None


def test_deprecated_upsample_functions(device, torch):
    x = _np(1, 2, 3, 3)
    for name in ("upsample_nearest", "upsample_bilinear"):
        with pytest.warns(UserWarning, match=f"`nn.functional.{name}` is deprecated"):
            got = getattr(F, name)(ember.tensor(x, device=device), scale_factor=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(torch.nn.functional, name)(torch.tensor(x), scale_factor=2)
        assert_close(got, want)


def test_grid_sample_and_affine_grid_default_align_corners_warn(device):
    theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], device=device)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        grid = F.affine_grid(theta, (1, 1, 2, 3))
    x = ember.arange(6.0, device=device).reshape(1, 1, 2, 3)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        y = F.grid_sample(x, grid)
    assert_close(y, x)  # the identity map samples every pixel at its centre
    assert F.GRID_SAMPLE_INTERPOLATION_MODES == {"bilinear": 0, "nearest": 1, "bicubic": 2}
    assert F.GRID_SAMPLE_PADDING_MODES == {"zeros": 0, "border": 1, "reflection": 2}


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
