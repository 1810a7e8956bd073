"""nn.utils.prune against PyTorch: the same masks, pruned weights, gradients and state dicts."""
import doctest
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.utils.prune as prune
from ember.testing import assert_close


@pytest.fixture
def torch():
    pytest.importorskip("torch.nn.utils.prune")
    return pytest.importorskip("torch")


def to_numpy(t):
    return t.detach().cpu().numpy()


def twins(torch, make, device):
    """An ember and a torch module with the same float64 weights (``make(lib)`` builds one)."""
    tm = make(torch.nn).double()
    em = make(nn)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return em.to(device=device, dtype=ember.float64), tm


def conv(lib):
    return lib.Conv2d(4, 6, 3)


def linear(lib):
    return lib.Linear(7, 5)


def same_pruning(em, tm, name="weight"):
    assert list(em.state_dict()) == list(tm.state_dict())
    np.testing.assert_array_equal(to_numpy(getattr(em, name + "_mask")), getattr(tm, name + "_mask").numpy())
    assert_close(getattr(em, name), getattr(tm, name), rtol=0, atol=0)


@pytest.mark.parametrize("amount", [0.3, 0.5, 11, 0, 1.0])
def test_l1_unstructured_matches_torch(torch, device, amount):
    em, tm = twins(torch, linear, device)
    prune.l1_unstructured(em, "weight", amount=amount)
    torch.nn.utils.prune.l1_unstructured(tm, "weight", amount=amount)
    same_pruning(em, tm)
    assert sorted(n for n, _ in em.named_parameters()) == ["bias", "weight_orig"]
    assert [n for n, _ in em.named_buffers()] == ["weight_mask"]
    assert prune.is_pruned(em) and not prune.is_pruned(nn.Linear(2, 2))
    # gradients reach weight_orig through the mask
    x = np.random.default_rng(0).standard_normal((3, 7))
    eo, to = em(ember.tensor(x, device=device)), tm(torch.tensor(x))
    assert_close(eo, to, rtol=1e-12, atol=1e-12)
    eo.sum().backward()
    to.sum().backward()
    assert_close(em.weight_orig.grad, tm.weight_orig.grad, rtol=1e-12, atol=1e-12)


def test_hook_recomputes_from_weight_orig(device):
    m = prune.l1_unstructured(nn.Linear(3, 2).to(device), "weight", amount=2)
    with ember.no_grad():
        m.weight_orig.fill_(5.0)
    m(ember.ones(1, 3, device=device))
    np.testing.assert_array_equal(to_numpy(m.weight), 5.0 * to_numpy(m.weight_mask))


def test_importance_scores(torch, device):
    em, tm = twins(torch, linear, device)
    scores = np.random.default_rng(1).random((5, 7))
    prune.l1_unstructured(em, "weight", 0.4, importance_scores=ember.tensor(scores, device=device))
    torch.nn.utils.prune.l1_unstructured(tm, "weight", 0.4, importance_scores=torch.tensor(scores))
    same_pruning(em, tm)
    em2, tm2 = twins(torch, conv, device)
    s2 = np.random.default_rng(2).random((6, 4, 3, 3))
    prune.ln_structured(em2, "weight", 2, n=1, dim=0, importance_scores=ember.tensor(s2, device=device))
    torch.nn.utils.prune.ln_structured(tm2, "weight", 2, n=1, dim=0, importance_scores=torch.tensor(s2))
    same_pruning(em2, tm2)


@pytest.mark.parametrize("n", [1, 2, float("inf"), float("-inf")])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_ln_structured_matches_torch(torch, device, n, dim):
    em, tm = twins(torch, conv, device)
    prune.ln_structured(em, "weight", amount=0.5, n=n, dim=dim)
    torch.nn.utils.prune.ln_structured(tm, "weight", amount=0.5, n=n, dim=dim)
    same_pruning(em, tm)


def test_iterative_pruning_composes_like_torch(torch, device):
    em, tm = twins(torch, conv, device)
    for mod, P in ((em, prune), (tm, torch.nn.utils.prune)):
        P.l1_unstructured(mod, "weight", amount=0.3)
        P.ln_structured(mod, "weight", amount=2, n=2, dim=0)
        P.l1_unstructured(mod, "weight", amount=0.25)
        P.ln_structured(mod, "weight", amount=0.34, n=1, dim=1)
    same_pruning(em, tm)
    hooks = list(em._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 4
    assert [type(m).__name__ for m in hooks[0]] == ["L1Unstructured", "LnStructured", "L1Unstructured",
                                                     "LnStructured"]


def test_global_unstructured_matches_torch(torch, device):
    def net(lib):
        return lib.Sequential(lib.Linear(6, 5), lib.ReLU(), lib.Linear(5, 3))

    em, tm = twins(torch, net, device)
    prune.l1_unstructured(em[2], "weight", amount=3)
    torch.nn.utils.prune.l1_unstructured(tm[2], "weight", amount=3)
    scores = np.random.default_rng(3).random(5)
    prune.global_unstructured([(em[0], "weight"), (em[0], "bias"), (em[2], "weight")], prune.L1Unstructured,
                              importance_scores={(em[0], "bias"): ember.tensor(scores, device=device)}, amount=0.4)
    torch.nn.utils.prune.global_unstructured(
        [(tm[0], "weight"), (tm[0], "bias"), (tm[2], "weight")], torch.nn.utils.prune.L1Unstructured,
        importance_scores={(tm[0], "bias"): torch.tensor(scores)}, amount=0.4)
    for i, name in ((0, "weight"), (0, "bias"), (2, "weight")):
        same_pruning(em[i], tm[i], name)
    assert list(em.state_dict()) == list(tm.state_dict())
    zeros = sum(int((to_numpy(getattr(em[i], n)) == 0).sum()) for i, n in ((0, "weight"), (0, "bias"),
                                                                           (2, "weight")))
    assert zeros == 3 + round(0.4 * (30 + 5 + 15 - 3))  # 40% of what the earlier pruning left


def test_random_unstructured_counts(device):
    m = prune.random_unstructured(nn.Linear(10, 10).to(device), "weight", amount=0.3)
    assert int((to_numpy(m.weight_mask) == 0).sum()) == 30
    prune.random_unstructured(m, "weight", amount=0.5)  # half of the 70 left
    assert int((to_numpy(m.weight_mask) == 0).sum()) == 65
    assert np.array_equal(to_numpy(m.weight) == 0, to_numpy(m.weight_mask) == 0)


def test_random_structured_structure(device):
    m = prune.random_structured(nn.Conv2d(3, 8, 2).to(device), "weight", amount=3, dim=0)
    mask = to_numpy(m.weight_mask)
    per_channel = mask.reshape(8, -1)
    assert set(per_channel.min(1)) <= {0.0, 1.0} and np.all(per_channel.min(1) == per_channel.max(1))
    assert int((per_channel.max(1) == 0).sum()) == 3
    prune.random_structured(m, "weight", amount=0.4, dim=0)  # 2 of the 5 channels left
    per_channel = to_numpy(m.weight_mask).reshape(8, -1)
    assert int((per_channel.max(1) == 0).sum()) == 5


def test_custom_identity_remove(torch, device):
    em, tm = twins(torch, linear, device)
    mask = (np.arange(5) % 2).astype(np.float64)
    prune.custom_from_mask(em, "bias", ember.tensor(mask, device=device))
    torch.nn.utils.prune.custom_from_mask(tm, "bias", torch.tensor(mask))
    same_pruning(em, tm, "bias")
    prune.identity(em, "weight")
    torch.nn.utils.prune.identity(tm, "weight")
    same_pruning(em, tm)
    prune.remove(em, "bias")
    torch.nn.utils.prune.remove(tm, "bias")
    assert list(em.state_dict()) == list(tm.state_dict())
    assert isinstance(em.bias, nn.Parameter)
    assert_close(em.bias, tm.bias, rtol=0, atol=0)
    prune.remove(em, "weight")
    assert not prune.is_pruned(em) and sorted(n for n, _ in em.named_parameters()) == ["bias", "weight"]


def test_prune_method_without_module(torch, device):
    t = np.random.default_rng(4).standard_normal((4, 5))
    out = prune.L1Unstructured(amount=7).prune(ember.tensor(t, device=device))
    ref = torch.nn.utils.prune.L1Unstructured(amount=7).prune(torch.tensor(t))
    assert_close(out, ref, rtol=0, atol=0)
    out = prune.LnStructured(amount=2, n=2, dim=1).prune(ember.tensor(t, device=device))
    ref = torch.nn.utils.prune.LnStructured(amount=2, n=2, dim=1).prune(torch.tensor(t))
    assert_close(out, ref, rtol=0, atol=0)


def test_errors(device):
    m = nn.Linear(3, 2).to(device)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.l1_unstructured(m, "weight", amount="half")
    with pytest.raises(ValueError, match=r"amount=1.5 should either be a float in the range \[0, 1\]"):
        prune.l1_unstructured(m, "weight", amount=1.5)
    with pytest.raises(ValueError, match="amount=-1 should either be"):
        prune.random_unstructured(m, "weight", amount=-1)
    with pytest.raises(ValueError, match="amount=7 should be smaller than the number of parameters to prune=6"):
        prune.l1_unstructured(m, "weight", amount=7)
    # the failed call left the parameter where it was
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight"] and not prune.is_pruned(m)
    assert not m._buffers and isinstance(m.weight, nn.Parameter)
    with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional tensors"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2 for tensor of size"):
        prune.ln_structured(m, "weight", amount=1, n=2, dim=2)
    with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned before pruning can be "
                                         "removed"):
        prune.remove(m, "weight")
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(m, "weight")], prune.LnStructured, amount=1, n=2, dim=0)
    with pytest.raises(TypeError, match="importance_scores must be of type dict"):
        prune.global_unstructured([(m, "weight")], prune.L1Unstructured, importance_scores=[1], amount=1)
    first, other = prune.L1Unstructured(1), prune.L1Unstructured(1)
    first._tensor_name, other._tensor_name = "weight", "bias"
    container = prune.PruningContainer(first)
    with pytest.raises(ValueError, match="Can only add pruning methods acting on the parameter named 'weight'"):
        container.add_pruning_method(other)
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        container.add_pruning_method(3)


def test_docs_examples_run():
    result = doctest.testmod(sys.modules["ember.nn.utils.prune"])
    assert result.attempted > 0 and result.failed == 0
