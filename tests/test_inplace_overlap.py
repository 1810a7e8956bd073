"""In-place writes into a tensor some of whose elements share memory (a dimension of size > 1 and stride 0, as in
an expanded tensor), against PyTorch: most raise its error and leave the tensor unchanged; ``fill_`` with a number,
the triangles and the diagonal write; the indexed writes warn that they are deprecated and write."""
import warnings

import pytest

import ember

MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
           "Please clone() the tensor before performing the operation.")


def _expanded(x):
    return x[:2].expand(3, 2)


RAISES = {
    "add_": lambda m, v, o: v.add_(1),
    "mul_": lambda m, v, o: v.mul_(2),
    "sub_tensor_": lambda m, v, o: v.sub_(o(3, 2)),
    "neg_": lambda m, v, o: v.neg_(),
    "exp_": lambda m, v, o: v.exp_(),
    "clamp_": lambda m, v, o: v.clamp_(0, 1),
    "relu_": lambda m, v, o: v.relu_(),
    "F.relu_inplace": lambda m, v, o: m.nn.functional.relu(v, inplace=True),
    "F.hardtanh_inplace": lambda m, v, o: m.nn.functional.hardtanh(v, inplace=True),
    "addcmul_": lambda m, v, o: v.addcmul_(o(3, 2), o(3, 2)),
    "lerp_": lambda m, v, o: v.lerp_(o(3, 2), 0.5),
    "copy_": lambda m, v, o: v.copy_(o(3, 2)),
    "copy_broadcast": lambda m, v, o: v.copy_(o(2)),
    "fill_tensor": lambda m, v, o: v.fill_(o(()) * 3),
    "setitem_column": lambda m, v, o: v.__setitem__((slice(None), 0), 5.0),
    "setitem_all": lambda m, v, o: v.__setitem__(Ellipsis, 5.0),
    "uniform_": lambda m, v, o: v.uniform_(),
    "normal_": lambda m, v, o: v.normal_(),
    "scatter_": lambda m, v, o: v.scatter_(0, m.zeros(1, 2, dtype=m.long, device=v.device), 1.0),
    "index_add_": lambda m, v, o: v.index_add_(0, m.tensor([0], device=v.device), o(1, 2)),
    "masked_scatter_": lambda m, v, o: v.masked_scatter_(o(3, 2).bool(), o(6)),
    "cumsum_": lambda m, v, o: v.cumsum_(0),
    "column_view_add_": lambda m, v, o: v[:, 0].add_(1),
    "transposed_add_": lambda m, v, o: v.t().add_(1),
    "add_out": lambda m, v, o: m.add(o(3, 2), 1, out=v),
    "exp_out": lambda m, v, o: m.exp(o(3, 2), out=v),
    "mm_out": lambda m, v, o: m.mm(o(3, 2), o(2, 2), out=v),
}


def _run(m, dev, fn):
    x = m.arange(6.0, device=dev)

    def ones(*shape):
        return m.ones(*shape, device=dev)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(m, _expanded(x), ones)
            err = None
        except RuntimeError as e:
            err = str(e)
    return err, x.tolist(), [str(w.message).split(" (Triggered internally")[0] for w in caught
                             if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("name", list(RAISES))
def test_write_into_shared_memory_raises(device, torch, name):
    err, x, _ = _run(ember, device, RAISES[name])
    t_err, t_x, _ = _run(torch, "cpu", RAISES[name])
    assert t_err == MESSAGE
    assert err == MESSAGE
    assert x == t_x == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # unchanged


WRITES = {
    "fill_": lambda m, v, o: v.fill_(2.0),
    "zero_": lambda m, v, o: v.zero_(),
    "tril_": lambda m, v, o: v.tril_(),
    "triu_": lambda m, v, o: v.triu_(),
    "row_view_add_": lambda m, v, o: v[0].add_(1),
    "setitem_row": lambda m, v, o: v.__setitem__(0, 5.0),
    "index_fill_": lambda m, v, o: v.index_fill_(0, m.tensor([0], device=v.device), 1.0),
    "masked_fill_": lambda m, v, o: v.masked_fill_(o(3, 2).bool(), 1.0),
    "masked_fill_tensor": lambda m, v, o: v.masked_fill_(o(3, 2).bool(), o(()) * 2),
    "index_put_": lambda m, v, o: v.index_put_((m.tensor([0], device=v.device),), o(()) * 7),
    "index_put_accumulate": lambda m, v, o: v.index_put_((m.tensor([0], device=v.device),), o(()), accumulate=True),
    "setitem_index": lambda m, v, o: v.__setitem__(m.tensor([1], device=v.device), 5.0),
    "setitem_rows": lambda m, v, o: v.__setitem__(m.tensor([0, 2], device=v.device), m.tensor(
        [[1.0, 2.0], [3.0, 4.0]], device=v.device)),
    "add_out_row": lambda m, v, o: m.add(o(2), 1, out=v[0]),
}


def _skip_unless_broadcasts_writable(device):
    """Writes through a broadcast view need a library whose broadcast views are writable (array_api_strict's
    are read-only)."""
    try:
        ember.zeros(1, device=device).expand(2)[:1].fill_(1)
    except ValueError:
        pytest.skip(f"the {device} backend's broadcast views are read-only")


@pytest.mark.parametrize("name", list(WRITES))
def test_write_into_shared_memory_allowed(device, torch, name):
    _skip_unless_broadcasts_writable(device)
    err, x, warned = _run(ember, device, WRITES[name])
    t_err, t_x, t_warned = _run(torch, "cpu", WRITES[name])
    assert err is None and t_err is None
    assert x == t_x
    assert warned[:1] == t_warned[:1]


def test_partial_overlap_is_not_refused(device):
    """Windows overlap without a stride of 0: PyTorch does not refuse the write (its result is undefined)."""
    x = ember.arange(6.0, device=device)
    x.unfold(0, 3, 1).add_(1)
    assert x.tolist()[0] == 1.0


def test_empty_expanded_write_is_allowed(device):
    _skip_unless_broadcasts_writable(device)
    x = ember.ones(1, device=device)
    assert x.expand(0, 3).fill_(2).shape == (0, 3)
    assert x.tolist() == [1.0]


def test_overlap_of_zero_stride_as_strided(device, torch):
    for m, dev in ((ember, device), (torch, "cpu")):
        x = m.arange(6.0, device=dev)
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            x.as_strided((3,), (0,)).add_(1)
        assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
