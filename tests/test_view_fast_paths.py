"""The lean paths of view, reshape, unsqueeze and cat: values, shared storage, version counters, errors,
gradients and grad_fn names against PyTorch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _pair(shape, device, requires_grad=False):
    a = np.arange(float(np.prod(shape)), dtype=np.float32).reshape(shape)
    return (ember.tensor(a, device=device, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad))


@pytest.mark.parametrize("sizes", [(20,), (5, 4), (-1,), (2, -1, 2), (1, 20, 1), (-1, 1)])
def test_view_and_reshape_sizes_match_pytorch(device, sizes):
    e, t = _pair((4, 5), device, requires_grad=True)
    for op in ("view", "reshape"):
        r, ref = getattr(e, op)(*sizes), getattr(t, op)(*sizes)
        assert tuple(r.shape) == tuple(ref.shape)
        np.testing.assert_array_equal(r.detach().cpu().numpy(), ref.detach().numpy())
        assert type(r.grad_fn).__name__ == type(ref.grad_fn).__name__


def test_view_of_empty_infers_zero(device):
    e, t = ember.zeros(0, 3, device=device), torch.zeros(0, 3)
    assert tuple(e.view(-1, 3).shape) == tuple(t.view(-1, 3).shape) == (0, 3)


def test_view_shares_storage_and_version(device):
    x = ember.zeros(2, 6, device=device)
    v, u = x.view(3, -1), x.unsqueeze(1)
    assert v._base is x and u._base is x
    before = v._version
    x.add_(1)
    assert v._version == u._version == x._version == before + 1
    v[0, 0] = 5
    assert x[0, 0].item() == 5 and u[0, 0, 0].item() == 5


def test_version_check_after_in_place_change_of_a_view(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.ones(4, device=dev, requires_grad=True)
        y = x * 2
        z = y.view(2, 2).unsqueeze(0) ** 2  # pow saves the view, which shares y's version counter
        y.mul_(3)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


@pytest.mark.parametrize("sizes", [(3, 3), (-1, -1), (7, -1), (0, -1), (-2, 10)])
def test_bad_view_sizes_raise_as_pytorch(device, sizes):
    e, t = _pair((4, 5), device)
    with pytest.raises(RuntimeError) as ref:
        t.view(*sizes)
    for op in ("view", "reshape"):
        with pytest.raises(RuntimeError) as got:
            getattr(e, op)(*sizes)
        assert str(ref.value).split(" at index")[0] in str(got.value)
    assert tuple(e.shape) == (4, 5)


def test_view_of_strided_data_raises_and_reshape_copies(device):
    e, t = _pair((4, 5), device)
    et, tt = e.t(), t.t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        et.view(20)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        tt.view(20)
    np.testing.assert_array_equal(et.reshape(20).cpu().numpy(), tt.reshape(20).numpy())


def test_view_other_size_forms_take_the_general_path(device):
    e, t = _pair((4, 5), device)
    for args in [((5, 4),), ([2, 10],), (ember.Size([10, 2]),), ((-1,),)]:
        ref_args = tuple(torch.Size(a) if isinstance(a, ember.Size) else a for a in args)
        assert tuple(e.view(*args).shape) == tuple(t.view(*ref_args).shape)
    assert tuple(e.view(size=(2, 10)).shape) == tuple(t.view(size=(2, 10)).shape)


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_unsqueeze_values_grad_and_node(device, dim):
    e, t = _pair((3, 2), device, requires_grad=True)
    r, ref = e.unsqueeze(dim), t.unsqueeze(dim)
    assert tuple(r.shape) == tuple(ref.shape)
    assert type(r.grad_fn).__name__ == type(ref.grad_fn).__name__ == "UnsqueezeBackward0"
    assert r.grad_fn._saved_dim == ref.grad_fn._saved_dim
    w = np.arange(r.numel(), dtype=np.float32).reshape(tuple(r.shape))
    (r * ember.tensor(w, device=device)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(e.grad.cpu().numpy(), t.grad.numpy())


def test_unsqueeze_bad_dim_raises_as_pytorch(device):
    e = ember.zeros(3, 2, device=device)
    with pytest.raises(IndexError):
        torch.zeros(3, 2).unsqueeze(3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        e.unsqueeze(3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        e.unsqueeze(-4)


def test_unsqueeze_under_vmap_and_gradcheck(device):
    x = ember.randn(2, 3, device=device)
    assert tuple(ember.func.vmap(lambda v: v.unsqueeze(0))(x).shape) == (2, 1, 3)
    d = ember.randn(3, 2, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: a.unsqueeze(1).view(3, -1).reshape(-1) ** 2, (d,))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_values_grad_and_node(device, dim):
    shapes = [(2, 3), (2, 3), (2, 3)] if dim == 0 else [(2, 1), (2, 4), (2, 2)]
    pairs = [_pair(s, device, requires_grad=True) for s in shapes]
    es = [e for e, _ in pairs]
    ts = [t for _, t in pairs]
    r, ref = ember.cat(es, dim), torch.cat(ts, dim)
    np.testing.assert_array_equal(r.detach().cpu().numpy(), ref.detach().numpy())
    assert type(r.grad_fn).__name__ == type(ref.grad_fn).__name__
    w = np.arange(r.numel(), dtype=np.float32).reshape(tuple(r.shape))
    (r * ember.tensor(w, device=device)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for (e, t) in pairs:
        np.testing.assert_array_equal(e.grad.cpu().numpy(), t.grad.numpy())


def test_cat_legacy_empty_and_bad_shapes(device):
    a, b = ember.ones(2, 3, device=device), ember.zeros(0, device=device)
    assert tuple(ember.cat([a, b, a], 1).shape) == tuple(torch.cat([torch.ones(2, 3), torch.zeros(0),
                                                                     torch.ones(2, 3)], 1).shape)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        ember.cat([a, ember.ones(2, 4, device=device)])
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions"):
        ember.cat([a, ember.ones(2, 3, 1, device=device)])
    for bad in ([a, ember.ones(2, 4, device=device)], [a, ember.ones(2, 3, 1, device=device)]):
        with pytest.raises(RuntimeError):
            torch.cat([torch.ones(tuple(t.shape)) for t in bad])


def _fast_paths_chain(lib, x):
    return lib.cat([x.view(-1).unsqueeze(0), x.reshape(1, 6)], 0).pow(2).sum()


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_fast_paths_with_hooks_anomaly_create_graph_and_profiler(device):
    e, t = _pair((2, 3), device, requires_grad=True)
    grads = []
    for lib, x in ((ember, e), (torch, t)):
        seen = []
        with lib.autograd.detect_anomaly(), lib.profiler.profile():
            y = x.view(3, 2)
            y.register_hook(lambda g, seen=seen: seen.append(g.sum().item()))
            loss = _fast_paths_chain(lib, y)
            (g,) = lib.autograd.grad(loss, x, create_graph=True, retain_graph=True)
            (gg,) = lib.autograd.grad(g.sum(), x)
        grads.append((g.detach().cpu().numpy() if lib is ember else g.detach().numpy(), gg, seen))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1].cpu().numpy(), grads[1][1].numpy())
    assert grads[0][2] == grads[1][2]


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)])
def test_squeeze_values_grad_and_node(device, dim):
    e, t = _pair((1, 3, 1), device, requires_grad=True)
    r, ref = (e.squeeze(), t.squeeze()) if dim is None else (e.squeeze(dim), t.squeeze(dim))
    assert tuple(r.shape) == tuple(ref.shape)
    assert type(r.grad_fn).__name__ == type(ref.grad_fn).__name__
    assert r._base is e
    (r * 2).sum().backward()
    (ref * 2).sum().backward()
    np.testing.assert_array_equal(e.grad.cpu().numpy(), t.grad.numpy())
