"""The CPU generator draws PyTorch's numbers: after ``manual_seed(s)`` (or on a seeded ``Generator``) each random
function gives PyTorch's values bit for bit (``normal_`` of 16 or more float32 elements too, through PyTorch's
vectorised Cephes ``log`` and ``sincos``), and leaves the generator in PyTorch's state."""
import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

FLOATS = ("float32", "float64", "float16", "bfloat16")
SHAPES = ((), (5,), (16,), (3, 13))  # 0-d, PyTorch's element-by-element path, its blocks of 16 (with a tail)


def _cases():
    """(id, draw(lib)): ``draw`` runs on ``torch`` and on ``ember`` alike."""
    for dt in FLOATS:
        for shape in SHAPES:
            yield f"uniform_-{dt}-{shape}", lambda m, dt=dt, s=shape: m.empty(s, dtype=getattr(m, dt)).uniform_(
                -0.3, 2.5)
            yield f"normal_-{dt}-{shape}", lambda m, dt=dt, s=shape: m.empty(s, dtype=getattr(m, dt)).normal_(
                0.5, 2.0)
    yield "rand", lambda m: m.rand(2, 3)
    # a non-contiguous tensor is filled in memory order, normals one at a time
    yield "uniform_-transposed", lambda m: m.empty(5, 4).t().uniform_()
    yield "normal_-transposed", lambda m: m.empty(20, 4).t().normal_(0.5, 2.0)
    yield "normal_-strided", lambda m: m.empty(20, 8)[:, ::2].normal_()
    yield "random_-permuted", lambda m: m.empty(2, 3, 4).permute(2, 0, 1).random_(0, 100)
    yield "bernoulli_-transposed", lambda m: m.empty(5, 4).t().bernoulli_(0.3)
    yield "rand-f64", lambda m: m.rand(7, dtype=m.float64)
    yield "randn-f64-large", lambda m: m.randn(40, dtype=m.float64)
    yield "randn-large", lambda m: m.randn(3, 1000)
    yield "rand_like", lambda m: m.rand_like(m.zeros(4, 5))
    yield "randn_like", lambda m: m.randn_like(m.zeros(3, dtype=m.float64))
    yield "randn-complex64", lambda m: m.randn(5, dtype=m.complex64)
    yield "rand-complex128", lambda m: m.rand(20, dtype=m.complex128)
    for dt in ("int64", "int32", "int16", "int8", "uint8", "bool", "float32", "float64", "float16", "bfloat16"):
        yield f"random_-{dt}", lambda m, dt=dt: m.empty(9, dtype=getattr(m, dt)).random_()
    yield "random_-to", lambda m: m.empty(9, dtype=m.int32).random_(7)
    yield "random_-from-to", lambda m: m.empty(9).random_(-4, 90)
    yield "randint", lambda m: m.randint(0, 10, (20,))
    yield "randint-int32", lambda m: m.randint(-5, 5, (3, 4), dtype=m.int32)
    yield "randint-wide", lambda m: m.randint(0, 2 ** 40, (6,))
    yield "randint_like", lambda m: m.randint_like(m.zeros(6), 3, 9)
    for n in (0, 1, 2, 10, 300, 2000):  # (2000: the vectorised swaps)
        yield f"randperm-{n}", lambda m, n=n: m.randperm(n)
    p = np.linspace(0.05, 0.95, 24)
    for dt in ("float32", "float64"):
        yield f"bernoulli-{dt}", lambda m, dt=dt: m.bernoulli(m.tensor(p, dtype=getattr(m, dt)))
        yield f"bernoulli_-scalar-{dt}", lambda m, dt=dt: m.zeros(20, dtype=getattr(m, dt)).bernoulli_(0.3)
        yield f"exponential_-{dt}", lambda m, dt=dt: m.empty(30, dtype=getattr(m, dt)).exponential_(1.5)
        yield f"geometric_-{dt}", lambda m, dt=dt: m.empty(30, dtype=getattr(m, dt)).geometric_(0.3)
        yield f"cauchy_-{dt}", lambda m, dt=dt: m.empty(30, dtype=getattr(m, dt)).cauchy_(0.5, 2.0)
        yield f"log_normal_-{dt}", lambda m, dt=dt: m.empty(30, dtype=getattr(m, dt)).log_normal_(0.5, 0.7)
    w = np.array([[0.1, 0.0, 2.0, 0.5, 1.0, 0.3], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    for dt in ("float32", "float64", "float16"):
        for n, rep in ((1, True), (3, False), (5, True)):
            yield f"multinomial-{dt}-{n}-{rep}", lambda m, dt=dt, n=n, rep=rep: m.multinomial(
                m.tensor(w, dtype=getattr(m, dt)), n, rep)
    yield "multinomial-vector", lambda m: m.multinomial(m.tensor(w[0]), 4, True)
    rates, shapes = [0.0, 0.5, 3.0, 10.0, 25.0, 300.0] * 3, [0.01, 0.1, 0.5, 1.0, 2.5, 30.0] * 3
    for dt in ("float32", "float64"):
        yield f"poisson-{dt}", lambda m, dt=dt: m.poisson(m.tensor(rates, dtype=getattr(m, dt)))
        yield f"standard_gamma-{dt}", lambda m, dt=dt: m._standard_gamma(m.tensor(shapes, dtype=getattr(m, dt)))
    yield "dirichlet-float32", lambda m: m.distributions.Dirichlet(m.tensor(shapes[:4])).sample((3,))
    yield "beta", lambda m: m.distributions.Beta(m.tensor([2.0, 0.3]), m.tensor([1.0, 2.0])).sample((4,))
    m_, s_ = np.linspace(-1, 1, 5, dtype=np.float32), np.linspace(0.1, 2, 5, dtype=np.float32)
    yield "normal-tensors", lambda m: m.normal(m.tensor(m_), m.tensor(s_))
    yield "normal-tensor-mean", lambda m: m.normal(m.tensor(m_), 0.7)
    yield "normal-size", lambda m: m.normal(0.3, 2.0, (5,))
    yield "dropout", lambda m: m.nn.functional.dropout(m.ones(40), 0.3)
    yield "dropout-large", lambda m: m.nn.functional.dropout(m.ones(64, 50), 0.3)  # (words in bulk as uint64)
    yield "randint-wide-large", lambda m: m.randint(0, 2 ** 40, (2100,))
    v = np.linspace(-2, 2, 40, dtype=np.float32)
    yield "native_dropout", lambda m: m.cat(m.native_dropout(m.ones(20), 0.3, True))  # (output, then mask)
    yield "native_dropout-train-none-p0", lambda m: m.cat(m.native_dropout(m.ones(8), 0.0, None))
    yield "alpha_dropout", lambda m: m.nn.functional.alpha_dropout(m.tensor(v), 0.3, True)
    yield "feature_alpha_dropout", lambda m: m.nn.functional.feature_alpha_dropout(m.tensor(v).reshape(4, 10, 1),
                                                                                    0.6, True)
    yield "dropout2d", lambda m: m.nn.functional.dropout2d(m.ones(2, 6, 3, 3), 0.5)
    yield "rrelu", lambda m: m.nn.functional.rrelu(m.arange(-10.0, 11.0) * 0.25, 0.1, 0.7, training=True)
    yield "gumbel_softmax-hard", lambda m: m.nn.functional.gumbel_softmax((m.arange(-10.0, 11.0) * 0.25).reshape(
        3, 7), hard=True)
    yield "linear-init", lambda m: m.nn.Linear(5, 3).weight
    yield "conv-init", lambda m: m.nn.Conv2d(2, 3, 3).bias
    yield "embedding-init", lambda m: m.nn.Embedding(10, 4).weight
    yield "sparse-init", lambda m: m.nn.init.sparse_(m.empty(6, 5), 0.5)
    yield "trunc_normal-init", lambda m: m.nn.init.trunc_normal_(m.empty(30, 5), std=0.02)
    yield "dataloader-shuffle", lambda m: m.cat([b for (b,) in m.utils.data.DataLoader(
        m.utils.data.TensorDataset(m.arange(20)), batch_size=5, shuffle=True)])
    yield "random_split", lambda m: m.tensor(list(m.utils.data.random_split(range(20), [10, 10])[0]))
    # the cached second normal of a pair carries from one call to the next, across dtypes
    yield "normal-cache", lambda m: [m.randn(3, dtype=m.float64), m.randn(5), m.randn(1, dtype=m.float64)][-1]


CASES = list(_cases())


def _numpy(t):
    t = t.detach()
    return (t.float() if t.dtype in (torch.bfloat16, ember.bfloat16) else t).numpy()


def _cpu_only(device):
    if device != "cpu":
        pytest.skip("PyTorch's CPU numbers are the CPU backend's")


@pytest.mark.parametrize("seed", [0, 1234])
@pytest.mark.parametrize("name,draw", CASES, ids=[c[0] for c in CASES])
def test_same_numbers_as_pytorch(device, name, draw, seed):
    _cpu_only(device)
    torch.manual_seed(seed)
    ember.manual_seed(seed)
    want, got = _numpy(draw(torch)), _numpy(draw(ember))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert bytes(ember.get_rng_state().numpy()) == bytes(torch.get_rng_state().numpy())


def test_generator_argument(device):
    _cpu_only(device)
    g, tg = ember.Generator().manual_seed(42), torch.Generator().manual_seed(42)
    ember.manual_seed(1)
    torch.manual_seed(1)
    got = [ember.rand(3, generator=g), ember.randperm(8, generator=g), ember.randn(4, generator=g)]
    want = [torch.rand(3, generator=tg), torch.randperm(8, generator=tg), torch.randn(4, generator=tg)]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert bytes(g.get_state().numpy()) == bytes(tg.get_state().numpy())
    # the default generator was not drawn from
    np.testing.assert_array_equal(ember.rand(2).numpy(), torch.rand(2).numpy())


def test_default_seed_and_initial_seed(device):
    _cpu_only(device)
    g, tg = ember.Generator(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed() == 67280421310721
    np.testing.assert_array_equal(ember.rand(4, generator=g).numpy(), torch.rand(4, generator=tg).numpy())
    ember.manual_seed(-1)
    torch.manual_seed(-1)
    assert ember.initial_seed() == torch.initial_seed()
    np.testing.assert_array_equal(ember.randn(3).numpy(), torch.randn(3).numpy())


def test_state_round_trips_both_ways(device):
    _cpu_only(device)
    torch.manual_seed(7)
    torch.randn(3, dtype=torch.float64)  # leaves a cached normal in the state
    torch.rand(700)  # past one twist of the 624 words
    state = torch.get_rng_state()
    ember.set_rng_state(ember.tensor(state.numpy()))
    assert bytes(ember.get_rng_state().numpy()) == bytes(state.numpy())
    got, want = ember.randn(5, dtype=ember.float64), torch.randn(5, dtype=torch.float64)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # and an ember state loads into PyTorch
    ember.manual_seed(3)
    ember.rand(10)
    torch.set_rng_state(torch.from_numpy(ember.get_rng_state().numpy().copy()))
    np.testing.assert_array_equal(ember.rand(6).numpy(), torch.rand(6).numpy())


def test_initial_seed_comes_with_a_loaded_state(device):
    _cpu_only(device)
    for m in (torch, ember):
        m.manual_seed(7)
        state = m.get_rng_state()
        m.manual_seed(1)
        m.set_rng_state(state)
        g = m.Generator().manual_seed(9)
        saved = g.get_state()
        g.manual_seed(2)
        g.set_state(saved)
    assert ember.initial_seed() == torch.initial_seed() == 7
    assert g.initial_seed() == 9


def test_bad_state_is_refused(device):
    _cpu_only(device)
    before = ember.get_rng_state()
    with pytest.raises(RuntimeError, match="size"):
        ember.set_rng_state(ember.zeros(10, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        ember.set_rng_state(ember.zeros(5056, dtype=ember.uint8))
    assert ember.equal(ember.get_rng_state(), before)



@pytest.mark.parametrize("dt, fits", [("int8", 128), ("uint8", 256), ("int16", 32768), ("float16", 2049)])
def test_randperm_refuses_a_dtype_too_small_for_n(device, dt, fits):
    """n up to the dtype's maximum + 1 (float16: 2049) draws; one more is refused on both sides of the 512 split
    with PyTorch's error, before any draw: on the CPU the generator then gives PyTorch's next numbers."""
    try:
        ember.empty(0, dtype=getattr(ember, dt), device=device)
    except TypeError:
        pytest.skip(f"the backend has no {dt}")
    for n in sorted({fits + 1, max(fits + 1, 600)}):
        tg = torch.Generator().manual_seed(5)
        with pytest.raises(RuntimeError) as want:
            torch.randperm(n, dtype=getattr(torch, dt), generator=tg)
        with pytest.raises(RuntimeError, match=rf"randperm\(\): {re.escape(str(want.value).rstrip('.'))}.*n={n}"):
            ember.randperm(n, dtype=getattr(ember, dt), device=device)
        if device == "cpu":
            g = ember.Generator().manual_seed(5)
            with pytest.raises(RuntimeError):
                ember.randperm(n, dtype=getattr(ember, dt), generator=g)
            np.testing.assert_array_equal(ember.randint(0, 1000, (4,), generator=g).numpy(),
                                          torch.randint(0, 1000, (4,), generator=tg).numpy())
    got = ember.randperm(fits, dtype=getattr(ember, dt), device=device)
    assert sorted(got.cpu().numpy().tolist()) == list(range(fits))
