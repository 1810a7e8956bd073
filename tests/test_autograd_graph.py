"""ember.autograd.graph against torch.autograd.graph: saved-tensor hooks, nodes, edges, multi-grad hooks;
and the smaller names of torch.autograd."""
import numpy as np
import pytest

import ember
from ember.autograd import graph as G
from ember.testing import assert_close


def _pair(torch, device, *shapes, seed=0, rg=True):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    return ([ember.tensor(a, device=device, requires_grad=rg) for a in arrays],
            [torch.tensor(a, requires_grad=rg) for a in arrays])


def _both(m, hooks, fn, xs):
    with hooks(m):
        out = fn(m, *xs)
    return out


# --------------------------------------------------------------------------- saved-tensor hooks
def f_mul(m, x, y):
    return (x * y).sum()


def f_chain(m, x, y):
    return ((x @ y.t()).tanh() * x.sum()).pow(2).sum()


def f_softmax(m, x, y):
    return (m.nn.functional.softmax(x, -1) * y).sum() + m.nn.functional.mse_loss(x, y)


@pytest.mark.parametrize("fn", [f_mul, f_chain, f_softmax], ids=["mul", "chain", "softmax"])
def test_identity_hooks_see_every_saved_tensor_and_keep_gradients(device, torch, fn):
    (ex, ey), (tx, ty) = _pair(torch, device, (3, 4), (3, 4))
    packed, unpacked = [], []

    def hooks(m):
        return m.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t,
                                                    lambda t: unpacked.append(t) or t)

    eo = _both(ember, hooks, fn, (ex, ey))
    to = _both(torch, hooks, fn, (tx, ty))
    assert packed, "no tensor was packed"
    n_pack = len(packed)
    ex_g = ember.autograd.grad(eo, (ex, ey))
    tx_g = torch.autograd.grad(to, (tx, ty))
    for a, b in zip(ex_g, tx_g):
        assert_close(a, b)
    assert len(unpacked) >= n_pack // 2 > 0 or len(unpacked) > 0


def test_unpack_values_are_the_ones_backward_uses(device, torch):
    (ex, ey), (tx, ty) = _pair(torch, device, (5,), (5,))
    res = []
    for m, x, y in ((ember, ex, ey), (torch, tx, ty)):
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t * 5):
            out = (x * y).sum()
        res.append(m.autograd.grad(out, (x, y)))
    for a, b in zip(*res):
        assert_close(a, b)
    assert_close(res[0][0], ey.detach() * 5)


def test_pack_hook_runs_without_grad_and_innermost_hooks_apply(device, torch):
    (ex,), (tx,) = _pair(torch, device, (4,))
    for m, x in ((ember, ex), (torch, tx)):
        log = []
        G1 = m.autograd.graph
        with G1.saved_tensors_hooks(lambda t, log=log: log.append("p1") or t,
                                    lambda t, log=log: log.append("u1") or t):
            with G1.saved_tensors_hooks(lambda t, log=log, m=m: log.append(("p2", m.is_grad_enabled())) or t,
                                        lambda t, log=log: log.append("u2") or t):
                y = (x * x).sum()
        y.backward()
        assert log == [("p2", False), ("p2", False), "u2", "u2"], (m.__name__, log)


def test_disable_saved_tensors_hooks(device, torch):
    (ex,), (tx,) = _pair(torch, device, (3,))
    for m, x in ((ember, ex), (torch, tx)):
        log = []
        with m.autograd.graph.disable_saved_tensors_hooks("hooks are off here"):
            with pytest.raises(RuntimeError, match="hooks are off here"):
                with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        with m.autograd.graph.saved_tensors_hooks(lambda t, log=log: log.append("p") or t, lambda t: t):
            with pytest.raises(RuntimeError, match="no hooks now"):
                with m.autograd.graph.disable_saved_tensors_hooks("no hooks now"):
                    pass
            (x * x).sum()
        assert log == ["p", "p"], m.__name__  # hooks work again after the block

    @G.disable_saved_tensors_hooks("off")
    def f():
        with G.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass

    with pytest.raises(RuntimeError, match="off"):
        f()
    with G.saved_tensors_hooks(lambda t: t, lambda t: t):
        pass


def test_unpack_must_return_a_tensor(device, torch):
    (ex,), (tx,) = _pair(torch, device, (3,))
    for m, x in ((ember, ex), (torch, tx)):
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
            y = (x * x).sum()
        with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
            y.backward()


def test_hooks_skip_the_version_check_as_pytorch_does(device, torch):
    (ex,), (tx,) = _pair(torch, device, (3,))
    grads = []
    for m, x in ((ember, ex), (torch, tx)):
        y = x * 1
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            z = (y.exp() * y).sum()
        with m.no_grad():
            y.add_(1)
        z.backward()
        grads.append(x.grad)
    assert_close(*grads)


def test_custom_function_saves_through_hooks(device, torch):
    (ex,), (tx,) = _pair(torch, device, (4,))
    res = []
    for m, x in ((ember, ex), (torch, tx)):
        class Cube(m.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a ** 3

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return 3 * a ** 2 * g

        log = []
        with m.autograd.graph.saved_tensors_hooks(lambda t, log=log: log.append("p") or t.detach(), lambda t: t * 2):
            y = Cube.apply(x).sum()
        y.backward()
        assert log == ["p"]
        res.append(x.grad)
    assert_close(*res)


@pytest.mark.parametrize("hooks", ["save_on_cpu", "detach_pack"])
def test_double_backward_through_packed_tensors(device, torch, hooks):
    (ex, ey), (tx, ty) = _pair(torch, device, (3,), (3,))
    res = []
    for m, x, y in ((ember, ex, ey), (torch, tx, ty)):
        ctx = (m.autograd.graph.save_on_cpu() if hooks == "save_on_cpu" else
               m.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t))
        with ctx:
            out = (x.exp() * y * x).sum()
            (gx, gy) = m.autograd.grad(out, (x, y), create_graph=True)
        res.append((gx, gy) + m.autograd.grad((gx * gy).sum(), (x, y)))
    for a, b in zip(*res):
        assert_close(a, b)
    assert res[0][0].device == ex.device


def test_save_on_cpu_keeps_saved_values_on_the_cpu(device):
    x = ember.randn(4, device=device, requires_grad=True)
    seen = []
    with G.save_on_cpu():
        with G.saved_tensors_hooks(lambda t: seen.append(t.device) or t, lambda t: t):
            pass
        y = (x * x).sum()
    node = y.grad_fn.next_functions[0][0]
    assert all(p.obj[1].device.type == "cpu" for p in node._saved)
    y.backward()
    assert_close(x.grad, 2 * x.detach())


def test_allow_mutation_on_saved_tensors(device, torch):
    res = []
    for m in (ember, torch):
        with m.autograd.graph.allow_mutation_on_saved_tensors():
            a = m.ones(2, 3, requires_grad=True, device=device if m is ember else "cpu")
            b = a.clone()
            out = (b ** 2).sum()
            b.sin_()
            out.backward()
        res.append((a.grad, b))
    assert_close(res[0][0], res[1][0])
    assert_close(res[0][1], res[1][1])


def test_saved_tensor_register_hooks(device):
    x = ember.randn(3, device=device, requires_grad=True)
    y = x * x
    log = []
    ember.autograd.SavedTensor(y.grad_fn, 0).register_hooks(lambda t, log=log: log.append("p") or t * 0,
                                                            lambda t, log=log: log.append("u") or t)
    y.sum().backward()
    assert log == ["p", "u"]
    assert_close(x.grad, x.detach())  # one factor read back as zeros: d(a*b)/da = b only


# --------------------------------------------------------------------------- nodes and edges
def test_node_is_the_public_view_of_grad_fn(device, torch):
    (ex,), (tx,) = _pair(torch, device, (3,))
    for m, x in ((ember, ex), (torch, tx)):
        y = (x * 2).sum()
        fn = y.grad_fn
        assert isinstance(fn, m.autograd.graph.Node)
        assert fn.name() == "SumBackward0"
        (mul, _), = fn.next_functions
        assert mul.name() == "MulBackward0"
        assert mul.next_functions[0][0].name() == "torch::autograd::AccumulateGrad" or \
            type(mul.next_functions[0][0]).__name__ == "AccumulateGrad"
        fn.metadata["k"] = 1
        assert y.grad_fn.metadata == {"k": 1}
        assert not isinstance(x, m.autograd.graph.Node)


def test_node_hooks_match_torch(device, torch):
    (ex,), (tx,) = _pair(torch, device, (3,))
    res = []
    for x in (ex, tx):
        y = x * 3
        z = y.exp().sum()
        log = []
        h1 = y.grad_fn.register_prehook(lambda go, log=log: log.append("pre") or (go[0] * 2,))
        y.grad_fn.register_hook(lambda gi, go, log=log: log.append("post") or None)
        z.backward(retain_graph=True)
        g1 = x.grad.clone()
        h1.remove()
        x.grad = None
        z.backward()
        res.append((g1, x.grad, log))
    assert_close(res[0][0], res[1][0])
    assert_close(res[0][1], res[1][1])
    assert res[0][2] == res[1][2]


def test_gradient_edge(device, torch):
    (ex,), (tx,) = _pair(torch, device, (3,))
    for m, x in ((ember, ex), (torch, tx)):
        e = m.autograd.graph.get_gradient_edge(x)
        assert type(e.node).__name__ == "AccumulateGrad" and e.output_nr == 0
        y = x * 2
        e2 = m.autograd.graph.get_gradient_edge(y)
        assert e2.node is y.grad_fn and e2.output_nr == 0
        assert e2 == m.autograd.graph.GradientEdge(y.grad_fn, 0)
        mx = x.max(0)
        assert m.autograd.graph.get_gradient_edge(mx[0]).output_nr == 0
        with pytest.raises(RuntimeError, match="does not require gradients"):
            m.autograd.graph.get_gradient_edge(m.ones(2))


def test_grad_with_respect_to_gradient_edges(device, torch):
    (ex,), (tx,) = _pair(torch, device, (3,))
    res = []
    for m, x in ((ember, ex), (torch, tx)):
        y = x.exp()
        z = (y * y.sin()).sum()
        ey, ex_ = m.autograd.graph.get_gradient_edge(y), m.autograd.graph.get_gradient_edge(x)
        res.append(m.autograd.grad(z, ey, retain_graph=True) + m.autograd.grad(z, (x, ey, ex_)))
    assert len(res[0]) == len(res[1]) == 4
    for a, b in zip(*res):
        assert_close(a, b)


def test_increment_version(device, torch):
    for m in (ember, torch):
        x = m.ones(3)
        v = x._version
        m.autograd.graph.increment_version(x)
        assert x._version == v + 1
        m.autograd.graph.increment_version([x, x])
        assert x._version == v + 3


@pytest.mark.parametrize("mode", ["all", "any"])
def test_register_multi_grad_hook(device, torch, mode):
    (ea, eb, ec), (ta, tb, tc) = _pair(torch, device, (3,), (3,), (3,))
    results = []
    for m, a, b, c in ((ember, ea, eb, ec), (torch, ta, tb, tc)):
        calls = []
        h = m.autograd.graph.register_multi_grad_hook((a, b, c), lambda g, calls=calls: calls.append(g), mode=mode)
        (a * b).sum().backward()  # c takes no part
        (a * 2).sum().backward()  # only a
        h.remove()
        (a * b).sum().backward()
        results.append(calls)
    e_calls, t_calls = results
    assert len(e_calls) == len(t_calls) == 2
    for ec_, tc_ in zip(e_calls, t_calls):
        if mode == "all":
            assert [g is None for g in ec_] == [g is None for g in tc_]
            for x, y in zip(ec_, tc_):
                if y is not None:
                    assert_close(x, y)
        else:
            assert_close(ec_, tc_)


def test_register_multi_grad_hook_bad_mode(device):
    x = ember.ones(2, requires_grad=True, device=device)
    with pytest.raises(ValueError, match="mode"):
        G.register_multi_grad_hook((x,), print, mode="some")


# --------------------------------------------------------------------------- the smaller names
def test_small_autograd_names(torch):
    A, T = ember.autograd, torch.autograd
    assert A.is_tensor_like(ember.ones(1)) and not A.is_tensor_like(3) and not A.is_tensor_like(None)
    with pytest.raises(RuntimeError, match="deprecated"):
        A.variable(1)
    assert A.kineto_available() is False
    assert A.is_view_replay_enabled() == T.is_view_replay_enabled()
    assert A.is_multithreading_enabled() is True
    with A.set_multithreading_enabled(False):
        assert A.is_multithreading_enabled() is False
    assert A.is_multithreading_enabled() is True
    with A.enforce_grad_layout_policy(False):
        x = ember.ones(2, requires_grad=True)
        (x * 2).sum().backward()
    assert_close(x.grad, ember.full((2,), 2.0))
    assert [s.name for s in A.ProfilerState] == list(T.ProfilerState.__members__)
    assert {d.name for d in A.DeviceType} <= set(T.DeviceType.__members__)
    assert A.ProfilerActivity.CPU is ember.profiler.ProfilerActivity.CPU
    assert A.profiler_util.EventList is ember.profiler.EventList
    assert A.profiler_legacy.profile is A.profiler.profile
    assert A.ProfilerConfig(A.ProfilerState.CPU).report_input_shapes is False
    ev = A.ProfilerEvent("push", "op", start_us=1.0)
    assert ev.name() == "op" and ev.kind() == "push"


def test_anomaly_switches_at_top_level(torch):
    for m in (ember, torch):
        assert m.is_anomaly_enabled() is False and m.is_anomaly_check_nan_enabled() is True
        m.set_anomaly_enabled(True, False)
        try:
            assert m.is_anomaly_enabled() is True and m.is_anomaly_check_nan_enabled() is False
        finally:
            m.set_anomaly_enabled(False)
        assert m.is_anomaly_enabled() is False and m.is_anomaly_check_nan_enabled() is True
