"""In-place semantics against PyTorch: version counters, views sharing storage, history rewritten
through views (CopySlices), ``x[idx] = y`` with ``y`` requiring grad, and the saved-tensor version check.

Each program runs twice, with ``m`` = ember and ``m`` = torch, and results and gradients are compared.
"""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

torch = pytest.importorskip("torch")

def _need_strides(x):
    if not hasattr(x._data, "strides"):
        pytest.skip("this backend's arrays have no strides: diagonal, unfold and transposes are copies")


DATA = np.arange(12.0).reshape(3, 4) / 7 - 0.5


def _leaf(m, device, data=DATA):
    dev = device if m is ember else "cpu"
    return m.tensor(data, device=dev, requires_grad=True)


def p_view_mul(m, x):
    y = x * 2
    y[1].mul_(x[0])
    return y


def p_setitem_grad_value(m, x):
    y = x.clone()
    v = x[0, :2] * 3
    y[m.tensor([2, 0]), 1:3] = v
    return y


def p_setitem_slice(m, x):
    y = x * 1
    y[:, ::2] = x[:, 1::2].exp()
    return y


def p_setitem_mask(m, x):
    y = x + 0
    y[y > 0] = 0.5
    return y * x


def p_overlapping_views(m, x):
    y = x * 1
    a, b = y[0:2], y[1:3]
    a.add_(1)
    b.mul_(x[1:3])
    return y


def p_transpose_view(m, x):
    y = x * 1
    y.t()[1:3].mul_(2)
    return y


def p_diagonal_view(m, x):
    y = x * 1
    y.diagonal().add_(x[0, :3])
    return y


def p_index_add_(m, x):
    y = x * 1
    y.index_add_(0, m.tensor([2, 2]), x[:2] * 3)
    return y


def p_scatter_(m, x):
    y = x * 1
    y.scatter_(1, m.tensor([[3], [0], [1]]), x[:, :1] * x[:, 1:2])
    return y


def p_index_fill_view(m, x):
    y = x * 1
    y[1:].index_fill_(1, m.tensor([0, 2]), -1.0)
    return y


def p_masked_scatter_(m, x):
    y = x * 1
    y.masked_scatter_(m.tensor([True, False, True, False]), x * 2)
    return y


@pytest.mark.parametrize("make", [lambda y: y.split(2, 1)[1], lambda y: y.chunk(3)[0], lambda y: y.unbind(1)[2]])
def test_inplace_on_multi_output_view_refused_like_torch(make, device):
    for m in (ember, torch):
        y = _leaf(m, device) * 1
        before = y.detach().clone()
        with pytest.raises(RuntimeError, match="returns multiple views"):
            make(y).mul_(2)
        assert (y.detach() == before).sum().item() == y.numel()


PROGRAMS = [p_view_mul, p_setitem_grad_value, p_setitem_slice, p_setitem_mask, p_overlapping_views,
            p_transpose_view, p_diagonal_view, p_index_add_, p_scatter_, p_index_fill_view,
            p_masked_scatter_]


STRIDED_VIEWS = {p_diagonal_view, p_transpose_view}


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__[2:])
def test_program_matches_torch(program, device):
    xe, xt = _leaf(ember, device), _leaf(torch, device)
    if program in STRIDED_VIEWS:
        _need_strides(xe)
    with ember.device(device):  # index tensors made by the program live with the data
        re = program(ember, xe)
    rt = program(torch, xt)
    assert_close(re, rt)
    w = np.random.RandomState(0).rand(*rt.shape)
    (re * ember.tensor(w, device=device)).sum().backward()
    (rt * torch.tensor(w)).sum().backward()
    assert_close(xe.grad, xt.grad, msg=program.__name__)


@pytest.mark.parametrize("program", [p_view_mul, p_overlapping_views, p_index_add_, p_scatter_],
                         ids=lambda p: p.__name__[2:])
def test_program_gradcheck(program, device):
    x = _leaf(ember, device)
    with ember.device(device):
        assert ember.autograd.gradcheck(lambda t: program(ember, t), (x,))


def test_version_counter_shared_by_views(device):
    x = ember.zeros(3, 4, device=device)
    v, parts = x[1], x.split(2, 1)
    before = x._version
    v.add_(1)
    assert x._version == v._version == parts[0]._version == before + 1
    x.index_fill_(0, ember.tensor([0], device=device), 2.0)
    x[0, 0] = 5.0
    x.scatter_add_(1, ember.tensor([[0]], device=device), ember.ones(1, 1, device=device))
    assert parts[1]._version == before + 4
    assert x[0, 0].item() == 6.0 and parts[0][0, 0].item() == 6.0


@pytest.mark.parametrize("make", [
    lambda x: x.split(2, 1)[0], lambda x: x.chunk(2, 0)[1], lambda x: x.unbind(1)[0], lambda x: x.narrow(1, 1, 2),
    lambda x: x.select(0, 1), lambda x: x.diagonal(), lambda x: x.unfold(1, 2, 1), lambda x: x.movedim(0, 1),
    lambda x: x.unflatten(1, (2, 2)), lambda x: x[::2, 1::2], lambda x: x.t(), lambda x: x.squeeze(),
    lambda x: x.unsqueeze(0), lambda x: x.view(12), lambda x: x.as_strided((2, 2), (1, 4), 1),
])
def test_views_share_memory(make, device):
    x = ember.zeros(3, 4, device=device)
    _need_strides(x)
    v = make(x)
    assert v._base is x
    v.fill_(1.0)
    assert x.sum().item() == v.numel() or x.sum().item() > 0


@pytest.mark.parametrize("make", [
    lambda x: x.flip(0), lambda x: x.roll(1, 0), lambda x: x.repeat(1, 1),
    lambda x: x.index_select(0, ember.tensor([0])), lambda x: x[ember.tensor([0, 1])], lambda x: x.diag(),
    lambda x: x.tril(), lambda x: ember.cat([x, x]),
])
def test_copies_do_not_share_memory(make, device):
    with ember.device(device):
        x = ember.zeros(3, 3)
        y = make(x)
    assert y._base is None
    y.fill_(1.0)
    assert x.sum().item() == 0


def test_saved_tensor_modified_raises(device):
    for m in (ember, torch):
        y = _leaf(m, device) * 1
        w = y * y
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            w.sum().backward()


def test_saved_by_matmul_then_modified(device):
    a = _leaf(ember, device)
    b = a * 1
    c = b @ b.t()
    b[0, 0] = 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_inplace_on_leaf_view_refused(device):
    x = _leaf(ember, device)
    before = x.detach().clone()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0].index_fill_(0, ember.tensor([1], device=device), 0.0)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.scatter_(1, ember.tensor([[0]], device=device), 1.0)
    assert np.array_equal(x.detach().numpy(force=True), before.numpy(force=True))


def test_t_in_place(device):
    x = ember.arange(6.0, device=device).reshape(2, 3)
    assert x.t_() is x and x.shape == (3, 2)
    assert x[2, 1].item() == 5.0


def test_setitem_value_requiring_grad_into_plain_tensor(device):
    grads = []
    for m in (ember, torch):
        dev = device if m is ember else "cpu"
        x = m.zeros(3, 2, device=dev)
        y = m.tensor([1.0, 2.0], device=dev, requires_grad=True)
        x[m.tensor([0, 2], device=dev), 1] = y * 3
        x[1] = y
        assert x.requires_grad and type(x.grad_fn).__name__ == "CopySlices"
        (x * m.arange(6.0, device=dev).view(3, 2)).sum().backward()
        grads.append(y.grad)
    assert_close(grads[0], grads[1])
