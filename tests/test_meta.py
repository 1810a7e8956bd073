"""The meta device: shapes, dtypes and strides without data, against PyTorch's meta tensors."""
import copy

import pytest

import ember
import ember.nn.functional as EF


def _meta_pair(torch, *specs):
    """Meta tensors of the given (shape, dtype name) in ember and torch."""
    e = [ember.empty(*s, dtype=getattr(ember, d), device="meta") for s, d in specs]
    t = [torch.empty(*s, dtype=getattr(torch, d), device="meta") for s, d in specs]
    return e, t


def _same_meta(e, t):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            _same_meta(a, b)
        return
    assert e.is_meta and e.device.type == "meta"
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]


OPS = {
    "pointwise": (lambda m, F, x, y, i: (x * y + 1).exp(), [((4, 1, 3), "float32"), ((2, 3), "float32"),
                                                            ((4,), "int64")]),
    "promotion": (lambda m, F, x, y, i: (i + 1.5, i * 2, x.double() + y, i / 2), [((4, 3), "float32"),
                                                                                  ((3,), "float64"),
                                                                                  ((4,), "int64")]),
    "reductions": (lambda m, F, x, y, i: (x.sum(), x.mean(1), x.max(0), x.argmax(-1), x.var(0, keepdim=True),
                                          x.std(), m.logsumexp(x, 1)), [((4, 5), "float32"), ((1,), "float32"),
                                                                          ((1,), "int64")]),
    "shapes": (lambda m, F, x, y, i: (x.t(), x.reshape(-1), x[1:, None], x.unsqueeze(0).expand(3, 4, 5),
                                      m.cat([x, x]), m.stack([x, x], 2), x.chunk(2, 1), x[:, [0, 2]]),
               [((4, 5), "float32"), ((1,), "float32"), ((1,), "int64")]),
    "linalg": (lambda m, F, x, y, i: (x @ y, m.matmul(x[0], y), m.einsum("bij,jk->bik", x, y)),
               [((3, 4, 5), "float32"), ((5, 2), "float32"), ((1,), "int64")]),
    "nn": (lambda m, F, x, y, i: (F.conv2d(x, y, padding=1), F.max_pool2d(x, 2), F.softmax(x, 1),
                                  F.linear(x.flatten(1), m.empty(7, 48, device=x.device)),
                                  F.cross_entropy(x.flatten(1), i)),
           [((2, 3, 4, 4), "float32"), ((6, 3, 3, 3), "float32"), ((2,), "int64")]),
}


@pytest.mark.parametrize("name", list(OPS))
def test_ops_give_pytorch_metadata(torch, name):
    fn, specs = OPS[name]
    (e_in, t_in) = _meta_pair(torch, *specs)
    _same_meta(fn(ember, EF, *e_in), fn(torch, torch.nn.functional, *t_in))


def test_strides_and_views(torch):
    x = ember.empty(2, 3, 4, device="meta")
    tx = torch.empty(2, 3, 4, device="meta")
    assert x.stride() == tx.stride()
    assert x.permute(2, 0, 1).stride() == tx.permute(2, 0, 1).stride()
    assert x.transpose(0, 1).stride() == tx.transpose(0, 1).stride()
    assert x[0].unsqueeze(0).expand(5, 3, 4).stride() == tx[0].unsqueeze(0).expand(5, 3, 4).stride()
    assert not x.transpose(0, 1).is_contiguous() and x.is_contiguous()


def test_autograd_on_meta(torch):
    w = ember.empty(3, 4, device="meta", requires_grad=True)
    x = ember.empty(5, 4, device="meta")
    loss = (x @ w.t()).relu().sum()
    loss.backward()
    assert w.grad.is_meta and w.grad.shape == (3, 4)
    assert repr(loss) == "tensor(..., device='meta', size=(), grad_fn=<SumBackward0>)"


def test_printing_matches_pytorch(torch):
    cases = [((2, 3), "float32", False), ((2,), "int64", False), ((), "float64", False), ((0,), "bool", False),
             ((3, 2), "float32", True)]
    for shape, dt, rg in cases:
        e = ember.empty(shape, dtype=getattr(ember, dt), device="meta", requires_grad=rg)
        t = torch.empty(shape, dtype=getattr(torch, dt), device="meta", requires_grad=rg)
        assert repr(e) == repr(t).replace("torch.", "ember.")
    p = ember.nn.Linear(2, 3, device="meta").weight
    assert repr(p) == repr(torch.nn.Linear(2, 3, device="meta").weight)


def test_no_data_to_read(device):
    x = ember.empty(2, 3, device="meta")
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        x.tolist()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        x.to(device)
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        x.item()
    with pytest.raises(NotImplementedError, match="cannot be called on meta tensors"):
        ember.nonzero(x)
    with pytest.raises(NotImplementedError, match="boolean mask"):
        x[x > 0]
    with pytest.raises(NotImplementedError, match="cannot be called on meta tensors"):
        x.flatten().long().unique()
    with pytest.raises(RuntimeError, match="same device"):
        x + ember.ones(2, 3, device=device)


def test_to_meta_and_back_with_to_empty(device, torch):
    t = ember.randn(3, 4, device=device)
    m = t.to("meta")
    assert m.is_meta and m.shape == (3, 4) and m.dtype is t.dtype and not t.is_meta
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.BatchNorm1d(8), ember.nn.Linear(8, 2)).to(device)
    meta_model = copy.deepcopy(model).to("meta")
    assert all(p.is_meta for p in meta_model.parameters()) and all(b.is_meta for b in meta_model.buffers())
    assert isinstance(meta_model[0].weight, ember.nn.Parameter) and meta_model[0].weight.requires_grad
    assert meta_model(ember.empty(5, 4, device="meta")).shape == (5, 2)
    back = meta_model.to_empty(device=device)
    assert back is meta_model
    for p, q in zip(back.parameters(), model.parameters()):
        assert p.device == q.device and p.shape == q.shape and not p.is_meta
    with ember.no_grad():
        for p in back.parameters():
            p.fill_(0.5)
    assert back(ember.ones(5, 4, device=device)).shape == (5, 2)
    # PyTorch's way to build a big model without memory: on meta, then to_empty and initialise
    big = ember.nn.Linear(100_000, 100_000, device="meta")
    assert big.weight.shape == (100_000, 100_000) and big.weight.is_meta
    assert big(ember.empty(8, 100_000, device="meta")).shape == (8, 100_000)


def test_factories_and_random_on_meta(torch):
    for f in ("zeros", "ones", "randn", "rand", "empty"):
        x = getattr(ember, f)(2, 3, device="meta")
        assert x.is_meta and x.shape == (2, 3)
    assert ember.arange(5, device="meta").dtype is ember.int64
    assert ember.full((2,), 3, device="meta").dtype is ember.int64
    x = ember.empty(4, 4, device="meta")
    x.uniform_(), x.normal_(), x.zero_(), x.add_(1)
    assert x.is_meta and ember.nn.init.kaiming_uniform_(x) is x
