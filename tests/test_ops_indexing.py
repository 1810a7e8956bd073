"""Indexing ops against PyTorch: bad input, failed in-place ops, devices (the rows of
ember.testing.rows_indexing, every check, run in tests/test_kit.py on every backend)."""
import numpy as np
import pytest

from ember.testing.case import bad_input_test


def _z(m, d, *shape):
    return m.zeros(*shape, device=d if m.__name__ == "ember" else "cpu")


def _i(m, d, data, **kw):
    import ember

    m = m or ember
    return m.tensor(data, device=d if m.__name__ == "ember" else "cpu", **kw)


# bad input: (name, call, exception, message pattern); torch raises the same exception type
BAD = [
    ("getitem_int", lambda m, d: _z(m, d, 3, 2)[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ("getitem_tensor", lambda m, d: _z(m, d, 3, 2)[:, _i(m, d, [0, 2])], IndexError,
     "index 2 is out of bounds for dimension 1 with size 2"),
    ("getitem_negative", lambda m, d: _z(m, d, 3)[_i(m, d, [-4])], IndexError, "index -4 is out of bounds"),
    ("getitem_float_tensor", lambda m, d: _z(m, d, 3)[_i(m, d, [1.0])], IndexError,
     "tensors used as indices must be long, int, byte or bool"),
    ("getitem_float", lambda m, d: _z(m, d, 3)[1.5], IndexError, "only integers, slices"),
    ("getitem_mask_shape", lambda m, d: _z(m, d, 2, 3)[_i(m, d, [True, False, True])], IndexError,
     r"The shape of the mask \[3\] at index 0 does not match the shape of the indexed tensor \[2, 3\] at index 0"),
    ("getitem_too_many", lambda m, d: _z(m, d, 2)[0, 0], IndexError, "too many indices for tensor of dimension 1"),
    ("setitem_oob", lambda m, d: _z(m, d, 3).__setitem__(_i(m, d, [4]), 1.0), IndexError,
     "index 4 is out of bounds for dimension 0 with size 3"),
    ("gather_oob", lambda m, d: _z(m, d, 2, 3).gather(1, _i(m, d, [[5]])), RuntimeError,
     "index 5 is out of bounds for dimension 1 with size 3"),
    ("gather_negative", lambda m, d: _z(m, d, 2, 3).gather(1, _i(m, d, [[-1]])), RuntimeError,
     "index -1 is out of bounds"),
    ("gather_float", lambda m, d: _z(m, d, 2, 3).gather(1, _i(m, d, [[0.0]])), RuntimeError, "dtype"),
    ("gather_ndim", lambda m, d: _z(m, d, 2, 3).gather(1, _i(m, d, [0])), RuntimeError, "same number of dimensions"),
    ("index_select_oob", lambda m, d: _z(m, d, 2, 3).index_select(0, _i(m, d, [2])), IndexError,
     "index out of range in self"),
    ("index_select_float", lambda m, d: _z(m, d, 2, 3).index_select(0, _i(m, d, [0.0])), RuntimeError,
     "Expected dtype int"),
    ("scatter_dtype", lambda m, d: _z(m, d, 2, 3).scatter(1, _i(m, d, [[0]]), _z(m, d, 1, 1).double()),
     RuntimeError, "self.dtype to be equal to src.dtype"),
    ("masked_select_dtype", lambda m, d: _z(m, d, 2).masked_select(_i(m, d, [1, 0])), RuntimeError,
     "expected BoolTensor for mask"),
    ("take_oob", lambda m, d: _z(m, d, 2, 3).take(_i(m, d, [6])), IndexError,
     "out of range: tried to access index 6 on a tensor of 6 elements"),
]

test_bad_input = bad_input_test(BAD)


# failed in-place index ops leave the tensor, its version and its gradient history untouched
BAD_INPLACE = [
    ("index_add_", lambda x, d: x.index_add_(0, _i(None, d, [3]), x[:1] * 1)),
    ("index_add_shape", lambda x, d: x.index_add_(0, _i(None, d, [0]), x * 1)),
    ("index_copy_", lambda x, d: x.index_copy_(1, _i(None, d, [0, 9]), x[:, :2] * 1)),
    ("index_fill_", lambda x, d: x.index_fill_(1, _i(None, d, [-9]), 1.0)),
    ("scatter_", lambda x, d: x.scatter_(1, _i(None, d, [[7]]), 1.0)),
    ("scatter_add_", lambda x, d: x.scatter_add_(0, _i(None, d, [[0, 9]]), x * 1)),
    ("masked_scatter_", lambda x, d: x.masked_scatter_(_i(None, d, [True, True, True, True]), x[:1, :1] * 1)),
    ("setitem", lambda x, d: x.__setitem__((_i(None, d, [0]), _i(None, d, [4])), 1.0)),
    ("index_put_acc", lambda x, d: x.index_put_((_i(None, d, [5]),), x[0] * 1, accumulate=True)),
]


@pytest.mark.parametrize("name,call", BAD_INPLACE, ids=[b[0] for b in BAD_INPLACE])
def test_failed_inplace_leaves_input_untouched(name, call, device):
    import ember

    leaf = ember.arange(12.0, device=device).reshape(3, 4).requires_grad_()
    x = leaf * 1
    before, version, fn = x.detach().clone(), x._version, x.grad_fn
    with pytest.raises((RuntimeError, IndexError)):
        call(x, device)
    assert np.array_equal(x.detach().numpy(force=True), before.numpy(force=True))
    assert x._version == version and x.grad_fn is fn


def test_seeds_gather_example(device):
    import ember as torch

    t = torch.tensor([[1.0, 2], [3, 4]], device=device)
    idx = torch.tensor([[0, 0], [1, 0]], device=device)
    assert torch.gather(t, 1, idx).tolist() == [[1, 1], [4, 3]]
    assert torch.gather(t, 0, idx).tolist() == [[1, 2], [3, 2]]


CROSS_DEVICE = [
    ("cat", lambda a, b, i: __import__("ember").cat([a, b])),
    ("stack", lambda a, b, i: __import__("ember").stack([a, b])),
    ("gather", lambda a, b, i: a.gather(0, i)),
    ("index_select", lambda a, b, i: a.index_select(0, i)),
    ("index_add_", lambda a, b, i: a.index_add_(0, i.new_zeros(1, dtype=i.dtype).to(a.device), b[:1])),
    ("scatter_", lambda a, b, i: a.scatter_(0, i, b)),
    ("masked_scatter_", lambda a, b, i: a.masked_scatter_(b > 0, a.clone())),
    ("matmul", lambda a, b, i: a @ b),
    ("einsum", lambda a, b, i: __import__("ember").einsum("i,i", a, b)),
    ("solve", lambda a, b, i: __import__("ember").linalg.solve(a.diag() + 1, b)),
    ("setitem", lambda a, b, i: a.__setitem__(slice(0, 1), b[:1])),
]


@pytest.mark.parametrize("name,call", CROSS_DEVICE, ids=[c[0] for c in CROSS_DEVICE])
def test_cross_device_refused(name, call, device):
    import ember
    from ember.plugins import REGISTRY

    other = next((n for n, b in REGISTRY.backends.items() if n != device and b.is_available()), None)
    if other is None:
        pytest.skip("needs a second available backend")
    a = ember.zeros(3, device=device)
    b = ember.ones(3, device=other)
    i = ember.zeros(1, dtype=ember.int64, device=other)
    if name == "setitem":  # copy_ crosses devices, as in PyTorch
        call(a, b, i)
        assert a[0].item() == 1.0
        return
    with pytest.raises(RuntimeError, match="device"):
        call(a, b, i)
    assert a.sum().item() == 0
