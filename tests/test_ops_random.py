"""Random sampling ops: reproducible under manual_seed and generator=, the right distributions, shapes and
dtypes as PyTorch's, clear errors before anything is written."""
import math

import pytest

import ember

N = 20000

# name, call on an empty float tensor (in place), expected mean, expected std
FILLERS = [
    ("uniform_", lambda t, g: t.uniform_(-1.0, 3.0, generator=g), 1.0, 4 / math.sqrt(12)),
    ("normal_", lambda t, g: t.normal_(2.0, 0.5, generator=g), 2.0, 0.5),
    ("exponential_", lambda t, g: t.exponential_(4.0, generator=g), 0.25, 0.25),
    ("geometric_", lambda t, g: t.geometric_(0.5, generator=g), 2.0, math.sqrt(2.0)),
    ("log_normal_", lambda t, g: t.log_normal_(0.0, 0.25, generator=g), math.exp(0.25 ** 2 / 2),
     math.sqrt((math.exp(0.25 ** 2) - 1) * math.exp(0.25 ** 2))),
    ("bernoulli_", lambda t, g: t.bernoulli_(0.3, generator=g), 0.3, math.sqrt(0.21)),
    ("random_", lambda t, g: t.random_(0, 10, generator=g), 4.5, math.sqrt(99 / 12)),
]


@pytest.mark.parametrize("name,fill,mean,std", FILLERS, ids=[f[0] for f in FILLERS])
def test_inplace_fillers(name, fill, mean, std, device):
    t = ember.empty(N, device=device)
    r = fill(t, None)
    assert r is t and t._version == 1
    assert abs(float(t.mean()) - mean) < 5 * std / math.sqrt(N)
    assert abs(float(t.std()) - std) < 0.05 * std
    ember.manual_seed(5)
    a = fill(ember.empty(50, device=device), None)
    ember.manual_seed(5)
    b = fill(ember.empty(50, device=device), None)
    assert ember.equal(a, b)
    g1, g2 = ember.Generator(device).manual_seed(3), ember.Generator(device).manual_seed(3)
    assert ember.equal(fill(ember.empty(50, device=device), g1), fill(ember.empty(50, device=device), g2))
    assert not ember.equal(fill(ember.empty(50, device=device), g1), a) or name == "bernoulli_"


def test_cauchy_median(device):
    t = ember.empty(N, device=device).cauchy_(1.0, 2.0)
    assert abs(float(t.median()) - 1.0) < 0.1


def test_rng_state_round_trip(device):
    state = ember.get_rng_state()
    a = ember.randn(5, device="cpu")
    ember.set_rng_state(state)
    assert ember.equal(ember.randn(5, device="cpu"), a)
    g = ember.Generator(device).manual_seed(11)
    s = g.get_state()
    x = ember.empty(4, device=device).normal_(generator=g)
    g.set_state(s)
    assert ember.equal(ember.empty(4, device=device).normal_(generator=g), x)
    assert g.initial_seed() == 11
    assert isinstance(ember.seed(), int)


def test_sampling_ops(device, torch):
    p = ember.full((3, N // 10), 0.25, device=device)
    b = ember.bernoulli(p)
    assert b.dtype is ember.float32 and b.shape == p.shape
    assert abs(float(b.mean()) - 0.25) < 0.02
    assert set(ember.bernoulli(p, 0.9).unique().tolist()) <= {0.0, 1.0}
    lam = ember.full((N,), 4.0, device=device)
    assert abs(float(ember.poisson(lam).mean()) - 4.0) < 0.1 and ember.poisson(lam).dtype is ember.float32
    w = ember.tensor([[0.0, 1.0, 3.0], [5.0, 0.0, 0.0]], device=device)
    m = ember.multinomial(w, 2000, replacement=True)
    assert m.dtype is ember.int64 and tuple(m.shape) == (2, 2000)
    assert (m[0] != 0).all() and (m[1] == 0).all()
    assert abs(float((m[0] == 2).float().mean()) - 0.75) < 0.05
    small = ember.multinomial(w, 600, replacement=True)  # few enough draws to be counted in one comparison
    assert small.dtype is ember.int64 and tuple(small.shape) == (2, 600)
    assert (small[0] != 0).all() and (small[1] == 0).all()
    assert abs(float((small[0] == 2).float().mean()) - 0.75) < 0.08
    nr = ember.multinomial(ember.ones(2, 5, device=device), 5)
    assert nr.sort(1).values.tolist() == [[0, 1, 2, 3, 4]] * 2
    ri = ember.randint_like(ember.zeros(2, 3, dtype=ember.int32, device=device), 3, 7)
    assert ri.dtype is ember.int32 and tuple(ri.shape) == (2, 3) and 3 <= int(ri.min()) and int(ri.max()) < 7


def test_normal_overloads(device, torch):
    mean, std = ember.zeros(2, 1, device=device), ember.full((3,), 2.0, device=device)
    tm, ts = torch.zeros(2, 1), torch.full((3,), 2.0)
    for e, t in [(ember.normal(mean, std), torch.normal(tm, ts)), (ember.normal(mean, 1.0), torch.normal(tm, 1.0)),
                 (ember.normal(0.0, std), torch.normal(0.0, ts)),
                 (ember.normal(1.0, 2.0, (4, 2), device=device), torch.normal(1.0, 2.0, (4, 2)))]:
        assert tuple(e.shape) == tuple(t.shape) and str(e.dtype)[6:] == str(t.dtype)[6:]
    big = ember.normal(ember.full((N,), 3.0, device=device), ember.full((N,), 0.5, device=device))
    assert abs(float(big.mean()) - 3.0) < 0.02 and abs(float(big.std()) - 0.5) < 0.02
    g = ember.Generator(device).manual_seed(2)
    a = ember.normal(mean, std, generator=g)
    g.manual_seed(2)
    assert ember.equal(a, ember.normal(mean, std, generator=g))


def test_samplers_write_into_out(device, torch):
    """``out=`` takes the samples (resized from empty), with the draws the same generator gives without it."""
    g = ember.Generator(device)
    draws = [(lambda o: ember.normal(0.0, 1.0, (5,), out=o, generator=g),
              lambda: ember.normal(0.0, 1.0, (5,), device=device, generator=g)),
             (lambda o: ember.normal(ember.zeros(5, device=device), 2.0, out=o, generator=g),
              lambda: ember.normal(ember.zeros(5, device=device), 2.0, generator=g)),
             (lambda o: ember.bernoulli(ember.full((5,), 0.5, device=device), out=o, generator=g),
              lambda: ember.bernoulli(ember.full((5,), 0.5, device=device), generator=g)),
             (lambda o: ember.multinomial(ember.tensor([0.2, 0.8], device=device), 5, True, out=o, generator=g),
              lambda: ember.multinomial(ember.tensor([0.2, 0.8], device=device), 5, True, generator=g))]
    for i, (into, fresh) in enumerate(draws):
        out = ember.empty(0, dtype=ember.int64 if i == 3 else ember.float32, device=device)
        g.manual_seed(7)
        assert into(out) is out and tuple(out.shape) == (5,)
        g.manual_seed(7)
        assert ember.equal(out, fresh())
    r = ember.randint_like(ember.zeros(3, device=device), 5, requires_grad=True)
    t = torch.randint_like(torch.zeros(3), 5, requires_grad=True)
    assert r.requires_grad == t.requires_grad and str(r.dtype)[6:] == str(t.dtype)[6:]


def test_rrelu_draws_its_slopes_from_the_generator_given(device):
    x = ember.randn(50, device=device) - 1
    g = ember.Generator(device)
    g.manual_seed(3)
    a = ember.rrelu(x, training=True, generator=g)
    g.manual_seed(3)
    y = x.clone()
    ember.rrelu_(y, 1.0 / 8, 1.0 / 3, True, g)
    g.manual_seed(4)
    assert ember.equal(a, y) and not ember.equal(a, ember.rrelu(x, training=True, generator=g))


def test_bad_inputs_leave_tensor_untouched(device):
    t = ember.zeros(4, device=device)
    for call, match in [(lambda: t.uniform_(2.0, 1.0), "uniform_ expects"), (lambda: t.normal_(0.0, -1.0), "std >= 0"),
                        (lambda: t.exponential_(0.0), "lambda > 0"), (lambda: t.geometric_(1.5), "p to be in"),
                        (lambda: ember.bernoulli(ember.full((2,), 1.5, device=device)), "between 0 and 1"),
                        (lambda: ember.multinomial(ember.ones(3, device=device), 4), "n_sample > prob_dist"),
                        (lambda: ember.multinomial(ember.ones(1, 1, 3, device=device), 1), "1 or 2 dim"),
                        (lambda: ember.multinomial(-ember.ones(3, device=device), 1), "element < 0"),
                        (lambda: t.bernoulli_(1.5), r"p to be in \[0, 1\]"),
                        (lambda: t.bernoulli_(ember.full((4,), -0.5, device=device)), "between 0 and 1"),
                        (lambda: ember.bernoulli(t, -0.1), r"p to be in \[0, 1\]"),
                        (lambda: ember.normal(t, -1.0), "std >= 0"),
                        (lambda: ember.normal(t, ember.full((4,), -1.0, device=device)), "all elements of std >= 0"),
                        (lambda: ember.normal(0.0, -1.0, (2,), device=device), "std >= 0"),
                        (lambda: ember.poisson(ember.full((2,), -1.0, device=device)), "non-negative"),
                        (lambda: ember.multinomial(ember.zeros(2, 3, device=device), 1), "sum of probabilities"),
                        (lambda: ember.multinomial(ember.tensor([1.0, float("nan")], device=device), 1), "nan"),
                        (lambda: ember.multinomial(ember.ones(3, device=device), 0), "n_sample <= 0"),
                        (lambda: ember.multinomial(ember.ones(3, dtype=ember.int64, device=device), 1),
                         "floating-point"),
                        (lambda: t.random_(5, 3), "'from' to be less than 'to'"),
                        (lambda: t.cauchy_(0.0, -1.0), "sigma > 0"), (lambda: t.log_normal_(0.0, 0.0), "std > 0"),
                        (lambda: ember.zeros(3, dtype=ember.int64, device=device).normal_(), "not implemented"),
                        (lambda: ember.zeros(3, dtype=ember.int64, device=device).exponential_(), "floating point"),
                        (lambda: ember.poisson(ember.ones(2, dtype=ember.int64, device=device)), "not implemented")]:
        with pytest.raises(RuntimeError, match=match):
            call()
    assert t.tolist() == [0.0] * 4 and t._version == 0
    leaf = ember.zeros(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.normal_()
    assert leaf.tolist() == [0.0] * 3


FACTORIES = [
    # name, call(lib, device, generator) -> tensor
    ("rand", lambda lib, d, g: lib.rand(3, 4, device=d, generator=g)),
    ("rand64", lambda lib, d, g: lib.rand((2, 3), dtype=lib.float64, device=d, generator=g)),
    ("randn", lambda lib, d, g: lib.randn(5, device=d, generator=g)),
    ("randint", lambda lib, d, g: lib.randint(3, 9, (4, 2), device=d, generator=g)),
    ("randint_high", lambda lib, d, g: lib.randint(9, (6,), device=d, generator=g)),
    ("randperm", lambda lib, d, g: lib.randperm(7, device=d, generator=g)),
    ("randperm32", lambda lib, d, g: lib.randperm(7, dtype=lib.int32, device=d, generator=g)),
]


@pytest.mark.parametrize("name,make", FACTORIES, ids=[f[0] for f in FACTORIES])
def test_factories_match_torch_and_reproduce(name, make, device, torch):
    e = make(ember, device, None)
    t = make(torch, "cpu", None)
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype) == str(t.dtype).replace("torch", "ember")
    ember.manual_seed(7)
    a = make(ember, device, None)
    ember.manual_seed(7)
    assert ember.equal(a, make(ember, device, None))
    g = ember.Generator(device)
    b = make(ember, device, g.manual_seed(4))
    assert ember.equal(b, make(ember, device, g.manual_seed(4)))
    if name.startswith("randperm"):
        assert sorted(b.tolist()) == list(range(7))
    if name.startswith("randint"):
        lo = 3 if name == "randint" else 0
        assert lo <= int(b.min()) and int(b.max()) < 9


def test_factory_distributions(device):
    u, z = ember.rand(N, device=device), ember.randn(N, device=device)
    assert 0.0 <= float(u.min()) and float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 5 * math.sqrt(1 / 12 / N)
    assert abs(float(z.mean())) < 5 / math.sqrt(N) and abs(float(z.var()) - 1.0) < 5 * math.sqrt(2 / N)
    r = ember.randint(0, 4, (N,), device=device)
    counts = [int((r == k).sum()) for k in range(4)]
    assert all(abs(c - N / 4) < 5 * math.sqrt(N * 0.25 * 0.75) for c in counts)
    x = ember.rand_like(ember.zeros(2, 3, dtype=ember.float64, device=device))
    assert x.dtype is ember.float64 and x.device == ember.zeros(1, device=device).device
    assert ember.randn_like(x).dtype is ember.float64


def test_bernoulli_tensor_p_broadcasts(device):
    p = ember.tensor([0.0, 1.0, 0.5], device=device)
    t = ember.empty(N // 3, 3, device=device).bernoulli_(p)
    assert (t[:, 0] == 0).all() and (t[:, 1] == 1).all()
    sd = math.sqrt(0.25 / (N // 3))
    assert abs(float(t[:, 2].mean()) - 0.5) < 5 * sd
    assert set(t.unique().tolist()) == {0.0, 1.0}


def test_multinomial_first_draw_follows_weights(device):
    w = ember.tensor([1.0, 2.0, 7.0], device=device).expand(N // 4, 3).contiguous()
    first = ember.multinomial(w, 2)[:, 0]
    n = N // 4
    for k, p in enumerate([0.1, 0.2, 0.7]):
        assert abs(float((first == k).float().mean()) - p) < 5 * math.sqrt(p * (1 - p) / n)
    rows = ember.multinomial(w[:50], 3)
    assert rows.sort(1).values.tolist() == [[0, 1, 2]] * 50  # without replacement: all distinct
    one = ember.multinomial(ember.tensor([0.0, 0.0, 1.0, 0.0], device=device), 5, replacement=True)
    assert one.tolist() == [2] * 5


def test_sampler_writes_only_the_view(device):
    x = ember.zeros(4, 4, device=device)
    x[:, 1].normal_()
    assert int((x != 0).sum()) == 4 and (x[:, 1] != 0).all()
    assert x._version == 1


def test_sample_gradients_are_zero_as_in_torch(device):
    m = ember.zeros(3, device=device, requires_grad=True)
    s = ember.ones(3, device=device, requires_grad=True)
    y = ember.normal(m, s)
    assert y.requires_grad
    y.sum().backward()
    assert m.grad.tolist() == [0.0] * 3 and s.grad.tolist() == [0.0] * 3
    p = ember.full((3,), 0.5, device=device, requires_grad=True)
    ember.bernoulli(p).sum().backward()
    assert p.grad.tolist() == [0.0] * 3
    assert not ember.bernoulli(p.detach()).requires_grad
    # in place on a non-leaf: the drawn values replace the history (zero gradient to what they overwrite)
    x = ember.ones(4, 4, device=device, requires_grad=True)
    h = x * 2
    h[:, 1].uniform_()
    h.sum().backward()
    assert x.grad.tolist() == [[2.0, 0.0, 2.0, 2.0]] * 4


def test_generators_per_device(device):
    g = ember.Generator(device)
    assert g.device == ember.zeros(1, device=device).device
    ember.manual_seed(3)
    a = ember.rand(6, device=device)
    ember.manual_seed(3)
    ember.rand(6, device=device, generator=ember.Generator(device).manual_seed(99))  # private stream
    assert ember.equal(ember.rand(6, device=device), a)  # default stream untouched by the private one
    st = g.manual_seed(1).get_state()
    assert st.dtype is ember.uint8
    first = ember.rand(3, device=device, generator=g)
    g.set_state(st)
    assert ember.equal(ember.rand(3, device=device, generator=g), first)
    if ember.zeros(1, device=device).device.type != "cpu":
        with pytest.raises(RuntimeError, match="device type for generator"):
            ember.rand(2, device=device, generator=ember.Generator("cpu"))
