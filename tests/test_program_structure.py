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
