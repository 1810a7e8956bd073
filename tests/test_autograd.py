"""The autograd engine against PyTorch's documented semantics and the seeds' examples."""
import gc
import weakref

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close


def _pair(torch, shape, device, dtype="float32", requires_grad=True, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    e = ember.tensor(a, device=device, requires_grad=requires_grad)
    t = torch.tensor(a, requires_grad=requires_grad)
    return e, t


# --------------------------------------------------------------------------- values and gradients vs PyTorch
EXPRS = [
    ("mul_add_relu_sum", lambda m, a, b: ((a * b) + a).relu().sum()),
    ("broadcast_add", lambda m, a, b: (a + b[0]).sum()),
    ("broadcast_mul_col", lambda m, a, b: (a * b[:, :1]).mean()),
    ("div_sub", lambda m, a, b: ((a - b) / (b * b + 1)).sum()),
    ("exp_log", lambda m, a, b: (a.exp() + (b * b + 1).log()).sum()),
    ("matmul", lambda m, a, b: (a @ b.t()).relu().sum()),
    ("pow_scalar", lambda m, a, b: (a ** 2 + 3 - b).mean()),
    ("reshape_transpose", lambda m, a, b: (a.reshape(2, 6).t() * b.reshape(6, 2)).sum()),
    ("index_slice", lambda m, a, b: (a[1:, ::2] * b[:2, 1:3]).sum()),
    ("sum_dim_keepdim", lambda m, a, b: (a.sum(1, keepdim=True) * b).sum()),
    ("reused_input", lambda m, a, b: (a * a * a + a).sum()),
]


@pytest.mark.parametrize("name,fn", EXPRS, ids=[e[0] for e in EXPRS])
def test_value_and_grad_match_torch(device, torch, name, fn):
    ea, ta = _pair(torch, (3, 4), device, seed=1)
    eb, tb = _pair(torch, (3, 4), device, seed=2)
    eo, to = fn(ember, ea, eb), fn(torch, ta, tb)
    assert_close(eo, to, rtol=1e-5, atol=1e-5)
    eo.backward()
    to.backward()
    assert_close(ea.grad, ta.grad, rtol=1e-5, atol=1e-5)
    assert_close(eb.grad, tb.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,fn", EXPRS, ids=[e[0] for e in EXPRS])
def test_gradcheck_and_gradgradcheck(device, name, fn):
    a = ember.randn(3, 4, dtype=ember.float64, device=device, requires_grad=True)
    b = ember.randn(3, 4, dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x, y: fn(ember, x, y), (a, b))
    if name != "mul_add_relu_sum" and name != "matmul":  # relu's second derivative is 0 a.e. but kinked
        assert gradgradcheck(lambda x, y: fn(ember, x, y), (a, b))


def test_gradcheck_reports_the_worst_element(device):
    class Wrong(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = ember.randn(3, dtype=ember.float64, device=device, requires_grad=True)
    with pytest.raises(ember.autograd.GradcheckError, match="worst element"):
        gradcheck(Wrong.apply, (x,))
    assert gradcheck(Wrong.apply, (x,), raise_exception=False) is False


# --------------------------------------------------------------------------- graph structure
def test_grad_fn_names_and_next_functions(device):
    a = ember.ones(2, device=device, requires_grad=True)
    b = a * 2
    c = b + a
    assert type(b.grad_fn).__name__ == "MulBackward0"
    assert repr(b.grad_fn).startswith("<MulBackward0 object at 0x")
    assert type(c.grad_fn).__name__ == "AddBackward0"
    (n0, i0), (n1, i1) = c.grad_fn.next_functions
    assert n0 is b.grad_fn and i0 == 0
    assert type(n1).__name__ == "AccumulateGrad" and n1.variable is a
    assert a.is_leaf and not b.is_leaf and a.grad_fn is None
    assert b.grad_fn.next_functions[1] == (None, 0)  # the scalar operand has no edge


def test_requires_grad_propagation(device):
    x = ember.randn(2, 2, device=device)
    y = ember.randn(2, 2, device=device)
    z = ember.randn(2, 2, device=device, requires_grad=True)
    assert not (x + y).requires_grad
    assert (x + z).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ember.ones(2, dtype=ember.int64, device=device).requires_grad_()
    w = (x + z)
    with pytest.raises(RuntimeError, match="leaf variables"):
        w.requires_grad = False


# --------------------------------------------------------------------------- the seeds' examples
def _printed(cpu_repr, device):
    """What PyTorch prints for a tensor on ``device``: a device suffix off the CPU."""
    dev = ember.ones(1, device=device).device
    return cpu_repr if dev.type == "cpu" else cpu_repr[:-1] + f", device='{dev}')"

def test_seed_retain_grad_prints_0_7071(device, capsys):
    A = ember.ones(2, device=device, requires_grad=True)
    B = A * 2
    B.retain_grad()
    C = (B * B).sum().sqrt() if not hasattr(ember.Tensor, "norm") else B.norm()
    C.backward()
    print(B.grad)
    assert capsys.readouterr().out.strip() == _printed("tensor([0.7071, 0.7071])", device)
    assert B.retains_grad


def test_seed_hook_prints_gradient(device, capsys):
    A = ember.ones(2, device=device, requires_grad=True)
    B = A * 2
    B.register_hook(lambda grad: print(grad))
    C = (B * B).sum().sqrt()
    C.backward()
    assert capsys.readouterr().out.strip() == _printed("tensor([0.7071, 0.7071])", device)
    assert_close(A.grad, np.full(2, 1.4142135, np.float32), rtol=1e-5, atol=1e-6)


def test_hook_replaces_gradient_and_handle_removes(device):
    x = ember.ones(3, device=device, requires_grad=True)
    y = x * 2
    h = y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 20.0, 20.0]
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    hl = x.register_hook(lambda g: g + 1)
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    hl.remove()


def test_non_leaf_grad_access_warns(device):
    x = ember.ones(2, device=device, requires_grad=True)
    y = x * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None


def test_seed_fill_inplace_without_grad(device):
    A = ember.ones(2, device=device)
    A.fill_(3.0)
    assert A.tolist() == [3.0, 3.0]


def test_seed_volatile_variable(device):
    from ember.autograd import Variable

    with pytest.warns(DeprecationWarning):
        regular = Variable(ember.randn(5, 5, device=device))
    with pytest.warns(DeprecationWarning):
        volatile = Variable(ember.randn(5, 5, device=device), volatile=True)
    w = ember.randn(5, 5, device=device, requires_grad=True)
    assert (regular @ w).requires_grad
    out = volatile @ w
    assert not out.requires_grad
    with pytest.warns(DeprecationWarning):
        assert out.volatile
    assert out.grad_fn is None
    assert isinstance(regular, Variable)


def test_variable_requires_grad(device):
    from ember.autograd import Variable

    with pytest.warns(DeprecationWarning):
        A = Variable(ember.ones(2, device=device), requires_grad=True)
    (A * 3).sum().backward()
    assert A.grad.tolist() == [3.0, 3.0]


# --------------------------------------------------------------------------- backward semantics
def test_accumulates_over_repeated_backward(device):
    x = ember.tensor([1.0, 2.0], device=device, requires_grad=True)
    for _ in range(3):
        (x * x).sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_nonscalar_backward_needs_gradient(device, torch):
    x = ember.ones(2, 2, device=device, requires_grad=True)
    y = x * 3
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    assert x.grad is None
    g = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    y.backward(g)
    assert x.grad.tolist() == [[3.0, 6.0], [9.0, 12.0]]
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 3).backward(ember.ones(3, device=device))


def test_backward_twice_raises_unless_retained(device):
    x = ember.ones(2, device=device, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 4.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_saved_tensors_freed_after_backward(device):
    x = ember.ones(1000, device=device, requires_grad=True)
    y = x * 2
    z = (y * y).sum()
    node = z.grad_fn.next_functions[0][0]
    assert node._saved is not None
    z.backward()
    assert node._saved is None


def test_create_graph_higher_order(device, torch):
    x = ember.tensor(3.0, device=device, requires_grad=True)
    y = x ** 3
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    (gg,) = ember.autograd.grad(g, x, create_graph=True)
    (ggg,) = ember.autograd.grad(gg, x)
    assert (g.item(), gg.item(), ggg.item()) == (27.0, 18.0, 6.0)
    tx = torch.tensor(3.0, requires_grad=True)
    (tg,) = torch.autograd.grad(tx ** 3, tx, create_graph=True)
    assert g.item() == tg.item()


def test_backward_create_graph_keeps_graph_in_grad(device):
    x = ember.tensor([1.0, 2.0], device=device, requires_grad=True)
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    g = x.grad.sum()
    x.grad = None
    g.backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_autograd_grad_allow_unused_and_no_accumulation(device):
    x = ember.ones(2, device=device, requires_grad=True)
    y = ember.ones(2, device=device, requires_grad=True)
    out = (x * 2).sum()
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        ember.autograd.grad(out, (x, y), retain_graph=True)
    gx, gy = ember.autograd.grad(out, (x, y), allow_unused=True)
    assert gx.tolist() == [2.0, 2.0] and gy is None
    assert x.grad is None and y.grad is None


def test_autograd_grad_of_intermediate(device, torch):
    ex, tx = _pair(torch, (3,), device)
    ey, ty = ex * 2, tx * 2
    eg = ember.autograd.grad((ey.exp()).sum(), ey)[0]
    tg = torch.autograd.grad((ty.exp()).sum(), ty)[0]
    assert_close(eg, tg)


def test_backward_inputs_limits_accumulation(device):
    x = ember.ones(2, device=device, requires_grad=True)
    y = ember.ones(2, device=device, requires_grad=True)
    (x * y).sum().backward(inputs=[x])
    assert x.grad.tolist() == [1.0, 1.0] and y.grad is None


def test_grads_are_not_aliased_between_leaves(device):
    a = ember.ones(2, device=device, requires_grad=True)
    b = ember.ones(2, device=device, requires_grad=True)
    (a + b).sum().backward()
    a.grad.mul_(5)
    assert b.grad.tolist() == [1.0, 1.0]
    g = ember.ones(2, device=device)
    c = ember.ones(2, device=device, requires_grad=True)
    c.backward(g)
    c.grad.add_(1)
    assert g.tolist() == [1.0, 1.0]


def test_expand_gradient_into_leaf_is_writable(device):
    x = ember.ones(3, device=device, requires_grad=True)
    x.sum().backward()
    x.grad.zero_()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_graph_freed_when_unreferenced(device):
    x = ember.ones(4, device=device, requires_grad=True)
    y = (x * 2).exp()
    ref = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert ref() is None


def test_post_accumulate_grad_hook(device):
    x = ember.ones(2, device=device, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * 4).sum().backward()
    assert seen == [[4.0, 4.0]]


def test_node_hooks(device):
    x = ember.ones(2, device=device, requires_grad=True)
    y = x * 3
    calls = []
    y.grad_fn.register_prehook(lambda gout: calls.append("pre"))
    y.grad_fn.register_hook(lambda gin, gout: calls.append("post"))
    y.sum().backward()
    assert calls == ["pre", "post"]


# --------------------------------------------------------------------------- grad modes
def test_no_grad_enable_grad_and_decorators(device):
    x = ember.ones(2, device=device, requires_grad=True)
    with ember.no_grad():
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad

    @ember.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    assert ember.is_grad_enabled()
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.set_grad_enabled(False)
    def g(t):
        return t * 2

    assert ember.is_grad_enabled()
    assert not g(x).requires_grad
    ember.set_grad_enabled(False)
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)
    assert ember.is_grad_enabled()


def test_inference_mode(device):
    x = ember.ones(2, device=device, requires_grad=True)
    with ember.inference_mode():
        y = x * 2
        assert ember.is_inference_mode_enabled()
    assert not y.requires_grad and y.is_inference()
    assert not ember.is_inference_mode_enabled()


def test_detect_anomaly_names_forward_op(device):
    x = ember.tensor([0.0, 1.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="Function 'DivBackward0' returned nan values"):
        with pytest.warns(RuntimeWarning, match="Traceback of forward call"):
            with ember.autograd.detect_anomaly():
                (x / x).sum().backward()


# --------------------------------------------------------------------------- in-place checks
def test_inplace_on_leaf_requiring_grad_raises(device):
    x = ember.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    assert x.tolist() == [1.0, 1.0] and x._version == 0
    with ember.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 2.0] and x._version == 1


def test_inplace_on_saved_tensor_raises_version_error(device, torch):
    x = ember.ones(2, device=device, requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    e = x.exp()
    e.mul_(2)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        e.sum().backward()


def test_inplace_rewrites_history(device, torch):
    ex, tx = _pair(torch, (4,), device)
    ey, ty = ex * 2, tx * 2
    ey.mul_(ex)
    ty.mul_(tx)
    ey.add_(3)
    ty.add_(3)
    assert type(ey.grad_fn).__name__ == "AddBackward0"
    ey.sum().backward()
    ty.sum().backward()
    assert_close(ex.grad, tx.grad)


def test_inplace_on_view_rewrites_base(device, torch):
    ex, tx = _pair(torch, (3, 4), device)
    eb, tb = ex * 1, tx * 1
    ew, tw = _pair(torch, (4,), device, seed=5)
    eb[1].mul_(ew)
    tb[1].mul_(tw)
    assert type(eb.grad_fn).__name__ == "CopySlices"
    (eb * eb).sum().backward()
    (tb * tb).sum().backward()
    assert_close(ex.grad, tx.grad)
    assert_close(ew.grad, tw.grad)


def test_setitem_with_grad_value(device, torch):
    ev, tv = _pair(torch, (2,), device)
    ez, tz = ember.zeros(3, 2, device=device), torch.zeros(3, 2)
    ez[1] = ev
    tz[1] = tv
    assert ez.requires_grad
    (ez * ez).sum().backward()
    (tz * tz).sum().backward()
    assert_close(ev.grad, tv.grad)


def test_version_counter_shared_by_views(device):
    x = ember.zeros(4, device=device)
    v = x[1:3]
    d = x.detach()
    v.add_(1)
    assert x._version == v._version == d._version == 1
    assert x.tolist() == [0.0, 1.0, 1.0, 0.0]


# --------------------------------------------------------------------------- custom Functions
class Cube(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x ** 3 * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g * ctx.k, None


def test_custom_function_ctx_style(device):
    x = ember.randn(4, dtype=ember.float64, device=device, requires_grad=True)
    y = Cube.apply(x, 2.0)
    assert type(y.grad_fn).__name__ == "CubeBackward"
    assert gradcheck(lambda t: Cube.apply(t, 2.0), (x,))
    assert gradgradcheck(lambda t: Cube.apply(t, 2.0), (x,))


def test_custom_function_needs_input_grad_and_non_differentiable(device):
    seen = {}

    class Split(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen["needs"] = ctx.needs_input_grad
            idx = (a > 0).float()
            ctx.mark_non_differentiable(idx)
            return a * 2, idx

        @staticmethod
        def backward(ctx, g, gidx):
            return g * 2, None

    a = ember.randn(3, device=device, requires_grad=True)
    b = ember.randn(3, device=device)
    out, idx = Split.apply(a, b)
    assert seen["needs"] == (True, False)
    assert out.requires_grad and not idx.requires_grad
    out.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]


def test_custom_function_mark_dirty(device):
    class AddOneInplace(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = ember.ones(2, device=device, requires_grad=True)
    y = x * 1
    v0 = y._version
    z = AddOneInplace.apply(y)
    assert z is y and y._version > v0
    assert y.tolist() == [2.0, 2.0]
    z.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_custom_function_set_materialize_grads(device):
    got = {}

    class Two(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got["g2"] = g2
            return g1

    x = ember.ones(2, device=device, requires_grad=True)
    a, _ = Two.apply(x)
    a.sum().backward()
    assert got["g2"] is None


def test_custom_function_wrong_gradient_shape_is_reported(device):
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return ember.ones(5, device=g.device)

    x = ember.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0 - got \\[5\\]"):
        Bad.apply(x).sum().backward()
    assert x.grad is None


def test_legacy_instance_function(device):
    class Double(ember.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * 2

        def backward(self, g):
            (x,) = self.saved_tensors
            return g * 2

    x = ember.ones(3, device=device, requires_grad=True)
    with pytest.warns(DeprecationWarning, match="Legacy autograd function"):
        y = Double()(x)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# --------------------------------------------------------------------------- data, detach
def test_data_and_detach(device):
    x = ember.ones(2, device=device, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d._base is None  # (not a view, as in PyTorch: it shares the version counter)
    d[0] = 5
    assert x.tolist() == [5.0, 1.0] and x._version == d._version == 1
    y = x * 2
    x.data.mul_(2)  # invisible to autograd: no version bump seen by y's node
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    x.data = ember.zeros(2, device=device)
    assert x.tolist() == [0.0, 0.0] and x.requires_grad


def test_fill_and_zero_on_non_leaf_cut_the_gradient(device, torch):
    x = ember.ones(3, device=device, requires_grad=True)
    y = x * 2
    y[1:].fill_(5.0)
    y.sum().backward()
    tx = torch.ones(3, requires_grad=True)
    ty = tx * 2
    ty[1:].fill_(5.0)
    ty.sum().backward()
    assert x.grad.tolist() == tx.grad.tolist() == [2.0, 0.0, 0.0]
    z = x * 3
    z.zero_()
    x.grad = None
    (z + x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


# --------------------------------------------------------------------------- leaves and the engine's short path
def test_leaf_used_twice_gets_one_summed_gradient_and_one_hook_call(device, torch):
    calls = []
    x = ember.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
    x.register_hook(lambda g: calls.append(g.clone()))
    ((x * x) + x).relu().sum().backward()
    tx = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    tcalls = []
    tx.register_hook(lambda g: tcalls.append(g.clone()))
    ((tx * tx) + tx).relu().sum().backward()
    assert len(calls) == len(tcalls) == 1
    assert_close(calls[0], tcalls[0])
    assert_close(x.grad, tx.grad)


def test_leaf_as_root_and_inside_the_graph(device, torch):
    # the root's gradient for a leaf joins the one flowing through the graph: one hook call, summed
    calls = []
    a = ember.ones(2, device=device, requires_grad=True)
    a.register_hook(lambda g: calls.append(g.clone()))
    ember.autograd.backward([(a * 3).sum(), a], [None, ember.full((2,), 10.0, device=device)])
    ta = torch.ones(2, requires_grad=True)
    torch.autograd.backward([(ta * 3).sum(), ta], [None, torch.full((2,), 10.0)])
    assert len(calls) == 1
    assert_close(calls[0], ta.grad)
    assert_close(a.grad, ta.grad)


def test_a_leaf_keeps_one_accumulator_and_no_reference_cycle(device):
    x = ember.ones(3, device=device, requires_grad=True)
    n1 = (x * 2).grad_fn.next_functions[0][0]
    n2 = (x * 3).grad_fn.next_functions[0][0]
    assert type(n1).__name__ == "AccumulateGrad" and n1 is n2 and n1.variable is x
    (x * 2).sum().backward()
    ref = weakref.ref(x)
    gc.disable()
    try:
        del x, n1, n2
        assert ref() is None  # freed by reference counting alone: the node refers to its leaf weakly
    finally:
        gc.enable()


def test_backward_after_the_leaf_is_gone(device):
    y = ember.ones(3, device=device, requires_grad=True) + 1  # nothing saved: only the graph knew the leaf
    y.sum().backward()  # nobody can see the gradient; nothing fails
    assert y.grad_fn is not None


def test_node_without_saved_values_runs_twice_like_pytorch(device, torch):
    x = ember.ones(3, device=device, requires_grad=True)
    y = x + 1
    y.backward(ember.ones(3, device=device))
    y.backward(ember.ones(3, device=device))  # AddBackward0 saved nothing: PyTorch allows it too
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    z = x * x
    z.backward(ember.ones(3, device=device))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward(ember.ones(3, device=device))


def test_relu_gradient_passes_through_nan_like_pytorch(device, torch):
    x = ember.tensor([float("nan"), -1.0, 0.0, 2.0], device=device, requires_grad=True)
    x.relu().sum().backward()
    tx = torch.tensor([float("nan"), -1.0, 0.0, 2.0], requires_grad=True)
    tx.relu().sum().backward()
    assert_close(x.grad, tx.grad)
