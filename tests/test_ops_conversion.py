"""Type and conversion: to/type/casters/type_as on every backend, the dtype algebra (promote_types, can_cast,
result_type, finfo, iinfo) against PyTorch's for every dtype pair, gradients through casts, clear errors."""
import itertools

import pytest

import ember

DTYPES = ["float16", "float32", "float64", "bfloat16", "uint8", "int8", "int16", "int32", "int64", "bool",
          "complex64", "complex128"]
PAIRS = list(itertools.product(DTYPES, DTYPES))
CASTABLE = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def name(d):
    return str(d).split(".")[-1]


def held(device, names=DTYPES):
    """The dtypes the backend can hold in a tensor (bfloat16 needs ml_dtypes; array-API libraries may lack
    float16)."""
    out = []
    for n in names:
        try:
            ember.empty(0, dtype=getattr(ember, n), device=device)
        except TypeError:
            continue
        out.append(n)
    return out


def needs(device, *names):
    missing = set(names) - set(held(device, names))
    if missing:
        pytest.skip(f"backend {device} holds no {sorted(missing)} tensors")


def test_promote_types_and_can_cast_every_pair(torch):
    for a, b in PAIRS:
        ea, eb, ta, tb = getattr(ember, a), getattr(ember, b), getattr(torch, a), getattr(torch, b)
        assert name(ember.promote_types(ea, eb)) == name(torch.promote_types(ta, tb)), (a, b)
        assert ember.can_cast(ea, eb) == torch.can_cast(ta, tb), (a, b)


# operand shapes: two tensors with dimensions, a tensor and a 0-d tensor, two 0-d tensors
LAYOUTS = [((2,), (2,)), ((2,), ()), ((), ())]


@pytest.mark.parametrize("layout", LAYOUTS, ids=["dims-dims", "dims-zerodim", "zerodim-zerodim"])
def test_result_type_tensor_pairs(layout, device, torch):
    sa, sb = layout
    have = held(device)
    for a, b in itertools.product(have, have):
        if "float16" in (a, b) and "complex" in a + b:
            continue  # PyTorch answers complex32, a dtype ember does not have
        e = ember.result_type(ember.zeros(sa, dtype=getattr(ember, a), device=device),
                              ember.zeros(sb, dtype=getattr(ember, b), device=device))
        t = torch.result_type(torch.zeros(sa, dtype=getattr(torch, a)), torch.zeros(sb, dtype=getattr(torch, b)))
        assert name(e) == name(t), (a, sa, b, sb)


@pytest.mark.parametrize("scalar", [True, 3, 2.5, 1j], ids=["bool", "int", "float", "complex"])
def test_result_type_with_python_scalars(scalar, device, torch):
    for a in held(device):
        if a == "float16" and isinstance(scalar, complex):
            continue  # complex32 in PyTorch
        for shape in [(2,), ()]:
            e = ember.result_type(ember.zeros(shape, dtype=getattr(ember, a), device=device), scalar)
            t = torch.result_type(torch.zeros(shape, dtype=getattr(torch, a)), scalar)
            assert name(e) == name(t), (a, shape, scalar)
    assert name(ember.result_type(scalar, 1)) == name(torch.result_type(scalar, 1))


def test_finfo_iinfo_match_torch(torch):
    for n in DTYPES:
        e, t = getattr(ember, n), getattr(torch, n)
        if t.is_floating_point or t.is_complex:
            fe, ft = ember.finfo(e), torch.finfo(t)
            for attr in ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]:
                assert getattr(fe, attr) == getattr(ft, attr), (n, attr)
            assert repr(fe) == repr(ft)
            with pytest.raises(TypeError, match="iinfo"):
                ember.iinfo(e)
        else:
            if n != "bool":
                ie, it = ember.iinfo(e), torch.iinfo(t)
                assert (ie.bits, ie.max, ie.min, ie.dtype) == (it.bits, it.max, it.min, it.dtype), n
            with pytest.raises(TypeError, match="finfo|iinfo"):
                (ember.iinfo if n == "bool" else ember.finfo)(e)
    assert ember.finfo().dtype == "float32"


CASTERS = ["float", "double", "half", "long", "int", "short", "char", "byte", "bool", "cfloat", "cdouble"]


@pytest.mark.parametrize("method", CASTERS)
def test_casting_methods_match_torch(method, device, torch):
    needs(device, name(getattr(ember.ones(1), method)().dtype))
    vals = [[-2.7, -0.5, 0.0], [0.4, 1.5, 300.25]]  # truncation toward zero, wrap-around for byte
    e = getattr(ember.tensor(vals, device=device), method)()
    t = getattr(torch.tensor(vals), method)()
    assert name(e.dtype) == name(t.dtype) and e.tolist() == t.tolist()
    ints = getattr(ember.tensor([[0, 1, -3]], device=device), method)()
    assert ints.tolist() == getattr(torch.tensor([[0, 1, -3]]), method)().tolist()


LEGACY = [("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("HalfTensor", "float16"),
          ("LongTensor", "int64"), ("IntTensor", "int32"), ("ShortTensor", "int16"), ("CharTensor", "int8"),
          ("ByteTensor", "uint8"), ("BoolTensor", "bool")]


@pytest.mark.parametrize("legacy,dt", LEGACY, ids=[x[0] for x in LEGACY])
def test_type_legacy_names(legacy, dt, device):
    needs(device, dt)
    x = ember.tensor([1.5, -2.0], device=device)
    dev = x.device
    prefix = "ember." if dev.type == "cpu" else f"ember.{dev.type}."
    for spelling in [f"ember.{legacy}", f"torch.{legacy}"] if dev.type == "cpu" else []:
        y = x.type(spelling)
        assert y.dtype is getattr(ember, dt) and y.device == dev
    y = x.type(getattr(ember, dt))
    assert y.dtype is getattr(ember, dt) and y.type() == prefix + legacy
    assert x.type(getattr(ember, legacy)).dtype is getattr(ember, dt)
    assert (x.type(x.type()) is x) and x.type() == prefix + "FloatTensor"


@pytest.mark.parametrize("src", ["float64", "int64", "bool"])
def test_to_every_dtype(src, device, torch):
    vals = [[1.5, -2.5, 0.0], [3.0, 255.0, -1.0]]
    e = ember.tensor(vals, dtype=ember.float64, device=device).to(getattr(ember, src))
    t = torch.tensor(vals, dtype=torch.float64).to(getattr(torch, src))
    for dst in held(device, CASTABLE):
        for r, s in [(e.to(getattr(ember, dst)), t.to(getattr(torch, dst))),
                     (e.to(dtype=getattr(ember, dst)), t.to(dtype=getattr(torch, dst)))]:
            assert name(r.dtype) == name(s.dtype) and r.tolist() == s.tolist(), (src, dst)


def test_to_overloads(device):
    x = ember.tensor([[1.25, -2.5]], device=device)
    dev = x.device
    assert x.to(ember.float32) is x and x.to(dev) is x and x.to(dev, ember.float32) is x
    c = x.to(ember.float32, copy=True)
    assert c is not x and ember.equal(c, x)
    c[0, 0] = 9.0
    assert float(x[0, 0]) == 1.25  # a real copy
    assert x.to(ember.float64).dtype is ember.float64 and x.to(dtype=ember.int8).tolist() == [[1, -2]]
    other = ember.zeros(1, dtype=ember.int16, device=device)
    assert x.to(other).dtype is ember.int16 and x.to(other).device == dev
    assert x.type_as(other).dtype is ember.int16
    back = x.to("cpu").to(device=dev, dtype=ember.float64)
    assert back.device == dev and back.dtype is ember.float64 and back.tolist() == [[1.25, -2.5]]
    assert x.to(float).dtype is ember.get_default_dtype() and x.to(int).dtype is ember.int64


def test_cast_gradients(device, torch):
    x = ember.tensor([0.5, -1.5, 2.0], device=device, requires_grad=True)
    y = (x.double() ** 2).sum()
    assert y.dtype is ember.float64
    y.backward()
    assert x.grad.dtype is ember.float32 and x.grad.tolist() == [1.0, -3.0, 4.0]
    tx = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
    (tx.double() ** 2).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()
    assert not x.long().requires_grad and not x.bool().requires_grad  # integer casts carry no gradient
    z = ember.tensor([1.0, 2.0], dtype=ember.float64, device=device, requires_grad=True)
    w = z.float() * z.float().to("cpu").to(z.device)  # float32 product, float64 leaf: grad back in float64
    w.sum().backward()
    assert w.dtype is ember.float32 and z.grad.dtype is ember.float64 and z.grad.tolist() == [2.0, 4.0]


def test_bad_input(device):
    x = ember.ones(2, device=device)
    for call, exc, match in [
            (lambda: x.type("torch.FooTensor"), ValueError, "invalid type: 'torch.FooTensor'"),
            (lambda: x.type(3), TypeError, "dtype must be a type, str, or dtype"),
            (lambda: x.to("nonsense"), RuntimeError, "nonsense"),
            (lambda: x.to(foo=1), TypeError, "foo"),
            (lambda: x.to(3.5), TypeError, "invalid combination"),
            (lambda: ember.can_cast(ember.float32, "int"), TypeError, "can_cast"),
            (lambda: ember.promote_types(ember.float32, 3), TypeError, "promote_types"),
            (lambda: ember.result_type(), TypeError, "result_type"),
            (lambda: ember.iinfo(ember.float32), TypeError, "iinfo"),
            (lambda: ember.finfo(ember.int32), TypeError, "finfo"),
            (lambda: x.long().requires_grad_(), RuntimeError, "floating point")]:
        with pytest.raises(exc, match=match):
            call()
    assert x.dtype is ember.float32 and x.tolist() == [1.0, 1.0] and x._version == 0


BOOL_SUB = [("two bool tensors", lambda m, d: m.tensor([True], device=d) - m.tensor([False], device=d), "two bool"),
            ("bool tensor and True", lambda m, d: m.tensor([True], device=d) - True, "two bool"),
            ("number minus bool", lambda m, d: 1 - m.tensor([True], device=d), "with a bool tensor"),
            ("float minus bool", lambda m, d: m.tensor([1.0], device=d).sub(m.tensor([True], device=d)),
             "with a bool tensor"),
            # integer division by zero raises (floating division gives inf/nan)
            ("int floor division by 0", lambda m, d: m.tensor([5], device=d) // 0, "ZeroDivisionError"),
            ("int remainder by a 0 tensor", lambda m, d: m.tensor([5, 6], device=d) % m.tensor([1, 0], device=d),
             "ZeroDivisionError"),
            ("int fmod by 0", lambda m, d: m.fmod(m.tensor([5], device=d), 0), "ZeroDivisionError"),
            ("int trunc division by 0", lambda m, d: m.div(m.tensor([5], device=d), 0, rounding_mode="trunc"),
             "ZeroDivisionError")]


@pytest.mark.parametrize("why,call,match", BOOL_SUB, ids=[b[0] for b in BOOL_SUB])
def test_integer_and_bool_arithmetic_refused_like_torch(why, call, match, device, torch):
    with pytest.raises(RuntimeError, match=match):
        call(ember, device)
    with pytest.raises(RuntimeError, match=match):
        call(torch, "cpu")
