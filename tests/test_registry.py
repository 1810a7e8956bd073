"""The op registry (one export path for every namespace) and dispatch's interception point."""
import inspect

import pytest

import ember
from ember import registry
from ember.autograd import gradcheck
from ember.autograd.function import OPS, Op
from ember.dispatch import intercept


@pytest.fixture
def scratch():
    """Names a test adds to the registry, taken out again afterwards."""
    added = []
    yield added
    for ns, name in added:
        registry.unexport(ns, name)


def test_a_unary_row_gives_function_method_inplace_and_gradient(device, scratch):
    Cls, fn = registry.unary_op("cube_test", lambda g, x, y: 3 * g * x * x, kernel="cube_kernel_test")
    scratch += [("torch", "cube_test"), ("Tensor", "cube_test"), ("Tensor", "cube_test_")]
    dev = ember.device(device)
    dev.backend.kernels["cube_kernel_test"] = lambda a: a * a * a
    try:
        x = ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64, device=device, requires_grad=True)
        # what a namespace shows is the function itself behind the __torch_function__ check (ember.overrides)
        assert inspect.unwrap(ember.cube_test) is fn and inspect.unwrap(ember.Tensor.cube_test) is fn
        assert ember.cube_test(x).tolist() == [1.0, -8.0, 0.125]
        assert x.cube_test().grad_fn.name() == "CubeTestBackward0" and OPS["cube_test"] is Cls
        assert gradcheck(ember.cube_test, (x,))
        y = x.detach().clone()
        assert y.cube_test_() is y and y.tolist() == [1.0, -8.0, 0.125]
        assert ember.cube_test(ember.tensor([2], device=device)).dtype is ember.get_default_dtype()
        with pytest.raises(TypeError, match=r"cube_test\(\): argument 'input' must be Tensor, not list"):
            ember.cube_test([1.0])
    finally:
        del dev.backend.kernels["cube_kernel_test"]


def test_export_reaches_bound_namespaces_and_unexport_takes_it_back(scratch):
    def twice(input):  # noqa: A002
        return input * 2

    registry.export(twice, "twice_test", aliases=("double_test",), inplace=True)
    scratch += [("torch", n) for n in ("twice_test", "double_test")]
    scratch += [("Tensor", n) for n in ("twice_test", "double_test", "twice_test_", "double_test_")]
    assert inspect.unwrap(ember.double_test) is twice and inspect.unwrap(ember.Tensor.twice_test) is twice
    t = ember.ones(2)
    assert t.double_test_() is t and t.tolist() == [2.0, 2.0]
    registry.unexport("torch", "double_test")
    assert not hasattr(ember, "double_test") and "double_test" not in registry.NAMESPACES["torch"]


def test_derived_inplace_form_refuses_a_wider_result_and_leaves_self_alone(device):
    x = ember.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="exp_: result type Float can.t be cast to the desired output type Long"):
        x.exp_()
    assert x.tolist() == [1, 2] and x._version == 0


def test_derived_inplace_form_on_a_leaf_requiring_grad_names_the_op(device):
    x = ember.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="sin_: a leaf Variable that requires grad"):
        x.sin_()
    assert x.tolist() == [1.0, 1.0]


def test_every_op_class_is_entered_once_under_its_own_name():
    def subclasses(c):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)

    # a per-overload name (SumBackward1) is a twin of its op's class and shares the op's key (named_node)
    builtin = [c for c in subclasses(Op) if c.__module__.startswith("ember.") and "_overload_of" not in c.__dict__]
    assert len(builtin) > 150
    missing = [c.__name__ for c in builtin if c not in OPS.values()]
    assert not missing, f"Op classes shadowed by another of the same name: {missing}"


def test_namespaces_are_what_pytorch_calls_them():
    ns = registry.NAMESPACES
    assert ns["torch"]["arcsin"] is ns["torch"]["asin"] and ns["Tensor"]["arcsin_"].__name__ == "asin_"
    # in-place forms at top level exactly where PyTorch has them (torch.sin_, no torch.pow_)
    assert ns["torch"]["sin_"] is ns["Tensor"]["sin_"] and "pow_" in ns["Tensor"] and "pow_" not in ns["torch"]
    assert inspect.unwrap(ember.linalg.det) is ns["linalg"]["det"]


# --------------------------------------------------------------------------- interception
def test_intercept_sees_every_kind_of_op(device):
    seen = []

    def handler(kind, Op, args, run):
        seen.append((kind.__name__, Op.__name__))
        return run(*args)

    a = ember.ones(2, 3, device=device)
    with intercept(handler):
        b = (a * 2).exp()           # binary, unary
        c = b.t()                   # view
        b.add_(1)                   # in place
        d = ember.cat([a, a])       # apply
    assert ("binary", "MulBackward0") in seen and ("unary", "ExpBackward0") in seen
    assert any(k == "view_op" for k, _ in seen) and ("inplace", "AddBackward0") in seen
    assert any(k == "apply" and n.startswith("Cat") for k, n in seen)
    assert c.shape == (3, 2) and d.shape == (4, 3)
    n = len(seen)
    _ = a * 2
    assert len(seen) == n  # closed: nothing more is seen


def test_a_handler_may_change_the_arguments_and_handlers_nest(device):
    outer, inner = [], []

    def doubling(kind, Op, args, run):
        inner.append(Op.__name__)
        if Op.__name__ == "MulBackward0":
            args = (args[0], args[1] * 2)
        return run(*args)

    def counting(kind, Op, args, run):
        outer.append(Op.__name__)
        return run(*args)

    x = ember.ones(2, device=device)
    with intercept(counting), intercept(doubling):
        y = x * 3
    assert y.tolist() == [6.0, 6.0]
    assert inner == ["MulBackward0"] and outer == ["MulBackward0"]


def test_a_failing_handler_leaves_dispatch_clean(device):
    def broken(kind, Op, args, run):
        raise ValueError("handler failed")

    x = ember.ones(2, device=device)
    with pytest.raises(ValueError, match="handler failed"):
        with intercept(broken):
            x * 2
    assert (x * 2).tolist() == [2.0, 2.0]
    from ember import dispatch

    assert dispatch.HANDLERS == []


def test_factories_and_moves_are_intercepted_too(device):
    seen = []

    def handler(kind, Op, args, run):
        seen.append((kind.__name__, Op if isinstance(Op, str) else Op.__name__))
        return run(*args)

    with intercept(handler):
        z = ember.zeros(2, 3, device=device)
        r = ember.randn(4, device=device)
        m = ember.ones(2).to(device)
    assert ("create", "zeros") in seen and ("create", "randn") in seen and ("create", "ones") in seen
    assert z.shape == (2, 3) and r.shape == (4,) and m.device.type == device.split(":")[0]
    if device != "cpu":
        assert ("move", "ToCopyBackward0") in seen
