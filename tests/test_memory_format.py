"""``memory_format=`` against PyTorch on every backend: the strides ``contiguous``, ``to``, ``clone`` and the
factories give in each format, ``is_contiguous(memory_format=...)``, and the format ops keep from their input.

Strides are compared where the backend's arrays have them; an array library without strides (the array API
standard's) answers ``stride()`` for its one, contiguous, order, and only the values are checked there.
"""
import pytest

import ember

pytest.importorskip("torch")

SHAPES = {"channels_last": (2, 3, 4, 5), "channels_last_3d": (2, 3, 4, 5, 6), "contiguous_format": (2, 3, 4, 5),
          "preserve_format": (2, 3, 4, 5)}
# the tensor a call starts from: plain, or already dense in a channels-last format
STARTS = {"plain": lambda L, shape: L.arange(float(_numel(shape))).reshape(shape),
          "channels_last": lambda L, shape: L.arange(float(_numel(shape))).reshape(shape).contiguous(
              memory_format=L.channels_last if len(shape) == 4 else L.channels_last_3d)}
CALLS = {
    "contiguous": lambda L, x, f: x.contiguous(memory_format=f),
    "to": lambda L, x, f: x.to(memory_format=f),
    "to float64": lambda L, x, f: x.to(L.float64, memory_format=f),
    "clone": lambda L, x, f: x.clone(memory_format=f),
    "empty_like": lambda L, x, f: L.empty_like(x, memory_format=f).fill_(1),
    "zeros_like": lambda L, x, f: L.zeros_like(x, memory_format=f),
    "ones_like": lambda L, x, f: L.ones_like(x, memory_format=f),
    "full_like": lambda L, x, f: L.full_like(x, 7.0, memory_format=f),
    "rand_like": lambda L, x, f: L.rand_like(x, memory_format=f) * 0,
    "randn_like": lambda L, x, f: L.randn_like(x, memory_format=f) * 0,
}
DEFAULT_CALLS = {  # the preserve rule without the argument
    "clone": lambda L, x: x.clone(), "empty_like": lambda L, x: L.empty_like(x).fill_(1),
    "zeros_like": lambda L, x: L.zeros_like(x), "rand_like": lambda L, x: L.rand_like(x) * 0,
    "to float64": lambda L, x: x.to(L.float64), "contiguous": lambda L, x: x.contiguous(),
    "relu": lambda L, x: x.relu(), "add": lambda L, x: x + 1, "mul": lambda L, x: x * x, "neg": lambda L, x: -x,
}


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _has_strides(device):
    return hasattr(ember.zeros(1, device=device)._data, "strides")


def _outcome(L, call, strided):
    try:
        r = call()
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return "raises", type(exc).__name__
    return _facts(L, r, strided)


def _facts(L, r, strided=True):
    facts = [str(r.dtype).split(".")[-1], tuple(r.shape), r.tolist(), r.is_contiguous(),
             r.is_contiguous(memory_format=L.channels_last), r.is_contiguous(memory_format=L.channels_last_3d)]
    return facts + [r.stride()] if strided else facts[:3]


@pytest.mark.parametrize("fmt", list(SHAPES))
@pytest.mark.parametrize("start", list(STARTS))
def test_memory_format_argument_follows_pytorch(device, torch, fmt, start):
    shape = SHAPES[fmt]
    strided = _has_strides(device)
    diffs = {}
    for name, call in CALLS.items():
        x, tx = STARTS[start](ember, shape).to(device), STARTS[start](torch, shape)
        got = _outcome(ember, lambda c=call, x=x: c(ember, x, getattr(ember, fmt)), strided)
        want = _outcome(torch, lambda c=call, x=tx: c(torch, x, getattr(torch, fmt)), strided)
        if got != want and (strided or not (name == "contiguous" and fmt == "preserve_format")):
            diffs[name] = (got, want)  # (without strides every tensor is plainly contiguous: nothing to refuse)
    assert diffs == {}


@pytest.mark.parametrize("rank", [4, 5])
def test_results_keep_a_channels_last_input_format_as_pytorch(device, torch, rank):
    shape = (2, 3, 4, 5, 6)[:rank]
    strided = _has_strides(device)
    diffs = {}
    for name, call in DEFAULT_CALLS.items():
        got = _facts(ember, call(ember, STARTS["channels_last"](ember, shape).to(device)), strided)
        want = _facts(torch, call(torch, STARTS["channels_last"](torch, shape)), strided)
        if got != want:
            diffs[name] = (got, want)
    assert diffs == {}


def test_empty_in_channels_last(device, torch):
    for fmt, shape in (("channels_last", (2, 3, 4, 5)), ("channels_last_3d", (2, 3, 4, 5, 6))):
        e = ember.empty(*shape, memory_format=getattr(ember, fmt), device=device)
        t = torch.empty(*shape, memory_format=getattr(torch, fmt))
        assert tuple(e.shape) == tuple(t.shape)
        if _has_strides(device):
            assert e.stride() == t.stride() and not e.is_contiguous()
            assert e.is_contiguous(memory_format=getattr(ember, fmt))


def test_channels_last_copy_keeps_its_gradient(device):
    x = ember.arange(120.0, device=device).reshape(2, 3, 4, 5).requires_grad_()
    y = x.contiguous(memory_format=ember.channels_last)
    (y * ember.arange(120.0, device=device).reshape(2, 3, 4, 5)).sum().backward()
    assert x.grad.tolist() == ember.arange(120.0).reshape(2, 3, 4, 5).tolist()
    assert ember.autograd.gradcheck(lambda t: t.clone(memory_format=ember.channels_last) * 2,
                                    (ember.randn(1, 2, 2, 3, dtype=ember.float64, device=device,
                                                 requires_grad=True),))


def test_bad_memory_format_arguments(device):
    x = ember.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match="rank 4"):
        x.contiguous(memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="rank 5"):
        ember.empty(2, 3, 4, 5, memory_format=ember.channels_last_3d, device=device)
    with pytest.raises(TypeError, match="memory_format"):
        x.clone(memory_format="channels_last")


@pytest.mark.parametrize("rank", [4, 5])
@pytest.mark.parametrize("other", ["same format", "channel bias", "0-d", "last-dim row", "number"])
def test_pointwise_of_two_operands_keeps_their_common_format(device, torch, rank, other):
    """A channels-last tensor with an operand of the same format, or one that broadcasts to it, gives a
    channels-last result in both orders, as in PyTorch.  (Operands of two different full-size formats are
    not covered: PyTorch follows the first one's, the kernels here give the contiguous order.)"""
    shape = (2, 3, 4, 5, 6)[:rank]
    strided = _has_strides(device)
    operands = {"same format": lambda L: STARTS["channels_last"](L, shape) * 0.5,
                "channel bias": lambda L: L.ones((3,) + (1,) * (rank - 2)), "0-d": lambda L: L.tensor(2.0),
                "last-dim row": lambda L: L.ones(shape[-1]), "number": lambda L: 3.0}
    for op in ("add", "mul", "maximum", "sub"):
        if op == "maximum" and other == "number":
            continue
        facts = []
        for L, dev in ((torch, "cpu"), (ember, device)):
            x, y = STARTS["channels_last"](L, shape).to(dev), operands[other](L)
            y = y.to(dev) if not isinstance(y, float) else y
            f = getattr(L, op)
            facts.append([_facts(L, f(x, y), strided), _facts(L, f(y, x) if not isinstance(y, float) else x, strided)])
        assert facts[0] == facts[1], op


def test_conv2d_and_batch_norm_keep_a_channels_last_input_format(device, torch):
    def calls(L, dev):
        m = L.nn.BatchNorm2d(3).to(dev)
        m.eval()
        w6, w1, b = L.ones(6, 3, 3, 3).to(dev), L.ones(6, 3, 1, 1).to(dev), L.ones(6).to(dev)
        return {"conv2d": lambda x: L.nn.functional.conv2d(x, w6, b),
                "conv2d 1x1": lambda x: L.nn.functional.conv2d(x, w1),
                "batch_norm training": lambda x: L.nn.functional.batch_norm(x, None, None, training=True),
                "batch_norm eval": m, "relu": lambda x: x.relu()}
    strided = _has_strides(device)
    e, t = calls(ember, device), calls(torch, "cpu")
    for start in STARTS:
        for name in e:
            x, tx = STARTS[start](ember, (2, 3, 4, 5)).to(device), STARTS[start](torch, (2, 3, 4, 5))
            got, want = _facts(ember, e[name](x).detach(), strided), _facts(torch, t[name](tx).detach(), strided)
            assert got[:2] == want[:2] and got[3:] == want[3:], (start, name)
            ember.testing.assert_close(ember.tensor(got[2]), ember.tensor(want[2]), rtol=1e-5, atol=1e-4)
