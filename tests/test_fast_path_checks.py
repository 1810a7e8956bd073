"""The fast paths of small-op programs keep every check of the slow ones: batched gradients in the engine
(vmapped backward passes, is_grads_batched), validation of tiny distributions on their arrays, and
Categorical.log_prob without a broadcast, each run with hooks, anomaly mode, retain_graph and create_graph,
and against PyTorch."""
import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_close

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")


def _both(device):
    return ((ember, device), (torch, "cpu"))


def _grad_rows(lib, y, x, basis, batched, **kw):
    """The rows ``basis[i] @ J``: in one batched backward (ember), or one backward per row (PyTorch's reference:
    its vmapped backward has no anomaly mode)."""
    if batched:
        return lib.autograd.grad(y, x, basis, is_grads_batched=True, **kw)[0]
    last = dict(kw, retain_graph=True)
    rows = [lib.autograd.grad(y, x, v, **(kw if i == len(basis) - 1 else last))[0] for i, v in enumerate(basis)]
    return lib.stack(rows)


@pytest.mark.parametrize("create_graph", [False, True])
def test_batched_backward_with_hooks_anomaly_retain_and_create_graph(device, create_graph):
    if device == "array_api":
        pytest.skip("anomaly mode's NaN check reads batched gradients with the backend's isnan, which the strict "
                    "array API refuses")
    # x is used twice: the two gradients meet in the engine's buffer (batched, added through their op)
    W, x0 = np.random.default_rng(0).standard_normal((3, 4)), np.linspace(-1, 1, 4)
    res = []
    for lib, dev in _both(device):
        x = lib.tensor(x0, device=dev, requires_grad=True)
        seen = []
        h = x * 2
        h.register_hook(lambda g, seen=seen: seen.append(tuple(g.shape)) or g * 3)
        y = lib.tanh(lib.tensor(W, device=dev) @ h) * x[:3]
        with lib.autograd.detect_anomaly():
            g = _grad_rows(lib, y, x, lib.eye(3, dtype=lib.float64, device=dev), lib is ember, retain_graph=True,
                           create_graph=create_graph)
        assert set(seen) == {(4,)}  # the hook sees one sample's shape
        # the graph was retained: a second, plain backward runs
        (again,) = lib.autograd.grad(y.sum(), x, retain_graph=create_graph)
        extra = lib.autograd.grad(g.sum(), x)[0] if create_graph else g
        res.append((g.detach(), again, extra))
    for a, b in zip(*res):
        assert_close(a, b, rtol=1e-9, atol=1e-10)


def test_batched_backward_frees_the_graph_without_retain(device):
    for lib, dev in _both(device):
        x = lib.ones(3, device=dev, dtype=lib.float64, requires_grad=True)
        y = (x * x).exp()
        lib.autograd.grad(y, x, lib.eye(3, dtype=lib.float64, device=dev), is_grads_batched=True)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            lib.autograd.grad(y.sum(), x)


def test_batched_backward_anomaly_names_the_nan(device):
    if device == "array_api":
        pytest.skip("anomaly mode's NaN check reads batched gradients with the backend's isnan, which the strict "
                    "array API refuses")
    for lib, dev in _both(device):
        x = lib.tensor([0.0, 1.0], device=dev, dtype=lib.float64, requires_grad=True)
        y = x.sqrt() * 0  # the backward of sqrt at 0 gives inf * 0 = nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="returned nan values"):
                _grad_rows(lib, y, x, lib.eye(2, dtype=lib.float64, device=dev), lib is ember)


def test_jacrev_with_tensor_hooks_matches_torch(device):
    res = []
    for lib, dev in _both(device):
        def f(x, lib=lib):
            h = x.sin()
            if h.requires_grad:
                h.register_hook(lambda g: g * 2)
            return h * x
        res.append(lib.func.jacrev(f)(lib.tensor([0.5, -1.0, 2.0], device=dev, dtype=lib.float64)))
    assert_close(*res, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("retain", [False, True])
def test_categorical_log_prob_fast_path(device, retain):
    logits0 = np.array([[0.2, -1.0, 0.5], [1.5, 0.0, -0.3]])
    res = []
    for lib, dev in _both(device):
        logits = lib.tensor(logits0, device=dev, requires_grad=True)
        probs = lib.softmax(logits, -1)
        hooked = []
        probs.register_hook(lambda g, hooked=hooked: hooked.append(1))
        d = lib.distributions.Categorical(probs)
        with lib.autograd.detect_anomaly():
            lp = d.log_prob(lib.tensor([2, 0], device=dev))  # the batch shape: gathered directly
            lp_b = d.log_prob(lib.tensor([[1], [2]], device=dev))  # broadcast against the batch
            loss = lp.sum() + lp_b.sum() + d.entropy().sum()
            (g,) = lib.autograd.grad(loss, logits, create_graph=True, retain_graph=retain)
        if not retain:  # the first graph's saved values are gone: the second order needs them, in both
            with pytest.raises(RuntimeError, match="a second time"):
                lib.autograd.grad(g.pow(2).sum(), logits)
            gg = g
        else:
            (gg,) = lib.autograd.grad(g.pow(2).sum(), logits)
        res.append((lp, lp_b, g, gg, lib.tensor(float(len(hooked)))))
    for a, b in zip(*res):
        assert_close(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("case", ["probs", "sample", "shape"])
def test_tiny_distribution_validation_errors(device, case):
    if device == "array_api":
        pytest.skip("the strict array API warns on NaN in a reduction where NumPy's error state is quieted")
    for lib, dev in _both(device):
        good = lib.tensor([0.25, 0.75], device=dev)
        with pytest.raises(ValueError) as err:
            if case == "probs":
                lib.distributions.Categorical(probs=lib.tensor([[0.5, -0.5]], device=dev), validate_args=True)
            elif case == "sample":
                lib.distributions.Categorical(good, validate_args=True).log_prob(lib.tensor(2, device=dev))
            else:
                batched = lib.tensor([[0.25, 0.75], [0.5, 0.5]], device=dev)
                lib.distributions.Categorical(batched, validate_args=True).log_prob(lib.tensor([0, 1, 1], device=dev))
        word = {"probs": "constraint", "sample": "support", "shape": "broadcastable"}[case]
        assert word in str(err.value)


def test_validation_with_tensor_bounds_and_inside_vmap(device):
    for lib, dev in _both(device):
        low, high = lib.zeros(2, device=dev), lib.ones(2, device=dev)
        u = lib.distributions.Uniform(low, high, validate_args=True)
        with pytest.raises(ValueError):
            u.log_prob(lib.tensor([0.5, 1.5], device=dev))
        n = lib.distributions.Normal(lib.zeros(2, device=dev), lib.ones(2, device=dev), validate_args=True)
        with pytest.raises(ValueError):
            lib.distributions.Normal(lib.zeros(2, device=dev), -lib.ones(2, device=dev), validate_args=True)

        def lp(x, n=n):
            return n.log_prob(x).sum()
        out = lib.vmap(lp)(lib.ones(3, 2, device=dev))  # every sample validated
        assert_close(out, lib.full((3,), -2 * (0.5 + 0.5 * np.log(2 * np.pi)), device=dev))


# --------------------------------------------------------------------------- tensor-scalar binary ops
_SCALAR_CASES = [  # (dtype, scalar): promotion up a category, integer wrap-around, NumPy scalars, bool, complex
    ("float32", 0.1), ("float32", 3), ("float32", True), ("float32", 1 + 2j), ("float32", np.float64(0.25)),
    ("float64", np.int64(2)), ("float16", 300.5), ("int64", 0.5), ("int8", 1000), ("int32", True),
    ("bool", 2), ("bool", 1.5), ("int64", np.float32(1.5)),
]


@pytest.mark.parametrize("dtype,scalar", _SCALAR_CASES)
def test_tensor_scalar_ops_promote_as_pytorch(device, dtype, scalar):
    if device == "array_api" and dtype == "float16":
        pytest.skip("array_api_strict has no float16")
    x0 = np.array([-2, 0, 1, 3])
    for name in ("add", "mul", "sub", "div"):
        res = []
        for lib, dev in _both(device):
            x = lib.tensor(x0, device=dev).to(getattr(lib, dtype))
            fn = getattr(lib, name)
            try:
                res.append((fn(x, scalar), fn(scalar, x)))
            except RuntimeError as exc:  # PyTorch refuses sub on bool: so must ember
                res.append(type(exc))
        if isinstance(res[1], type):
            assert res[0] is res[1], (name, dtype, scalar)
            continue
        for e, t in zip(*res):
            assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], (name, dtype, scalar)
            assert_close(e, t)


@pytest.mark.parametrize("create_graph", [False, True])
def test_tensor_scalar_ops_with_hooks_anomaly_and_graphs(device, create_graph):
    x0 = np.linspace(-1, 1, 5)
    out = []
    for lib, dev in _both(device):
        x = lib.tensor(x0, device=dev, requires_grad=True)
        seen = []
        h = x * 0.5 + 2
        h.register_hook(lambda g, seen=seen: seen.append(g.sum().item()) or g * 3)
        y = (3 - h * np.float64(1.5)) / 4
        with lib.autograd.detect_anomaly():
            (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=create_graph, retain_graph=True)
        assert g.requires_grad == create_graph
        gg = lib.autograd.grad(g.sum(), x)[0] if create_graph else None
        out.append((g.detach(), gg, seen))
    (ge, gge, se), (gt, ggt, st) = out
    assert_close(ge, gt)
    assert np.allclose(se, st)
    if create_graph:
        assert_close(gge, ggt)


def test_tensor_scalar_op_version_check_and_errors(device):
    x = ember.tensor([1.0, 2.0], device=device, requires_grad=True)
    z = x.exp()
    w = z * 3.0  # a product with a scalar saves z: changing z in place must make backward refuse
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()
    with pytest.raises(TypeError):
        x * "a"
    with pytest.raises(TypeError):
        ember.mul(x, object())
    assert x.tolist() == [1.0, 2.0] and x.grad is None


# --------------------------------------------------------------------------- einsum of two operands
@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(64, 64), (64, 64)]),
    ("bhqd,bhkd->bhqk", [(8, 4, 32, 16), (8, 4, 32, 16)]),
    ("ij,kj", [(80, 40), (70, 40)]),  # implicit output
    ("i,i", [(5000,), (5000,)]),
    ("bi,bj->bij", [(32, 32), (32, 32)]),
    ("...ij,...jk->...ik", [(2, 64, 64), (2, 64, 64)]),
])
def test_einsum_two_operands_against_pytorch(device, equation, shapes):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]
    res = []
    for lib, dev in _both(device):
        xs = [lib.tensor(a, device=dev, dtype=lib.float32, requires_grad=True) for a in arrays]
        y = lib.einsum(equation, *xs)
        (y * y).sum().backward()
        res.append((y.detach(), *(x.grad for x in xs)))
    for e, t in zip(*res):
        assert_close(e, t, rtol=1e-4, atol=1e-4)
