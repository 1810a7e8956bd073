"""Index ops with out-of-range and wrong-dtype indices, swept against PyTorch on every backend: the same exception
class as PyTorch (IndexError or RuntimeError, which differ from op to op and between one-dimensional and larger
inputs), and an in-place form that refuses leaves its tensor untouched."""
import warnings

import pytest

import ember

pytest.importorskip("torch")

# index kinds: values on the indexed dimension (size 3 for rows, 4 for columns), or an index dtype
KINDS = {"past the end": [0, 5], "one past": [0, 3], "negative beyond": [0, -5], "negative": [0, -1],
         "float": "float32", "int32": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool"}


def index(L, kind):
    v = KINDS[kind]
    if isinstance(v, list):
        return L.tensor(v)
    if v == "float32":
        return L.tensor([0.0, 1.0])
    return L.tensor([0, 1], dtype=getattr(L, v))


def rows(i):
    return i.reshape(2, 1).expand(2, 4)


# op(L, x, i): x is a 3x4 float tensor, i a two-element index of the kind swept
OPS = {
    "index_select": lambda L, x, i: x.index_select(0, i),
    "index_add": lambda L, x, i: x.index_add(0, i, L.ones(2, 4)),
    "index_add_": lambda L, x, i: x.index_add_(0, i, L.ones(2, 4)),
    "index_add_ 1-d": lambda L, x, i: x[0].index_add_(0, i, L.ones(2)),
    "index_add_ columns": lambda L, x, i: x.index_add_(1, i, L.ones(3, 2)),
    "index_copy": lambda L, x, i: x.index_copy(0, i, L.ones(2, 4)),
    "index_copy_": lambda L, x, i: x.index_copy_(0, i, L.ones(2, 4)),
    "index_fill": lambda L, x, i: x.index_fill(0, i, 1.0),
    "index_fill_ 1-d": lambda L, x, i: x[0].index_fill_(0, i, 1.0),
    "index_reduce": lambda L, x, i: x.index_reduce(0, i, L.ones(2, 4), "prod"),
    "index_put": lambda L, x, i: x.index_put((i,), L.ones(2, 4)),
    "index_put_ accumulate": lambda L, x, i: x.index_put_((i,), L.ones(2, 4), accumulate=True),
    "getitem": lambda L, x, i: x[i],
    "getitem columns": lambda L, x, i: x[:, i],
    "setitem": lambda L, x, i: x.__setitem__(i, 1.0) or x,
    "gather": lambda L, x, i: x.gather(0, rows(i)),
    "scatter": lambda L, x, i: x.scatter(0, rows(i), L.ones(2, 4)),
    "scatter_ value": lambda L, x, i: x.scatter_(0, rows(i), 1.0),
    "scatter_add": lambda L, x, i: x.scatter_add(0, rows(i), L.ones(2, 4)),
    "scatter_reduce": lambda L, x, i: x.scatter_reduce(0, rows(i), L.ones(2, 4), "amax"),
    "take": lambda L, x, i: x.take(i * 3),
    "put_": lambda L, x, i: x.put_(i * 3, L.ones(2)),
    "put accumulate": lambda L, x, i: x.put(i * 3, L.ones(2), accumulate=True),
    "embedding": lambda L, x, i: L.nn.functional.embedding(i, x),
    "masked_select": lambda L, x, i: x[:2].masked_select(rows(i)),
    "masked_fill": lambda L, x, i: x[:2].masked_fill(rows(i), 1.0),
    "masked_scatter": lambda L, x, i: x[:2].masked_scatter(rows(i), L.ones(8)),
    "take_along_dim": lambda L, x, i: x.take_along_dim(i.reshape(2, 1), 0),
}
# PyTorch reads outside the tensor here (take_along_dim checks no bounds on the CPU): ember raises instead;
# and PyTorch's gather reads an expanded (stride-0) int32 index wrongly (every row takes row 0): ember gathers
DELIBERATE = {("take_along_dim", k) for k in ("past the end", "one past", "negative beyond", "negative")} | {
    ("gather", "int32")}


class On:
    def __init__(self, mod, device=None):
        self.mod, self.device = mod, device

    def __getattr__(self, name):
        return getattr(self.mod, name)

    def tensor(self, data, dtype=None):
        t = self.mod.tensor(data, dtype=dtype)
        return t.to(self.device) if self.device is not None else t

    def ones(self, *shape):
        return self.tensor(self.mod.ones(*shape).tolist())


def outcome(L, op, kind, untouched=True):
    x = L.tensor([[float(4 * r + c) for c in range(4)] for r in range(3)])
    before = x.tolist()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's uint8-index and beta notes
            r = op(L, x, index(L, kind))
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        # (PyTorch's own index_add_ of rows may have written the rows before the bad index when it raises)
        assert not untouched or x.tolist() == before, "a refused call changed its input"
        return "raises", type(exc).__name__
    return "ok", str(r.dtype).split(".")[-1], r.tolist()


def test_index_ops_refuse_bad_indices_as_pytorch(device, torch):
    e, t = On(ember, device), On(torch)
    diffs = {}
    for name, op in OPS.items():
        for kind in KINDS:
            if (name, kind) in DELIBERATE:
                continue
            got, want = outcome(e, op, kind), outcome(t, op, kind, untouched=False)
            if got != want:
                diffs[(name, kind)] = (got, want)
    assert len(OPS) * len(KINDS) - len(DELIBERATE) == 275
    assert diffs == {}


def test_take_along_dim_checks_its_bounds(device):
    x = ember.arange(12.0, device=device).reshape(3, 4)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.take_along_dim(ember.tensor([[0], [5]], device=device), 0)


@pytest.mark.parametrize("dims", [1, 2])
def test_index_add_out_of_range_error_class(device, torch, dims):
    """PyTorch's index_add_ raises IndexError on a one-dimensional tensor and RuntimeError on a larger one."""
    shape = (3,) if dims == 1 else (3, 2)
    x = ember.zeros(*shape, device=device)
    want = IndexError if dims == 1 else RuntimeError
    with pytest.raises(want, match="index_add_"):
        x.index_add_(0, ember.tensor([5], device=device), ember.ones(1, *shape[1:], device=device))
    with pytest.raises(want):
        torch.zeros(*shape).index_add_(0, torch.tensor([5]), torch.ones(1, *shape[1:]))
    assert x.tolist() == ember.zeros(*shape).tolist()
