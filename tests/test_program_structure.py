"""What real programs reach besides the ops, against PyTorch: Module hook storage, whole-model checkpoints under
``weights_only``, the eagerly imported submodules, ``jit.script``, gradcheck's keywords, saving through symlinks
and plugins that raise on import."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# ---------------------------------------------------------------------------- Module hook storage
HOOK_DICTS = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
              "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
              "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
              "_load_state_dict_post_hooks")


def _register_all(lib, m):
    """The same hooks on an ember or a torch module; returns the hooks by name and their handles."""
    def pre(mod, args):
        return None

    def pre_kw(mod, args, kwargs):
        return None

    def fwd(mod, args, out):
        return None

    def fwd_kw(mod, args, kwargs, out):
        return None

    def bwd(mod, gi, go):
        return None

    def bwd_pre(mod, go):
        return None

    def sd_pre(mod, prefix, keep_vars):
        return None

    def sd_post(mod, sd, prefix, meta):
        return None

    def load_post(mod, keys):
        return None

    hooks = dict(pre=pre, pre_kw=pre_kw, fwd=fwd, fwd_kw=fwd_kw, bwd=bwd, bwd_pre=bwd_pre, sd_pre=sd_pre,
                 sd_post=sd_post, load_post=load_post)
    handles = [m.register_forward_pre_hook(pre), m.register_forward_pre_hook(pre_kw, with_kwargs=True),
               m.register_forward_hook(fwd, always_call=True), m.register_forward_hook(fwd_kw, with_kwargs=True),
               m.register_full_backward_hook(bwd), m.register_full_backward_pre_hook(bwd_pre),
               m.register_state_dict_pre_hook(sd_pre), m.register_state_dict_post_hook(sd_post),
               m.register_load_state_dict_post_hook(load_post)]
    return hooks, handles


def _layout(m, hooks, handles):
    """Each hook dict as a list of (position of the handle that put it there, the hook's name or flag)."""
    ids = {h.id: i for i, h in enumerate(handles)}
    names = {id(f): n for n, f in hooks.items()}
    return {d: [(ids[k], names.get(id(v), v)) for k, v in getattr(m, d).items()] for d in HOOK_DICTS}


def test_hook_dicts_hold_hooks_and_flags_as_torch(torch, device):
    em, tm = nn.Linear(2, 2).to(device), torch.nn.Linear(2, 2)
    eh, ehandles = _register_all(nn, em)
    th, thandles = _register_all(torch.nn, tm)
    assert _layout(em, eh, ehandles) == _layout(tm, th, thandles)
    assert all(isinstance(h.id, int) for h in ehandles)
    for eh_, th_ in zip(ehandles, thandles):
        eh_.remove()
        th_.remove()
    assert {d: len(getattr(em, d)) for d in HOOK_DICTS} == {d: len(getattr(tm, d)) for d in HOOK_DICTS}
    assert not any(getattr(em, d) for d in HOOK_DICTS)


def test_module_dict_names_as_torch(torch):
    mine = {k for k in vars(nn.Module()) if k.startswith("_")}
    theirs = {k for k in vars(torch.nn.Module()) if k.startswith("_")}
    assert theirs <= mine


def test_pruning_tutorial_reads_tensor_name_from_hooks(device):
    import ember.nn.utils.prune as prune
    m = nn.Conv2d(1, 2, 3).to(device)
    prune.random_unstructured(m, name="weight", amount=0.3)
    prune.l1_unstructured(m, name="bias", amount=1)
    assert [hook._tensor_name for hook in m._forward_pre_hooks.values()] == ["weight", "bias"]
    prune.remove(m, "weight")
    assert [hook._tensor_name for hook in m._forward_pre_hooks.values()] == ["bias"]


def _call_with_hooks(lib, x, fail):
    seen = []

    class M(lib.nn.Module):
        def forward(self, x, scale=1.0):
            if fail:
                raise ValueError("forward failed")
            return x * scale

    m = M()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(("kw", kwargs, out is None)),
                            with_kwargs=True, always_call=True)
    m.register_forward_hook(lambda mod, args, out: seen.append(("plain", out is None)), always_call=fail)
    try:
        out = m(x)
    except ValueError as e:
        return seen, str(e)
    return seen, out.tolist()


@pytest.mark.parametrize("fail", [False, True])
def test_with_kwargs_and_always_call_as_torch(torch, device, fail):
    got = _call_with_hooks(ember, ember.ones(2, device=device), fail)
    assert got == _call_with_hooks(torch, torch.ones(2), fail)


def test_bad_pre_hook_result_raises_as_torch(torch):
    for lib in (ember, torch):
        m = lib.nn.Identity()
        m.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
        with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
            m(lib.ones(1))


def test_state_dict_post_hook_must_return_none_private_may(torch):
    for lib in (ember, torch):
        m = lib.nn.Linear(1, 1)
        h = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})
        with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
            m.state_dict()
        h.remove()
        m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"x": 1})
        assert dict(m.state_dict()) == {"x": 1}


def _double(mod, args, out):
    return out * 2


def test_hook_handles_survive_pickling_and_deepcopy(device):
    import copy
    import pickle
    m = nn.Linear(2, 2).to(device)
    h = m.register_forward_hook(_double, with_kwargs=False, always_call=True)
    m2 = copy.deepcopy(m)
    assert list(m2._forward_hooks) == [h.id] and list(m2._forward_hooks_always_called) == [h.id]
    x = ember.ones(1, 2, device=device)
    assert ember.equal(m2(x), m(x))
    m3 = pickle.loads(pickle.dumps(nn.LazyLinear(2)))  # a lazy module keeps handles of its own hooks
    m3(ember.ones(1, 5))
    assert m3.weight.shape == (2, 5) and not m3._forward_pre_hooks and not m3._load_state_dict_pre_hooks


# ---------------------------------------------------------------------------- weights_only loading of whole models
def test_name_mappings_and_blocklist_are_torchs(torch):
    from torch import _utils
    from torch import _weights_only_unpickler as wou
    assert ember.serialization.IMPORT_MAPPING == _utils.IMPORT_MAPPING
    assert ember.serialization.NAME_MAPPING == _utils.NAME_MAPPING
    assert set(ember.serialization.BLOCKED_MODULES) == set(wou._blocklisted_modules)


def test_default_allow_list_sweeps_torchs(torch):
    """Every plain global PyTorch's weights_only unpickler allows by default resolves in ember to the same object
    (ember's twin for PyTorch's own types); storage classes, quantization schemes and tensor-rebuild helpers are
    PyTorch's internals that ember.utils.pt_reader reads its archives with."""
    from torch import _weights_only_unpickler as wou
    swept = 0
    for full, obj in wou._get_allowed_globals().items():
        module, _, name = full.rpartition(".")
        if isinstance(obj, torch.dtype):
            if not isinstance(getattr(ember, name, None), ember.dtype):
                continue  # a dtype ember does not have (float8, uint1 ...)
            expected = getattr(ember, name)
        elif module in ("builtins", "collections"):
            expected = obj
        elif full in ("torch.Size", "torch.device", "torch.Tensor"):
            expected = getattr(ember, name)
        elif full == "torch.nn.parameter.Parameter":
            expected = ember.nn.Parameter
        elif full == "_codecs.encode":
            assert ember.serialization.allowed_global(module, name)("\xff", "latin1") == b"\xff"
            swept += 1
            continue
        else:
            continue
        assert ember.serialization.allowed_global(module, name) is expected, full
        swept += 1
    assert swept >= 20
    assert ember.serialization.allowed_global("__builtin__", "set") is set
    assert ember.serialization.allowed_global("ember.tensor", "Size") is ember.Size
    assert ember.serialization.allowed_global("builtins", "frozenset") is None  # as PyTorch: not by default
    with pytest.raises(Exception, match="blocked"):
        ember.serialization.allowed_global("os", "system")
    with ember.serialization.safe_globals([(print, "posix.system")]), pytest.raises(Exception, match="blocked"):
        ember.serialization.allowed_global("posix", "system")


def _torch_model(tnn):
    return tnn.Sequential(tnn.Conv2d(1, 2, 3), tnn.BatchNorm2d(2), tnn.ReLU(), tnn.Flatten(), tnn.Dropout(0.2),
                          tnn.Linear(8, 3))


@pytest.mark.parametrize("protocol", [2, 4])
def test_whole_torch_model_loads_under_safe_globals(torch, device, tmp_path, protocol):
    tm = _torch_model(torch.nn).eval()
    path = tmp_path / "model.pt"
    if protocol == 2:
        torch.save(tm, path)  # PyTorch's default protocol
    else:
        torch.save(tm, path, pickle_protocol=protocol)
    with pytest.raises(Exception, match="Unsupported global"):
        ember.load(path)
    classes = [nn.Sequential, nn.Conv2d, nn.BatchNorm2d, nn.ReLU, nn.Flatten, nn.Dropout, nn.Linear]
    with ember.serialization.safe_globals(classes):
        em = ember.load(path, map_location=device)
    assert isinstance(em, nn.modules.container.Sequential) and isinstance(em[1], nn.modules.batchnorm._BatchNorm)
    x = np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32)
    em.eval()
    np.testing.assert_allclose(em(ember.tensor(x, device=device)).detach().cpu().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]


class WordLanguageModel(nn.Module):
    """pytorch/examples' word_language_model RNNModel, trimmed: embedding, dropout, an LSTM and a decoder."""

    def __init__(self, ntoken=20, ninp=6, nhid=5, nlayers=2):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.5)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, inp, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(inp)), hidden)
        return self.decoder(self.drop(output)), hidden


@pytest.mark.parametrize("protocol", [2, 4])
def test_word_language_model_pattern(device, tmp_path, protocol):
    import ember as torch  # the example's own spelling
    model = WordLanguageModel().to(device)
    path = str(tmp_path / "model.pt")
    with open(path, "wb") as f:
        torch.save(model, f, pickle_protocol=protocol)
    with open(path, "rb") as f:
        safe = [WordLanguageModel, torch.nn.modules.dropout.Dropout, torch.nn.modules.linear.Linear,
                torch.nn.modules.rnn.LSTM, torch.nn.modules.sparse.Embedding]
        with torch.serialization.safe_globals(safe):
            loaded = torch.load(f)
        loaded.rnn.flatten_parameters()
    assert torch.serialization.get_safe_globals() == []
    inp = torch.randint(0, 20, (4, 3), device=device)
    model.eval(), loaded.eval()
    assert torch.equal(model(inp, None)[0], loaded(inp, None)[0])


def _plain_values(lib):
    from collections import Counter, OrderedDict
    return {"dtype": lib.float64, "device": lib.device("cpu"), "size": lib.Size([2, 3]), "complex": 1 + 2j,
            "bytes": b"\x00\xff", "bytearray": bytearray(b"ab"), "set": {1, 2}, "odict": OrderedDict(a=1),
            "counter": Counter("aab")}


class Holder(nn.Module):
    """A module holding one plain value (ember side of the allow-list sweep)."""

    def __init__(self, value=None):
        super().__init__()
        self.value = value


@pytest.mark.parametrize("kind", sorted(_plain_values(ember)))
def test_plain_attributes_of_whole_models_load_as_torch(torch, tmp_path, kind):
    """A model holding a value of each kind PyTorch's allow-list names loads with only its class marked safe, in
    ember as in PyTorch (PyTorch's protocol, 2, and ember's files at protocol 4 too)."""
    theirs = torch.nn.Module()
    theirs.value = _plain_values(torch)[kind]
    torch.save(theirs, tmp_path / "t.pt")
    with torch.serialization.safe_globals([torch.nn.Module]):
        assert torch.load(tmp_path / "t.pt").value == theirs.value
    with ember.serialization.safe_globals([nn.Module]):  # PyTorch's file, read by ember
        got = ember.load(tmp_path / "t.pt").value
    assert str(got).replace("ember", "torch") == str(theirs.value)
    mine = Holder(_plain_values(ember)[kind])
    for protocol in (2, 4):
        ember.save(mine, tmp_path / "e.pt", pickle_protocol=protocol)
        with ember.serialization.safe_globals([Holder]):
            assert ember.load(tmp_path / "e.pt").value == mine.value


def test_save_through_symlink_keeps_the_link(tmp_path, device):
    target = tmp_path / "real.pt"
    ember.save({"a": ember.zeros(1, device=device)}, target)
    link = tmp_path / "link.pt"
    link.symlink_to(target.name)
    ember.save({"a": ember.ones(2, device=device)}, link)
    assert link.is_symlink() and list(tmp_path.iterdir()) and sorted(p.name for p in tmp_path.iterdir()) == \
        ["link.pt", "real.pt"]
    assert ember.load(target)["a"].tolist() == [1.0, 1.0]


def test_save_errors_as_torch(torch, tmp_path):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=r"Parent directory \S*missing does not exist"):
            lib.save({"a": 1}, tmp_path / "missing" / "f.pt")
        with pytest.raises(RuntimeError):
            lib.save({"a": 1}, tmp_path)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- what ``import ember`` loads
_SWEEP = """
import sys
import {lib}
def attr(path):
    obj = {lib}
    for part in path.split('.')[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return True
print([n for n in sys.argv[1:] if not attr(n)])
"""


_TORCH_WALK = """
import json, types, warnings
import torch
found = []
def walk(mod, depth):
    for n in dir(mod):
        if n.startswith("_"):
            continue
        try:
            v = getattr(mod, n)
        except Exception:  # a lazy attribute that fails to load is not an eager module
            continue
        if isinstance(v, types.ModuleType) and v.__name__ == mod.__name__ + "." + n and v.__name__ not in found:
            found.append(v.__name__)
            if depth < 3:
                walk(v, depth + 1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    walk(torch, 1)
print(json.dumps(found))
"""


def test_eager_submodules_as_torch(torch):
    """Every public module (three levels deep) that ``import torch`` makes an attribute and that ember has is one
    after ``import ember``; both sides in fresh interpreters (this process has imported more)."""
    import importlib.util
    import json
    import subprocess
    import sys

    def fresh(code, *args):
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True).stdout
    names = ["ember" + n[5:] for n in json.loads(fresh(_TORCH_WALK))]
    lacking = eval(fresh(_SWEEP.format(lib="ember"), *names))

    def exists(name):
        try:
            return importlib.util.find_spec(name) is not None
        except ImportError:  # a parent that is not a package
            return False
    have = [n for n in lacking if exists(n)]
    assert "ember.testing" in names and "ember.nn.modules.container" in names
    assert have == []


def test_nn_modules_submodules_as_torch(torch):
    import types
    subs = sorted(n for n in dir(torch.nn.modules) if isinstance(getattr(torch.nn.modules, n), types.ModuleType))
    assert [n for n in subs if not isinstance(getattr(nn.modules, n, None), types.ModuleType)] == []
    assert sorted(nn.modules.__all__) == sorted(torch.nn.modules.__all__)
    assert nn.utils.__name__ == "ember.nn.utils"
    for sub in subs:
        for name in dir(getattr(torch.nn.modules, sub)):
            theirs = getattr(getattr(torch.nn.modules, sub), name)
            if isinstance(theirs, type) and issubclass(theirs, torch.nn.Module) and hasattr(nn, name):
                assert getattr(getattr(nn.modules, sub), name, None) is getattr(nn, name), f"{sub}.{name}"


# ---------------------------------------------------------------------------- plugins raising BaseException
@pytest.mark.parametrize("raise_, kind", [("raise SystemExit(3)", "SystemExit"),
                                          ("import sys; sys.exit()", "SystemExit"),
                                          ("raise GeneratorExit('odd')", "GeneratorExit")])
def test_plugin_raising_base_exception_is_reported_and_import_goes_on(tmp_path, raise_, kind):
    from test_plugins_entry_points import install, run
    install(tmp_path, "fake-exit", "fake_exit", raise_ + "\n")
    res = run(tmp_path, "import ember; print('ok', ember.ones(2).sum().item())")
    assert res.returncode == 0 and "ok 2.0" in res.stdout, res.stderr
    assert f"'fake_exit' from distribution fake-exit 1.0 failed to load and was skipped: {kind}" in res.stderr


def test_keyboard_interrupt_in_a_plugin_still_interrupts(tmp_path):
    from test_plugins_entry_points import install, run
    install(tmp_path, "fake-int", "fake_int", "raise KeyboardInterrupt\n")
    res = run(tmp_path, "import ember; print('ok')")
    assert res.returncode != 0 and "ok" not in res.stdout and "KeyboardInterrupt" in res.stderr


# ---------------------------------------------------------------------------- gradcheck's keywords
@pytest.mark.parametrize("name", ["gradcheck", "gradgradcheck"])
def test_gradcheck_signature_is_torchs(torch, name):
    import inspect

    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    assert params(getattr(ember.autograd, name)) == params(getattr(torch.autograd, name))


def _functions(lib):
    """Functions of float64 inputs, one row each: name, function, input shapes."""
    return [("matmul_tanh", lambda a, b: (a @ b).tanh(), [(3, 4), (4, 2)]),
            ("two_outputs", lambda a, b: (a.sin() * b, a.exp().sum()), [(3,), (3,)]),
            ("broadcast", lambda a, b: (a + b).pow(2), [(2, 1), (3,)]),
            ("reduction", lambda a: a.logsumexp(0), [(4, 2)])]


GRADCHECK_FLAGS = [{}, dict(check_forward_ad=True), dict(check_batched_grad=True),
                   dict(check_forward_ad=True, check_batched_forward_grad=True), dict(fast_mode=True),
                   dict(fast_mode=True, check_forward_ad=True, check_backward_ad=False),
                   dict(check_grad_dtypes=True, check_undefined_grad=False), dict(nondet_tol=1e-12, masked=False)]


@pytest.mark.parametrize("flags", GRADCHECK_FLAGS, ids=lambda f: ",".join(f) or "default")
def test_gradcheck_flags_sweep_as_torch(torch, device, flags):
    rng = np.random.default_rng(0)
    for name, fn, shapes in _functions(ember):
        arrays = [rng.standard_normal(s) for s in shapes]
        mine = ember.autograd.gradcheck(fn, [ember.tensor(a, device=device, requires_grad=True) for a in arrays],
                                        **flags)
        theirs = torch.autograd.gradcheck(fn, [torch.tensor(a, requires_grad=True) for a in arrays], **flags)
        assert mine is theirs is True, name


@pytest.mark.parametrize("flags", [{}, dict(check_fwd_over_rev=True), dict(check_batched_grad=True),
                                   dict(gen_non_contig_grad_outputs=True), dict(fast_mode=True)],
                         ids=lambda f: ",".join(f) or "default")
def test_gradgradcheck_flags_as_torch(torch, device, flags):
    rng = np.random.default_rng(1)
    for name, fn, shapes in _functions(ember)[:3]:
        arrays = [rng.standard_normal(s) for s in shapes]
        mine = ember.autograd.gradgradcheck(fn, [ember.tensor(a, device=device, requires_grad=True)
                                                 for a in arrays], **flags)
        theirs = torch.autograd.gradgradcheck(fn, [torch.tensor(a, requires_grad=True) for a in arrays], **flags)
        assert mine is theirs is True, name


def _custom(lib, kind):
    """A custom Function whose backward is wrong in the way ``kind`` names (its forward is ``x * 3``)."""
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            if kind == "wrong":
                return g * 2
            if kind == "noisy":
                return g * (3 + lib.randn(g.shape, dtype=g.dtype, device=g.device) * 1e-9)
            return g * 3 + (g == 0).all().to(g.dtype)  # right Jacobian, but nonzero for zero grad_outputs

        @staticmethod
        def jvp(ctx, t):
            return t * 3
    return F.apply


@pytest.mark.parametrize("kind, flags, message", [
    ("wrong", {}, "Jacobian mismatch"),
    ("wrong", dict(fast_mode=True), "Jacobian mismatch"),
    ("wrong", dict(check_forward_ad=True, check_backward_ad=False), None),
    ("noisy", {}, "not reentrant"),
    ("noisy", dict(nondet_tol=1e-6), None),
    ("ignores_grad_output", {}, "backward not multiplied by grad_output"),
])
def test_gradcheck_failures_as_torch(torch, device, kind, flags, message):
    x = np.random.default_rng(2).standard_normal(4)
    for lib, t in ((torch, torch.tensor(x, requires_grad=True)),
                   (ember, ember.tensor(x, device=device, requires_grad=True))):
        fn = _custom(lib, kind)
        if message is None:
            assert lib.autograd.gradcheck(fn, (t,), **flags) is True
            continue
        with pytest.raises(RuntimeError, match=message):  # GradcheckError, a RuntimeError in both
            lib.autograd.gradcheck(fn, (t,), **flags)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert lib.autograd.gradcheck(fn, (t,), raise_exception=False, **flags) is False


def test_gradcheck_flag_combinations_refused_as_torch(torch):
    x = torch.ones(1, dtype=torch.float64, requires_grad=True)
    e = ember.ones(1, dtype=ember.float64, requires_grad=True)
    cases = [("gradcheck", dict(check_backward_ad=False)),
             ("gradcheck", dict(check_batched_grad=True, check_backward_ad=False, check_forward_ad=True)),
             ("gradcheck", dict(check_batched_forward_grad=True)),
             ("gradgradcheck", dict(check_rev_over_rev=False)),
             ("gradgradcheck", dict(check_rev_over_rev=False, check_fwd_over_rev=True))]
    for name, kw in cases:
        messages = []
        for lib, t in ((torch, x), (ember, e)):
            with pytest.raises(AssertionError) as info:
                getattr(lib.autograd, name)(lambda a: a * 2, (t,), **kw)
            messages.append(str(info.value))
        assert messages[0] == messages[1]


# ---------------------------------------------------------------------------- jit.script, script_method, traced forward
def _branchy(x, k: float = 2.0):
    if bool(x.sum() > 0):
        return (x * k).relu()
    return x - 1


def test_script_function_as_torch(torch, device):
    import ast
    mine, theirs = ember.jit.script(_branchy), torch.jit.script(_branchy)
    assert isinstance(mine, ember.jit.ScriptFunction)
    for a in (np.ones(3), -np.ones(3), np.array([2.0, -1.0, 0.5])):
        got = mine(ember.tensor(a, device=device), 3.0)
        np.testing.assert_allclose(got.cpu().numpy(), theirs(torch.tensor(a), 3.0).numpy())
    tree = ast.parse(mine.code)
    assert [type(n).__name__ for n in tree.body] == ["FunctionDef"] and tree.body[0].name == "_branchy"
    assert "return (x * k).relu()" in mine.code and "@" not in mine.code
    assert [o.lower() for o in mine.graph.ops()] == ["mul", "relu"]  # the first call's branch
    assert ember.jit.script(mine) is mine and ember.jit.script(ember.nn.Linear) is ember.nn.Linear


def test_script_graph_from_example_inputs_or_first_call(device):
    f = ember.jit.script(lambda t: t.exp())
    with pytest.raises(RuntimeError, match="first call"):
        _ = f.graph
    f(ember.ones(2, device=device))
    assert [o.lower() for o in f.graph.ops()] == ["exp"]
    g = ember.jit.script(_branchy, example_inputs=[(ember.ones(2, device=device),)])
    assert [o.lower() for o in g.graph.ops()] == ["mul", "relu"]


class _Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.scale = 2.0

    def helper(self, x):
        return x * self.scale

    def forward(self, x):
        h = self.fc(x)
        if bool(h.mean() > 100):
            return h
        return self.helper(h).tanh()


def test_script_module_as_torch(torch, device, tmp_path):
    import ast
    em = _Gate().to(device)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 3))  # the same weights, for the reference
    sd = {k: v.detach().cpu().numpy() for k, v in em.state_dict().items()}
    tm[0].load_state_dict({k[3:]: torch.tensor(v) for k, v in sd.items()})
    scripted = ember.jit.script(em)
    assert isinstance(scripted, ember.jit.ScriptModule) and not isinstance(scripted, _Gate)
    assert list(scripted.state_dict()) == list(em.state_dict()) and scripted.fc is em.fc
    assert [p is q for p, q in zip(scripted.parameters(), em.parameters())] == [True, True]
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    got = scripted(ember.tensor(x, device=device))
    np.testing.assert_allclose(got.detach().cpu().numpy(), (tm(torch.tensor(x)) * 2.0).tanh().detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert scripted.helper(ember.ones(1, device=device)).tolist() == [2.0] and scripted.scale == 2.0
    assert scripted.graph.ops() and scripted.forward.graph is scripted.graph
    assert ast.parse(scripted.code).body[0].name == "forward" and "self.helper(h)" in scripted.code
    scripted.eval()
    assert not em.training and not em.fc.training
    ember.jit.save(scripted, tmp_path / "m.pt")
    loaded = ember.jit.load(tmp_path / "m.pt")
    assert ember.equal(loaded(ember.tensor(x, device=device)), scripted(ember.tensor(x, device=device)))


def test_script_method_and_traced_forward_as_torch(torch, device):
    def make(lib):
        class Double(lib.jit.ScriptModule):
            @lib.jit.script_method
            def forward(self, x):
                return x * 2 + 1
        return Double()
    mine, theirs = make(ember), make(torch)
    assert mine(ember.ones(2, device=device)).tolist() == theirs(torch.ones(2)).tolist()
    assert type(mine.forward).__name__ == type(theirs.forward).__name__ == "ScriptMethod"
    assert "x * 2 + 1" in mine.code and "x * 2 + 1" in mine.forward.code
    traced_e = ember.jit.trace(nn.Linear(3, 2).to(device), ember.randn(4, 3, device=device))
    traced_t = torch.jit.trace(torch.nn.Linear(3, 2), torch.randn(4, 3))
    for traced in (traced_e, traced_t):
        fwd = traced.forward
        assert type(fwd).__name__ == "ScriptMethod" and fwd.graph is not None and isinstance(fwd.code, str)
    assert traced_e.forward(ember.ones(1, 3, device=device)).shape == (1, 2)
    assert traced_e.forward.graph is traced_e.graph


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_flatten_parameters_as_torch(torch, device, cls):
    em, tm = getattr(nn, cls)(3, 4, 2).to(device), getattr(torch.nn, cls)(3, 4, 2)
    tm.load_state_dict({k: torch.tensor(v.detach().cpu().numpy()) for k, v in em.state_dict().items()})
    before = [p.data_ptr() for p in em.parameters()]
    assert em.flatten_parameters() is None and tm.flatten_parameters() is None
    assert [p.data_ptr() for p in em.parameters()] == before
    x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(em(ember.tensor(x, device=device))[0].detach().cpu().numpy(),
                               tm(torch.tensor(x))[0].detach().numpy(), rtol=1e-5, atol=1e-6)
