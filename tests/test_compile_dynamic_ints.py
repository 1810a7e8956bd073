"""ember.compile with Python int arguments that change per call.  By default each value is guarded (its own
variant, never a wrong result); with ``config.probe_int_args`` automatic dynamic ints make one graph serve every
value of an int used as data (ints deciding control flow or a loop length stay guarded by value)."""
import random

import pytest

import ember


@pytest.fixture
def probe_ints(monkeypatch):
    monkeypatch.setattr(ember._dynamo.config, "probe_int_args", True)


def gold_score(x, ys):
    return sum(x[i, y] for i, y in enumerate(ys))


def _variants(cf):
    return len(cf._compiled.cache)


def _paths(n, seed, count=12):
    rng = random.Random(seed)
    return [[rng.randrange(6) for _ in range(n)] for _ in range(count)]


@pytest.mark.parametrize("backend", ["inductor", "eager"])  # raw replay with the compiled backward; dispatch replay
def test_int_list_as_indices_one_graph(device, probe_ints, backend):
    x = ember.randn(5, 6, device=device, requires_grad=True)
    cf = ember.compile(gold_score, backend=backend)
    for ys in _paths(5, 0):
        out, ref = cf(x, ys), gold_score(x, ys)
        assert ember.equal(out, ref)
        assert ember.equal(ember.autograd.grad(out, x)[0], ember.autograd.grad(ref, x)[0])
    assert _variants(cf) == 2  # the first value's graph, then one with the path symbolic


def test_int_scalar_operand_and_offset(device, probe_ints):
    def f(x, k, ys):
        return (x[ys[0] + 1] * k - x[-1, ys[1]]).sum()
    x = ember.randn(6, 6, device=device, dtype=ember.float64, requires_grad=True)
    cf = ember.compile(f)
    rng = random.Random(1)
    for _ in range(10):
        k, ys = rng.randrange(-3, 9), [rng.randrange(5), rng.randrange(6)]
        out, ref = cf(x, k, ys), f(x, k, ys)
        assert ember.allclose(out, ref)
        assert ember.allclose(ember.autograd.grad(out, x)[0], ember.autograd.grad(ref, x)[0])
    assert _variants(cf) == 2


def test_ints_deciding_control_flow_stay_guarded(device, probe_ints):
    def f(x, n, k):
        y = x
        for _ in range(n):  # a loop length: its value shapes the trace
            y = y * 2
        return y + 1 if k > 2 else y - 1  # a branch taken on the value
    x = ember.randn(3, device=device)
    cf = ember.compile(f)
    for n, k in [(1, 0), (2, 5), (3, 1), (2, 3), (1, 2), (0, 9)]:
        assert ember.equal(cf(x, n, k), f(x, n, k))
    assert _variants(cf) == 6  # one per (n, k): both guarded by value
    assert cf._compiled.ints == set()


def test_dynamic_true_and_false(device, probe_ints):
    x = ember.randn(4, 6, device=device)
    eager = ember.compile(gold_score, dynamic=True)
    fixed = ember.compile(gold_score, dynamic=False)
    paths = _paths(4, 2, 6)
    for ys in paths:
        assert ember.equal(eager(x, ys), gold_score(x, ys))
        assert ember.equal(fixed(x, ys), gold_score(x, ys))
    assert _variants(eager) == 1
    assert _variants(fixed) == len({tuple(p) for p in paths})


def test_sentence_loop_lengths_and_paths(device, probe_ints):
    """A CRF-style gold score over sentences of two lengths: one symbolic-path graph per length."""
    trans = ember.randn(5, 5, device=device, requires_grad=True)

    def loss(feats, tags):
        score = feats[0, tags[0]]
        for i in range(1, len(tags)):
            score = score + trans[tags[i], tags[i - 1]] + feats[i, tags[i]]
        return score
    cf = ember.compile(loss)
    rng = random.Random(3)
    for t in range(16):
        n = 3 + t % 2
        feats = ember.randn(n, 5, device=device, requires_grad=True)
        tags = [rng.randrange(5) for _ in range(n)]
        out, ref = cf(feats, tags), loss(feats, tags)
        assert ember.allclose(out, ref)
        got, want = ember.autograd.grad(out, (feats, trans)), ember.autograd.grad(ref, (feats, trans))
        assert all(ember.allclose(a, b) for a, b in zip(got, want))
    assert _variants(cf) <= 4


def test_automatic_dynamic_off_keeps_values(device, probe_ints):
    x = ember.randn(4, 6, device=device)
    cf = ember.compile(gold_score)
    with ember._dynamo.config.patch(automatic_dynamic_shapes=False):
        for ys in _paths(4, 4, 4):
            assert ember.equal(cf(x, ys), gold_score(x, ys))
    assert _variants(cf) == 4


@pytest.mark.slow  # (importing torch._dynamo takes seconds)
def test_recompiles_as_pytorch(probe_ints):
    """PyTorch's eager-backend compile also settles on two graphs for an int index that changes."""
    torch = pytest.importorskip("torch")
    from torch._dynamo.testing import CompileCounter
    torch._dynamo.reset()
    counter = CompileCounter()

    def f(x, k):
        return x[k] * k
    cf = torch.compile(f, backend=counter)
    x = torch.randn(6, 3)
    ecf = ember.compile(lambda x, k: x[k] * k)
    ex = ember.tensor(x.numpy())
    for k in (1, 2, 3, 4, 5):
        assert torch.equal(cf(x, k), f(x, k))
        assert ecf(ex, k).tolist() == f(x, k).tolist()
    torch._dynamo.reset()
    assert counter.frame_count == 2 == _variants(ecf)


def test_int_used_as_data_and_in_a_branch_or_as_dim_stays_guarded(device, probe_ints):
    def f(x, y, d):
        return (x[y] * 2 if y > 2 else x[y] - 1).sum(d)  # y indexes and decides a branch; d picks a dim
    x = ember.randn(6, 4, device=device)
    cf = ember.compile(f)
    for y, d in [(1, 0), (4, -1), (2, 0), (5, 0), (3, 0), (0, -1), (4, 0)]:
        assert ember.equal(cf(x, y, d), f(x, y, d))
    assert cf._compiled.ints == set()


def test_int_deciding_a_shape_stays_guarded(device, probe_ints):
    def f(x, n):
        return x[:n] * 2 + x.narrow(0, 0, n)
    x = ember.randn(6, device=device)
    cf = ember.compile(f)
    for n in (2, 3, 4, 1, 6):
        assert ember.equal(cf(x, n), f(x, n))
    assert cf._compiled.ints == set() and _variants(cf) == 5


def test_random_state_and_buffers_as_eager(device, probe_ints):
    """The probe traces leave the random stream and the buffers as the call itself left them."""
    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = ember.nn.BatchNorm1d(4)

        def forward(self, x, k):
            return ember.nn.functional.dropout(self.norm(x), 0.5)[k] * k
    x = ember.randn(6, 4, device=device)
    eager, compiled = M().to(device), M().to(device)
    cm = ember.compile(compiled)
    for k in (1, 2, 4, 0, 5):
        ember.manual_seed(k)
        want = eager(x, k)
        ember.manual_seed(k)
        assert ember.equal(cm(x, k), want)
    assert ember.equal(compiled.norm.running_mean, eager.norm.running_mean)
    assert len(cm.__dict__["_compiled"].cache) == 2


def test_dynamic_true_top_level_index_at_the_end(device, probe_ints):
    def f(x, k):
        return x[k] + k
    x = ember.randn(4, 3, device=device)
    cf = ember.compile(f, dynamic=True)
    for k in (3, 0, 2, -1, 1):
        assert ember.equal(cf(x, k), f(x, k))
    assert _variants(cf) == 1


def test_ints_read_by_user_code_through_conversions_stay_guarded(device, probe_ints):
    def by_int(x, ys):
        out = x[0, ys[0]]
        return out * 10 if int(ys[1]) == 0 else out  # int() in user code, then a branch on its value

    def by_text(x, ys):
        return x[0, ys[0]] * len(str(ys[1]))  # the value's digits decide a number

    def by_division(x, ys):
        return x[0, ys[0]] * (2.0 if ys[1] / 4 > 1 else 1.0)

    x = ember.randn(2, 12, device=device, dtype=ember.float64)
    for f in (by_int, by_text, by_division):
        cf = ember.compile(f)
        for ys in ([1, 3], [2, 5], [3, 7], [4, 2], [5, 11], [6, 0], [7, 10], [0, 1]):  # later values branch otherwise
            assert ember.equal(cf(x, ys), f(x, ys)), (f.__name__, ys)


# Functions whose last call took the probes' value (a wrong result) when ints were probed by default:
# arithmetic other than + and - fitted from two points, and C code reading an int's value unseen.
REPROS = {
    "floordiv": (lambda x, k: x * (k // 2), [3, 2, 5], {}),
    "mod": (lambda x, k: x[k % 4], [3, 2, 5, 6], {}),
    "square": (lambda x, k: x * (k * k), [0, 3], {"dynamic": True}),
    "list_index": (lambda x, k: x * [1, 1, 1, 1, 1, 9][k], [2, 3, 5], {}),
    "float_compare": (lambda x, k: x * 2 if 3.5 < k else x + k, [1, 2, 5], {}),
    "float_product": (lambda x, k: (x * 2 if k * 1.0 > 3 else x) + k, [1, 2, 5], {}),
    "real": (lambda x, k: (x * 2 if k.real > 3 else x) + k, [1, 2, 5], {}),
}


def _as_eager(f, calls, device, **kw):
    """``f`` compiled, called with ``x = arange(8)`` and each int of ``calls`` (a tuple: several), against eager."""
    cf = ember.compile(f, **kw)
    for k in calls:
        ks = k if type(k) is tuple else (k,)
        x = ember.arange(8.0, device=device)
        assert ember.equal(cf(x, *ks), f(x, *ks)), (f, k)
    return cf._compiled


def test_ints_guarded_by_value_by_default(device):
    assert ember._dynamo.config.probe_int_args is False
    for f, calls, kw in REPROS.values():
        compiled = _as_eager(f, calls, device, **kw)
        assert compiled.ints == set() and len(compiled.cache) == len(calls)


def test_probing_other_arithmetic_and_unread_ints_stay_guarded(device, probe_ints):
    for name in ("floordiv", "mod", "square", "list_index"):
        f, calls, kw = REPROS[name]
        assert _as_eager(f, calls, device, **kw).ints == set(), name
    # j indexes (symbolic), k only picks a list element (read by C code: guarded), as do a list's ints together
    both = _as_eager(lambda x, j, k: x[j] * [1, 1, 9][k] + j, [(0, 0), (1, 1), (2, 2), (3, 0), (4, 2)], device)
    assert both.ints == {("a", 1)} and len(both.cache) == 4
    path = _as_eager(lambda x, ys: x[ys[0]] * [1, 9][ys[1]], [([0, 0],), ([1, 1],), ([2, 0],)], device)
    assert path.ints == set()


def test_probing_sums_symbolic_and_far_check(device, probe_ints):
    # + and - of a constant keep an int symbolic, with a tensor on either side of a product
    add = _as_eager(lambda x, k: k * x + x[k - 1] - (k < x).float(), [3, 2, 5, 6, 1], device)
    assert add.ints == {("a", 1)} and len(add.cache) == 2
    # 0.5 * k reads k in C: round() of it follows k - 1 at 3 and 2; the check trace far from both tells
    halves = _as_eager(lambda x, k: x * round(0.5 * k), [3, 2, 5, 6], device)
    assert halves.ints == set()
