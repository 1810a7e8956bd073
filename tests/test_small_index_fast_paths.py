"""The small-tensor paths a CRF's forward algorithm and Viterbi decoding take, against PyTorch: integer and
slice indexing (views, their version counters, their gradients with and without ``create_graph``, bad
indices), ``max(dim)`` / ``argmax`` (values, indices, gradients, double backward, bad dims), ``unsqueeze`` and
``view`` gradients, ``logsumexp`` over a broadcast sum, and ``.item()`` / ``.tolist()``."""
import numpy as np
import pytest

import ember

GRID = np.arange(20, dtype=np.float64).reshape(4, 5) * 0.37 - 2.0


def pair(torch, device, data=GRID, grad=True):
    """The same float64 tensor in ember (on ``device``) and PyTorch, both requiring grad when ``grad``."""
    return (ember.tensor(data, device=device, requires_grad=grad),
            torch.tensor(data, requires_grad=grad))


def same(e, t):
    np.testing.assert_allclose(ember.tensor(e).cpu().numpy() if not isinstance(e, ember.Tensor) else
                               e.detach().cpu().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)


INDICES = [3, -1, (2, 4), (-4, 0), (slice(None), 2), (slice(1, None),), (1, slice(None, None, 2)),
           (None, 2), (Ellipsis, 3), (2, Ellipsis, None)]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_basic_index_values_and_grads(device, torch, index):
    e, t = pair(torch, device)
    re, rt = e[index], t[index]
    assert tuple(re.shape) == tuple(rt.shape)
    same(re, rt)
    w = np.linspace(-1, 1, max(rt.numel(), 1)).reshape(rt.shape)
    (re * ember.tensor(w, device=device)).sum().backward()
    (rt * torch.tensor(w)).sum().backward()
    same(e.grad, t.grad)
    assert type(re.grad_fn).__name__ == type(rt.grad_fn).__name__


def test_int_index_is_a_view_sharing_the_version_counter(device, torch):
    e, t = pair(torch, device, grad=False)
    row, el = e[1], e[1, 2]
    assert row._version == 0 and el.dim() == 0
    e.add_(1.0)
    t.add_(1.0)
    same(row, t[1])  # the view sees the in-place change
    same(el, t[1, 2])
    assert row._version == e._version == 1


def test_int_index_saved_then_modified_in_place_raises(device, torch):
    for x in pair(torch, device):
        y = x * 1.0
        r = y[1] * y[1, 2]  # mul saves both views of y
        y[0, 0].mul_(2.0)  # an in-place change through another view of y
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            r.sum().backward()


def test_index_gradient_double_backward(device, torch):
    results = []
    for x in pair(torch, device):
        lib = ember if isinstance(x, ember.Tensor) else torch
        y = x[2, 1] ** 3 + x[0].pow(2).sum() + x[:, 3].sum() * x[1, 1]
        g, = lib.autograd.grad(y, x, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), x)
        results.append((g, gg))
    same(results[0][0], results[1][0])
    same(results[0][1], results[1][1])


@pytest.mark.parametrize("index", [4, -5, (0, 5), (1, -6), (0, 0, 0)], ids=repr)
def test_bad_int_index_raises_index_error(device, torch, index):
    e, t = pair(torch, device, grad=False)
    with pytest.raises(IndexError) as pt:
        t[index]
    with pytest.raises(IndexError) as em:
        e[index]
    assert ("out of bounds" in str(em.value)) == ("out of bounds" in str(pt.value))
    assert e.grad_fn is None and e._version == 0


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [1, 0, -1])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_dim(device, torch, op, dim, keepdim):
    data = GRID.copy()
    data[2, 3] = data[2, 1]  # a tie: the first index wins, as in PyTorch
    e, t = pair(torch, device, data)
    (ve, ie), (vt, it) = getattr(e, op)(dim=dim, keepdim=keepdim), getattr(t, op)(dim=dim, keepdim=keepdim)
    same(ve, vt)
    assert ie.dtype is ember.int64 and ie.tolist() == it.tolist()
    assert type(ve.grad_fn).__name__ == type(vt.grad_fn).__name__ and ie.grad_fn is None
    w = np.arange(1.0, 1.0 + vt.numel()).reshape(vt.shape)
    grads = []
    for x, v, lib in ((e, ve, ember), (t, vt, torch)):
        g, = lib.autograd.grad((v * lib.tensor(w).to(v.device)).pow(2).sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        grads.append((g, gg))
    for a, b in zip(*grads):
        same(a, b)


def test_max_dim_bad_input(device, torch):
    e, t = pair(torch, device, grad=False)
    for lib, x in ((torch, t), (ember, e)):
        with pytest.raises(IndexError, match="Dimension out of range"):
            x.max(dim=2)
        with pytest.raises(IndexError, match="non-zero size"):
            lib.zeros(2, 0, device="cpu" if lib is torch else device).max(dim=1)
    assert e._version == 0


def test_argmax_and_decode_conversions(device, torch):
    e, t = pair(torch, device, grad=False)
    assert int(e.argmax()) == int(t.argmax()) and e.argmax(1).tolist() == t.argmax(1).tolist()
    assert e.argmax(0, keepdim=True).tolist() == t.argmax(0, keepdim=True).tolist()
    assert e.argmin(1).tolist() == t.argmin(1).tolist()
    assert e[1, 2].item() == t[1, 2].item() and e[3].tolist() == t[3].tolist()


def test_unsqueeze_view_and_broadcast_logsumexp_grads(device, torch):
    """One step of the forward algorithm: logsumexp(alpha.unsqueeze(0) + transitions, 1) + feat."""
    grads = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        alpha = lib.tensor(GRID[0], device=dev, requires_grad=True)
        trans = lib.tensor(GRID[:, :1] * GRID[0], device=dev, requires_grad=True)[:4, :4] * 1.0
        alpha4 = alpha[:4]
        out = lib.logsumexp(alpha4.unsqueeze(0) + trans, dim=1) + alpha.view(5, 1)[1:, 0]
        assert type(out.grad_fn).__name__ == "AddBackward0"
        g, = lib.autograd.grad((out * out).sum(), alpha, create_graph=True)
        gg, = lib.autograd.grad(g.pow(2).sum(), alpha)
        grads.append((out, g, gg))
    for a, b in zip(*grads):
        same(a, b)


SAVED = ["_saved_dim", "_saved_index", "_saved_self_sym_sizes", "_saved_start", "_saved_end", "_saved_step"]


@pytest.mark.parametrize("index", [(0, None, Ellipsis, 1), (slice(-1, None),), (1, slice(None), 2), (None,),
                                   (1, [0, 2]), (slice(None), None, [1, 2], None), (Ellipsis, [0, 1])], ids=repr)
def test_index_nodes_keep_pytorchs_arguments(device, torch, index):
    """The node of a basic index keeps its last step's arguments; an advanced index's, the sizes it indexes."""
    data = np.arange(24.0).reshape(2, 3, 4)
    e, t = pair(torch, device, data)
    ne, nt = e[index].grad_fn, t[index].grad_fn
    assert type(ne).__name__ == type(nt).__name__
    for name in SAVED:
        if hasattr(nt, name):
            assert tuple(np.atleast_1d(getattr(ne, name))) == tuple(np.atleast_1d(getattr(nt, name))), name


def test_setitem_through_a_mask_casts_a_one_element_value(device, torch):
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.zeros(3, device=dev)
        x[lib.tensor([True, False, True], device=dev)] = lib.tensor(2, dtype=lib.int64, device=dev)
        assert x.tolist() == [2.0, 0.0, 2.0]
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
            x[lib.tensor([0, 1], device=dev)] = lib.tensor(2, dtype=lib.int64, device=dev)
        assert x.tolist() == [2.0, 0.0, 2.0]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_stack_and_cat_of_a_few_small_tensors(device, torch, dim):
    """A bidirectional LSTM's last states and outputs are joined so: values, dtypes kept, gradients."""
    results = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        xs = [lib.tensor(GRID[i:i + 2] * (i + 1), device=dev, requires_grad=True) for i in range(3)]
        s, c = lib.stack(xs, dim), lib.cat(xs, dim)
        lib.autograd.backward([(s * s).sum(), (c * 2).sum()])
        ints = lib.stack([lib.arange(3, device=dev), lib.arange(3, device=dev) * 2], dim)
        flags = lib.stack([lib.tensor(True, device=dev), lib.tensor(False, device=dev)])
        results.append((s, c, xs[1].grad, ints, flags))
    for a, b in zip(*results):
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        same(a.to(ember.float64), b.to(torch.float64))


_BASIC_INDICES = [slice(None), slice(0, 3), Ellipsis, (slice(None), slice(None)), (0, slice(None)), (slice(None), 0),
                  (slice(None), None), (None, slice(None)), (Ellipsis, slice(None)), (slice(None), slice(1, None)),
                  (slice(None),), slice(None, None, 1), (slice(None), slice(None, None, 1))]


def test_basic_index_node_names_and_saved_slices_as_pytorch(torch, device):
    """A bare slice slices even the whole dim (PyTorch's ``x[:]`` is SliceBackward0); inside a tuple a whole
    slice does nothing (``x[:, :]`` is an alias)."""
    got, want = [], []
    for lib, dev, out in ((ember, device, got), (torch, "cpu", want)):
        x = lib.ones(3, 4, device=dev, requires_grad=True)
        for index in _BASIC_INDICES:
            fn = x[index].grad_fn
            saved = tuple(getattr(fn, f"_saved_{k}") for k in ("dim", "start", "end", "step")) \
                if fn.name() == "SliceBackward0" else ()
            out.append((fn.name(), saved))
    assert got == want
