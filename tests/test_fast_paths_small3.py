"""The fast paths of one-tensor float ops keep every check of the general ones: a plain float32 or float64 tensor
goes straight to the op (no argument check or cast), the saved output's version is read inline, and the CPU
backend's tanh and sigmoid gradients take their temporary by position.  Each runs with tensor and node hooks,
anomaly mode, retain_graph, create_graph and an interception handler open, and against PyTorch; the other inputs
(integers, subclasses, non-tensors, out=) keep the general path's results and errors."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close
from test_fast_paths_small import watched_grads

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")

X0 = np.linspace(-1.5, 1.25, 6).reshape(2, 3)
W0 = np.linspace(0.5, -0.75, 3)


def _program(lib, x, w, seen):
    """Float one-tensor ops whose node saves the output (tanh, sigmoid, exp) or the input (log, sin), chained."""
    h = (x * w).tanh()
    h.register_hook(lambda g: seen.append("h") or g * 2)
    h.grad_fn.register_hook(lambda gi, go: seen.append("node") or None)
    s = (h + w).sigmoid()
    e = (s * 0.5).exp().log().sin()
    return (e.sum() + (h * s).sum()).squeeze()


@pytest.mark.parametrize("create_graph", [False, True])
def test_float_one_tensor_ops_with_hooks_anomaly_retain_create_and_interception(device, create_graph):
    names, kinds = watched_grads(_program, X0, W0, device, create_graph, "w")
    assert "unary" in kinds
    assert names[0].count("h") == (3 if create_graph else 2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "bool"])
def test_one_tensor_ops_of_each_dtype_give_pytorch_values_dtypes_and_out(device, dtype):
    if device == "array_api" and dtype == "float16":
        pytest.skip("the strict array-API backend has no float16")
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0 * 2, device=dev).to(getattr(lib, dtype))
        outs = [x.tanh(), lib.sigmoid(x), lib.exp(x), x.sin()]
        out = lib.empty(0, dtype=outs[0].dtype, device=dev)
        r = lib.tanh(x, out=out)
        assert r is out
        res.append(outs + [out])
    for a, b in zip(*res):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert_close(a, b, rtol=2e-3 if dtype == "float16" else 1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_tanh_and_sigmoid_gradients_match_pytorch_in_float32_and_float64(device, dtype, shape):
    x0 = np.linspace(-3, 2.5, int(np.prod(shape))).reshape(shape)
    g0 = np.linspace(0.5, -1.5, x0.size).reshape(shape)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(x0, dtype=getattr(lib, dtype), device=dev, requires_grad=True)
        g = lib.tensor(g0, dtype=getattr(lib, dtype), device=dev)
        res.append(lib.autograd.grad((x.tanh(), x.sigmoid()), x, (g, g * 3)))
    assert_close(res[0][0], res[1][0], rtol=1e-6 if dtype == "float32" else 1e-12, atol=1e-7)


def test_gradcheck_of_tanh_and_sigmoid_through_the_fast_paths(device):
    x = ember.tensor(X0, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: t.tanh() * t.sigmoid(), (x,))
    assert ember.autograd.gradgradcheck(lambda t: t.tanh() * t.sigmoid(), (x,))


def test_saved_output_changed_in_place_is_refused_directly_and_through_a_view(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        y = (x * 1.0).tanh()
        loss = y.sum()
        y.add_(1)  # the output tanh's node saved
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
        z = (x * 1.0).sigmoid()
        loss = z.sum()
        z[0].mul_(2)  # through a view: the base's version counter
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
        e = (x * 1.0).exp()
        loss = e.sum()
        loss.backward(retain_graph=False)
        with pytest.raises(RuntimeError, match="second time"):
            loss.backward()


def test_subclass_and_non_tensor_inputs_keep_the_general_path(device):
    seen = []

    class Watched(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs or {})

    x = ember.tensor(X0, device=device).as_subclass(Watched)
    r = ember.tanh(x)
    assert type(r) is Watched and "tanh" in seen
    assert_close(r.as_subclass(ember.Tensor), ember.tensor(np.tanh(X0), device=device))
    for lib in (ember, torch):
        with pytest.raises(TypeError, match="tanh"):
            lib.tanh([1.0, 2.0])
        with pytest.raises(TypeError, match="sigmoid"):
            lib.sigmoid(1.5)


def test_recording_after_an_inplace_change_of_a_base_with_saved_tensor_hooks_and_inference_tensors(device):
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        b = x * 1.0
        v = b[0]  # a view, recorded before its base changes in place
        b.mul_(2)
        y = (v * v).sum() + (b.tanh() * 3).sum()  # v takes its base's new history
        packed = []
        hooks = lib.autograd.graph.saved_tensors_hooks(lambda t, seen=packed: seen.append(tuple(t.shape)) or t,
                                                       lambda t: t)
        with hooks:
            z = (b * x).sum() + (b[1] + 0.5).sigmoid().sum()
        _, c = x.unbind(0)  # c: output 1 of its node, beside a leaf and a number
        r = (c * x[0] - 2.0 * c).sum()
        res.append((lib.autograd.grad(y + z + r, x)[0], sorted(packed)))
        with lib.inference_mode():
            frozen = lib.ones(3, dtype=x.dtype, device=dev)
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            x[0] * frozen
        assert (x[0] + frozen).requires_grad  # not saved: recorded as usual
    assert_close(res[0][0], res[1][0], rtol=1e-6, atol=1e-8)
    assert res[0][1] == res[1][1]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex64"])
def test_product_and_saved_output_gradients_of_each_dtype_match_pytorch(device, dtype):
    if device == "array_api" and dtype == "float16":
        pytest.skip("the strict array-API backend has no float16")
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0 / 2, device=dev).to(getattr(lib, dtype)).requires_grad_()
        w = lib.tensor(W0, device=dev).to(getattr(lib, dtype)).requires_grad_()
        y = (x * w) * 0.5 + 3 * x * x.tanh() + (2 * x).sigmoid() * w
        g = lib.ones_like(y) * (1 - 0.5j if dtype.startswith("complex") else 1.5)
        res.append(lib.autograd.grad(y, (x, w), g))
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == "float16" else dict(rtol=1e-5, atol=1e-6)
    for a, b in zip(*res):
        assert_close(a, b, **tol)


def test_relu_checks_dtypes_after_its_float_fast_path(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        for dtype in ("float32", "float64", "int64"):
            x = lib.tensor(X0 * 4, device=dev).to(getattr(lib, dtype))
            assert_close(x.relu(), lib.tensor(np.maximum(X0 * 4, 0), device=dev).to(getattr(lib, dtype)))
        with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
            lib.tensor([True, False], device=dev).relu()
        if device != "array_api":
            with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
                lib.tensor([1 + 1j], device=dev).relu()


def test_quiet_kernel_wrappers_spelled_out_keep_signatures_defaults_and_quiet_state():
    from ember.kernels import _ignoring_fp_errors, quiet
    wrap = _ignoring_fp_errors()
    marker = object()

    def kernel(x, axis=None, *, scale=2.0, tag=marker):
        return np.divide(x, 0.0) * scale, axis, tag  # 1 / 0 warns unless quiet

    def nested(x, k=None):
        return k(x)[0] + wrap(kernel)(x)[0]  # a kernel inside a kernel takes the slower path

    def varargs(*args, **kwargs):
        return np.log(args[0] - 1.0), kwargs

    g = wrap(kernel)
    assert g.__wrapped__ is kernel and g.__name__ == "kernel"
    x = np.ones(3, np.float32)
    with np.errstate(all="raise"):
        r, axis, tag = g(x)
        assert np.isinf(r).all() and r.dtype == np.float32 and axis is None and tag is marker
        r, axis, _ = g(x, 1, scale=-1.0)
        assert np.isneginf(r).all() and axis == 1
        assert g(x, axis=0, tag=3)[1:] == (0, 3)
        assert np.isinf(wrap(nested)(x, k=g)).all()
        assert np.isneginf(wrap(varargs)(x, key=1)[0]).all() and wrap(varargs)(x, key=1)[1] == {"key": 1}
        assert np.isinf(quiet(lambda v: v / 0.0)(x)).all()
        with pytest.raises(TypeError):
            g(x, 1, 2)  # scale is keyword-only, as in the kernel
        with pytest.raises(FloatingPointError):
            kernel(x)  # the state itself is left as the program set it
    for lib in (ember, torch):  # a reduction that overflows: inf, silently (float16 sums of large values)
        s = lib.tensor([6e4, 6e4], dtype=lib.float16).sum()
        assert s.item() == float("inf")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_tensor_minus_tensor_of_one_dtype_and_bool_refused(device, dtype):
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        a = lib.tensor(X0 * 3, device=dev).to(getattr(lib, dtype))
        b = lib.tensor(X0[::-1].copy(), device=dev).to(getattr(lib, dtype))
        res.append(a - b)
        t = lib.tensor([True, False], device=dev)
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
            t - t
    assert_close(res[0], res[1])


def test_cat_and_stack_of_many_small_tensors_match_pytorch_with_gradients(device):
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        xs = [lib.tensor([float(i), -i / 3], device=dev, requires_grad=i % 3 == 0) for i in range(40)]
        hs = [x * 2.0 for x in xs]
        out = lib.cat(hs) * lib.stack(hs).reshape(-1)
        grads = lib.autograd.grad(out.sum(), [x for x in xs if x.requires_grad])
        res.append((out.detach(), grads, lib.cat(xs[1:3]).requires_grad, lib.stack(xs[1:3]).requires_grad))
    assert_close(res[0][0], res[1][0])
    for a, b in zip(res[0][1], res[1][1]):
        assert_close(a, b)
    assert res[0][2:] == res[1][2:] == (False, False)
