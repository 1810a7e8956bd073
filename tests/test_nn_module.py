"""nn.Module: registration, traversal, state_dict, load_state_dict, hooks, repr, conversions, the seeds' models."""
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F
from ember.testing import to_numpy


def _defs(n, Fn):
    """The seeds' models, written once against a given ``nn``/``F`` pair."""

    class Net(n.Module):
        def __init__(self):
            super(Net, self).__init__()  # noqa: UP008  (as written in the seeds)
            self.conv1 = n.Conv2d(1, 6, 5)
            self.conv2 = n.Conv2d(6, 16, 5)
            self.fc1 = n.Linear(16 * 5 * 5, 120)
            self.fc2 = n.Linear(120, 84)
            self.fc3 = n.Linear(84, 10)

        def forward(self, x):
            x = Fn.max_pool2d(Fn.relu(self.conv1(x)), (2, 2))
            x = Fn.max_pool2d(Fn.relu(self.conv2(x)), 2)
            x = x.view(x.size()[0], -1)
            x = Fn.relu(self.fc1(x))
            x = Fn.relu(self.fc2(x))
            return self.fc3(x)

    class Net2(n.Module):
        def __init__(self):
            super().__init__()
            self.features = n.Sequential(n.Conv2d(3, 6, 5), n.ReLU(), n.MaxPool2d(2, 2), n.Conv2d(6, 16, 5), n.ReLU(),
                                         n.MaxPool2d(2, 2))
            self.classifier = n.Sequential(n.Linear(16 * 5 * 5, 120), n.ReLU(), n.Linear(120, 84), n.ReLU(),
                                           n.Linear(84, 10))

        def forward(self, x):
            x = self.features(x)
            return self.classifier(x.view(-1, 16 * 5 * 5))

    class Model(n.Module):
        def __init__(self):
            super().__init__()
            self.conv2 = n.Linear(1, 2)
            self.vec = n.Sequential(OrderedDict([("bn", n.BatchNorm2d(3)), ("fc", n.Linear(3, 3))]))
            self.par = n.Parameter(ember.rand([1]) if n is nn else __import__("torch").rand([1]))
            self.register_buffer("buffer", ember.randn([2, 3]) if n is nn else __import__("torch").randn([2, 3]))
            self.register_buffer("scratch", ember.zeros(1) if n is nn else __import__("torch").zeros(1),
                                 persistent=False)

        def forward(self, x):
            return self.conv2(x)

    class Slices(n.Module):
        def __init__(self, features):
            super().__init__()
            self.slice1 = n.Sequential()
            self.slice2 = n.Sequential()
            for x in range(3):
                self.slice1.add_module(str(x), features[x])
            for x in range(3, 6):
                self.slice2.add_module(str(x), features[x])
            for param in self.parameters():
                param.requires_grad = False

        def forward(self, x):
            h1 = self.slice1(x)
            return [h1, self.slice2(h1)]

    return Net, Net2, Model, Slices


def test_seed_models_print_what_torch_prints(torch, device, capsys):
    ours, theirs = _defs(nn, F), _defs(torch.nn, torch.nn.functional)
    for E, T in zip(ours[:3], theirs[:3]):
        e, t = E(), T()
        assert list(e.state_dict().keys()) == list(t.state_dict().keys())
        assert [tuple(v.shape) for v in e.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]
        assert repr(e) == repr(t)
        print(e.state_dict().keys())
        out = capsys.readouterr().out
        print(t.state_dict().keys())
        assert out == capsys.readouterr().out
    net = ours[0]().to(device)
    assert tuple(net(ember.randn(1, 1, 32, 32, device=device)).shape) == (1, 10)
    net2 = ours[1]().to(device)
    assert tuple(net2(ember.randn(2, 3, 32, 32, device=device)).shape) == (2, 10)
    feats = ours[1]().features
    sl = ours[3](feats)
    assert list(sl.state_dict()) == ["slice1.0.weight", "slice1.0.bias", "slice2.3.weight", "slice2.3.bias"]
    assert all(not p.requires_grad for p in sl.parameters())
    h1, h2 = sl.to(device)(ember.randn(1, 3, 32, 32, device=device))
    assert tuple(h2.shape) == (1, 16, 5, 5) and h1.grad_fn is None


def test_seed_net_matches_torch_numerically(torch, device):
    from nn_helpers import compare_module

    Net = _defs(nn, F)[0]
    TNet = _defs(torch.nn, torch.nn.functional)[0]
    x = np.random.default_rng(0).standard_normal((2, 1, 32, 32)).astype("float32")
    compare_module(torch, Net(), TNet(), [x], device, "float32")


def test_registration_and_traversal(device):
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, nn.ReLU(), lin)          # a shared module, its parameters once
    assert len(list(m.parameters())) == 2
    assert [k for k, _ in m.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(m.named_parameters(remove_duplicate=False))) == 4
    assert [k for k, _ in m.named_modules()] == ["", "0", "1"]
    assert [k for k, _ in m.named_children()] == ["0", "1"]
    assert m.get_submodule("0") is lin and m.get_parameter("0.bias") is lin.bias
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("nope")
    root = nn.Module()
    root.register_parameter("bias", None)
    root.register_buffer("buf", ember.zeros(2))
    root.sub = nn.Linear(1, 1)
    assert root.bias is None and list(root.state_dict()) == ["buf", "sub.weight", "sub.bias"]
    assert [k for k, _ in root.named_parameters(prefix="m")] == ["m.sub.weight", "m.sub.bias"]
    assert [k for k, _ in root.named_parameters(recurse=False)] == []
    del root.sub
    assert list(root.state_dict()) == ["buf"]


def test_registration_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign 'ember.FloatTensor' as parameter 'weight'"):
        m.weight = ember.zeros(2, 2, device="cpu")  # the type name is device-qualified elsewhere (ember.cuda.)
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.register_buffer("weight", ember.zeros(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", ember.zeros(1))
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer"):
        m.register_buffer("b", 3)
    m.register_buffer("b", ember.zeros(1))
    with pytest.raises(TypeError, match="as buffer 'b'"):
        m.b = 3
    with pytest.raises(AttributeError, match="before Module.__init__"):
        class Bad(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(ember.zeros(1))

        Bad()
    m.weight = None                               # allowed: a declared parameter may become None
    assert "weight" not in dict(m.named_parameters())


def test_state_dict_nested_matches_torch(torch):
    ours, theirs = _defs(nn, F)[2](), _defs(torch.nn, torch.nn.functional)[2]()
    e_sd, t_sd = ours.state_dict(), theirs.state_dict()
    assert list(e_sd) == list(t_sd)
    assert "scratch" not in e_sd and "vec.bn.num_batches_tracked" in e_sd
    assert e_sd["vec.bn.num_batches_tracked"].dtype == ember.int64
    assert [tuple(v.shape) for v in e_sd.values()] == [tuple(v.shape) for v in t_sd.values()]
    assert e_sd["par"].grad_fn is None and not e_sd["par"].requires_grad
    assert ours.state_dict(keep_vars=True)["par"] is ours.par
    # values share storage with the module (like PyTorch)
    e_sd["buffer"].fill_(7.0)
    assert float(ours.buffer.sum().item()) == 42.0


def test_load_state_dict_round_trip_and_errors(device):
    a, b = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)), nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    a.to(device)
    b.to(device)
    res = b.load_state_dict(a.state_dict())
    assert repr(res) == "<All keys matched successfully>" and res.missing_keys == []
    np.testing.assert_array_equal(to_numpy(a[0].weight), to_numpy(b[0].weight))
    before = {k: to_numpy(v).copy() for k, v in b.state_dict().items()}
    sd = OrderedDict(a.state_dict())
    sd["0.weight"] = ember.zeros(5, 5, device=device)
    sd["extra"] = ember.zeros(1, device=device)
    del sd["1.running_var"]
    sd["0.bias"] = ember.full((2,), 9.0, device=device)
    with pytest.raises(RuntimeError) as info:
        b.load_state_dict(sd)
    msg = str(info.value)
    assert msg.startswith("Error(s) in loading state_dict for Sequential:")
    assert 'Missing key(s) in state_dict: "1.running_var"' in msg
    assert 'Unexpected key(s) in state_dict: "extra"' in msg
    assert "size mismatch for 0.weight: copying a param with shape torch.Size([5, 5]) from checkpoint, the shape " \
           "in current model is torch.Size([2, 3])" in msg
    for k, v in b.state_dict().items():  # as PyTorch: the entries that fit (0.bias) are copied before it raises
        np.testing.assert_array_equal(to_numpy(v), [9.0, 9.0] if k == "0.bias" else before[k])
    del sd["0.weight"]
    res = b.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["0.weight", "1.running_var"] and res.unexpected_keys == ["extra"]
    np.testing.assert_array_equal(to_numpy(b[0].bias), [9.0, 9.0])


def test_hooks(device):
    lin = nn.Linear(3, 2).to(device)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    h2 = lin.register_forward_hook(lambda m, args, out: out + 1)
    h3 = lin.register_full_backward_hook(lambda m, gin, gout: calls.append((gin, gout)))
    x = ember.ones(4, 3, device=device, requires_grad=True)
    y = lin(x)
    ref = F.linear(x * 2, lin.weight, lin.bias) + 1
    np.testing.assert_allclose(to_numpy(y.detach()), to_numpy(ref.detach()), rtol=1e-6)
    y.sum().backward()
    assert len(calls) == 1
    gin, gout = calls[0]
    assert tuple(gout[0].shape) == (4, 2) and tuple(gin[0].shape) == (4, 3)
    np.testing.assert_allclose(to_numpy(x.grad), to_numpy((ember.ones(4, 2, device=device) @ lin.weight * 2)
                                                          .detach()), rtol=1e-6)
    for h in (h1, h2, h3):
        h.remove()
    np.testing.assert_allclose(to_numpy(lin(x).detach()), to_numpy(F.linear(x, lin.weight, lin.bias).detach()))
    seen = []
    lin.register_full_backward_pre_hook(lambda m, gout: (gout[0] * 0,))
    lin.register_full_backward_hook(lambda m, gin, gout: seen.append(gout))
    x.grad = None
    lin(x).sum().backward()
    assert not np.any(to_numpy(x.grad)) and not np.any(to_numpy(seen[0][0]))


class WithExtra(nn.Module):
    def __init__(self):
        super().__init__()
        self.v = 1
        self.fc = nn.Linear(2, 2)

    def get_extra_state(self):
        return {"v": self.v}

    def set_extra_state(self, state):
        self.v = state["v"]


def test_extra_state_deepcopy_and_pickle():
    import copy
    import pickle

    a, b = WithExtra(), WithExtra()
    a.v = 7
    assert list(a.state_dict()) == ["_extra_state", "fc.weight", "fc.bias"]
    b.load_state_dict(a.state_dict())
    assert b.v == 7
    for c in (copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert isinstance(c.fc.weight, nn.Parameter) and c.fc.weight is not a.fc.weight and c.v == 7
        np.testing.assert_array_equal(to_numpy(c.fc.weight), to_numpy(a.fc.weight))


def test_forward_hooks_with_kwargs(device):
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {**kwargs, "factor": 3.0}), with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs) or out + 1, with_kwargs=True)
    out = m(ember.ones(2, device=device), factor=2.0)
    np.testing.assert_array_equal(to_numpy(out), [4.0, 4.0])
    assert seen == [{"factor": 3.0}]


def test_state_dict_and_load_hooks():
    m = nn.Linear(2, 2)
    log = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("pre", prefix)))
    m.register_load_state_dict_post_hook(lambda mod, keys: log.append(("post", tuple(keys.missing_keys))))
    m.load_state_dict(m.state_dict())
    assert ("pre", "") in log and ("post", ()) in log


def test_modes_grads_and_conversion(device):
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.BatchNorm1d(2))
    assert m.training and m[1].training
    m.eval()
    assert not m.training and not m[2].training
    m.train()
    assert m[2].training
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_(True)
    m.to(device)
    m(ember.randn(3, 2, device=device)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(not np.any(to_numpy(p.grad)) for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    w = m[0].weight
    m.double()
    assert m[0].weight is w and w.dtype == ember.float64 and m[2].running_mean.dtype == ember.float64
    assert m[2].num_batches_tracked.dtype == ember.int64
    m.float()
    assert w.dtype == ember.float32
    m.to(ember.float64)
    assert w.dtype == ember.float64
    assert m.cpu() is m and w.device.type == "cpu"
    m.half()
    assert w.dtype == ember.float16


def test_apply_init_weights_seed_example():
    def init_weights(m):
        if type(m) is nn.Linear:
            nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    assert net.apply(init_weights) is net
    assert np.allclose(to_numpy(net[1].bias), 0.01)


def test_parameter_and_containers():
    p = nn.Parameter(ember.ones(2, device="cpu"))
    assert p.requires_grad and p.is_leaf and isinstance(p, ember.Tensor)
    assert repr(p) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert not nn.Parameter(ember.ones(1), requires_grad=False).requires_grad
    assert type(p * 2) is ember.Tensor
    import copy

    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad and q is not p
    pl = nn.ParameterList([nn.Parameter(ember.ones(1)), ember.zeros(2)])
    assert len(pl) == 2 and isinstance(pl[1], nn.Parameter)
    pd = nn.ParameterDict({"a": nn.Parameter(ember.ones(1))})
    holder = nn.Module()
    holder.pl, holder.pd = pl, pd
    assert list(holder.state_dict()) == ["pl.0", "pl.1", "pd.a"]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.ReLU())
    md = nn.ModuleDict({"act": nn.Tanh()})
    assert len(ml) == 2 and "act" in md and isinstance(ml[-1], nn.ReLU)
    seq = nn.Sequential(nn.Linear(1, 2), nn.ReLU(), nn.Linear(2, 1))
    assert isinstance(seq[-1], nn.Linear) and len(seq[:2]) == 2 and list(seq[1:]._modules) == ["1", "2"]
    del seq[0]
    assert list(seq._modules) == ["0", "1"]
    seq.insert(0, nn.Identity())
    assert isinstance(seq[0], nn.Identity) and list(seq._modules) == ["0", "1", "2"]
    ml += [nn.Tanh()]
    ml.insert(1, nn.Sigmoid())
    del ml[0]
    assert [type(m).__name__ for m in ml] == ["Sigmoid", "ReLU", "Tanh"] and list(ml._modules) == ["0", "1", "2"]
    md.update([("lin", nn.Linear(1, 1))])
    assert list(md.keys()) == ["act", "lin"] and md.pop("act") is not None and len(md) == 1


def test_parameter_container_repr_matches_torch(torch):
    for build in (lambda n, t: n.ParameterList([n.Parameter(t.ones(2)), t.ones(3, 4)]),
                  lambda n, t: n.ParameterDict({"a": n.Parameter(t.ones(2))})):
        with ember.device("cpu"):  # the CPU tensor type names PyTorch prints (ember.cuda.FloatTensor elsewhere)
            assert repr(build(nn, ember)) == repr(build(torch.nn, torch)).replace("torch", "ember")


def test_repr_matches_torch(torch):
    def build(n):
        return n.Sequential(OrderedDict([
            ("conv", n.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)), ("bn", n.BatchNorm2d(8)),
            ("act", n.LeakyReLU(0.2, inplace=True)), ("pool", n.MaxPool2d(2)), ("drop", n.Dropout(0.25)),
            ("flat", n.Flatten()), ("fc", n.Linear(8, 4)), ("sm", n.Softmax(dim=1)), ("relu", n.ReLU()),
            ("gelu", n.GELU(approximate="tanh")), ("emb", n.Embedding(10, 3, padding_idx=0)),
            ("ln", n.LayerNorm(4)), ("ct", n.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1)),
            ("avg", n.AdaptiveAvgPool2d((1, 1))), ("up", n.Upsample(scale_factor=2, mode="bilinear")),
            ("gn", n.GroupNorm(1, 3)), ("in", n.InstanceNorm2d(3)), ("thr", n.Threshold(0.1, 2)),
            ("shr", n.Softshrink()), ("unpool", n.MaxUnpool2d(2)), ("fold", n.Fold(2, 2)),
            ("bag", n.EmbeddingBag(3, 2)),
            ("bil", n.Bilinear(1, 2, 3)), ("pad", n.ZeroPad2d(1)), ("ps", n.PixelShuffle(2)), ("prelu", n.PReLU()),
            ("ce", n.CrossEntropyLoss()), ("unfl", n.Unflatten(1, (2, 3))), ("d2", n.Dropout2d()),
        ]))

    assert repr(build(nn)) == repr(build(torch.nn))


def test_replacing_a_child_keeps_its_place_as_pytorch(torch):
    seq = ember.nn.Sequential(ember.nn.ReLU(), ember.nn.Tanh())
    tseq = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Tanh())
    seq[0], tseq[0] = ember.nn.Sigmoid(), torch.nn.Sigmoid()
    assert [type(m).__name__ for m in seq] == [type(m).__name__ for m in tseq] == ["Sigmoid", "Tanh"]
    x = ember.tensor([-1.0, 2.0])
    assert ember.allclose(seq(x), x.sigmoid().tanh())
