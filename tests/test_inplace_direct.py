"""In-place elementwise ops that record no graph write their result straight into the tensor's memory: the
values, the returned object, the storage, the version counter and views must be exactly PyTorch's, and a
call that fails must leave the tensor as it was."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
DATA = RNG.standard_normal((6, 5)).astype(np.float32)
OTHER = RNG.standard_normal((6, 5)).astype(np.float32)

UNARY = ["relu_", "sigmoid_", "tanh_", "exp_", "neg_", "abs_", "sin_", "floor_", "sqrt_"]
BINARY = ["add_", "sub_", "mul_", "div_", "atan2_", "copysign_", "fmod_"]


def _pair(device, data=DATA):
    return ember.tensor(data, device=device), torch.tensor(data)


def _same_storage(e, before):
    assert e.data_ptr() == before


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("grad_mode", ["no_grad", "plain"])
def test_unary_inplace_writes_into_self(device, name, grad_mode):
    e, t = _pair(device, np.abs(DATA) if name == "sqrt_" else DATA)
    ptr, ver = e.data_ptr(), e._version
    if grad_mode == "no_grad":
        with ember.no_grad():
            r = getattr(e, name)()
    else:
        r = getattr(e, name)()
    getattr(t, name)()
    assert r is e
    _same_storage(e, ptr)
    assert e._version == ver + 1
    assert e.grad_fn is None
    assert_close(e, t, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", BINARY)
def test_binary_inplace_writes_into_self(device, name):
    e, t = _pair(device)
    o_e, o_t = _pair(device, OTHER)
    ptr = e.data_ptr()
    r = getattr(e, name)(o_e)
    getattr(t, name)(o_t)
    assert r is e
    _same_storage(e, ptr)
    assert_close(e, t, rtol=1e-6, atol=1e-6)
    assert_close(o_e, o_t)  # the other operand is untouched


def test_scalar_and_broadcast_operands(device):
    e, t = _pair(device)
    e.mul_(2.5).add_(ember.tensor(OTHER[0], device=device)).sub_(1)
    t.mul_(2.5).add_(torch.tensor(OTHER[0])).sub_(1)
    assert_close(e, t, rtol=1e-6, atol=1e-6)


def test_mixed_dtype_operand_rounds_as_pytorch(device):
    e, t = _pair(device)
    d = RNG.standard_normal((6, 5))
    e.add_(ember.tensor(d, device=device))
    t.add_(torch.tensor(d))
    assert e.dtype == ember.float32
    assert_close(e, t, rtol=1e-6, atol=1e-6)


def test_view_writes_reach_the_base(device):
    e, t = _pair(device)
    if not hasattr(e._data, "strides"):
        pytest.skip("this backend's arrays have no strides: transposes are copies")
    ve, vt = e.t()[1:4], t.t()[1:4]
    ve.relu_()
    vt.relu_()
    ve.mul_(ember.tensor(OTHER.T[:3].copy(), device=device))
    vt.mul_(torch.tensor(OTHER.T[:3].copy()))
    assert_close(e, t, rtol=1e-6, atol=1e-6)
    assert e._version == ve._version


def test_large_relu_inplace_is_exact(device):
    # large enough for the CPU kernel to split the work over threads
    data = RNG.standard_normal((8, 64, 32, 32)).astype(np.float32)
    e, t = _pair(device, data)
    with ember.no_grad():
        ember.nn.ReLU(inplace=True)(e)
    torch.nn.ReLU(inplace=True)(t)
    np.testing.assert_array_equal(e.cpu().numpy(), t.numpy())


def test_bad_broadcast_leaves_self_unchanged(device):
    e = ember.tensor(DATA[0], device=device)
    with pytest.raises(RuntimeError, match=r"add_.*\[5\].*\[6, 5\]"):
        e.add_(ember.tensor(OTHER, device=device))
    assert_close(e, torch.tensor(DATA[0]))
    assert e._version == 0


def test_integer_tensor_refuses_float_result_unchanged(device):
    e = ember.tensor([1, 2, 3], device=device)
    with pytest.raises(RuntimeError, match="Float.*Long|can't be cast"):
        e.sin_()
    assert e.tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError):
        e.div_(ember.tensor([2, 2, 2], device=device))
    assert e.tolist() == [1, 2, 3]


def test_recorded_inplace_keeps_its_history(device):
    # with a graph to record, the in-place form keeps the history and the gradient is PyTorch's
    xe = ember.tensor(DATA, device=device, requires_grad=True)
    xt = torch.tensor(DATA, requires_grad=True)
    ye, yt = xe * 2, xt * 2
    ye.add_(1).mul_(xe).relu_()
    yt.add_(1).mul_(xt).relu_()
    assert ye.grad_fn.name() == yt.grad_fn.name()
    ye.sum().backward()
    yt.sum().backward()
    assert_close(ye, yt, rtol=1e-6, atol=1e-6)
    assert_close(xe.grad, xt.grad, rtol=1e-5, atol=1e-6)


def test_leaf_requiring_grad_still_refused(device):
    xe = ember.tensor(DATA, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        xe.relu_()
    assert_close(xe.detach(), torch.tensor(DATA))


@pytest.mark.parametrize("call", ["relu_", "add_", "mul_", "iadd", "tanh_"])
def test_direct_write_makes_no_copy(device, monkeypatch, call):
    """Where the backend's kernel writes into ``out=`` (NumPy's ufuncs), the in-place op is that one kernel
    call: no result array copied into the tensor afterwards."""
    e = ember.tensor(DATA, device=device)
    o = ember.tensor(OTHER, device=device)
    kernels = e._dev.kernels
    name = {"iadd": "add"}.get(call, call.rstrip("_"))
    if name not in e._dev.backend.writes_into:
        pytest.skip(f"this backend's {name} kernel does not write into out=")
    copies = []
    real = kernels["copy_"]
    monkeypatch.setitem(kernels, "copy_", lambda *a, **k: (copies.append(1), real(*a, **k))[1])
    t = torch.tensor(DATA)
    with ember.no_grad():
        if call == "iadd":
            e += o
            t += torch.tensor(OTHER)
        elif call in ("add_", "mul_"):
            getattr(e, call)(o)
            getattr(t, call)(torch.tensor(OTHER))
        else:
            getattr(e, call)()
            getattr(t, call)()
    assert copies == []
    assert_close(e, t, rtol=1e-6, atol=1e-6)


def _recorded_program(lib, name, x):
    if name == "relu_then_use":          # relu_ saves its output: using it afterwards is fine
        y = (x * 2).relu_()
        return (y * x).sum()
    if name == "relu_then_sigmoid_":     # ... writing it again breaks relu's saved output
        y = x * 2
        y.relu_()
        return (y.sigmoid_() * x).sum()
    if name == "sigmoid_then_mul_":
        y = (x * 2).sigmoid_()
        y.mul_(3)
        return y.sum()
    if name == "tanh_add_":              # add_ saves nothing of self; tanh_'s output is read by its backward
        y = (x * 2).tanh_()
        z = y * x
        y2 = (x * 3).add_(x).tanh_()
        return z.sum() + (y2 * y2).sum()
    if name == "view_of_recorded":       # a view's write goes through the base's history (CopySlices)
        y = x * 2
        y[1].relu_()
        return (y * y).sum()
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["relu_then_use", "relu_then_sigmoid_", "sigmoid_then_mul_", "tanh_add_",
                                  "view_of_recorded"])
def test_recorded_inplace_matches_torch_including_saved_output_checks(device, name):
    xe = ember.tensor(DATA.astype(np.float64), device=device, requires_grad=True)
    xt = torch.tensor(DATA.astype(np.float64), requires_grad=True)
    errors = []
    for lib, x in ((torch, xt), (ember, xe)):
        try:
            _recorded_program(lib, name, x).backward()
            errors.append(None)
        except RuntimeError as e:
            errors.append("modified by an inplace operation" in str(e))
    assert errors[0] == errors[1]
    if errors[0] is None:
        assert_close(xe.grad, xt.grad, rtol=1e-10, atol=1e-12)


def test_recorded_relu_inplace_output_goes_through_saved_tensor_hooks(device):
    counts = {}
    for lib in (torch, ember):
        packed = []

        def pack(t, packed=packed):
            packed.append(tuple(t.shape))
            return t

        x = lib.tensor(DATA, requires_grad=True) if lib is torch else \
            ember.tensor(DATA, device=device, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = (x + 1).relu_()
        y.sum().backward()
        counts[lib.__name__] = (packed, x.grad.sum().item())
    assert counts["ember"][0] == counts["torch"][0]
    assert counts["ember"][1] == pytest.approx(counts["torch"][1])
